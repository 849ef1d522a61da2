"""A one-step suite: each episode is one multiple-choice question.

``reset`` shows the question and its choices; the agent answers once (one action: the
letter of a choice); the episode ends there and is scored. It declares two metrics
(``example_suite.plugin:QA_SUITE``): ``accuracy``, the share of questions answered
correctly (binary, shown by default), and ``judge_score``, a 0-10 score a judge gives the
answer later (``judged``: absent until a judge has scored the run). The per-episode value
``correct`` travels in ``info["values"]`` and is stored in the record's ``values``; the
answer itself in ``info["answer"]`` (the record's ``extra["answer"]``).
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import gymnasium as gym
from gymnasium import spaces

from harness.params import parse
from harness.types import (
    INFO_ACTION_OK, INFO_ANSWER, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS, INFO_PRIVILEGED, INFO_SUCCESS,
    INFO_TASK_TYPE, INFO_TERMINATION, INFO_VALUES, EpisodeSpec, LazyEpisodes,
)

from example_suite.plugin import QAParams

VERSION = "1.0.0"
SPLITS = ("test",)
LETTERS = ("A", "B", "C", "D")
#: Question types (``harness table --by task_type`` breaks accuracy down by them).
TASK_TYPES = ("sum", "larger")


class QASuite:
    """Arithmetic multiple-choice questions; question i depends only on the split,
    ``generator_seed`` and i."""

    name = "example_qa"
    version = VERSION
    action_kind = "text"

    def __init__(self, **values: Any) -> None:
        self.params = parse(QAParams, values)

    def splits(self) -> Sequence[str]:
        return SPLITS

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"max_steps": 1, "choices": len(LETTERS), "task_types": list(TASK_TYPES)}

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        if split not in SPLITS:
            raise KeyError(f"unknown example_qa split {split!r}; splits are {', '.join(SPLITS)}")
        return LazyEpisodes(lambda i: self._episode(split, i), self.params.questions,
                            episode_id=lambda i: f"{split}/{i:03d}")

    def _episode(self, split: str, i: int) -> EpisodeSpec:
        rng = random.Random(f"example_qa|{split}|{self.params.generator_seed}|{i}")
        kind = TASK_TYPES[i % len(TASK_TYPES)]
        a, b = rng.randint(1, 50), rng.randint(1, 50)
        if kind == "sum":
            question, right = f"What is {a} + {b}?", a + b
            wrong = rng.sample([x for x in range(right - 9, right + 10) if x != right], len(LETTERS) - 1)
        else:
            while b == a:
                b = rng.randint(1, 50)
            question, right = f"Which is larger, {a} or {b}?", max(a, b)
            wrong = [min(a, b), a + b, abs(a - b) if abs(a - b) not in (a, b) else a * b + 1]
        choices = [str(right), *(str(w) for w in wrong)]
        rng.shuffle(choices)
        return EpisodeSpec(suite=self.name, split=split, episode_id=f"{split}/{i:03d}", seed=i,
                           instruction=question,
                           metadata={"choices": choices, "answer": LETTERS[choices.index(str(right))],
                                     "task_type": kind})

    def make_env(self) -> "QuestionEnv":
        return QuestionEnv()


class QuestionEnv(gym.Env):
    """One question per episode: ``reset`` shows it, the one ``step`` answers it and ends it."""

    action_space = spaces.Text(max_length=64)

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        episode = options.get("episode")
        if not isinstance(episode, EpisodeSpec):
            raise ValueError("reset needs options={'episode': EpisodeSpec}")
        self._episode, self._privileged = episode, bool(options.get("privileged", False))
        info = {INFO_SUCCESS: False, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: 0, INFO_TASK_TYPE: episode.metadata["task_type"],
                INFO_ACTION_OK: True, INFO_FEEDBACK: "", INFO_TERMINATION: None}
        if self._privileged:
            info[INFO_PRIVILEGED] = {"answer": episode.metadata["answer"]}
        return self._observation(), info

    def step(self, action: Any):
        if self._episode is None:
            raise RuntimeError("step before reset")
        answer = action.strip() if isinstance(action, str) else ""
        valid = answer in LETTERS
        correct = valid and answer == self._episode.metadata["answer"]
        info = {
            INFO_SUCCESS: correct, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: int(not valid),
            INFO_TASK_TYPE: self._episode.metadata["task_type"], INFO_ACTION_OK: valid,
            INFO_FEEDBACK: "answered", INFO_TERMINATION: "answered",
            INFO_VALUES: {"correct": int(correct)}, INFO_ANSWER: str(action)[:200],
        }
        return self._observation(), float(correct), True, False, info

    def _observation(self) -> dict[str, Any]:
        choices = self._episode.metadata["choices"]
        text = self._episode.instruction + " " + " ".join(f"{l}) {c}" for l, c in zip(LETTERS, choices))
        return {"text": text, "instruction": self._episode.instruction, "actions": list(LETTERS)}

    def close(self) -> None:
        self._episode = None


class QAOracle:
    """Answers every question correctly, from the true state (privileged: the runner resets
    the env with privileged=True for it, and reset's info reveals the answer's letter)."""

    name = "example_qa_oracle"
    privileged = True
    reads_images = False
    action_kinds = frozenset({"text"})

    def __init__(self, **values: Any) -> None:
        pass

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[Any]) -> list[list[str]]:
        return [[r.info[INFO_PRIVILEGED]["answer"]] for r in requests]
