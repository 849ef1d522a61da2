"""Predictions in ProcObject-10K's official format (``{id, predicted_answer, predicted_evidence}``,
:mod:`envs.procobject.official`) written from a result store, for the release's own scorer.

``python -m envs.procobject.export OUT PREDICTIONS.json [--data-dir FOLDER] [--run RUN_ID]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.procobject import data as D
from envs.procobject.answer import parse_reply
from envs.procobject.official import record, write_predictions
from envs.procobject.suite import data_root


def predictions_from_store(out: str | Path, path: str | Path, *, data_dir: str | Path | None = None,
                           run_id: str | None = None, split: str = D.DEFAULT_SPLIT) -> Path:
    from harness.store import ResultStore

    with ResultStore(out, readonly=True) as store:
        df = store.frame()
    df = df[(df["suite"] == "procobject") & (df["split"] == split)]
    if run_id is not None:
        df = df[df["run_id"] == run_id]
    if df["run_id"].nunique() > 1:
        raise D.DataError(f"{out} holds {df['run_id'].nunique()} procobject runs: name one with --run")
    items = {i.qid: i for i in D.load_items(data_root(str(data_dir) if data_dir else None), split)}
    rows = []
    for rec in df.sort_values("episode_id").to_dict("records"):
        if rec.get("error_kind") or rec["episode_id"] not in items:
            continue
        raw = str((rec.get("extra") or {}).get("answer") or "")
        item = items[rec["episode_id"]]
        rows.append(record(item.qid, parse_reply(raw, item.duration), raw))
    return write_predictions(path, rows)


def main(argv: list[str] | None = None) -> int:
    from harness.store import StoreError

    ap = argparse.ArgumentParser(prog="python -m envs.procobject.export", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("predictions")
    ap.add_argument("--data-dir")
    ap.add_argument("--run")
    a = ap.parse_args(argv)
    try:
        print(predictions_from_store(a.out, a.predictions, data_dir=a.data_dir, run_id=a.run))
    except (D.DataError, OSError, StoreError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
