"""The ``lerobot`` preset places fixtures as LeRobot 0.6.1's reset sequence does, for its batch size.

The reference is LeRobot's sequence replicated here on the provider's stock env
(huggingface/lerobot v0.6.1, 7e241bd630a3719a56157a497ce5d08f244784f1): B sub-envs per
task; sub-env k builds its ``OffScreenRenderEnv`` and resets it once before its first
episode (src/lerobot/envs/libero.py:258-277, the reset at :276), then runs episodes
e = k, k + B, ... each as ``env.seed(1000 + e)`` then ``env.reset()`` (:339-343; seeds
``start_seed + batch_ix * B + k``, scripts/lerobot_eval.py:531-532, ``seed = 1000``,
configs/eval.py:39); Gymnasium's auto-reset of a finished sub-env never reaches the env
(``FreezeAfterEpisodeEnd``, src/lerobot/envs/utils.py:181-218).

libero_spatial task 4 has a fixture with an open/close sampler, which LIBERO appends at every
model load (``bddl_base_domain.py:653``), so the extra reset moves its fixtures: a loop without it
(e + 2 copies, the openpi count) places them 1.6-2.4 cm elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.envs.libero.conftest import require_libero

require_libero()

from envs.libero import env as env_module  # noqa: E402
from envs.libero import protocol as P  # noqa: E402
from envs.libero.suite import LiberoSuite  # noqa: E402

SPLIT, TASK = "libero_spatial", 4


def _fixture_poses(inner) -> np.ndarray:
    ids = [inner.sim.model.body_name2id(f.root_body) for f in inner.fixtures_dict.values()]
    return np.concatenate([inner.sim.model.body_pos[ids].ravel(), inner.sim.model.body_quat[ids].ravel()])


def lerobot_sequence(provider, batch: int, episodes: int) -> dict[int, np.ndarray]:
    task = provider.suite(SPLIT).get_task(TASK)
    out = {}
    for k in range(batch):
        env = provider.env_class()(bddl_file_name=provider.bddl_path(task), camera_heights=64, camera_widths=64)
        try:
            assert env.env.object_property_initializers, "the task has open/close or on/off samplers"
            env.reset()  # _ensure_env's reset, before any episode
            for e in range(k, episodes, batch):
                env.seed(1000 + e)
                env.reset()
                out[e] = _fixture_poses(env.env)
        finally:
            env.close()
    return out


@pytest.fixture()
def clean_pool():
    env_module.POOL.clear()
    env_module._RNG_TABLES.clear()
    yield
    env_module.POOL.clear()


def test_sampler_copies_follow_lerobots_sub_envs():
    assert [P.property_rounds("seed_plus_trial", e, 1) for e in range(3)] == [3, 4, 5]
    assert [P.property_rounds("seed_plus_trial", e, 2) for e in range(4)] == [3, 3, 4, 4]
    assert P.property_rounds("sequence", 2) == 4  # openpi: construction + one reset per trial
    # LeRobot's eval.batch_size=0 rule: floor(0.7 x cores), capped by n_episodes and 64
    assert [P.lerobot_auto_batch_size(50, c) for c in (1, 2, 16, 128)] == [1, 1, 11, 50]
    assert P.lerobot_auto_batch_size(50, 100) == 50 and P.lerobot_auto_batch_size(80, 128) == 64
    s = LiberoSuite(protocol="lerobot", lerobot_batch_size=2)
    assert s.protocol(SPLIT)["lerobot_sub_envs"] == 2
    assert s.protocol(SPLIT) != LiberoSuite(protocol="lerobot", lerobot_batch_size=1).protocol(SPLIT)
    from harness.params import ParamError

    with pytest.raises(ParamError, match="applies to protocol=lerobot only"):
        LiberoSuite(lerobot_batch_size=2)


def test_the_batch_size_does_not_follow_the_machine_unless_asked(monkeypatch, capsys):
    """null: a fixed eval.batch_size, the same identity and sampler counts on 2 and 8 visible cores;
    0: LeRobot's automatic rule (floor(0.7 x cores)), which differs between them; the value used is
    printed when the suite is built."""
    import os

    def on(cores, **params):
        monkeypatch.setattr(os, "cpu_count", lambda: cores)
        s = LiberoSuite(protocol="lerobot", **params)
        return s, capsys.readouterr().err

    (two, said), (eight, _) = on(2), on(8)
    assert two.lerobot_batch == eight.lerobot_batch == P.LEROBOT_DEFAULT_BATCH
    assert two.protocol(SPLIT) == eight.protocol(SPLIT)
    assert "eval.batch_size=1 (the fixed default" in said
    (auto2, said2), (auto8, said8) = on(2, lerobot_batch_size=0), on(8, lerobot_batch_size=0)
    assert (auto2.lerobot_batch, auto8.lerobot_batch) == (1, 5)
    assert auto2.protocol(SPLIT) != auto8.protocol(SPLIT)
    assert "eval.batch_size=5 (LeRobot's automatic rule" in said8
    rounds = [[P.property_rounds("seed_plus_trial", e, s.lerobot_batch) for e in range(10)] for s in (auto2, auto8)]
    assert rounds[0] != rounds[1]  # so the fixtures land elsewhere
    (capped, _) = on(8, lerobot_batch_size=64, trials=5)
    assert capped.lerobot_batch == 50  # capped at LeRobot's n_episodes (the preset's 50 trials), not `trials`


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 2])
def test_lerobot_preset_places_fixtures_as_lerobots_sequence(clean_pool, batch):
    episodes = 2 * batch
    ref = lerobot_sequence(LiberoSuite().provider, batch, episodes)
    suite = LiberoSuite(protocol="lerobot", lerobot_batch_size=batch, tasks=[TASK], trials=episodes, max_steps=2)
    eps = suite.episodes(SPLIT)
    env = suite.make_env()
    try:
        for e in reversed(range(episodes)):  # any order, one env: the count is set per trial
            env.reset(options={"episode": eps[e], "render": False})
            np.testing.assert_array_equal(_fixture_poses(env._env.env), ref[e], err_msg=f"B={batch} episode {e}")
    finally:
        env.close()
