"""Reading a model's ProcObject-10K reply: ``{"answer": "...", "evidence": [[t0, t1], ...]}``,
times in seconds from the clip's start (the reference evidence's frame, envs/procobject/data.py).

Nothing is dropped silently. Every reply gets a :class:`Reply` with a status and, per span, the
reason it was refused:

- ``unreadable_json``: no JSON object (fence removed; else first ``{`` to last ``}``), or no
  non-empty string ``answer``. The question stays in every mean: no answer text, and its
  grounding is scored on an empty prediction (0).
- spans: each element of ``evidence`` must be a pair of finite numbers ``[s, e]`` with
  ``0 <= s <= e <= duration + PAST_CLIP_TOLERANCE_S``. Refused spans are left out of the
  prediction and counted by reason: ``not_a_pair``, ``not_a_number``, ``negative``,
  ``reversed``, ``past_clip``. The rest are scored. A missing or empty ``evidence`` is an empty
  prediction (``no_evidence``), scored 0; an ``evidence`` that is not a list is ``bad_evidence``.

Tolerance: clip boundaries are stored rounded (to 0.01 s in the release) and models quote frame
times, so a span may end a little past the clip: up to :data:`PAST_CLIP_TOLERANCE_S` it is
kept as given (the release's scorer scores such spans as given: e.g. a prediction ending at 36.0
in a 35.9 s clip is in the page's recorded IoUs, tests/envs/procobject/test_grounding.py);
beyond that it is refused as ``past_clip``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envs.video_qa import json_object

PAST_CLIP_TOLERANCE_S = 1.0
SPAN_PROBLEMS = ("not_a_pair", "not_a_number", "negative", "reversed", "past_clip")


@dataclass(frozen=True)
class Reply:
    #: "ok", "unreadable_json" or "bad_evidence".
    status: str
    #: The answer text, or None when unreadable.
    answer: str | None
    #: The accepted spans, as given (not merged).
    evidence: tuple[tuple[float, float], ...] = ()
    #: Refused spans by reason.
    refused: dict[str, int] = field(default_factory=dict)
    #: True when the reply gave no spans at all.
    no_evidence: bool = False

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def check_span(pair: Any, duration: float, tolerance: float = PAST_CLIP_TOLERANCE_S) -> tuple[float, float] | str:
    """The span ``(s, e)``, or the reason it is refused."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return "not_a_pair"
    s, e = _finite(pair[0]), _finite(pair[1])
    if s is None or e is None:
        return "not_a_number"
    if s < 0 or e < 0:
        return "negative"
    if e < s:
        return "reversed"
    if e > duration + tolerance:
        return "past_clip"
    return (s, e)


def usable_reference(evidence: Any, duration: float, tolerance: float = PAST_CLIP_TOLERANCE_S
                     ) -> tuple[list[tuple[float, float]], int]:
    """The reference spans scored against, by the rule a predicted span meets (:func:`check_span`),
    and how many were refused: a reference span past the clip is left out of the reference exactly
    as the same span is left out of a prediction, so the oracle's identical reply scores 1."""
    kept, refused = [], 0
    for pair in evidence:
        got = check_span(pair, duration, tolerance)
        if isinstance(got, str):
            refused += 1
        else:
            kept.append(got)
    return kept, refused


def parse_reply(text: str, duration: float, *, tolerance: float = PAST_CLIP_TOLERANCE_S) -> Reply:
    """A reply read by the rules of this module's doc, for a clip of ``duration`` seconds."""
    obj = json_object(text)
    if obj is None or not isinstance(obj.get("answer"), str) or not obj["answer"].strip():
        return Reply("unreadable_json", None, no_evidence=True)
    answer = obj["answer"].strip()
    raw = obj.get("evidence")
    if raw is None or raw == []:
        return Reply("ok", answer, no_evidence=True)
    if not isinstance(raw, list):
        return Reply("bad_evidence", answer, no_evidence=True)
    if len(raw) == 2 and all(_finite(x) is not None for x in raw):
        raw = [raw]  # a single [s, e] given without the outer list
    kept, refused = [], Counter()
    for pair in raw:
        got = check_span(pair, duration, tolerance)
        if isinstance(got, str):
            refused[got] += 1
        else:
            kept.append(got)
    return Reply("ok", answer, tuple(kept), dict(refused), no_evidence=False)


def count_problems(replies: list[Reply]) -> dict[str, int]:
    """Per-run counts: unreadable replies, replies without evidence, and refused spans by reason."""
    out = {"replies": len(replies), "unreadable_json": sum(r.status == "unreadable_json" for r in replies),
           "bad_evidence": sum(r.status == "bad_evidence" for r in replies),
           "no_evidence": sum(r.no_evidence and r.status == "ok" for r in replies)}
    for reason in SPAN_PROBLEMS:
        out[f"span_{reason}"] = sum(r.refused.get(reason, 0) for r in replies)
    return out


def answer_text(reply: str) -> str | None:
    """The reply's answer text (its JSON object's non-empty ``answer``), or None."""
    obj = json_object(reply)
    if obj is None or not isinstance(obj.get("answer"), str) or not obj["answer"].strip():
        return None
    return obj["answer"].strip()
