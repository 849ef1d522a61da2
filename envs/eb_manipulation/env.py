"""The EB-Manipulation episode env (Gymnasium API) on the MuJoCo twin.

Rules (EmbodiedBench ``EBManEnv.py`` / ``eb_manipulation_evaluator.py``; the reference file):

* ``step(action)`` takes 7 integers ``[X, Y, Z, Roll, Pitch, Yaw, Gripper]`` (ints, or floats
  that are integral). The gripper moves to that absolute pose through the joint controller
  (at most :data:`sim.MAX_STEPS_PER_ACTION` simulator steps), then the fingers act if their
  commanded state changed. A target outside the workspace or with no IK solution fails: the
  step still counts, reward -1, nothing moves, the feedback gives the reason. As in the
  original, such a failed motion does not interrupt the plan (it is counted in
  ``invalid_actions``, as the original's feedback calls it invalid) (``action_ok`` stays True; the
  failure is in ``info["motion_ok"]`` and the feedback) unless the suite is built with
  ``replan_on_failure=True``.
* A malformed action (not 7 integral numbers: a string, ``None``, a wrong length, a fraction,
  an int beyond float range) is an *invalid action* as in the original (``EBManEnv.py:172-198``:
  the continuous conversion fails): one of the 15 steps, reward -1, no motion, counted in
  ``invalid_actions``; ``action_ok=False`` (the shared contract), so the rest of the plan is
  dropped and the model is asked again, where the original runs the plan's next action.
  An :class:`harness.interfaces.InvalidOutput` (the planner's ``on_bad_output=invalid`` option)
  is counted the same way with ``action_ok=False``. A list containing NaN or infinity breaks
  the agent contract and raises ``AgentContractError``.
* Success per family (checked after motion, gripper and settling): pick / place: the
  object's centre inside the container's / sorter's inner volume; stack: both objects within
  3 cm of the bottom one's start (the top one resting on the bottom one), the step's gripper
  open, and still so after the same pose is repeated 3 cm higher (not a counted step); wipe:
  at most 25 of the 50 dirt spots left. Reward 1 on success, and also when the same condition
  held at one of the checks along the arm's motion (every 50 ms, as the original checks after
  each simulation step of the path) though not at the end (the episode then goes on); 0
  otherwise; -1 on a failed motion. A stack whose goal holds at the end keeps the original's
  release rule (a closed gripper or a failed 3 cm check scores 0).
* The episode ends on success (terminated, "success") or after 15 steps (truncated, "max_steps").

Goal conditions: the suite has none (``gc_satisfied = gc_total = 0``), as the original.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from envs.eb_manipulation import grammar as G
from envs.gym_registration import AnyValue, FreeText, Record, SuiteEnv, image_space
from gymnasium import spaces
from envs.eb_manipulation import sim as S
from harness.interfaces import AgentContractError, InvalidOutput
from harness.types import (
    INFO_ACTION_OK, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, EpisodeSpec,
)
from envs.eb_manipulation.plugin import IMAGE_SIZE  # the original's 500 x 500 front image

#: EmbodiedBench ``EBManEnv._max_episode_steps``.
MAX_STEPS = 15
#: The stack release check lifts the same pose by 3 cm (EBManEnv.step).
STACK_RELEASE_LIFT = 0.03
TERM_SUCCESS, TERM_MAX_STEPS = "success", "max_steps"

INFO_MOTION_OK = "motion_ok"
INFO_ENV_STEPS = "env_steps"
INFO_SIM_STEPS = "sim_steps"
INFO_REWARD = "reward"


def object_entries(world: S.PandaTable) -> list[tuple[str, np.ndarray]]:
    """(sim name, visible-surface centroid) of every task object some camera sees, in layout
    order (:meth:`sim.PandaTable.visible_surface_centroids`). Wipe areas lie flush with the
    table and are seen like any object; the invisible dirt is never an object."""
    names = [o["name"] for o in world.layout["objects"]]
    seen = world.visible_surface_centroids(names)
    return [(n, seen[n]) for n in names if n in seen]


def object_coordinates(entries: list[tuple[str, np.ndarray]]) -> tuple[dict[str, list[int]], list[str]]:
    """The model's coordinate dictionary: bins, sorted by Y bin ascending (stable), renamed
    ``object 1..N``; also the sim names in that order."""
    binned = [(name, G.position_to_bin(p)) for name, p in entries]
    binned.sort(key=lambda item: item[1][1])
    return {f"object {i + 1}": b for i, (_, b) in enumerate(binned)}, [n for n, _ in binned]


class EBManipulationEnv(SuiteEnv):
    """One EB-Manipulation episode at a time; ``reset(options={"episode": EpisodeSpec})``
    (a ``gymnasium.Env``: see :mod:`envs.gym_registration`)."""

    def __init__(self, render: bool = True, image_size: int = IMAGE_SIZE, annotate: bool = True,
                 wrist: bool = False, replan_on_failure: bool = False) -> None:
        self.render_images = render
        self.image_size = int(image_size)
        self.annotate = annotate
        self.wrist = wrist
        self.replan_on_failure = replan_on_failure
        # 7 bins [X, Y, Z, Roll, Pitch, Yaw, Gripper]: positions 0..100, rotations 0..120, gripper 0/1.
        self.action_space = spaces.MultiDiscrete([G.VOXEL_SIZE + 1] * 3 + [G.ROTATION_BINS + 1] * 3 + [2])
        self.observation_space = Record(
            {"instruction": FreeText(), "object_coordinates": AnyValue(dict), "object_coordinates_text": FreeText(),
             "feedback": FreeText()},
            optional={"image": image_space(self.image_size),
                      **({"wrist_image": image_space(self.image_size)} if wrist else {})})
        self.world: S.PandaTable | None = None
        self._renderer = None
        self._spec: EpisodeSpec | None = None

    # --- gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
        options = self._episode_options(seed, options)
        spec = options.get("episode")
        if not isinstance(spec, EpisodeSpec):
            raise ValueError("reset needs options={'episode': EpisodeSpec}")
        self._spec = spec
        self._privileged = bool(options.get("privileged", False))
        self._render_now = self.render_images and bool(options.get("render", True))
        self._close_renderer()
        self.world = S.PandaTable(spec.metadata["scene"])
        self._steps = 0
        self._invalid = 0
        self._done = False
        self._success = False
        self._termination: str | None = None
        self._feedback = ""
        return self._observe(), self._info(action_ok=True, motion_ok=True, reward=0.0)

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        if self.world is None or self._spec is None:
            raise RuntimeError("reset the env before stepping")
        if self._done:
            raise RuntimeError("the episode has ended; reset the env")
        if not isinstance(action, InvalidOutput) and G.is_non_finite(action):
            raise AgentContractError(f"action contains NaN or infinity: {action!r}")
        self._steps += 1
        reward, motion_ok, action_ok = 0.0, True, True
        if isinstance(action, InvalidOutput):
            self._invalid += 1
            action_ok = False
            self._feedback = self._format_feedback(action.reason, 0.0)
        else:
            try:
                act = G.validate_action(action)
            except G.ActionFormatError as e:
                # the original (EBManEnv.py:172-198) counts the step as invalid, reward -1; unlike
                # its evaluator (eb_manipulation_evaluator.py:141), the rest of the plan is not run:
                # the shared env contract reports a malformed action with action_ok=False
                self._invalid += 1
                reward = -1.0
                action_ok = False
                self._feedback = self._format_feedback(str(e), reward)
            else:
                reward, motion_ok, reason = self._execute(act)
                if not motion_ok:
                    self._invalid += 1
                    if self.replan_on_failure:
                        action_ok = False
                self._feedback = self._format_feedback(None if motion_ok else reason, reward)
        terminated = truncated = False
        if self._success:
            terminated, self._termination = True, TERM_SUCCESS
        elif self._steps >= MAX_STEPS:
            truncated, self._termination = True, TERM_MAX_STEPS
        self._done = terminated or truncated
        return (self._observe(), float(reward), terminated, truncated,
                self._info(action_ok=action_ok, motion_ok=motion_ok, reward=reward))

    def close(self) -> None:
        self._close_renderer()
        self.world = None

    def render(self) -> Any:
        """``rgb_array``: the front camera with the object labels (gymnasium's ``render``)."""
        if self.world is None:
            return None
        from envs.eb_manipulation import render as R
        if self._renderer is None:
            self._renderer = R.SceneRenderer(self.world.model, self.image_size)
        order = object_coordinates(object_entries(self.world))[1]
        return self._renderer.front(self.world, order if self.annotate else None, annotate=self.annotate)

    # --- rules ------------------------------------------------------------------------------
    def _execute(self, act: list[int]) -> tuple[float, bool, str]:
        world = self.world
        pose = G.action_to_pose(act)
        rot = pose.rotation @ S.TIP_TO_SITE  # the action names the original's tip frame
        res = world.move_to(pose.position, rot, watch=self._check)
        if not res.ok:
            return -1.0, False, res.reason
        world.set_gripper(pose.gripper_open)
        success = self._check()
        # the original's reward is 1 when the goal held along the arm's path or holds at the end
        # (amsolver/task_environment.py:217-230, 423-430); the episode ends only when it holds at
        # the end (EBManEnv.py:210-213: task_success = terminate and reward == 1)
        reward = 1.0 if (success or res.goal_on_path) else 0.0
        if success and world.layout["task_class"] == "stack":
            # EBManEnv.py:175-192, taken only when the goal holds at the end
            if not pose.gripper_open:
                success = False  # the original: a closed gripper scores 0 and does not end
            else:
                lifted = pose.position + np.array([0.0, 0.0, STACK_RELEASE_LIFT])
                if world.move_to(lifted, rot).ok:
                    success = self._check()
                else:
                    success = False
            reward = 1.0 if success else 0.0
        self._success = bool(success)
        return reward, True, ""

    def _check(self) -> bool:
        world, layout = self.world, self.world.layout
        t, cls = layout["target"], layout["task_class"]
        if cls == "pick":
            return world.inside(t["object"], t["container"])
        if cls == "place":
            return world.inside(t["object"], "sorter")
        if cls == "stack":
            return world.stacked(t["top"], t["bottom"])
        if cls == "wipe":
            return world.spots_left() <= S.DIRT_SUCCESS_MAX_LEFT
        raise ValueError(cls)

    def _format_feedback(self, failure: str | None, reward: float) -> str:
        """The step's feedback: the original's facts in its order and format, in our words
        (EBManEnv.py:237-252): the instruction lower-cased as given, the steps executed so far
        (this one included, :170), ``valid. `` or ``invalid. <reason>.`` (no space after that
        full stop, as there), then the step's reward as Python prints the original's: ``-1``
        after a failed action (the int its handler sets, :195-198), else a float (``0.0``, ``1.0``)."""
        verdict = "valid. " if failure is None else f"invalid. {failure}."
        shown = "-1" if failure is not None and reward == -1 else repr(float(reward))
        return (f"The task under way is to {self._spec.instruction.lower()} Steps executed so far: {self._steps}. "
                f"The last action was {verdict}The reward now is {shown}.")

    # --- observation ---------------------------------------------------------------------------
    def _observe(self) -> dict[str, Any]:
        entries = object_entries(self.world)
        coords, order = object_coordinates(entries)
        obs: dict[str, Any] = {
            "instruction": self._spec.instruction,
            "object_coordinates": coords,
            "object_coordinates_text": str(coords),
            "feedback": self._feedback,
            "image": None,
        }
        if self._render_now:
            from envs.eb_manipulation import render as R
            if self._renderer is None:
                self._renderer = R.SceneRenderer(self.world.model, self.image_size)
            obs["image"] = self._renderer.front(self.world, order if self.annotate else None, annotate=self.annotate)
            if self.wrist:
                obs["wrist_image"] = self._renderer.wrist(self.world)
        return obs

    def _close_renderer(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def privileged_state(self) -> dict[str, Any]:
        world = self.world
        objs = {}
        for o in world.layout["objects"]:
            r = world.body_rot(o["name"])
            objs[o["name"]] = {**o, "xyz": world.body_pos(o["name"]).tolist(),
                               "yaw_now": float(math.atan2(r[1, 0], r[0, 0])), "z_axis": r[:, 2].tolist()}
        return {
            "task_class": world.layout["task_class"], "family": world.layout["family"],
            "target": dict(world.layout["target"]), "objects": objs,
            "spots_left": world.spots_left(), "ee_position": world.ee_pose()[0].tolist(),
            "gripper_open": world.gripper_open, "steps": self._steps,
            "ee_finger_yaw": float(math.atan2(world.ee_pose()[1][1, 0], world.ee_pose()[1][0, 0])),
        }

    def _info(self, *, action_ok: bool, motion_ok: bool, reward: float) -> dict[str, Any]:
        info = {
            INFO_SUCCESS: self._success,
            INFO_GC_SATISFIED: 0,
            INFO_GC_TOTAL: 0,
            INFO_INVALID_ACTIONS: self._invalid,
            INFO_EXPERT_LENGTH: None,
            INFO_TASK_TYPE: self._spec.metadata.get("task_class"),
            INFO_ACTION_OK: action_ok,
            INFO_FEEDBACK: self._feedback,
            INFO_TERMINATION: self._termination,
            INFO_MOTION_OK: motion_ok,
            INFO_REWARD: float(reward),
            INFO_ENV_STEPS: self._steps,
            INFO_SIM_STEPS: self.world.sim_steps,
            "instruction": self._spec.instruction,
        }
        if self._privileged:
            info[INFO_PRIVILEGED] = self.privileged_state()
        return info
