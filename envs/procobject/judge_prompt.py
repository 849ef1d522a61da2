"""Our judge prompt for ProcObject-10K answers, and its reply parsed into J.

The paper's answering judge (WenliangGuo/ProcObject-10K-Page at
21702a847363a58df645ba9919805befb91fc212, tools/paper/5_experiment.tex, "Answering Metrics")
scores each answer from 0 to 5 on four dimensions: contextual integration (factual consistency),
detail orientation (fine-grained completeness), contextual understanding (narrative and causal
flow) and temporal understanding (event order and state changes); J is the mean over the four
dimensions and over every judge model. Its prompt was not readable here; this one is ours,
written from that description (:data:`JUDGE_PROMPT_VERSION` goes into the identity). The judge
sees the question, the reference answer and the candidate answer (no video).

:func:`parse_judge_reply` reads the four integers 0..5; anything else is an explicit unreadable
verdict with its reason (never a 0). :func:`combine` averages J over several judges' readable
verdicts and counts the unreadable ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from envs.procobject.answer import json_object

JUDGE_PROMPT_VERSION = "procobject-judge-1"
DIMENSIONS = ("contextual_integration", "detail_orientation", "contextual_understanding", "temporal_understanding")
SCORE_MIN, SCORE_MAX = 0, 5

_TEMPLATE = (
    "You grade an answer to a question about a short procedural video (someone cooking, assembling or "
    "repairing something). You do not see the video; compare the answer with the reference answer, which is "
    "correct.\n\n"
    "Give four whole-number scores from 0 (worst) to 5 (best):\n"
    "- contextual_integration: are the answer's facts consistent with the reference (no invented or "
    "contradicting facts)?\n"
    "- detail_orientation: does it cover the specific objects, states and steps the reference names?\n"
    "- contextual_understanding: does it follow the narrative and the causes and effects correctly?\n"
    "- temporal_understanding: does it get the order of events and the changes of state right?\n\n"
    "Question:\n{question}\n\nReference answer:\n{reference}\n\nAnswer to grade:\n{answer}\n\n"
    'Reply with one JSON object and nothing else: {{"contextual_integration": <0-5>, "detail_orientation": '
    '<0-5>, "contextual_understanding": <0-5>, "temporal_understanding": <0-5>, "rationale": "<one sentence>"}}'
)


def build_judge_prompt(*, question: str, reference: str, answer: str) -> str:
    return _TEMPLATE.format(question=question.strip(), reference=reference.strip(), answer=answer.strip())


@dataclass(frozen=True)
class Verdict:
    status: str  # "ok" | "unreadable"
    problem: str = ""
    scores: tuple[int, ...] = ()

    @property
    def j(self) -> float | None:
        """The mean of the four dimensions, or None when unreadable."""
        return sum(self.scores) / len(self.scores) if self.status == "ok" else None


def _score(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if value != int(value) or not SCORE_MIN <= value <= SCORE_MAX:
        return None
    return int(value)


def parse_judge_reply(reply: str) -> Verdict:
    obj = json_object(reply)
    if obj is None:
        return Verdict("unreadable", "no_json")
    scores = []
    for dim in DIMENSIONS:
        got = _score(obj.get(dim))
        if got is None:
            return Verdict("unreadable", f"bad_{dim}")
        scores.append(got)
    return Verdict("ok", scores=tuple(scores))


def combine(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """J over several judges (the mean of their readable J), with the count of unreadable ones."""
    ok = [v for v in verdicts if v.status == "ok"]
    return {"j": sum(v.j for v in ok) / len(ok) if ok else None, "judged": len(ok),
            "unreadable": len(verdicts) - len(ok)}
