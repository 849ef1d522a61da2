"""The EB-ALFRED episode env (gymnasium-style) on the household backend.

Episode rules (EmbodiedBench EBAlfEnv.py / eb_alfred_evaluator.py):

- ``step(action)`` takes a skill string or an action id into the scene's list.
- A well-formed skill runs in the backend and counts as an env step; if it fails
  it also counts as an invalid action, with feedback "Last action is invalid. <reason>".
- Anything that is not an action of the skill language (unknown text, an
  out-of-range id, a non-string) is an invalid action *without* an env step:
  in EmbodiedBench such output never reaches the env (the planner's
  ``json_to_action`` returns -1 and the evaluator adds one invalid action).
- An :class:`InvalidOutput` with ``costs_step`` (a float / bool / NaN action id under the
  ``embodiedbench`` parser) takes one env step and no invalid action: EmbodiedBench's step
  counts the step, then raises on an id that is not an int (EBAlfEnv.py:296-302).
- The episode ends on success (terminated), at 10 invalid actions (terminated,
  "max_invalid") or after 30 env steps (truncated, "max_steps").
"""

from __future__ import annotations

from typing import Any, Mapping

import json

from envs.eb_alfred.episodes import scene_from_metadata, task_from_metadata
from envs.eb_alfred.executor import ExecutorState, SkillExecutor
from envs.eb_alfred.expert import expert_plan
from envs.eb_alfred.protocol import (
    FEEDBACK_INVALID_PREFIX, FEEDBACK_SUCCESS, MAX_INVALID_ACTIONS, MAX_STEPS, TERM_MAX_INVALID, TERM_MAX_STEPS,
    TERM_SUCCESS,
)
from envs.eb_alfred.skills import FIND, SceneVocabulary, Skill, parse_skill
from envs.gym_registration import SuiteEnv, household_spaces
from envs.household import TaskSpec, World, build_world, describe, goal_conditions_met, render
from envs.household.observe import IMAGE_MODES, render_frame, start_view
from harness.interfaces import InvalidOutput
from harness.types import (
    INFO_ACTION_OK, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, EpisodeSpec,
)

#: Side of the rendered observation image (pixels): the planner's input size, so no
#: upscaling (EmbodiedBench EBAlfEnv.py:97 ``resolution=500``, the AI2-THOR frame size).
IMAGE_SIZE = 500

#: Extra info keys of this env.
INFO_ENV_STEPS = "env_steps"
INFO_ACTION = "action"


#: Expert lengths already computed in this process, by (floor plan, world seed, task, scene).
_EXPERT_LENGTHS: dict[tuple[int, int, TaskSpec, str], int | None] = {}


def _expert_length(spec: EpisodeSpec, floor_plan: int, world_seed: int, task: TaskSpec,
                   executor: SkillExecutor) -> int | None:
    """L* of the episode: from the episode's metadata when it was computed for this
    very world (generated episodes), else planned once per process and cached."""
    if spec.metadata.get("expert_length_seed") == world_seed and "expert_length" in spec.metadata:
        return int(spec.metadata["expert_length"])
    key = (floor_plan, world_seed, task, json.dumps(spec.metadata.get("scene"), sort_keys=True))
    if key not in _EXPERT_LENGTHS:
        # expert_plan works on copies of the executor's world; the live state is untouched.
        plan = expert_plan(executor, task)
        _EXPERT_LENGTHS[key] = len(plan) if plan is not None else None
    return _EXPERT_LENGTHS[key]


class EBAlfredEnv(SuiteEnv):
    """One EB-ALFRED episode at a time; ``reset`` with ``options={"episode": EpisodeSpec}``
    (a ``gymnasium.Env``: see :mod:`envs.gym_registration`)."""

    def __init__(self, backend: str = "household", render_images: bool = True, image_size: int = IMAGE_SIZE,
                 image: str = "frame") -> None:
        if backend != "household":
            raise ValueError(f"EB-ALFRED backend {backend!r} is not available here; use 'household'")
        if image not in IMAGE_MODES:
            raise ValueError(f"image must be one of {', '.join(IMAGE_MODES)}, not {image!r}")
        self.backend = backend
        self.render_images = render_images
        self.image_size = image_size
        #: frame: only what a camera frame shows; annotated: labels, state words, holding panel.
        self.image_mode = image
        #: the viewpoint of the image until the first successful ``find`` (None after it).
        self._view_pose: Any = None
        self.observation_space, self.action_space = household_spaces(image_size)
        self._executor: SkillExecutor | None = None
        self._spec: EpisodeSpec | None = None
        self._task: TaskSpec | None = None
        self._privileged = False
        self._steps = 0
        self._invalid = 0
        self._done = False
        self._termination: str | None = None
        self._expert_length: int | None = None
        self._render_now = render_images
        self._image: Any = None

    # --- gymnasium API ------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
        """Start the episode ``options["episode"]``; raises ValueError/SceneError if it cannot be built."""
        options = self._episode_options(seed, options)
        spec = options.get("episode")
        if not isinstance(spec, EpisodeSpec):
            raise ValueError("EBAlfredEnv.reset needs options={'episode': EpisodeSpec}")
        task = task_from_metadata(spec.metadata)
        floor_plan = int(spec.metadata["floor_plan"])
        world_seed = spec.seed if seed is None else int(seed)
        # SceneError names what is missing; a restored scene (official episodes with a
        # trajectory file) fixes instance counts, start receptacles, lamps and the faced receptacle.
        self._executor = self._start(spec, floor_plan, world_seed, task)
        self._spec, self._task = spec, task
        self._privileged = bool(options.get("privileged", False))
        # An agent that never reads images (options["render"] False) gets none: no rendering cost.
        self._render_now = self.render_images and bool(options.get("render", True))
        self._image = None
        scene = spec.metadata.get("scene") or {}
        self._view_pose = start_view(self.world, scene.get("start_pose"))
        self._steps = self._invalid = 0
        self._done = False
        self._termination = None
        self._expert_length = _expert_length(spec, floor_plan, world_seed, task, self._executor)
        return self._observation(changed=True), self._info(action_ok=True, feedback="")

    def _start(self, spec: EpisodeSpec, floor_plan: int, world_seed: int, task: TaskSpec) -> SkillExecutor:
        """The episode's start state (household: built, with the trajectory's scene facts when known)."""
        world = build_world(floor_plan, world_seed, task, scene=scene_from_metadata(spec.metadata))
        return SkillExecutor(world, SceneVocabulary(world), ExecutorState())

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        if self._executor is None or self._task is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode has ended; call reset()")
        skill, text = self._to_skill(action)
        if isinstance(action, InvalidOutput) and action.costs_step:
            # A float/bool/NaN id: EmbodiedBench's step counts the step, then raises (EBAlfEnv.py:296-302).
            self._steps += 1
            ok, feedback = False, f"The action could not be executed: {action.reason}"
        elif isinstance(action, InvalidOutput):
            # Unusable model output: one invalid action, no env step (EmbodiedBench's evaluator).
            self._invalid += 1
            ok, feedback = False, FEEDBACK_INVALID_PREFIX + f"The output could not be used: {action.reason}"
        elif skill is None:
            self._invalid += 1
            ok, feedback = False, FEEDBACK_INVALID_PREFIX + (
                f"'{text}' is not a valid action. Choose an action from the available action list.")
        else:
            self._steps += 1
            res = self._executor.execute(skill)
            ok = res.ok
            if ok and skill.verb == FIND:
                self._view_pose = None  # teleported: the image now shows what the agent faces
            if ok:
                feedback = FEEDBACK_SUCCESS
            else:
                self._invalid += 1
                feedback = FEEDBACK_INVALID_PREFIX + res.message
        s, ts = goal_conditions_met(self.world, self._task)
        success = s == ts
        terminated = truncated = False
        if success:
            terminated, self._termination = True, TERM_SUCCESS
        elif self._invalid >= MAX_INVALID_ACTIONS:
            terminated, self._termination = True, TERM_MAX_INVALID
        elif self._steps >= MAX_STEPS:
            truncated, self._termination = True, TERM_MAX_STEPS
        self._done = terminated or truncated
        info = self._info(action_ok=ok, feedback=feedback, gc=(s, ts))
        info[INFO_ACTION] = skill.text if skill is not None else text
        # Output that is not a skill takes no env step and changes nothing: the last image is reused.
        return self._observation(changed=skill is not None), float(success), terminated, truncated, info

    def close(self) -> None:
        self._executor = None

    def render(self) -> Any:
        """``rgb_array``: the current view (gymnasium's ``render``), as the observation draws it."""
        return self._draw() if self._executor is not None else None

    def _draw(self) -> Any:
        """The observation image in the env's mode (:mod:`envs.household.observe`)."""
        world = self.world
        if self.image_mode == "frame":
            return render_frame(world, size=self.image_size, pose=self._view_pose)
        vocab = self._executor.vocab if self._executor is not None else None
        namer = (lambda k: vocab.display_name(world, k)) if vocab is not None else None
        return render(world, size=self.image_size, name=namer)

    # --- helpers ------------------------------------------------------------------
    @property
    def world(self) -> World:
        assert self._executor is not None
        return self._executor.world

    @property
    def actions(self) -> tuple[str, ...]:
        """The scene's numbered action list (index = action id)."""
        assert self._executor is not None
        return self._executor.vocab.actions

    def _to_skill(self, action: Any) -> tuple[Skill | None, str]:
        actions = self.actions
        if isinstance(action, InvalidOutput):
            return None, action.raw[:200]
        if isinstance(action, bool):
            return None, repr(action)
        if isinstance(action, int):
            if 0 <= action < len(actions):
                return parse_skill(actions[action]), actions[action]
            return None, f"action id {action}"
        if isinstance(action, str):
            text = action.strip()
            skill = parse_skill(text)
            return skill, text[:200]
        return None, repr(action)[:200]

    def _observation(self, changed: bool) -> dict[str, Any]:
        assert self._spec is not None
        world = self.world
        if self._render_now and (changed or self._image is None):
            self._image = self._draw()
        return {
            "text": describe(world),
            "image": None if self._image is None else self._image.copy(),
            "actions": list(self.actions),
            "instruction": self._spec.instruction,
        }

    def _info(self, *, action_ok: bool, feedback: str, gc: tuple[int, int] | None = None) -> dict[str, Any]:
        assert self._task is not None
        s, ts = gc if gc is not None else goal_conditions_met(self.world, self._task)
        info: dict[str, Any] = {
            INFO_SUCCESS: s == ts,
            INFO_GC_SATISFIED: s,
            INFO_GC_TOTAL: ts,
            INFO_INVALID_ACTIONS: self._invalid,
            INFO_EXPERT_LENGTH: self._expert_length,
            INFO_TASK_TYPE: self._task.task_type,
            INFO_ACTION_OK: action_ok,
            INFO_FEEDBACK: feedback,
            INFO_TERMINATION: self._termination,
            INFO_ENV_STEPS: self._steps,
        }
        if self._privileged:
            info[INFO_PRIVILEGED] = self.world.copy()
        return info
