"""What a judge's reading of an answer is, and the rubric protocols suites implement.

A suite's judge rubric (``SuitePlugin.judge``: ``"module:attr"`` of ``factory(params) -> Rubric``)
turns one judge reply into a :class:`Verdict`; a rubric that scores answers itself
(``judge.backend=local``) is a :class:`LocalScorer` and raises :class:`NotComputed` when its model
cannot be loaded here. The judge stage (:mod:`harness.judging.stage`) stores each verdict as one
row of the store's ``judgements`` table, keyed by :data:`ANSWER_KEY` and the judge's id. See
docs/judging.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from harness.types import EpisodeSpec

STATUSES = ("ok", "unreadable", "error")
#: The columns that name one stored answer (with ``judge_id``, a judgement row's key).
ANSWER_KEY = ("run_id", "suite", "split", "episode_id", "seed")

Conversation = list  # chat messages (harness.interfaces' convention: {"role", "content"})


@dataclass(frozen=True)
class Verdict:
    """A rubric's reading of one judge reply."""

    values: dict[str, float | None]
    status: str  # "ok" | "unreadable" | "error"
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {', '.join(STATUSES)}, got {self.status!r}")


class Rubric(Protocol):
    """How a suite's answers are judged (its prompts are the suite's own)."""

    version: str

    def identity(self) -> Mapping[str, Any]: ...

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool: ...

    def messages(self, episode: EpisodeSpec, answer: str) -> Conversation: ...

    def read(self, text: str, episode: EpisodeSpec) -> Verdict: ...


#: ``judge.backend`` of a judge without a judge model: the rubric scores answers itself.
LOCAL_BACKEND = "local"


class LocalScorer(Protocol):
    """A rubric that scores answers itself (``judge.backend=local``); its factory gets the
    ``judge.rubric.*`` parameters and ``model`` (``judge.model``)."""

    version: str

    def identity(self) -> Mapping[str, Any]: ...

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool: ...

    def prepare(self) -> str | None:
        """Load the scoring model; its local folder (hashed into the judge's identity), or None.
        Raises :class:`NotComputed` when it cannot be loaded here."""

    def score(self, items: Sequence[tuple[EpisodeSpec, str]]) -> list[Verdict]: ...


class NotComputed(RuntimeError):
    """A local scorer cannot run here (e.g. its model is neither cached nor downloadable)."""


def finite_value(v: Any) -> float | None:
    """A verdict value as stored and compared: a finite float, else None (a bool counts as 0/1)."""
    if v is None or isinstance(v, bool):
        return None if v is None else float(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None
