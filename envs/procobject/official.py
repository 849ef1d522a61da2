"""Predictions in ProcObject-10K's own file format, so the release's scorer can re-score them.

The format: a JSON list of ``{"id", "predicted_answer", "predicted_evidence"}`` records, ``id``
the test record's id, ``predicted_evidence`` a list of ``[s, e]`` pairs (the page's asset builder
reads saved prediction files of exactly these fields, WenliangGuo/ProcObject-10K-Page at
21702a847363a58df645ba9919805befb91fc212, tools/make_explorer.py:46-47 and 104-107, and scores
``predicted_evidence`` with the release's ``evaluate_grounding.IoU``).

What we write: the accepted spans as the model gave them (refused spans are not written: the
scorer would read them as evidence), and for an unreadable reply the raw reply text as
``predicted_answer`` with no evidence, so the scorer sees what we score (an empty prediction).
Ids keep the release's type (integers stay integers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from envs.procobject.answer import Reply


def _id(qid: str) -> int | str:
    return int(qid) if qid.isdigit() else qid


def record(qid: str, reply: Reply, raw_text: str = "") -> dict[str, Any]:
    return {"id": _id(qid), "predicted_answer": reply.answer if reply.answer is not None else raw_text,
            "predicted_evidence": [[s, e] for s, e in reply.evidence]}


def write_predictions(path: str | Path, records: Iterable[dict[str, Any]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(list(records), ensure_ascii=False, indent=2), encoding="utf-8")
    tmp.replace(path)
    return path
