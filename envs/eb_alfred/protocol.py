"""EB-ALFRED's protocol constants, each written once with its source.

EmbodiedBench = the public EmbodiedBench repository, first public release
(commit b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04); ALFRED = askforalfred/alfred.
"""

from __future__ import annotations

#: EmbodiedBench envs/eb_alfred/EBAlfEnv.py: ``self._max_episode_steps = 30``.
MAX_STEPS = 30
#: EmbodiedBench envs/eb_alfred/EBAlfEnv.py: ``self._max_invalid_actions = 10``.
MAX_INVALID_ACTIONS = 10

#: EmbodiedBench envs/eb_alfred/EBAlfEnv.py ``ValidEvalSets`` (data/splits/splits.json keys).
OFFICIAL_SPLITS: tuple[str, ...] = (
    "base", "common_sense", "complex_instruction", "spatial", "visual_appearance", "long_horizon",
)
#: EmbodiedBench data/splits/splits.json: 50 episodes per subset (300 in all).
EPISODES_PER_SUBSET = 50

#: Our generated splits: ALFRED training floor plans vs ALFRED's valid_unseen ones.
GENERATED_SPLITS: tuple[str, ...] = ("seen", "unseen")
#: ALFRED data/splits/oct21.json: valid_unseen uses only these floor plans.
VALID_UNSEEN_FLOOR_PLANS: tuple[int, ...] = (10, 219, 308, 424)
#: ALFRED data/splits/oct21.json: floor plans in no train (or valid_seen) trajectory
#: besides the valid_unseen ones, i.e. held out for tests_unseen.
TEST_UNSEEN_FLOOR_PLANS: tuple[int, ...] = (9, 29, 215, 226, 315, 325, 404, 425)

#: EmbodiedBench envs/eb_alfred/EBAlfEnv.py ``get_env_feedback``.
FEEDBACK_SUCCESS = "Last action executed successfully."
FEEDBACK_INVALID_PREFIX = "Last action is invalid. "

#: Environment variable naming the EmbodiedBench data folder (splits/, json_2.1.0/ or trajectories/).
DATA_ENV_VAR = "EB_ALFRED_DATA_DIR"

#: Instruction styles: the six EB-ALFRED subsets, reused for generated episodes.
STYLES: tuple[str, ...] = OFFICIAL_SPLITS
#: EmbodiedBench data: long_horizon holds only heat, cool and pick-two tasks.
LONG_HORIZON_TASK_TYPES: tuple[str, ...] = (
    "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place",
)

#: Termination reasons written to ``info["termination"]``.
TERM_SUCCESS, TERM_MAX_STEPS, TERM_MAX_INVALID = "success", "max_steps", "max_invalid"
