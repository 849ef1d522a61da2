"""CFG-Bench scoring: multiple-choice answer extraction, the open-ended score S with the
counterfactual gate, and the judge's reply parsed into C, D and the gate decision.

Multiple choice (FAU, TR, CR). The model is asked for a JSON object ``{"result": "<option text>"}``
(:mod:`envs.cfg_bench.prompt`). The rule, strict and deterministic:

1. a Markdown code fence around the reply is removed; the reply is read as JSON, else the span
   from its first ``{`` to its last ``}`` is (the same two steps as the originals'
   ``parse_json_object``, evaluate/open_source_mllms/eval_qwen_local.py:97-122);
2. the value must be an object whose ``result`` is a string;
3. the choice is the option whose text, stripped of surrounding white space, equals the stripped
   ``result`` (the first rule of ``normalize_close_result``, eval_qwen_local.py:125-131).

Anything else is *unreadable*: the reply names no option, and it is counted as such (and as
not correct), never matched loosely. We do **not** follow the originals' second fallback
(eval_qwen_local.py:132-134: the first option whose text occurs anywhere in the result), which
credits a reply that quotes several options to whichever is listed first; their judge then
scores by exact equality with ``correct_answer`` (judge/judge_deepseek_r1.py:220-223) and
leaves answers with an empty result out of the count (``iter_close_ended_evaluations``,
judge_deepseek_r1.py:181-192). So on replies both rules read, accuracies agree; the originals'
denominator omits what we count as unreadable.

A JSON list around the object. A reply ``[{"result": "..."}]`` holding exactly one object is read
as that object (rule 1, :func:`envs.video_qa.json_object`); a list of several objects is
unreadable. The originals' ``parse_json_object`` returns any non-object value as
``{"result": <the whole reply>}`` (eval_qwen_local.py:108-122, at 112 and 119), so their second
fallback then credits the first option, in the item's order, whose text occurs anywhere in the
reply. On a one-object list whose reply mentions no other option both read the same option; where
it also mentions an option listed earlier (in a ``reason``, say), or holds several objects, theirs
takes the first listed option and ours takes the ``result`` / none
(tests/envs/cfg_bench/test_small_rules.py shows each case beside their rule).

Open-ended (the other eight). A judge gives Correctness C and Detailedness D, integers 0..10;
the score is S = (C + D) / 2 (judge_deepseek_r1.py:265; the paper's definition). For CIA and CRS
the question holds a false premise: an answer that accepts it fails the gate (g = 0) and gets
C = D = 0, so S = 0 (judge/CFG_JUDGE.py, the first phase of its rubric); CIT and CEU, though
counterfactual, have no gate. Our judge prompt (:mod:`envs.cfg_bench.judge_prompt`) asks for
the gate decision explicitly, and it is kept per answer. A reply that can't be read is an
explicit unreadable verdict with its reason: it never becomes a 0 (the originals drop judge
errors from their averages silently, judge_deepseek_r1.py:292-295; here they are counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from envs.cfg_bench.data import GATED_TASKS, MC_TASKS
from envs.video_qa import json_object  # rule 1 above

#: Scores of each judge dimension.
SCORE_MIN, SCORE_MAX = 0, 10
#: The gate decisions our judge prompt offers, and whether each passes.
PREMISE_DECISIONS = {"rejected": True, "corrected": True, "accepted": False}


@dataclass(frozen=True)
class MCAnswer:
    """A multiple-choice reply read by :func:`extract_choice`."""

    #: The option chosen (its text as the item lists it), or None when the reply is unreadable.
    choice: str | None
    #: "" when readable, else why not: ``no_json``, ``no_result``, ``not_an_option``.
    problem: str = ""
    #: The ``result`` string the reply gave ("" when none).
    result: str = ""

    @property
    def readable(self) -> bool:
        return self.choice is not None


def extract_choice(reply: str, options: Sequence[str]) -> MCAnswer:
    """The option a reply names, by the strict rule of this module's doc."""
    obj = json_object(reply)
    if obj is None:
        return MCAnswer(None, "no_json")
    result = obj.get("result")
    if not isinstance(result, str) or not result.strip():
        return MCAnswer(None, "no_result")
    wanted = result.strip()
    for option in options:
        if option.strip() == wanted:
            return MCAnswer(option, "", result)
    return MCAnswer(None, "not_an_option", result)


def mc_correct(answer: MCAnswer, correct_answer: str) -> bool:
    """Whether a readable answer is the correct option (texts compared stripped, as
    judge_deepseek_r1.py:221-223); an unreadable one never is."""
    return answer.choice is not None and answer.choice.strip() == correct_answer.strip()


# ---------------------------------------------------------------------------------------------
# Open-ended: S and the gate


def open_score(correctness: float, detailedness: float, gate: bool | None = None) -> float:
    """S = (C + D) / 2, with the gate: ``gate is False`` gives 0 whatever C and D are."""
    for name, value in (("correctness", correctness), ("detailedness", detailedness)):
        if not (SCORE_MIN <= value <= SCORE_MAX):
            raise ValueError(f"{name} {value} is outside {SCORE_MIN}..{SCORE_MAX}")
    if gate is False:
        return 0.0
    return (correctness + detailedness) / 2


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge's reading of one open-ended answer."""

    #: "ok" or "unreadable".
    status: str
    #: Why it is unreadable ("" when ok).
    problem: str = ""
    #: C and D as scored (both 0 when the gate failed); None when unreadable.
    correctness: int | None = None
    detailedness: int | None = None
    #: The gate decision: True passed, False failed (premise accepted), None where the task has no gate.
    gate: bool | None = None
    #: The decision word the judge gave (``rejected``/``corrected``/``accepted``), "" when none.
    premise: str = ""
    #: How the gate was decided: ``explicit`` (the judge's decision field), ``inferred`` (a
    #: prompt without the field: C = D = 0 read as g = 0), or "" (no gate).
    gate_source: str = ""

    @property
    def score(self) -> float | None:
        """S, or None when unreadable."""
        if self.status != "ok":
            return None
        return open_score(self.correctness, self.detailedness, self.gate)


def _score_field(obj: dict[str, Any], key: str) -> int | str:
    """An integer score 0..10 from ``obj[key]``, or the problem as a string."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        else:
            return f"no_{key}"
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        return f"{key}_not_an_integer"
    value = int(value)
    if not SCORE_MIN <= value <= SCORE_MAX:
        return f"{key}_out_of_range"
    return value


def parse_judge_reply(reply: str, task_type: str, *, explicit_gate: bool = True) -> JudgeVerdict:
    """C, D and the gate from a judge's reply (a JSON object with ``correctness`` and
    ``detailedness``, integers 0..10, and for CIA/CRS ``premise``: rejected, corrected or accepted).

    ``explicit_gate=False`` reads replies to a prompt that has no decision field (the
    originals' judge prompt encodes a failed gate as C = D = 0): for CIA/CRS, g = 0 exactly
    when both are 0. An unreadable reply returns status "unreadable" with the reason."""
    task = task_type.strip().upper()
    if task in MC_TASKS:
        raise ValueError(f"{task} is multiple choice: it is not judged")
    obj = json_object(reply)
    if obj is None:
        return JudgeVerdict("unreadable", "no_json")
    c = _score_field(obj, "correctness")
    if isinstance(c, str):
        return JudgeVerdict("unreadable", c)
    d = _score_field(obj, "detailedness")
    if isinstance(d, str):
        return JudgeVerdict("unreadable", d)
    if task not in GATED_TASKS:
        return JudgeVerdict("ok", correctness=c, detailedness=d)
    if not explicit_gate:
        passed = not (c == 0 and d == 0)
        return JudgeVerdict("ok", correctness=c, detailedness=d, gate=passed, gate_source="inferred")
    premise = obj.get("premise")
    word = premise.strip().lower() if isinstance(premise, str) else ""
    if word not in PREMISE_DECISIONS:
        return JudgeVerdict("unreadable", "no_premise_decision")
    passed = PREMISE_DECISIONS[word]
    if not passed:
        c = d = 0
    return JudgeVerdict("ok", correctness=c, detailedness=d, gate=passed, premise=word, gate_source="explicit")


def combine_judges(verdicts: Sequence[JudgeVerdict]) -> dict[str, Any]:
    """Several judges' verdicts on one answer: the mean S over the readable ones, their gate
    decisions, and how many were unreadable (None mean when none was readable)."""
    ok = [v for v in verdicts if v.status == "ok"]
    return {
        "score": (sum(v.score for v in ok) / len(ok)) if ok else None,
        "correctness": (sum(v.correctness for v in ok) / len(ok)) if ok else None,
        "detailedness": (sum(v.detailedness for v in ok) / len(ok)) if ok else None,
        "gate_failed": sum(1 for v in ok if v.gate is False),
        "judged": len(ok),
        "unreadable": len(verdicts) - len(ok),
    }


# ---------------------------------------------------------------------------------------------
# Aggregates (per task; the suite groups by tier)


def summarize_mc(rows: Iterable[tuple[MCAnswer, str]]) -> dict[str, Any]:
    """Accuracy over (answer, correct_answer) pairs; unreadable answers count as wrong and are
    reported (``accuracy_readable`` is the originals' figure, over readable answers only)."""
    rows = list(rows)
    correct = sum(1 for a, gold in rows if mc_correct(a, gold))
    unreadable = sum(1 for a, _ in rows if not a.readable)
    readable = len(rows) - unreadable
    return {"n": len(rows), "correct": correct, "unreadable": unreadable,
            "accuracy": correct / len(rows) if rows else None,
            "accuracy_readable": correct / readable if readable else None}


def summarize_open(verdicts: Iterable[JudgeVerdict]) -> dict[str, Any]:
    """Mean C, D and S over readable verdicts, with the counts of unreadable ones and of failed gates."""
    verdicts = list(verdicts)
    ok = [v for v in verdicts if v.status == "ok"]
    mean = (lambda xs: sum(xs) / len(xs)) if ok else (lambda xs: None)
    return {"n": len(verdicts), "judged": len(ok), "unreadable": len(verdicts) - len(ok),
            "gate_failed": sum(1 for v in ok if v.gate is False),
            "gated": sum(1 for v in ok if v.gate is not None),
            "correctness": mean([v.correctness for v in ok]), "detailedness": mean([v.detailedness for v in ok]),
            "score": mean([v.score for v in ok])}


def kinds(record: Mapping[str, Any]) -> dict[str, float]:
    """Which of the suite's metrics a record's question is about (``Metric.applies``), from its
    task type, so an errored or unanswered question still counts where it belongs: ``is_mc``
    (FAU, TR, CR: accuracy), ``is_open`` (the rest: the judged S, C, D) and ``is_gated`` (CIA,
    CRS: the counterfactual gate)."""
    task = str(record.get("task_type") or "")
    return {"is_mc": float(task in MC_TASKS), "is_open": float(bool(task) and task not in MC_TASKS),
            "is_gated": float(task in GATED_TASKS)}
