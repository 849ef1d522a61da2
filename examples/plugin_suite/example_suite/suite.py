"""The example suite: episodes, protocol and a Gymnasium env."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import gymnasium as gym
from gymnasium import spaces

from harness.params import parse
from harness.spaces import FreeText, Record, TextList
from harness.types import (
    INFO_ACTION_OK, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, INFO_VALUES, EpisodeSpec, LazyEpisodes,
)

from example_suite.plugin import ExampleParams

#: Bumped whenever the rules, the episodes or the scoring change (it is in the run identity).
VERSION = "1.0.0"
SPLITS = ("train", "test")
#: The moves an agent can make (the text actions of the env).
ACTIONS = ("left", "right")
#: Steps before an episode is cut off, and invalid actions before it is ended.
MAX_STEPS = 40
MAX_INVALID_ACTIONS = 5


class ExampleSuite:
    """Reach a target on a number line. Episode ``<split>/<i>`` starts at one position and
    must reach another; episode i depends only on the split, ``generator_seed`` and i."""

    name = "example"
    version = VERSION
    #: Its env takes text actions (harness.interfaces.ACTION_KINDS).
    action_kind = "text"

    def __init__(self, **values: Any) -> None:
        #: The parsed declaration: the runner hashes its results=True fields into the run identity.
        self.params = parse(ExampleParams, values)

    def splits(self) -> Sequence[str]:
        return SPLITS

    def protocol(self, split: str) -> Mapping[str, Any]:
        """Derived constants that change results (no parameter: those come from ``params``)."""
        return {"max_steps": MAX_STEPS, "max_invalid_actions": MAX_INVALID_ACTIONS, "actions": list(ACTIONS)}

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        if split not in SPLITS:
            raise KeyError(f"unknown example split {split!r}; splits are {', '.join(SPLITS)}")
        return LazyEpisodes(lambda i: self._episode(split, i), self.params.episodes_per_split,
                            episode_id=lambda i: f"{split}/{i:03d}")

    def _episode(self, split: str, i: int) -> EpisodeSpec:
        rng = random.Random(f"example|{split}|{self.params.generator_seed}|{i}")
        start, target = rng.sample(range(self.params.size), 2)
        return EpisodeSpec(suite=self.name, split=split, episode_id=f"{split}/{i:03d}", seed=i,
                           instruction=f"Walk to position {target}.",
                           metadata={"start": start, "target": target, "size": self.params.size,
                                     "task_type": "reach"})

    def make_env(self) -> "NumberLineEnv":
        return NumberLineEnv(self.params.show_distance)


class NumberLineEnv(gym.Env):
    """Gymnasium's API, one episode at a time: ``reset(seed=, options={"episode": spec, ...})``,
    ``step("left" | "right")``. Every ``info`` carries the harness's documented keys."""

    #: What it shows and takes, as Gymnasium envs declare it (check_suite checks both).
    observation_space = Record({"text": FreeText(200), "instruction": FreeText(200), "actions": TextList()})
    action_space = spaces.Text(max_length=16)

    def __init__(self, show_distance: bool = False) -> None:
        self.show_distance = show_distance
        self._episode: EpisodeSpec | None = None

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        episode = options.get("episode")
        if not isinstance(episode, EpisodeSpec):
            raise ValueError("reset needs options={'episode': EpisodeSpec}")
        self._episode, self._privileged = episode, bool(options.get("privileged", False))
        self.position, self.target = int(episode.metadata["start"]), int(episode.metadata["target"])
        self.size = int(episode.metadata["size"])
        self.steps = self.invalid = 0
        self.ended = False
        return self._observation(), self._info(action_ok=True, feedback="", termination=None)

    def step(self, action: Any):
        if self._episode is None:
            raise RuntimeError("step before reset")
        if self.ended:  # the record is final: a step after the end is refused
            raise RuntimeError("step after the episode ended (reset first)")
        if isinstance(action, str) and action.strip() in ACTIONS:
            self.steps += 1
            move = -1 if action.strip() == "left" else 1
            self.position = min(self.size - 1, max(0, self.position + move))
            ok, feedback = True, f"You are at {self.position}."
        else:  # an unknown string, or a planner's InvalidOutput: counted, no move
            self.invalid += 1
            ok, feedback = False, f"Invalid action {str(action)[:40]!r}; use left or right."
        success = self.position == self.target
        termination = ("success" if success else "max_invalid" if self.invalid >= MAX_INVALID_ACTIONS
                       else "max_steps" if self.steps >= MAX_STEPS else None)
        terminated = termination in ("success", "max_invalid")
        truncated = termination == "max_steps"
        self.ended = terminated or truncated
        return (self._observation(), 1.0 if success else 0.0, terminated, truncated,
                self._info(action_ok=ok, feedback=feedback, termination=termination))

    def _observation(self) -> dict[str, Any]:
        text = f"You are at {self.position} on a line from 0 to {self.size - 1}."
        if self.show_distance:
            text += f" The target is {abs(self.target - self.position)} steps away."
        return {"text": text, "instruction": self._episode.instruction, "actions": list(ACTIONS)}

    def _info(self, *, action_ok: bool, feedback: str, termination: str | None) -> dict[str, Any]:
        success = self.position == self.target
        info = {
            INFO_SUCCESS: success, INFO_GC_SATISFIED: int(success), INFO_GC_TOTAL: 1,
            INFO_INVALID_ACTIONS: self.invalid, INFO_EXPERT_LENGTH: abs(int(self._episode.metadata["target"])
                                                                         - int(self._episode.metadata["start"])),
            INFO_TASK_TYPE: "reach", INFO_ACTION_OK: action_ok, INFO_FEEDBACK: feedback,
            INFO_TERMINATION: termination, INFO_VALUES: {"closeness": self._closeness()},
        }
        if self._privileged:
            info[INFO_PRIVILEGED] = {"position": self.position, "target": self.target}
        return info

    def _closeness(self) -> float:
        """The share of the start's distance walked off (0 when farther than at the start)."""
        start = abs(int(self._episode.metadata["target"]) - int(self._episode.metadata["start"]))
        return max(0.0, 1.0 - abs(self.target - self.position) / start)

    def close(self) -> None:
        self._episode = None
