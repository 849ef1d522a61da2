"""A reset retried after ``RandomizationError`` draws from one sampler copy more, as in LIBERO.

LIBERO's ``reset`` retries robosuite's hard reset on ``RandomizationError`` (libero
envs/env_wrapper.py:90-101); each retry reloads the model (robosuite 1.4.0
environments/base.py:247-258), which appends the task's open/close sampler once more
(``bddl_base_domain.py:653``), so the retried trial and every later trial of that env draw
from one copy more. The error is raised here the same way on both sides: the object placement
sampler of the chosen reset fails once at entry (a real ``RandomizationError`` from robosuite,
before any placement draw), on the provider's stock env in openpi's loop and on ours.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

from tests.envs.libero.conftest import require_libero

require_libero()

from envs.libero import env as env_module  # noqa: E402
from envs.libero.suite import LiberoSuite  # noqa: E402
from tests.envs.libero.test_reuse import SPLIT, _fixture_poses  # noqa: E402

pytestmark = pytest.mark.slow


@contextmanager
def fail_once(sampler_type):
    """The next call of the scene's object placement sampler raises RandomizationError once."""
    from robosuite.utils.errors import RandomizationError

    original = sampler_type.__dict__["sample"]
    state = {"armed": False, "raised": 0}

    def sample(self, *a, **k):
        if state["armed"] and self.name == "ObjectSampler":
            state["armed"] = False
            state["raised"] += 1
            raise RandomizationError("placement failed (injected)")
        return original(self, *a, **k)

    sampler_type.sample = sample
    try:
        yield state
    finally:
        sampler_type.sample = original


def test_a_retried_reset_adds_one_sampler_copy_as_libero_does():
    suite = LiberoSuite(tasks=[0], trials=3, max_steps=2)
    provider = suite.provider
    task = provider.suite(SPLIT).get_task(0)
    stock = provider.env_class()(bddl_file_name=provider.bddl_path(task), camera_heights=64, camera_widths=64)
    ref, copies = [], []
    sampler_type = type(stock.env.placement_initializer)
    try:
        with fail_once(sampler_type) as inject:
            stock.seed(7)
            for trial in range(3):
                inject["armed"] = trial == 1
                stock.reset()
                ref.append(_fixture_poses(stock.env))
                copies.append(len(stock.env.object_property_initializers))
            assert inject["raised"] == 1
    finally:
        stock.close()
    assert copies == [2, 4, 5]  # LIBERO's own count: the retry's reload added a copy for good

    env_module.POOL.clear()
    env_module._RNG_TABLES.clear()
    env_module._RETRY_TABLES.clear()
    eps = suite.episodes(SPLIT)
    env = suite.make_env()
    try:
        got, retries = [], []
        with fail_once(sampler_type) as inject:
            for trial in range(3):
                inject["armed"] = trial == 1
                env.reset(options={"episode": eps[trial], "render": False})
                got.append(_fixture_poses(env._env.env))
                retries.append(env.last_reset_retries)
        assert retries == [0, 1, 0] and inject["raised"] == 1
        for trial in range(3):
            np.testing.assert_array_equal(got[trial], ref[trial], err_msg=f"trial {trial}")
    finally:
        env.close()
        env_module.POOL.clear()
