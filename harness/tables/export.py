"""Episode records as data: one row per episode (the :class:`~harness.types.EpisodeRecord`
fields, ``extra`` as a JSON object, ``values`` the per-episode values the suite's declared
metrics read (its derived values, then those stored in the record; :mod:`harness.scoring.policy`), plus ``repeat`` (the run's trial seed offset),
``repeat_index`` (its declared repeat index), ``store`` and ``metrics`` (:func:`with_metrics`: what each
declared metric counts the episode as, so the mean of an exported column is the table's cell), as JSON
Lines or Parquet (pandas: ``pd.read_json(path, lines=True)`` / ``pd.read_parquet(path)``)."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import pandas as pd

from harness.scoring import policy as scoring
from harness.scoring.policy import value_rows
from harness.store import ResultStore
from harness.tables.selection import EPISODE_KEY, SelectionError, merge_stores, with_families
from harness.util.redact import redact_text

def all_runs(paths: Sequence[str], prefer: Sequence[str] = ()) -> pd.DataFrame:
    """Every stored run's records (superseded runs too), each episode once; stores that
    disagree on an episode are refused unless ``prefer`` chooses (harness.tables.selection.merge_stores)."""
    frames = []
    for path in dict.fromkeys(paths):
        with ResultStore(path, readonly=True) as store:
            runs = store.runs()
            df = store.frame()
        fam = with_families(runs) if len(runs) else None
        repeat = dict(zip(fam["run_id"], fam["repeat"])) if fam is not None else {}
        index = dict(zip(fam["run_id"], fam["repeat_index"])) if fam is not None else {}
        frames.append(df.assign(repeat=df["run_id"].map(repeat).fillna(0).astype(int),
                                repeat_index=df["run_id"].map(index).fillna(0).astype(int), store=str(path)))
    unknown = [p for p in prefer if str(p) not in {str(q) for q in paths}]
    if unknown:
        raise SelectionError(f"--prefer {unknown[0]} is not one of the stores read ({', '.join(map(str, paths))})")
    df = pd.concat(frames, ignore_index=True)
    df = merge_stores(df, prefer).sort_values(EPISODE_KEY, kind="stable").reset_index(drop=True)
    return df.assign(values=value_rows(df)) if len(df) else df


def with_metrics(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``metrics``: per episode, each metric its suite declares as the tables count it
    (:func:`harness.scoring.policy.classify`): a mean metric's value (its own, or the metric's missing
    value where it has none: an errored episode's failure), a ratio metric's ``[numerator,
    denominator]``; None where the episode does not count (not applicable, unscored, or left
    out by its policy). The mean of a mean metric's non-None values over a cell's episodes is
    the cell's value."""
    out = []
    for values in scoring.value_rows(df) if len(df) else []:
        row: dict[str, Any] = {}
        for m in scoring.suite_scoring(str(values.suite))[0]:
            num, den, _ = scoring.classify(m, values)
            if math.isnan(num) or math.isnan(den):
                row[m.name] = None
            else:
                row[m.name] = [num, den] if m.aggregation == "ratio" else num / den
        out.append(row)
    return df.assign(metrics=out) if len(df) else df


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return value


def to_jsonl(df: pd.DataFrame) -> str:
    lines = []
    for row in df.to_dict(orient="records"):
        lines.append(json.dumps({k: _plain(v) for k, v in row.items()}, default=str, allow_nan=False))
    # Known secrets of this process too (whatever the store holds), in every value.
    return redact_text("".join(line + "\n" for line in lines))


def to_parquet(df: pd.DataFrame, path: str) -> None:
    """Parquet via pyarrow; ``extra`` (a dict per row, of varying keys) is stored as JSON text."""
    df = df.assign(extra=[json.dumps(x, sort_keys=True, default=str) for x in df["extra"]],
                   values=[json.dumps({k: _plain(v) for k, v in x.items()}, sort_keys=True, default=str)
                           for x in df["values"]],
                   **({"metrics": [json.dumps(x, sort_keys=True) for x in df["metrics"]]} if "metrics" in df else {}))
    text = [c for c in df.columns if df[c].dtype == object]
    df = df.assign(**{c: [redact_text(v) if isinstance(v, str) else v for v in df[c]] for c in text})
    # The frame's attrs carry this process's reading state (the scoring view), not data:
    # pandas would write them into the file's metadata as JSON.
    df.attrs = {}
    df.to_parquet(path, index=False)
