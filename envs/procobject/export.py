"""Predictions in ProcObject-10K's official format (``{id, predicted_answer, predicted_evidence}``,
:mod:`envs.procobject.official`) written from a result store, for the release's own scorer.

``python -m envs.procobject.export OUT PREDICTIONS.json [--data-dir FOLDER] [--run RUN_ID]``
"""

from __future__ import annotations

import sys
from pathlib import Path

from envs.procobject import data as D
from envs.procobject.answer import parse_reply
from envs.procobject.official import record, write_predictions
from envs.procobject.suite import data_root
from envs.video_qa import export_main, one_run


def predictions_from_store(out: str | Path, path: str | Path, *, data_dir: str | Path | None = None,
                           run_id: str | None = None, split: str = D.DEFAULT_SPLIT) -> Path:
    df, _ = one_run(out, "procobject", run_id, D.DataError, split)
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
    def write(a):
        return predictions_from_store(a.out, a.predictions, data_dir=a.data_dir, run_id=a.run)

    return export_main(argv, "python -m envs.procobject.export", __doc__, "predictions", write, (D.DataError,))


if __name__ == "__main__":
    sys.exit(main())
