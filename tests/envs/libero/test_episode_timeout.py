"""LIBERO-PRO's wall-clock limit per episode: a policy slower than the limit times out under
``protocol=libero_pro`` and not under the openpi loop, on the real simulator.

Zxy-MLlab/LIBERO-PRO 8af465d0484b527efc320e4cdeb57890742394be: libero/evaluation/configs/eval.yaml:14
``episode_timeout_seconds: 50``; runner.py:166 sets the deadline after the warm-up steps, :169 ends
the episode (``episode_timeout``, unsuccessful) when the clock has run out before a policy query.
The limit is shortened here (``episode_timeout_s=1``) so that a policy sleeping 0.25 s a call
crosses it within a few steps."""

from __future__ import annotations

import time

from tests.envs.libero.conftest import require_libero

require_libero()

from envs.libero.suite import LiberoSuite  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.types import RunSpec  # noqa: E402

STEPS, NAP = 12, 0.25


class SleepingPolicy:
    """LIBERO's dummy action, one per call, each after a nap (a slow server)."""

    name, privileged, reads_images, replan_steps = "sleeping", False, False, 1

    def identity(self):
        return {"name": self.name, "nap": NAP}

    def reset(self, episode):
        pass

    def act(self, requests):
        time.sleep(NAP)
        return [[[0.0] * 6 + [-1.0]] for _ in requests]


def _run(**params):
    suite = LiberoSuite(tasks=[0], trials=1, max_steps=STEPS, **params)
    spec = RunSpec(suite="libero", split="libero_spatial", agent="sleeping", variant="t", agent_kind="policy",
                   batch_size=1)
    (record,) = Runner(spec, suite, SleepingPolicy(), None).run().records
    return record


def test_a_slow_policy_times_out_on_libero_pro_and_not_on_the_openpi_loop():
    pro = _run(protocol="libero_pro", episode_timeout_s=1.0)
    assert pro.termination == "episode_timeout" and not pro.success and pro.error_kind is None
    assert 1 <= pro.steps < STEPS  # 1 s at 0.25 s a step: about 4 steps
    std = _run(protocol="openpi")
    assert std.termination == "max_steps" and std.steps == STEPS and std.error_kind is None


def test_libero_pro_carries_its_limit_and_episode_count():
    """eval.yaml:7 ``episodes_per_task: 1`` (init state 0, runner.py:75-79), :14 50 s."""
    pro = LiberoSuite(protocol="libero_pro")
    assert pro.episode_timeout_s == 50.0 and pro.protocol("libero_spatial")["episode_timeout_s"] == 50.0
    episodes = pro.episodes("libero_spatial")
    assert len(episodes) == 10 and {e.metadata["init_index"] for e in episodes} == {0}
    assert pro.protocol("libero_spatial") != LiberoSuite(protocol="libero_pro", episode_timeout_s=0).protocol(
        "libero_spatial")
    std = LiberoSuite()
    assert std.episode_timeout_s is None and "episode_timeout_s" not in std.protocol("libero_spatial")
