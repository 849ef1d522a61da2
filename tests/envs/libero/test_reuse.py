"""Built envs are reused across trials, slots and envs of one process, and a trial's
scene does not depend on which env runs it.

Env constructions are counted by wrapping the installed ``ControlEnv.__init__``
(libero ``envs/env_wrapper.py``), not by the project's own counter.

The reference is the standard loop (openpi ``examples/libero/main.py`` at
15a9616a00943ada6c20a0f158e3adb39df2ccac: one ``OffScreenRenderEnv`` per task,
``env.seed(7)`` once (:195), then ``env.reset()`` per trial in order (:93)),
run here on the provider's stock env. libero_90 task 0 has a cabinet whose
"close" init state gives it an open/close sampler, which LIBERO appends again at
every model load (``envs/bddl_base_domain.py:653``) and draws from before
placing the fixtures (:743-759): trial i's fixture poses depend on i + 2 loads,
so a trial run on an env with another history must still match the loop.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

from tests.envs.libero.conftest import require_libero

require_libero()

from envs.libero import env as env_module  # noqa: E402
from envs.libero.suite import LiberoSuite  # noqa: E402
from harness.registry.catalog import POLICIES  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.types import RunSpec  # noqa: E402

pytestmark = pytest.mark.slow

SPLIT = "libero_90"


@contextmanager
def counted_builds():
    from libero.libero.envs.env_wrapper import ControlEnv

    counts = {"builds": 0}
    init = ControlEnv.__dict__["__init__"]

    def counted(self, *a, **k):
        counts["builds"] += 1
        init(self, *a, **k)

    ControlEnv.__init__ = counted
    try:
        yield counts
    finally:
        ControlEnv.__init__ = init


def _fixture_poses(inner) -> np.ndarray:
    ids = [inner.sim.model.body_name2id(f.root_body) for f in inner.fixtures_dict.values()]
    assert ids, "the task has fixtures"
    return np.concatenate([inner.sim.model.body_pos[ids].ravel(), inner.sim.model.body_quat[ids].ravel()])


def _stock_poses(provider, trials: int) -> list[np.ndarray]:
    task = provider.suite(SPLIT).get_task(0)
    stock = provider.env_class()(bddl_file_name=provider.bddl_path(task), camera_heights=64, camera_widths=64)
    try:
        assert len(stock.env.object_property_initializers) == 1  # the cabinet's open/close sampler
        stock.seed(7)
        out = []
        for _ in range(trials):
            stock.reset()
            out.append(_fixture_poses(stock.env))
    finally:
        stock.close()
    return out


@pytest.fixture()
def clean_pool():
    env_module.POOL.clear()
    env_module._RNG_TABLES.clear()
    yield
    env_module.POOL.clear()


@pytest.mark.ci
def test_two_envs_share_one_build_and_place_every_trial_as_the_loop(clean_pool):
    """Env A runs trial 1 (fresh build: trial 0's draws replayed, first reset without a
    second compile) and is closed; env B takes its built env from the pool and runs
    trials 0 and 2 (hard resets). One construction in all, and every trial's fixtures
    equal the stock loop's; each trial building its own env would construct 3."""
    suite = LiberoSuite(tasks=[0], trials=3, max_steps=3)
    stock = _stock_poses(suite.provider, 3)
    assert not np.array_equal(stock[0], stock[1])
    eps = suite.episodes(SPLIT)
    got = {}
    with counted_builds() as counts:
        a = suite.make_env()
        a.reset(options={"episode": eps[1], "render": False})
        got[1] = _fixture_poses(a._env.env)
        assert (a.fresh_resets, a.hard_resets, a.replayed_resets) == (1, 0, 1)
        a.close()
        b = suite.make_env()
        for i in (0, 2):
            b.reset(options={"episode": eps[i], "render": False})
            got[i] = _fixture_poses(b._env.env)
        assert (b.fresh_resets, b.hard_resets) == (0, 2)
        b.close()
        assert env_module.POOL.idle() == 1
        # an env whose step raised is closed, never handed to the next env
        c = suite.make_env()
        c.reset(options={"episode": eps[0], "render": False})
        assert env_module.POOL.idle() == 0

        def broken(action):
            raise RuntimeError("simulator fault")

        c._env.step = broken
        with pytest.raises(RuntimeError, match="simulator fault"):
            c.step([0.0] * 6 + [-1.0])
        c.close()
        assert env_module.POOL.idle() == 0
    assert counts["builds"] == 1
    for i in range(3):
        np.testing.assert_array_equal(got[i], stock[i], err_msg=f"trial {i}")


def test_runner_two_slots_build_two_envs_for_four_trials(clean_pool):
    """The local executor with 2 slots runs 4 trials of one task: 2 constructions
    (one per slot, each kept for its next trial), not 4; a second run in the same
    process takes both from the pool and constructs none."""
    suite = LiberoSuite(tasks=[0], trials=4, max_steps=3)
    spec = RunSpec(suite="libero", split=SPLIT, agent="zero", variant="t", agent_kind="policy", batch_size=2)
    with counted_builds() as counts:
        first = Runner(spec, suite, POLICIES.build("zero"), None).run()
    assert first.errors == 0 and first.total == 4
    assert counts["builds"] == 2
    assert env_module.POOL.idle() == 2  # given back when the executor closed its slots
    with counted_builds() as counts:
        again = Runner(spec, suite, POLICIES.build("zero"), None).run()
    assert counts["builds"] == 0
    key = lambda r: r.episode_id  # noqa: E731
    assert [(r.episode_id, r.steps, r.gc_satisfied, r.success) for r in sorted(first.records, key=key)] == \
        [(r.episode_id, r.steps, r.gc_satisfied, r.success) for r in sorted(again.records, key=key)]
