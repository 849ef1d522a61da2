"""The ALFRED episode env on the household backend (gymnasium-style).

- ``step(action)`` takes one low-level step (:mod:`envs.alfred.language`:
  ``"PickupObject Apple"``, ``"GotoLocation CounterTop Apple"``); planners write
  FLARE triplets and expand them with :func:`envs.alfred.language.expand_all`.
- ``GotoLocation`` is a teleport to the instance the executor grounds
  (privileged navigation: it knows where every object is, as FLARE's semantic
  map would after exploring; recorded in the protocol as ``navigation``).
- ALFRED's ``t`` (models/eval/eval_task.py:60-100) is reported as
  ``info["path_length"]`` (:data:`~harness.types.INFO_PATH_LENGTH`), the T of the
  path-length weight, in the unit of the episode's L* (``expert_length``; the
  protocol's ``expert_length_unit``). On the household engine every step counts
  one (interactions and GotoLocation subgoals); on AI2-THOR (:mod:`envs.alfred.thor`)
  a GotoLocation counts the primitives it walked. As in ALFRED, a failed action
  counts, the stop does not, and the action whose failure reaches the 10-failure
  limit does not (eval_task.py:91-95 leaves the loop before ``t += 1``).
- The episode ends at ALFRED's limits: T reaching 1000 (``max_steps``, counted
  in T's unit; eval_task.py:64) or 10 failed actions (``max_fails``). A failed or
  unparseable action counts one failure. A :class:`~harness.interfaces.InvalidOutput`
  counts one failure and takes no step. ``info["env_steps"]`` counts the env
  steps taken; they too stop at 1000.
- As in ALFRED's evaluation, reaching the goal does not end the episode: the
  agent stops (an empty plan, or a ``"Stop"`` action), and success / goal
  conditions are read at that point (``goal_satisfied`` / ``goal_conditions_met``
  of the household engine, ALFRED env/tasks.py's counting).
- Episodes of the test splits carry no goal: ``gc_total`` is 0, success False.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from envs.alfred.executor import AlfredExecutor
from envs.alfred.language import GOTO, LowAction, low_actions_for, parse_low_action
from envs.alfred.protocol import MAX_FAILS, MAX_STEPS, STOP_ACTIONS, TERM_MAX_FAILS, TERM_MAX_STEPS, TERM_STOP
from envs.eb_alfred.episodes import scene_from_metadata, task_from_metadata
from envs.gym_registration import SuiteEnv, TextList, household_spaces
from envs.household import (
    ActionResult, TaskSpec, World, alfred_constants, build_world, describe, goal_conditions_met, render,
)
from envs.household.observe import IMAGE_MODES, render_frame, start_view
from harness.interfaces import InvalidOutput
from harness.types import (
    INFO_ACTION_OK, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PATH_LENGTH, INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, EpisodeSpec,
)

#: Extra info keys of this env.
INFO_ENV_STEPS = "env_steps"
INFO_FAILS = "api_failures"

#: Expert lengths of generated episodes already computed in this process.
_EXPERT_LENGTHS: dict[tuple, int | None] = {}


def _generated_expert_length(world: World, task: TaskSpec, key: tuple) -> int | None:
    if key not in _EXPERT_LENGTHS:
        from envs.alfred.agents import oracle_plan

        plan = oracle_plan(AlfredExecutor(world.copy()), task)
        _EXPERT_LENGTHS[key] = len(plan) if plan is not None else None
    return _EXPERT_LENGTHS[key]


class AlfredEnv(SuiteEnv):
    """One ALFRED episode at a time; ``reset`` with ``options={"episode": EpisodeSpec}``
    (a ``gymnasium.Env``: see :mod:`envs.gym_registration`)."""

    #: The episode metadata key holding L* in this backend's unit (envs/alfred/episodes.py).
    expert_length_key = "expert_length"

    def __init__(self, render_images: bool = True, image_size: int = 224, image: str = "frame") -> None:
        if image not in IMAGE_MODES:
            raise ValueError(f"image must be one of {', '.join(IMAGE_MODES)}, not {image!r}")
        self.render_images = render_images
        self.image_size = image_size
        #: frame: only what a camera frame shows; annotated: labels, state words, holding panel.
        self.image_mode = image
        #: the viewpoint of the image until the first successful GotoLocation (None after it).
        self._view_pose: Any = None
        self.observation_space, self.action_space = household_spaces(image_size, {"objects": TextList()})
        self._ex: AlfredExecutor | None = None
        self._spec: EpisodeSpec | None = None
        self._task: TaskSpec | None = None
        self._privileged = False
        self._render = True
        self._steps = 0
        self._t = 0
        self._fails = 0
        self._done = False
        self._termination: str | None = None
        self._expert_length: int | None = None
        self._actions: list[str] = []

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
        options = self._episode_options(seed, options)
        spec = options.get("episode")
        if not isinstance(spec, EpisodeSpec):
            raise ValueError("AlfredEnv.reset needs options={'episode': EpisodeSpec}")
        meta = spec.metadata
        task = task_from_metadata(meta) if meta.get("task_type") else None
        floor_plan = int(meta["floor_plan"])
        world_seed = spec.seed if seed is None else int(seed)
        self._spec, self._task = spec, task
        self._ex = self._start(spec, floor_plan, world_seed, task)
        world = self._ex.world
        self._view_pose = start_view(world, (meta.get("scene") or {}).get("start_pose"))
        self._privileged = bool(options.get("privileged", False))
        self._render = bool(options.get("render", True))
        self._steps = self._t = self._fails = 0
        self._done = False
        self._termination = None
        if meta.get(self.expert_length_key) is not None:
            self._expert_length = int(meta[self.expert_length_key])
        elif task is not None:
            key = (floor_plan, world_seed, task, json.dumps(meta.get("scene"), sort_keys=True))
            self._expert_length = _generated_expert_length(world.copy(), task, key)
        else:
            self._expert_length = None
        consts = alfred_constants()
        types = {o.type for o in world.objects.values()}
        self._actions = low_actions_for(
            sorted(types), consts.pickupable, frozenset(consts.val_receptacle_objects), consts.openable,
            consts.toggleable, consts.sliceable)
        return self._observation(), self._info(True, "")

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        if self._ex is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode has ended; call reset()")
        if isinstance(action, InvalidOutput):
            self._fails += 1
            ok, feedback = False, f"Unusable planner output: {action.reason}"
        elif isinstance(action, str) and action.strip().casefold() in STOP_ACTIONS:
            self._done, self._termination = True, TERM_STOP
            return self._observation(), *self._reward_and_flags(terminated=True), self._info(True, "Stopped.")
        else:
            self._steps += 1
            low = parse_low_action(action)
            if low is None:
                ok, feedback, cost = False, f"'{str(action)[:200]}' is not an action of this suite.", 1
            else:
                res, cost = self._execute(low, MAX_STEPS - self._t)
                ok, feedback = res.ok, ("Done." if res.ok else res.message)
                if ok and low.action == GOTO:
                    self._view_pose = None  # arrived: the image now shows what the agent faces
            self._t += cost
            if not ok:
                self._fails += 1
                if self._fails >= MAX_FAILS:
                    self._t -= 1  # ALFRED leaves its loop before counting this one (eval_task.py:91-95)
        terminated = truncated = False
        if self._fails >= MAX_FAILS:
            terminated, self._termination = True, TERM_MAX_FAILS
        elif self._t >= MAX_STEPS or self._steps >= MAX_STEPS:
            truncated, self._termination = True, TERM_MAX_STEPS
        self._done = terminated or truncated
        info = self._info(ok, feedback)
        reward = float(info[INFO_SUCCESS]) if self._done else 0.0
        return self._observation(), reward, terminated, truncated, info

    def _execute(self, low: LowAction, budget: int) -> tuple[ActionResult, int]:
        """Run one low-level step; (result, its cost in T's unit). Household: every step
        costs one (``budget``, the T left before the step limit, is always >= 1)."""
        assert self._ex is not None
        return self._ex.execute(low), 1

    def _start(self, spec: EpisodeSpec, floor_plan: int, world_seed: int, task: TaskSpec | None) -> AlfredExecutor:
        """The episode's start state (household: built, with the trajectory's scene facts)."""
        world = build_world(floor_plan, world_seed, task, scene=scene_from_metadata(spec.metadata))
        return AlfredExecutor(world)

    def _image(self) -> Any:
        world = self.world
        if self.image_mode == "frame":
            return render_frame(world, size=self.image_size, pose=self._view_pose)
        # Labels in the triplet language's names: object types (no engine ids).
        return render(world, size=self.image_size, name=lambda k: world.objects[k].type)

    def _reward_and_flags(self, terminated: bool) -> tuple[float, bool, bool]:
        s, ts = self._gc()
        return float(ts > 0 and s == ts), terminated, False

    def close(self) -> None:
        self._ex = None

    def render(self) -> Any:
        """``rgb_array``: the current view (gymnasium's ``render``)."""
        return self._image() if self._ex is not None else None

    @property
    def world(self) -> World:
        assert self._ex is not None
        return self._ex.world

    @property
    def executor(self) -> AlfredExecutor:
        assert self._ex is not None
        return self._ex

    def _gc(self) -> tuple[int, int]:
        if self._task is None:
            return 0, 0
        return goal_conditions_met(self.world, self._task)

    def _observation(self) -> dict[str, Any]:
        assert self._spec is not None
        world = self.world
        return {
            "text": describe(world),
            "image": self._image() if (self.render_images and self._render) else None,
            "actions": list(self._actions),
            "objects": sorted({o.type for o in world.objects.values() if not o.inactive}),
            "instruction": self._spec.instruction,
        }

    def _info(self, ok: bool, feedback: str) -> dict[str, Any]:
        s, ts = self._gc()
        info: dict[str, Any] = {
            INFO_SUCCESS: ts > 0 and s == ts,
            INFO_GC_SATISFIED: s,
            INFO_GC_TOTAL: ts,
            INFO_INVALID_ACTIONS: self._fails,
            INFO_EXPERT_LENGTH: self._expert_length,
            INFO_TASK_TYPE: self._task.task_type if self._task is not None else None,
            INFO_ACTION_OK: ok,
            INFO_FEEDBACK: feedback,
            INFO_TERMINATION: self._termination,
            INFO_PATH_LENGTH: self._t,
            INFO_ENV_STEPS: self._steps,
            INFO_FAILS: self._fails,
        }
        if self._privileged:
            info[INFO_PRIVILEGED] = {"world": self.world.copy(), "recent": list(self.executor.recent),
                                     "placed": sorted(self.executor.placed)}
        return info
