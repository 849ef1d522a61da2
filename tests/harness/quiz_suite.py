"""A one-step multiple-choice question suite, written as a third party would: its episodes,
its env, its failure reader and failure classes, its oracle. Registered in-process by the
tests that use it (:func:`registered`), the way its entry points would register it.

Each episode asks one question with choices A-D; the agent answers with one letter. A
letter is the episode's one step (success when right); anything else is an invalid action
(no step taken), and the second invalid action ends the episode.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from harness.interfaces import FailedEpisode, FailureClass
from harness.params import param, parse
from harness.plugins import AgentPlugin, SuitePlugin
from harness.types import EpisodeSpec

CHOICES = ("A", "B", "C", "D")
WRONG = "That is not the answer."
RIGHT = "Correct."
NOT_A_CHOICE = "Not one of the choices A, B, C, D."


@dataclass
class QuizParams:
    questions: int = param(10, ge=1, le=1000, help="questions per split")
    generator_seed: int = param(0, ge=0, le=1000, help="seed of the questions' answers")


class QuizSuite:
    name = "quiz"
    version = "1"
    action_kind = "text"
    Params = QuizParams

    def __init__(self, **values: Any):
        self.params = parse(QuizParams, values)

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"max_steps": 1, "max_invalid_actions": 2, "generator_seed": self.params.generator_seed}

    def splits(self) -> list[str]:
        return ["test"]

    def episodes(self, split: str) -> list[EpisodeSpec]:
        if split != "test":
            raise KeyError(split)
        rng = random.Random(self.params.generator_seed)
        return [EpisodeSpec(suite=self.name, split=split, episode_id=f"q{i:03d}", seed=i,
                            instruction=f"Question {i}: which letter is it?",
                            metadata={"answer": rng.choice(CHOICES), "topic": "letters"})
                for i in range(self.params.questions)]

    def make_env(self) -> "QuizEnv":
        return QuizEnv()


class QuizEnv:
    def __init__(self) -> None:
        self.answer = ""
        self.invalid = 0
        self.done = True

    def _info(self, success: bool = False, **more: Any) -> dict[str, Any]:
        return {"success": success, "gc_satisfied": int(success), "gc_total": 1,
                "invalid_actions": self.invalid, **more}

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        episode = (options or {})["episode"]
        self.answer, self.invalid, self.done = episode.metadata["answer"], 0, False
        info = self._info(feedback="")
        if (options or {}).get("privileged"):
            info["privileged_state"] = {"answer": self.answer}
        return episode.instruction, info

    def step(self, action: Any):
        if self.done:
            raise RuntimeError("step after the episode ended")
        text = action.strip().upper() if isinstance(action, str) else ""
        if text not in CHOICES:
            self.invalid += 1
            self.done = self.invalid >= 2
            return ("", 0.0, False, self.done,
                    self._info(action_ok=False, feedback=NOT_A_CHOICE,
                               **({"termination": "max_invalid"} if self.done else {})))
        self.done = True
        right = text == self.answer
        return ("", float(right), True, False,
                self._info(success=right, action_ok=True, feedback=RIGHT if right else WRONG,
                           termination="success" if right else "answered"))

    def close(self) -> None:
        pass


class QuizRules:
    """Its failure reader: a wrong letter is ``wrong_answer``; the task fact is the answer."""

    def task_of(self, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return {"answer": metadata["answer"]} if "answer" in metadata else None

    def classify(self, episode: FailedEpisode) -> str | None:
        if any(len(h) > 1 and h[1] == WRONG for h in episode.history):
            return "wrong_answer"
        return None


class QuizOracle:
    name = "oracle"
    privileged = True
    action_kinds = ("text",)

    def __init__(self, **values: Any):
        self.params = None

    def identity(self) -> Mapping[str, Any]:
        return {"agent": "quiz-oracle"}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests):
        return [[r.info["privileged_state"]["answer"]] for r in requests]


class AlwaysA:
    """Answers A to every question (right about a quarter of the time)."""

    name = "always_a"
    privileged = False
    action_kinds = ("text",)

    def __init__(self, **values: Any):
        self.params = None

    def identity(self) -> Mapping[str, Any]:
        return {"agent": "always-a"}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests):
        return [["A"] for _ in requests]


WRONG_ANSWER = FailureClass("wrong_answer", "answered with a wrong choice", 100, "#d62728")

SUITE = SuitePlugin(name="quiz", target="tests.harness.quiz_suite:QuizSuite", params=QuizParams,
                    default_split="test", failures="tests.harness.quiz_suite:QuizRules",
                    failure_classes=(WRONG_ANSWER,), summary="test: one-step multiple-choice questions")
ORACLE = AgentPlugin(name="oracle", suite="quiz", target="tests.harness.quiz_suite:QuizOracle",
                     summary="test: the answer, from the true state")


@contextlib.contextmanager
def registered(*plugins: Any) -> Iterator[None]:
    """``plugins`` (default: the quiz suite and its oracle) in the registries while the block
    runs, as an installed package's entry points would put them."""
    from harness.scoring import failures
    from harness.registry.catalog import PLANNERS, SUITES

    plugins = plugins or (SUITE, ORACLE)
    added = []
    for p in plugins:
        registry = SUITES if isinstance(p, SuitePlugin) else PLANNERS
        registry.add(p)
        added.append((registry, p))
    failures.rules_for.cache_clear()
    failures.declared_classes.cache_clear()
    try:
        yield
    finally:
        for registry, p in added:
            registry._entries.pop((p.name, getattr(p, "suite", None)), None)  # noqa: SLF001
        failures.rules_for.cache_clear()
        failures.declared_classes.cache_clear()
