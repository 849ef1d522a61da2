"""Predictions in CFG-Bench's official results format (:mod:`envs.cfg_bench.official`: the item
fields with an ``evaluation`` entry per model) written from a result store, with the store's judge
verdicts as the originals' ``eval`` objects, so the originals' judge script (``--resume``) only
summarises them instead of judging again.

``python -m envs.cfg_bench.export OUT RESULTS.json [--data-dir FOLDER] [--run RUN_ID] [--model NAME]
[--judge NAME]``

Verdicts (the store's judgements, read through :class:`harness.store.ResultStore`): those of the
one judge that judged the run's answers, or of ``--judge NAME`` (a judge's name or id) where
several did. A readable verdict becomes ``{"correctness", "detailedness", "gate", "premise"}``:
C and D as integers, so their ``is_judged`` holds (judge_deepseek_r1.py:195-201), and the gate
decision word read back from the stored reply ("" where it gave none); an unreadable one the
originals' own judge-error form (``correctness``/``detailedness`` null, ``status`` "error"), which
their summary leaves out as ours does; an answer with no verdict (not judged yet, or a failed
judge call) gets no ``eval``. The command says on stderr how many open answers carry a readable
verdict, and how many their script would still send to its judge.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envs.cfg_bench import data as D
from envs.cfg_bench.official import to_official, write_official
from envs.cfg_bench.scoring import PREMISE_DECISIONS, JudgeVerdict, extract_choice
from envs.cfg_bench.suite import data_root
from envs.video_qa import export_main, json_object, one_run

_KEY = ("run_id", "suite", "split", "episode_id", "seed")


def stored_verdicts(out: str | Path, df: Any, judge: str | None = None) -> dict[str, JudgeVerdict]:
    """Episode id -> the verdict of the run's judge (module doc); :class:`DataError` when several
    judges judged the run and none is named, or the named one judged none of its answers."""
    from harness.store import ResultStore

    with ResultStore(out, readonly=True) as store:
        rows = store.judgements()
    if rows.empty:
        return {}
    keys = {tuple(k) for k in df[list(_KEY)].itertuples(index=False)}
    rows = rows[[tuple(k) in keys for k in rows[list(_KEY)].itertuples(index=False)]]
    rows = rows[rows["status"] != "error"]  # a failed call: no verdict (a rerun of harness judge retries it)
    judges = sorted(set(rows["judge_id"]))
    if judge is not None:
        rows = rows[(rows["judge"] == judge) | (rows["judge_id"] == judge)]
        if rows.empty:
            raise D.DataError(f"no verdicts of judge {judge!r} on this run (its judges: "
                              f"{', '.join(sorted(set(_names(out, judges)))) or 'none'})")
    if len(set(rows["judge_id"])) > 1:
        raise D.DataError(f"{len(set(rows['judge_id']))} judges judged this run "
                          f"({', '.join(_names(out, sorted(set(rows['judge_id']))))}): name one with --judge NAME")
    verdicts = {}
    for row in rows.to_dict("records"):
        values = row["values"] or {}
        if row["status"] == "ok":
            gate = values.get("gate")
            verdicts[row["episode_id"]] = JudgeVerdict(
                "ok", correctness=int(values["correctness"]), detailedness=int(values["detailedness"]),
                gate=None if gate is None else bool(gate), premise=_premise(row.get("raw_reply")) if gate is not None
                else "")
        else:
            verdicts[row["episode_id"]] = JudgeVerdict("unreadable", problem=str(row.get("reason") or "unreadable"))
    return verdicts


def _premise(raw: Any) -> str:
    """The gate decision word of a stored judge reply (our prompt asks for it), or ""."""
    obj = json_object(raw) if isinstance(raw, str) else None
    word = obj.get("premise") if obj else None
    word = word.strip().lower() if isinstance(word, str) else ""
    return word if word in PREMISE_DECISIONS else ""


def _names(out: str | Path, judge_ids: list[str]) -> list[str]:
    from harness.store import ResultStore

    with ResultStore(out, readonly=True) as store:
        rows = store.judgements()
    name = dict(zip(rows["judge_id"], rows["judge"]))
    return [f"{name.get(j, '?')} ({j})" for j in judge_ids]


def official_from_store(out: str | Path, path: str | Path, *, data_dir: str | Path | None = None,
                        run_id: str | None = None, model: str | None = None, judge: str | None = None,
                        counts: dict[str, int] | None = None) -> Path:
    """Write the run's answers, and its judge's verdicts, in the originals' format to ``path``;
    ``counts`` (when given) gets ``open``, ``judged`` and ``unreadable``."""
    df, runs = one_run(out, "cfg_bench", run_id, D.DataError)
    if df.empty:
        raise D.DataError(f"{out} holds no cfg_bench run")
    rid = df["run_id"].iloc[0]
    name = model or str(runs.set_index("run_id").loc[rid].get("agent", rid))
    questions = D.load_questions(data_root(str(data_dir) if data_dir else None))
    by_id = {q.qid: q for q in questions}
    answers: dict[str, Any] = {}
    for rec in df.to_dict("records"):
        q = by_id.get(rec["episode_id"])
        if q is None or rec.get("error_kind"):
            continue
        text = str((rec.get("extra") or {}).get("answer") or "")
        answers[q.qid] = extract_choice(text, q.options) if q.is_mc else text
    verdicts = stored_verdicts(out, df, judge)
    if counts is not None:
        open_answers = [qid for qid, a in answers.items() if isinstance(a, str) and a.strip()]
        counts.update(open=len(open_answers),
                      judged=sum(1 for qid in open_answers if qid in verdicts and verdicts[qid].status == "ok"),
                      unreadable=sum(1 for qid in open_answers if qid in verdicts and verdicts[qid].status != "ok"))
    return write_official(path, to_official(questions, answers, name, verdicts))


def main(argv: list[str] | None = None) -> int:
    def write(a):
        counts: dict[str, int] = {}
        path = official_from_store(a.out, a.results, data_dir=a.data_dir, run_id=a.run, model=a.model,
                                   judge=a.judge, counts=counts)
        rest = counts["open"] - counts["judged"]
        print(f"{counts['judged']} of {counts['open']} open answers carry a readable verdict"
              + (f"; {counts['unreadable']} unreadable (written as a judge error)" if counts["unreadable"] else "")
              + (f"; the originals' script (--resume) would judge {rest} again" if rest else
                 "; the originals' script (--resume) only summarises"), file=sys.stderr)
        return path

    return export_main(argv, "python -m envs.cfg_bench.export", __doc__, "results", write, (D.DataError,),
                       options=("--model", "--judge"))


if __name__ == "__main__":
    sys.exit(main())
