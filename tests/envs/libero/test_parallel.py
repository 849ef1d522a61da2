"""The runner's process executor on the real LIBERO simulator: 2 workers x 2 envs
give the same records as one env in this process (slow: builds 5 envs)."""

from __future__ import annotations

import pytest

from tests.envs.libero.conftest import require_libero

require_libero()

from envs.libero.suite import LiberoSuite  # noqa: E402
from harness.run.executors import SuiteEnvFactory  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.types import RunSpec  # noqa: E402

pytestmark = pytest.mark.slow

PARAMS = {"max_steps": 8, "tasks": [2], "trials": 4}


class ImageReadingZero:
    """The zero policy declared to read images, so the workers render (a VLA's profile);
    checks that every observation carries both 256 px cameras."""

    name, privileged, reads_images, replan_steps = "zero_images", False, True, 3

    def identity(self):
        return {"name": self.name}

    def reset(self, episode):
        pass

    def act(self, requests):
        for r in requests:
            assert r.observation["agentview_image"].shape == (256, 256, 3)
            assert r.observation["wrist_image"].shape == (256, 256, 3)
        return [[[0.05, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]] * 5 for _ in requests]


def _outcomes(summary):
    return sorted((r.episode_id, r.success, r.steps, r.agent_calls, r.gc_satisfied, r.termination)
                  for r in summary.records)


def test_two_workers_two_envs_each_match_one_local_env():
    suite = LiberoSuite(**PARAMS)
    base = dict(suite="libero", split="libero_object", agent="zero_images", variant="t", agent_kind="policy")
    local = Runner(RunSpec(**base, batch_size=1), suite, ImageReadingZero(), None).run()
    spec = RunSpec(**base, executor="process", num_workers=2, envs_per_worker=2)
    par = Runner(spec, suite, ImageReadingZero(), None, env_factory=SuiteEnvFactory("libero", PARAMS)).run()
    assert local.errors == par.errors == 0
    assert _outcomes(local) == _outcomes(par)
    assert all(r.steps == 8 and r.agent_calls == 3 for r in par.records)  # replan_steps=3 of 5-action chunks
