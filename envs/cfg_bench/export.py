"""Predictions in CFG-Bench's official results format (:mod:`envs.cfg_bench.official`: the item
fields with an ``evaluation`` entry per model) written from a result store, so the originals'
scripts can re-score them.

``python -m envs.cfg_bench.export OUT RESULTS.json [--data-dir FOLDER] [--run RUN_ID] [--model NAME]``
"""

from __future__ import annotations

import sys
from pathlib import Path

from envs.cfg_bench import data as D
from envs.cfg_bench.official import to_official, write_official
from envs.cfg_bench.scoring import extract_choice
from envs.cfg_bench.suite import data_root
from envs.video_qa import export_main, one_run


def official_from_store(out: str | Path, path: str | Path, *, data_dir: str | Path | None = None,
                        run_id: str | None = None, model: str | None = None) -> Path:
    df, runs = one_run(out, "cfg_bench", run_id, D.DataError)
    if df.empty:
        raise D.DataError(f"{out} holds no cfg_bench run")
    rid = df["run_id"].iloc[0]
    name = model or str(runs.set_index("run_id").loc[rid].get("agent", rid))
    questions = D.load_questions(data_root(str(data_dir) if data_dir else None))
    by_id = {q.qid: q for q in questions}
    answers = {}
    for rec in df.to_dict("records"):
        q = by_id.get(rec["episode_id"])
        if q is None or rec.get("error_kind"):
            continue
        text = str((rec.get("extra") or {}).get("answer") or "")
        answers[q.qid] = extract_choice(text, q.options) if q.is_mc else text
    return write_official(path, to_official(questions, answers, name))


def main(argv: list[str] | None = None) -> int:
    def write(a):
        return official_from_store(a.out, a.results, data_dir=a.data_dir, run_id=a.run, model=a.model)

    return export_main(argv, "python -m envs.cfg_bench.export", __doc__, "results", write, (D.DataError,),
                       options=("--model",))


if __name__ == "__main__":
    sys.exit(main())
