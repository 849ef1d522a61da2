"""Predictions (and judge scores) in the CFG-Bench originals' file format, so their own scripts
can re-score them.

The format (CFG-Bench/CFG-Bench at b50bb6dbaa53f80444792e4c4924b4b48365b14d): the evaluators
write the question items back with an ``evaluation`` list of per-model entries
(evaluate/open_source_mllms/eval_qwen_local.py:211-228, ``write_evaluation``): a multiple-choice
entry is ``{"model", "result", "reason"}`` with ``result`` the chosen option's full text; an
open-ended entry is ``{"model", "open_ended_result", "open_ended_reason"}``. The judge
(judge/judge_deepseek_r1.py) adds an ``eval`` object to each entry: for multiple choice it
computes it itself by exact match (lines 220-231), for open answers it holds the judge's
``correctness`` and ``detailedness``; run with ``--resume`` it keeps entries already judged
(``is_judged``, lines 195-201: a close-ended ``eval`` with a boolean ``is_correct``, or an
integer ``correctness`` or ``detailedness``) and only summarizes them (``summarize_scores``).

So :func:`to_official` writes our answers in the evaluators' form, and with ``verdicts`` also our
judge's C and D in the judge's form, for ``python judge_deepseek_r1.py --input OUR_FILE
--qa-file qa_pairs.json --task_type ... --resume --output OUT --save-summary``.

Unreadable answers: a multiple-choice reply that names no option is written with ``result`` ""
(the originals skip empty results, so their accuracy is over readable answers:
``accuracy_readable`` in :func:`envs.cfg_bench.scoring.summarize_mc`); an unreadable judge reply
is written as the originals write a judge error (``correctness``/``detailedness`` null,
``status`` "error"), which their summary leaves out as ours does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from envs.cfg_bench.data import Question
from envs.cfg_bench.scoring import JudgeVerdict, MCAnswer


def _item(q: Question) -> dict[str, Any]:
    item: dict[str, Any] = {"video_name": q.video_name, "question": q.question, "task_type": q.task_type,
                            "correct_answer": q.correct_answer}
    if q.options:
        item["options"] = list(q.options)
    if q.question_key:
        item["question_key"] = q.question_key
    return item


def entry(q: Question, model: str, answer: MCAnswer | str, verdict: JudgeVerdict | None = None) -> dict[str, Any]:
    """One ``evaluation`` entry for ``q``: an :class:`MCAnswer` for multiple choice (with its
    exact-match ``eval``, as the judge script writes it: judge_deepseek_r1.py:220-231), the answer
    text for open-ended questions (with our judge's verdict when given)."""
    if q.is_mc:
        if not isinstance(answer, MCAnswer):
            raise TypeError(f"{q.qid} is multiple choice: give an MCAnswer")
        out = {"model": model, "result": answer.choice or "", "reason": ""}
        if answer.choice:  # their script skips an empty result (judge_deepseek_r1.py:181-192): no eval
            prediction, gold = answer.choice.strip(), q.correct_answer.strip()
            out["eval"] = {"type": "close_ended", "prediction": prediction, "correct_answer": gold,
                           "is_correct": prediction == gold, "accuracy": 1.0 if prediction == gold else 0.0}
        return out
    if not isinstance(answer, str):
        raise TypeError(f"{q.qid} is open-ended: give the answer text")
    out: dict[str, Any] = {"model": model, "open_ended_result": answer, "open_ended_reason": ""}
    if verdict is not None:
        if verdict.status == "ok":
            out["eval"] = {"correctness": verdict.correctness, "detailedness": verdict.detailedness,
                           "gate": verdict.gate, "premise": verdict.premise}
        else:
            out["eval"] = {"correctness": None, "detailedness": None, "status": "error", "error": verdict.problem}
    return out


def to_official(questions: list[Question], answers: Mapping[str, MCAnswer | str], model: str,
                verdicts: Mapping[str, JudgeVerdict] | None = None) -> list[dict[str, Any]]:
    """The items of ``questions`` that have an answer (by ``qid``), each with its evaluation entry."""
    out = []
    for q in questions:
        if q.qid not in answers:
            continue
        item = _item(q)
        item["evaluation"] = [entry(q, model, answers[q.qid], (verdicts or {}).get(q.qid))]
        out.append(item)
    return out


def write_official(path: str | Path, items: list[dict[str, Any]]) -> Path:
    """Write ``items`` (from :func:`to_official`) as the originals do (a JSON list, UTF-8, indent 2)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(items, ensure_ascii=False, indent=2), encoding="utf-8")
    tmp.replace(path)
    return path
