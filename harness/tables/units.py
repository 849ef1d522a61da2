"""What a table cell's value averages over: its units (a suite/split, or each value of the
breakdown its benchmark averages over, ``SuitePlugin.mean_over``) and where a metric counts."""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from harness.registry.catalog import SUITES
from harness.scoring import policy as scoring
from harness.tables.columns import COST_METRICS, UNKNOWN, split_labels


def unit_labels(df: pd.DataFrame, pooled: bool = False) -> tuple[pd.Series, dict[str, str]]:
    """Per record, the unit a cell's value averages over (each unit counts once): its
    ``suite/split``, or for a suite that declares ``mean_over`` (unless ``pooled``)
    ``suite/split#value`` (e.g. ``cfg_bench/all#FAU``; a record without a value: ``#unknown``,
    a unit of its own). Returns the labels and suite -> the field averaged over."""
    labels = split_labels(df).astype(object)
    over: dict[str, str] = {}
    if pooled or not len(df):
        return labels, over
    for suite in sorted(str(x) for x in df["suite"].unique()):
        field = declared_mean_over(suite)
        if field is None:
            continue
        mask = (df["suite"].astype(str) == suite).to_numpy()
        mine = df[mask]
        try:
            values = mine[field] if field in mine.columns else declared_breakdown(mine, field)
        except ValueError:  # no record carries the field: nothing to average over
            continue
        values = values.astype(object).where(values.notna(), UNKNOWN).astype(str)
        labels[mask] = (labels[mask] + "#" + values).to_numpy()
        over[suite] = field
    return labels, over


def counted_units(df: pd.DataFrame, unit_of: pd.Series, metrics: Sequence[str],
                  fallback: pd.DataFrame | None = None) -> dict[str, set[str]]:
    """metric -> the units (:func:`unit_labels`) where it counts: some record there has a value
    of it, or awaits a score (unscored answers make a unit count: its value is pending, not
    undefined). A cost metric counts where some record has it (``fallback``'s records, with a
    ``_unit`` column, where ``df`` lacks the cost columns)."""
    out: dict[str, set[str]] = {}
    frame = df.assign(_unit=unit_of.to_numpy())
    values = scoring.value_rows(frame) if len(frame) else []
    position = pd.Series(range(len(frame)), index=frame.index)
    groups = {u: position.loc[part.index].to_numpy() for u, part in frame.groupby("_unit", sort=True)}
    for metric in metrics:
        declared = scoring.known_metric(metric)
        if metric in COST_METRICS or declared is None:
            source = frame if metric in frame.columns else fallback
            if source is None or metric not in source.columns:
                out[metric] = set()
                continue
            numbers = pd.to_numeric(source[metric], errors="coerce")
            out[metric] = set(source.loc[numbers.notna().to_numpy(), "_unit"].astype(str))
            continue
        counted = set()
        for unit, idx in groups.items():
            rows = [values[i] for i in idx]
            if not math.isnan(scoring.aggregate(declared, rows)) or scoring.tally(declared, rows).unscored:
                counted.add(str(unit))
        out[metric] = counted
    return out


def declared_mean_over(suite: str) -> str | None:
    """The breakdown over whose values ``suite``'s benchmark averages (``SuitePlugin.mean_over``), or None."""
    try:
        entry = SUITES.entry(suite) if suite in SUITES.names() else None
    except Exception:  # noqa: BLE001 - a broken plugin elsewhere must not hide a store's tables
        entry = None
    return getattr(entry, "mean_over", None)


def declared_breakdown(df: pd.DataFrame, by: str) -> pd.Series:
    """Per record, the value of a breakdown its suite declares (``SuitePlugin.breakdowns``,
    stored in ``extra["breakdown"]``); ValueError when no record carries ``by``."""
    extras = df["extra"] if "extra" in df.columns else pd.Series([{}] * len(df), index=df.index)
    values = extras.map(lambda e: (e.get("breakdown") or {}).get(by) if isinstance(e, dict) else None)
    if not values.notna().any():
        known = sorted({k for e in extras if isinstance(e, dict) for k in (e.get("breakdown") or {})})
        raise ValueError(f"cannot break down by {by!r}: neither a record column nor a breakdown the records' "
                         f"suites declare (task_type, split{''.join(', ' + k for k in known)})")
    return values
