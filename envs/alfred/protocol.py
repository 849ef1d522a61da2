"""ALFRED's protocol constants, each written once with its source.

ALFRED = askforalfred/alfred (models/eval/eval_task.py, data/splits/oct21.json).
"""

from __future__ import annotations

#: ALFRED models/eval/eval_task.py ``--max_steps`` default: 1000 low-level steps.
MAX_STEPS = 1000
#: ALFRED models/eval/eval_task.py ``--max_fails`` default: 10 failed API actions.
MAX_FAILS = 10

#: ALFRED data/splits/oct21.json splits with goals (task_type / pddl_params).
DATA_SPLITS: tuple[str, ...] = ("valid_seen", "valid_unseen")
#: ALFRED's test splits: trajectories without task_type / pddl_params, so only
#: action sequences (leaderboard dumps) can come out of them; no SR/GC.
TEST_SPLITS: tuple[str, ...] = ("tests_seen", "tests_unseen")
#: The valid_seen trials EB-ALFRED's 300 episodes use (EmbodiedBench json_2.1.0/, shared data).
EB_SPLIT = "eb_valid_seen"
#: Generated household splits: ALFRED's training floor plans / its valid_unseen floor plans.
GENERATED_SPLITS: tuple[str, ...] = ("seen", "unseen")

#: Environment variable naming an ALFRED data folder (``json_2.1.0/`` with split folders).
DATA_ENV_VAR = "ALFRED_DATA_DIR"

#: AI2-THOR 2.1 navigation actions in ALFRED ``plan.low_actions`` (everything else is an interaction).
NAVIGATION_ACTIONS: frozenset[str] = frozenset({
    "MoveAhead", "MoveBack", "MoveLeft", "MoveRight", "RotateLeft", "RotateRight", "LookUp", "LookDown",
    "Teleport", "TeleportFull",
})

#: Termination reasons written to ``info["termination"]``.
TERM_STOP, TERM_MAX_STEPS, TERM_MAX_FAILS = "stop", "max_steps", "max_fails"
#: The explicit stop action (ALFRED's ``<<stop>>`` token); an empty plan stops too.
STOP_ACTIONS = frozenset({"stop", "<<stop>>"})
