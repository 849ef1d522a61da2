"""Each LIBERO preset's constants against the loop it names.

The expected values are read off the originals' source lines (cited per test);
none comes from our own output. No simulator is built (fast)."""

from __future__ import annotations

import pytest

from envs.libero import protocol as P

SPLITS = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")


def test_standard_is_openpis_loop():
    """Physical-Intelligence/openpi 15a9616a00943ada6c20a0f158e3adb39df2ccac, examples/libero/main.py:
    :17 ``LIBERO_DUMMY_ACTION = [0.0] * 6 + [-1.0]``; :18 ``LIBERO_ENV_RESOLUTION = 256``;
    :37 ``num_steps_wait = 10``; :38 ``num_trials_per_task = 50``; :45 ``seed = 7`` and :195
    ``env.seed(seed)`` once per task (so trial i is the (i+1)-th reset after it); :60-69 max_steps
    220/280/300/520/400; :115-116 ``[::-1, ::-1]`` on both cameras; :104-109 the policy's first
    observation is the last wait step's (``obs`` reassigned by each wait ``env.step``)."""
    p = P.preset("standard")
    assert p["dummy_action"] == [0.0] * 6 + [-1.0]
    assert p["camera_size"] == 256 and p["cameras"] == ["agentview", "robot0_eye_in_hand"]
    assert (p["num_steps_wait"], p["trials"], p["seed"], p["fixture_rng"]) == (10, 50, 7, "sequence")
    assert [p["max_steps"][s] for s in SPLITS] == [220, 280, 300, 520, 400]
    assert p["rotate_180"] is True and p["first_observation"] == "after_wait"


def test_openvla_differs_from_standard_only_in_its_fixture_seed():
    """openvla/openvla c8f03f48af692657d3060c19588038c7220e9af9: experiments/robot/libero/libero_utils.py
    :24 ``env.seed(0)`` once per task, :30 dummy ``[0, 0, 0, 0, 0, 0, -1]``, :56 ``img[::-1, ::-1]``;
    run_libero_eval.py :72 ``num_steps_wait = 10``, :73 50 trials, :156 ``resolution=256``, :174-182
    max_steps 220/280/300/520/400 (its ``seed = 7`` at :85 seeds the model's libraries only)."""
    p, std = P.preset("openvla"), P.preset("standard")
    assert p["seed"] == 0 and p["fixture_rng"] == "sequence"
    assert p["dummy_action"] == [0, 0, 0, 0, 0, 0, -1] and p["rotate_180"] is True
    assert (p["num_steps_wait"], p["trials"], p["camera_size"]) == (10, 50, 256)
    assert [p["max_steps"][s] for s in SPLITS] == [220, 280, 300, 520, 400]
    assert {k for k in p if p[k] != std[k]} == {"seed"}


def test_openvla_preset_is_also_openvla_ofts_loop():
    """moojink/openvla-oft 213c5ff8d6e9673885d7e4dd6f2ce73b5d8a45db keeps OpenVLA's loop:
    experiments/robot/libero/libero_utils.py :20 ``task.language``, :24 ``env.seed(0)``, :28-30 dummy
    ``[0, 0, 0, 0, 0, 0, -1]``, :36 and :43 ``img[::-1, ::-1]`` on both cameras; run_libero_eval.py
    :63-69 TASK_MAX_STEPS 220/280/300/520/400, :113 ``num_steps_wait = 10``, :114 50 trials, :116
    ``env_img_res = 256``, :316-321 the wait steps reassign ``obs`` (the policy's first observation is
    the last wait step's). So ``protocol=openvla`` is the suite preset for OFT checkpoints too; its
    own client steps (both cameras, state, the 8-step open loop) are the ``openvla`` policy's."""
    p = P.preset("openvla")
    assert p["instruction"] == "task.language" and (p["seed"], p["fixture_rng"]) == (0, "sequence")
    assert p["dummy_action"] == [0, 0, 0, 0, 0, 0, -1] and p["rotate_180"] is True
    assert p["cameras"] == ["agentview", "robot0_eye_in_hand"]
    assert [p["max_steps"][s] for s in SPLITS] == [220, 280, 300, 520, 400]
    assert (p["num_steps_wait"], p["trials"], p["camera_size"]) == (10, 50, 256)
    assert p["first_observation"] == "after_wait"


def test_lerobot_is_lerobot_0_6_1s_env():
    """huggingface/lerobot tag v0.6.1 (7e241bd630a3719a56157a497ce5d08f244784f1):
    src/lerobot/envs/configs.py:333-334 ``observation_height = observation_width = 360``;
    src/lerobot/envs/libero.py:90-92 dummy ``[0, 0, 0, 0, 0, 0, -1]``, :99-103 TASK_SUITE_MAX_STEPS
    280/280/300/520/400, :127 ``num_steps_wait = 10``, :342-343 ``self._env.seed(seed)`` right before
    ``self._env.reset()``; src/lerobot/configs/eval.py:39 ``seed = 1000`` and
    scripts/lerobot_eval.py:531 seeds ``start_seed + i`` per episode; processor/env_processor.py:59
    flips both image axes before the policy."""
    p = P.preset("lerobot")
    assert p["camera_size"] == 360
    assert p["dummy_action"] == [0, 0, 0, 0, 0, 0, -1] and p["num_steps_wait"] == 10
    assert [p["max_steps"][s] for s in SPLITS] == [280, 280, 300, 520, 400]
    assert (p["seed"], p["fixture_rng"]) == (1000, "seed_plus_trial")
    assert p["rotate_180"] is True and p["first_observation"] == "after_wait"


def test_lifelong_is_liberos_own_evaluation():
    """Lifelong-Robot-Learning/LIBERO 8f1084e3132a39270c3a13ebe37270a43ece2a01: libero/lifelong/evaluate.py
    :243 ``env_num = 20`` (one episode per init state 0..19), :260 ``obs = env.set_init_state(...)``,
    :264-265 five ``env.step(np.zeros((env_num, 7)))`` whose observations are discarded, :268
    ``steps < cfg.eval.max_steps``; libero/configs/eval/default.yaml ``max_steps: 600``,
    ``n_eval: 20``; libero/configs/config.yaml ``seed: 10000``; libero/configs/data/default.yaml
    ``img_h: 128``, ``img_w: 128``; no image flip anywhere in the loop."""
    p = P.preset("lifelong")
    assert p["dummy_action"] == [0.0] * 7
    assert (p["num_steps_wait"], p["trials"], p["seed"], p["camera_size"]) == (5, 20, 10000, 128)
    assert [p["max_steps"][s] for s in SPLITS] == [600] * 5
    assert p["rotate_180"] is False and p["first_observation"] == "set_init_state"
    assert p["fixture_rng"] == "same_each_trial"


@pytest.mark.parametrize("name", sorted(P.PRESETS))
def test_every_preset_is_documented_and_complete(name):
    keys = set(P.preset("standard"))  # the openpi preset, by its former name
    assert set(P.PRESETS[name]) == keys
    assert P.PRESETS[name]["fixture_rng"] in P.FIXTURE_RNG_MODES
    assert f"``{name}``" in P.__doc__  # the module docstring names its loop
    assert max(P.PRESETS[name]["max_steps"].values()) + P.PRESETS[name]["num_steps_wait"] <= P.ROBOSUITE_HORIZON
