"""A table's column vocabulary: the markers and column-group names every table and renderer
shares, the cost metrics, which metrics a table of some records can show, and the per-cell
summaries (:func:`harness.scoring.summaries.summarize` plus the cost means) the tables of
:mod:`harness.tables.build` are made of."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.scoring import policy as scoring
from harness.scoring.summaries import metric_columns, summarize

#: Prefix of delta metric names in table columns.
DELTA = "Δ"
#: Column group holding the per-metric averages (and their deltas) of a transfer table.
AVG = "avg"
#: Row label of the pooled row of a breakdown table.
ALL = "all"
#: Row label for records without a value of the breakdown key (e.g. task_type None).
UNKNOWN = "unknown"
#: Marker appended to cells whose records include error records.
DAGGER = "†"
#: Marker appended to Δ cells whose variant and baseline ran different episode sets.
DIFFERENT = "‡"
#: Printed for NaN.
MISSING = "–"
#: The unit shown for a column whose records count path lengths in different units.
UNITS_DIFFER = "units differ"

#: Cost metrics (``--metrics``): means per episode, not rates. ``seconds`` is the
#: record's wall time; the token counts are the sums over the episode's agent calls
#: (transcripts; :func:`add_cost_columns`), NaN for an episode with no counted call.
COST_METRICS: tuple[str, ...] = ("seconds", "prompt_tokens", "output_tokens")


def add_cost_columns(df: pd.DataFrame, transcripts: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """``df`` with the :data:`COST_METRICS` columns, from its records and their transcripts."""
    sums: dict[tuple, list[float]] = {}
    for t in transcripts:
        if t.get("prompt_tokens") is None and t.get("output_tokens") is None:
            continue
        key = (t["run_id"], t["suite"], t["split"], t["episode_id"], int(t["seed"]))
        acc = sums.setdefault(key, [0.0, 0.0])
        acc[0] += float(t.get("prompt_tokens") or 0)
        acc[1] += float(t.get("output_tokens") or 0)
    keys = list(zip(df["run_id"], df["suite"], df["split"], df["episode_id"], df["seed"].astype(int)))
    return df.assign(
        seconds=pd.to_numeric(df["wall_time_s"], errors="coerce"),
        prompt_tokens=[sums[k][0] if k in sums else np.nan for k in keys],
        output_tokens=[sums[k][1] if k in sums else np.nan for k in keys],
    )


def summarize_cells(df: pd.DataFrame, by: list[str], metrics: Sequence[str]) -> pd.DataFrame:
    """:func:`harness.scoring.summaries.summarize` plus the mean of each cost metric asked for."""
    cells = summarize(df, by)
    cost = [m for m in metrics if m in COST_METRICS]
    if cost:
        missing = [m for m in cost if m not in df.columns]
        if missing:
            raise ValueError(f"metrics {missing} need the cost columns (tables.add_cost_columns)")
        means = df.groupby(by, sort=True)[cost].mean().reset_index()
        cells = cells.merge(means, on=by, how="left")
    return cells


def declared_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns a table of ``df`` can show: those its suites declare, then cost."""
    suites = df["suite"].unique() if "suite" in df.columns else ()
    return metric_columns(scoring.of_frame(df).declared(suites).values()) + list(COST_METRICS)


def default_metrics(df: pd.DataFrame) -> list[str]:
    """The metrics a table shows when none are named: the declared defaults of ``df``'s suites."""
    suites = df["suite"].unique() if "suite" in df.columns else ()
    return [m.name for m in scoring.of_frame(df).declared(suites).values() if m.default]


def check_metrics(metrics: Sequence[str] | None, df: pd.DataFrame) -> list[str]:
    """The metrics as a list (None: the declared defaults); ValueError unless each is declared
    by a suite of ``df`` (or is a cost metric)."""
    metrics = default_metrics(df) if metrics is None else list(metrics)
    allowed = declared_columns(df)
    bad = [m for m in metrics if m not in allowed]
    if bad or not metrics:
        raise ValueError(f"table metrics must be among {allowed}, got {metrics}")
    return metrics


def split_labels(df: pd.DataFrame) -> pd.Series:
    """'suite/split' label of each record (a transfer-table column group)."""
    return df["suite"].astype(str) + "/" + df["split"].astype(str)


def is_delta(metric: str) -> bool:
    return metric.startswith(DELTA)


def is_stat(metric: str) -> bool:
    """A paired-statistics column (``Δsr:lo``, ``Δsr:hi``, ``Δsr:p``)."""
    return ":" in metric
