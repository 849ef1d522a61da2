"""Transfer and breakdown tables built only from stored episode records.

Nothing here runs an episode: every figure is recomputed from the records via
:mod:`harness.scoring.summaries`. A table is a pandas DataFrame whose values are
fractions (deltas are differences of fractions), with two-level columns
``(group, metric)``; the renderers :func:`to_markdown`, :func:`to_latex` and
:func:`to_csv` print rates as percentages with one decimal (``56.3``) and
deltas signed in percentage points (``+5.0``, ``-0.4``).

Display conventions
-------------------
* NaN (a metric a suite lacks, e.g. GC where no episode has goal conditions,
  or a variant with no records on a suite/split) prints as "–" ("--" in LaTeX,
  an empty field in CSV).
* Error records count as failures (see :mod:`harness.scoring.summaries`). A cell whose
  records include errors gets a "†" suffix and a footnote line with the error
  counts; CSV, which has no footnotes and should stay numeric, instead gets a
  trailing ``errors`` column. The information travels in ``table.attrs``
  (``"marked"``: (row, group) pairs to mark; ``"errors"``: one dict per
  (row, group) with errors, episodes and error kinds).
* Delta columns have metric names starting with "Δ"; the baseline row has no
  delta (NaN, printed "–").
* Path-length-weighted columns (PLW SR, PLW GC) name the unit in which their
  records count L* and T, the run's protocol fact ``expert_length_unit``
  (``harness.tables.selection`` puts it in the column of that name): "PLW SR
  [interactions + GotoLocation subgoals]". A column whose records count in
  different units says "[units differ]" and a footnote gives each row's unit;
  records that state none add nothing.
* Repeats (runs of a cell that differ only in trial seed or repeat index):
  where some cell has several, each SR / GC value column gets ``:sd``, ``:k``,
  ``:lo``, ``:hi`` beside it (sd over repeats, repeats, two-stage bootstrap
  interval), printed "50.0 ±3.2 (r=3)" and, with statistics, in a footnote.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.scoring.summaries import metric_columns, summarize
from harness.tables import caveats
from harness.scoring import policy as scoring
from harness.stats.paired import (
    BOOTSTRAP_RESAMPLES,
    PairedCell,
    paired_delta,
    repeat_interval,
    value_matrix,
    _filled,
)
from harness.types import PROTOCOL_EXPERT_LENGTH_UNIT

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

#: Labels of the cost metrics (declared metrics' labels come from their declarations).
_METRIC_LABELS = {
    "seconds": "s/ep",
    "prompt_tokens": "prompt tok/ep",
    "output_tokens": "output tok/ep",
}

#: Cost metrics (``--metrics``): means per episode, not rates. ``seconds`` is the
#: record's wall time; the token counts are the sums over the episode's agent calls
#: (transcripts; :func:`add_cost_columns`), NaN for an episode with no counted call.
COST_METRICS: tuple[str, ...] = ("seconds", "prompt_tokens", "output_tokens")
_COST_FORMAT = {"seconds": "{:.3g}", "prompt_tokens": "{:.0f}", "output_tokens": "{:.0f}"}


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


def _summarize(df: pd.DataFrame, by: list[str], metrics: Sequence[str]) -> pd.DataFrame:
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


# --- Building tables ----------------------------------------------------------


def declared_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns a table of ``df`` can show: those its suites declare, then cost."""
    suites = df["suite"].unique() if "suite" in df.columns else ()
    return metric_columns(scoring.of_frame(df).declared(suites).values()) + list(COST_METRICS)


def default_metrics(df: pd.DataFrame) -> list[str]:
    """The metrics a table shows when none are named: the declared defaults of ``df``'s suites."""
    suites = df["suite"].unique() if "suite" in df.columns else ()
    return [m.name for m in scoring.of_frame(df).declared(suites).values() if m.default]


def _check_metrics(metrics: Sequence[str] | None, df: pd.DataFrame) -> list[str]:
    """The metrics as a list (None: the declared defaults); ValueError unless each is declared
    by a suite of ``df`` (or is a cost metric)."""
    metrics = default_metrics(df) if metrics is None else list(metrics)
    allowed = declared_columns(df)
    bad = [m for m in metrics if m not in allowed]
    if bad or not metrics:
        raise ValueError(f"table metrics must be among {allowed}, got {metrics}")
    return metrics


def ordered_variants(
    df: pd.DataFrame,
    baseline: str | None,
    variants_order: Sequence[str] | None,
    require_baseline: bool = True,
) -> list[str]:
    """Row order: the baseline first, then ``variants_order`` or the rest alphabetically.

    ``variants_order`` also selects: variants present but not listed are left
    out. Raises ValueError, naming the variants present, when the baseline (if
    required) or a listed variant has no records.
    """
    present = sorted({str(v) for v in df["variant"].dropna()})
    if require_baseline and baseline not in present:
        raise ValueError(
            f"baseline variant {baseline!r} has no records; variants present: "
            f"{', '.join(present) if present else '(none)'}"
        )
    if variants_order is None:
        rest = [v for v in present if v != baseline]
    else:
        unknown = [v for v in variants_order if v not in present]
        if unknown:
            raise ValueError(
                f"variants {unknown} have no records; variants present: {', '.join(present)}"
            )
        rest = [v for v in dict.fromkeys(variants_order) if v != baseline]
    head = [baseline] if baseline in present else []
    return head + rest


def _kinds_text(kinds: pd.Series) -> str:
    """'1 agent, 2 env' from the error_kind values of a group's error records."""
    counts = kinds.value_counts().sort_index()
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def _error_entries(df: pd.DataFrame, row_of: pd.Series, group_of: pd.Series) -> list[dict[str, Any]]:
    """One entry per (row, group) cell whose records include error records."""
    goals = pd.to_numeric(df["gc_total"], errors="coerce").fillna(0).to_numpy() > 0 if "gc_total" in df else False
    frame = pd.DataFrame(
        {"row": row_of.to_numpy(), "group": group_of.to_numpy(), "kind": df["error_kind"].to_numpy(), "goals": goals}
    )
    entries = []
    for (row, group), cell in frame.groupby(["row", "group"], sort=True):
        errs = cell["kind"].dropna()
        errs = errs[errs.astype(str) != ""]
        if len(errs):
            entries.append(
                {
                    "row": row,
                    "group": group,
                    "errors": int(len(errs)),
                    "episodes": int(len(cell)),
                    "kinds": _kinds_text(errs.astype(str)),
                    # Episodes with goal conditions (a one-step answer has none to meet).
                    "goals": bool(cell["goals"].any()),
                }
            )
    return entries


def _split_labels(df: pd.DataFrame) -> pd.Series:
    """'suite/split' label of each record (a transfer-table column group)."""
    return df["suite"].astype(str) + "/" + df["split"].astype(str)


def _length_units(df: pd.DataFrame, row_of: pd.Series, group_of: pd.Series,
                  average: str | None = None) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(column -> the unit its records count L* and T in, or :data:`UNITS_DIFFER`; one entry
    per column of several units: ``{"group", "rows": {row: units}}``). ``average``: a column
    over all the others. Records without the ``expert_length_unit`` column or value count in
    no stated unit."""
    if PROTOCOL_EXPERT_LENGTH_UNIT not in df.columns or not len(df):
        return {}, []
    stated = [u if isinstance(u, str) and u else None for u in df[PROTOCOL_EXPERT_LENGTH_UNIT]]
    frame = pd.DataFrame({"row": row_of.to_numpy(), "group": group_of.to_numpy(), "unit": stated})
    if average is not None:
        frame = pd.concat([frame, frame.assign(group=average)], ignore_index=True)
    units: dict[str, str] = {}
    differ: list[dict[str, Any]] = []
    for group, cell in frame.groupby("group", sort=False, dropna=False):
        found = list(dict.fromkeys(u if isinstance(u, str) else None for u in cell["unit"]))  # pandas: None -> NaN
        if found == [None]:
            continue
        if len(found) == 1:
            units[str(group)] = str(found[0])
            continue
        units[str(group)] = UNITS_DIFFER
        rows = {row: " / ".join(dict.fromkeys(u if isinstance(u, str) else "unstated" for u in part["unit"]))
                for row, part in cell.groupby("row", sort=True)}
        differ.append({"group": str(group), "rows": rows})
    return units, differ


def _sorted_groups(df: pd.DataFrame) -> list[str]:
    """Suite/split labels present, sorted by (suite, split)."""
    pairs = sorted({(str(a), str(b)) for a, b in zip(df["suite"], df["split"])})
    return [f"{a}/{b}" for a, b in pairs]


def _row_average(values: pd.DataFrame) -> pd.Series:
    """Mean over columns defined for at least one row; NaN for a row missing any of them.

    A column that is NaN for every row (a metric the suite lacks) is left out
    for everyone; a row missing a column others have is not comparable, so its
    average is NaN rather than a mean over fewer columns.
    """
    defined = values.loc[:, values.notna().any(axis=0)]
    if defined.shape[1] == 0:
        return pd.Series(np.nan, index=values.index)
    return defined.mean(axis=1, skipna=False)


def transfer_table(
    df: pd.DataFrame,
    baseline: str | None = "base",
    metrics: Sequence[str] | None = None,
    variants_order: Sequence[str] | None = None,
    per_column_delta: bool = False,
    columns: str = "split",
    stats: bool = False,
    layout: Mapping[str, Sequence[str]] | None = None,
    average: bool = True,
    drop_undefined: bool | str = False,
    labels: Mapping[str, str] | None = None,
    stats_in_notes: bool = False,
    pooled: bool = False,
    columns_of: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Variants x (column, metric) table with averages and deltas vs the baseline.

    Rows: the baseline, then ``variants_order`` (which also selects) or the other
    variants alphabetically. Column groups: one per suite/split present (sorted)
    with ``columns="split"``, or one per suite with ``columns="suite"`` (the mean
    of the suite's split values, as EmbodiedBench averages its subsets); then
    ``avg``, the mean of those groups (see :func:`_row_average`). Δ columns
    (row minus baseline, NaN on the baseline row) follow the metrics of
    ``avg``, and of every group when ``per_column_delta``, ``stats`` or
    ``columns="suite"``. ``baseline=None`` gives no Δ columns.

    ``stats`` makes each Δ of SR and GC the *paired* Δ over the episodes both
    the variant and the baseline ran (episode id and seed), and adds beside it,
    over the same pairs, its paired bootstrap 95 % interval
    (``Δsr:lo``/``Δsr:hi``), for SR the exact McNemar p-value (``Δsr:p``), and
    the number of pairs (``Δsr:n``) (:mod:`harness.stats.paired`). Where a variant's
    episodes differ from the baseline's in a column, ``attrs["mismatch"]``
    holds the counts; renderers mark that Δ with "‡" and say so in a footnote.
    Raises ValueError if a named baseline has no records.

    ``layout`` (column label -> its ``suite/split`` cells, in order) replaces
    ``columns``: each column is the mean of its cells, and records outside the
    layout are left out. ``average=False`` drops the ``avg`` column.
    ``drop_undefined`` leaves out a (column, metric) that no row defines (GC on
    a suite whose episodes have no goal conditions) with its Δ, instead of a
    column of "–". Whatever is shown, ``avg`` and its Δ (plain or paired) are
    over the same columns: those defined for the metric, and a row missing one
    of them has neither. ``labels`` renames rows for display (statistics are
    computed on the variant names); ``stats_in_notes`` prints each paired
    interval and p-value in a footnote instead of in its Δ cell.

    **Headline cells.** A suite whose benchmark reports the mean over a breakdown
    (``SuitePlugin.mean_over``, e.g. CFG-Bench's task types) has, in each of its
    suite/split cells, that mean: each value of the breakdown counts once, whatever its
    number of episodes (:func:`unit_labels`); the column header says so ("S (mean over
    task_type)") and a footnote gives the pooled figures. ``pooled`` pools every episode
    instead, and the header says "(pooled)".

    **What an average is over** (a mean over task types, a column over several splits,
    ``avg``): the units where the metric *counts* -- some record has a value, or awaits a
    score (:func:`counted_units`) -- decided from ``columns_of`` (default ``df``: the
    records of every variant of the suites and splits shown, so that choosing rows never
    changes a row's average). A row without a value in one of them has no average (NaN):
    no average is ever over a subset of its units. ``drop_undefined`` drops a column only
    where the metric counts nowhere in it (never a column whose answers await a score);
    ``drop_undefined="valueless"`` also drops one no row has a value in, for a caller that
    names each such column itself (an experiment's "no value in the store" lines).
    """
    metrics = _check_metrics(metrics, df)
    if columns not in ("split", "suite"):
        raise ValueError(f"columns must be 'split' or 'suite', got {columns!r}")
    if stats and baseline is None:
        raise ValueError("paired statistics compare against a baseline: name one with --baseline")
    if layout is not None:
        layout = {str(col): [str(g) for g in groups] for col, groups in layout.items()}
        if not layout or any(not groups for groups in layout.values()):
            raise ValueError("a table layout needs at least one column, each with at least one suite/split")
        wanted = {g for groups in layout.values() for g in groups}
        df = df[_split_labels(df).isin(wanted).to_numpy()]
    variants = ordered_variants(df, baseline, variants_order, require_baseline=baseline is not None)
    # The columns and what an average is over come from the records before the rows are chosen:
    # which rows are shown never changes a row's cells.
    every_row = df if columns_of is None else columns_of
    if layout is not None:
        every_row = every_row[_split_labels(every_row).isin(wanted).to_numpy()]
    df = df[df["variant"].astype(str).isin(variants)]
    split_groups = sorted(set(_sorted_groups(df)) | set(_sorted_groups(every_row)),
                          key=lambda g: tuple(g.split("/", 1)))
    if layout is not None:
        pass
    elif columns == "split":
        layout = {g: [g] for g in split_groups}
    else:
        layout = {}
        for g in split_groups:
            layout.setdefault(g.split("/", 1)[0], []).append(g)
    basis = every_row
    unit_of, mean_over = unit_labels(df, pooled)
    basis_units, _ = unit_labels(basis, pooled)
    units_of_group: dict[str, set[str]] = {}
    for unit, group in zip(basis_units, _split_labels(basis)):
        units_of_group.setdefault(group, set()).add(unit)
    for unit, group in zip(unit_of, _split_labels(df)):  # (records the basis lacks: their own units)
        units_of_group.setdefault(group, set()).add(unit)
    counted = counted_units(basis, basis_units, metrics, fallback=df.assign(_unit=unit_of.to_numpy()))
    cells = _summarize(df.assign(group=unit_of.to_numpy()), ["variant", "group"], metrics)
    cells = cells.set_index(["variant", "group"])

    values: dict[tuple[str, str], pd.Series] = {}
    #: (column, metric) -> the weight of each unit in its value (empty: the metric counts nowhere in it)
    unit_weights: dict[tuple[str, str], dict[str, float]] = {}
    nan = pd.Series(np.nan, index=variants, dtype=float)
    for col, groups in layout.items():
        for metric in metrics:
            per_split: dict[str, pd.Series] = {}
            weights: dict[str, dict[str, float]] = {}
            for g in groups:
                units = [u for u in sorted(units_of_group.get(g, ())) if u in counted[metric]]
                if not units:  # the metric counts nowhere on this split
                    continue
                per_unit = pd.DataFrame({u: _cell_column(cells, variants, u, metric) for u in units})
                per_split[g] = per_unit.mean(axis=1, skipna=False)
                weights[g] = {u: 1.0 / len(units) for u in units}
            values[(col, metric)] = pd.DataFrame(per_split).mean(axis=1, skipna=False) if per_split else nan.copy()
            unit_weights[(col, metric)] = {u: w / len(weights) for ws in weights.values() for u, w in ws.items()}
    # The columns each metric's average is over: those where it counts (never fewer for one row).
    averaged: dict[str, list[str]] = {}
    for metric in metrics:
        averaged[metric] = [c for c in layout if unit_weights[(c, metric)]]
        per_column = pd.DataFrame({c: values[(c, metric)] for c in averaged[metric]})
        values[(AVG, metric)] = per_column.mean(axis=1, skipna=False) if averaged[metric] else nan.copy()
        unit_weights[(AVG, metric)] = {u: w / len(averaged[metric]) for c in averaged[metric]
                                       for u, w in unit_weights[(c, metric)].items()}

    every_delta = per_column_delta or stats or columns == "suite" or not average
    shown_columns = [*layout, AVG] if average else list(layout)
    table_columns: dict[tuple[str, str], pd.Series] = {}
    for col in shown_columns:
        # (a cost metric no agent counted stays: "–" there says "not counted", not "undefined")
        shown = [m for m in metrics
                 if not (drop_undefined and m not in COST_METRICS and (not unit_weights[(col, m)] or (
                     drop_undefined == "valueless" and values[(col, m)].isna().all())))]
        for metric in shown:
            table_columns[(col, metric)] = values[(col, metric)]
        if baseline is not None and (every_delta or col == AVG):
            for metric in shown:
                table_columns[(col, DELTA + metric)] = _delta(values[(col, metric)], baseline)
                if stats and metric not in COST_METRICS:
                    paired = _paired_columns(df, variants, baseline, unit_weights[(col, metric)], metric, unit_of)
                    if col == AVG:  # no average, no Δ: the same columns on both sides
                        undefined = values[(col, metric)].isna() | np.isnan(values[(col, metric)].get(baseline, np.nan))
                        for series in paired.values():
                            series[undefined] = np.nan
                    # The paired Δ, on the episodes both ran: the same set as its interval and p.
                    table_columns[(col, DELTA + metric)] = paired.pop("")
                    for suffix, series in paired.items():
                        table_columns[(col, DELTA + metric + suffix)] = series

    repeats = has_repeats(df)
    if repeats:
        table_columns = _with_repeat_columns(table_columns, df, variants, unit_weights, values, unit_of)
    table = pd.DataFrame(table_columns, index=pd.Index(variants, name="variant"))
    table.columns = pd.MultiIndex.from_tuples(list(table_columns), names=["group", "metric"])
    column_of = {g: col for col, groups in layout.items() for g in groups}
    group_labels = _split_labels(df).map(column_of)
    errors = _error_entries(df, df["variant"].astype(str), group_labels)
    marked = [(e["row"], e["group"]) for e in errors]
    if average:
        marked += [(row, AVG) for row in dict.fromkeys(e["row"] for e in errors)]
    mismatch = _episode_set_mismatches(df, variants, baseline, layout) if baseline is not None else []
    if not average:
        mismatch = [m for m in mismatch if m["group"] != AVG]
    units, units_differ = _length_units(df, df["variant"].astype(str), group_labels, AVG if average else None)
    # episodes run of the split's total, agent failures, settings (harness.tables.caveats)
    cell_caveats = caveats.of(df, df["variant"].astype(str), group_labels, {AVG: list(layout)} if average else {})
    table.attrs.update(
        {
            "caveats": cell_caveats, scoring.FRAME_ATTR: scoring.of_frame(df),  # the view's (report.declared_only)
            "kind": "transfer",
            "baseline": baseline,
            "row_name": "variant",
            "marked": marked,
            "errors": errors,
            "stats": stats,
            "mismatch": mismatch,
            "stats_in_notes": bool(stats and stats_in_notes),
            "layout": {col: list(groups) for col, groups in layout.items()},
            "metrics": list(metrics),
            "repeats": repeats,
            "units": units,
            "units_differ": units_differ,
        }
    )
    aggregates, lines = _aggregate_notes(df, variants, layout, metrics, mean_over, pooled, units_of_group, counted)
    table.attrs["aggregates"] = aggregates
    if lines:
        table.attrs["extra_notes"] = [*table.attrs.get("extra_notes", []), *lines]
    return relabel(table, labels) if labels else table


def unit_labels(df: pd.DataFrame, pooled: bool = False) -> tuple[pd.Series, dict[str, str]]:
    """Per record, the unit a cell's value averages over (each unit counts once): its
    ``suite/split``, or for a suite that declares ``mean_over`` (unless ``pooled``)
    ``suite/split#value`` (e.g. ``cfg_bench/all#FAU``; a record without a value: ``#unknown``,
    a unit of its own). Returns the labels and suite -> the field averaged over."""
    labels = _split_labels(df).astype(object)
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


def _aggregate_notes(df: pd.DataFrame, variants: list[str], layout: Mapping[str, Sequence[str]],
                     metrics: Sequence[str], mean_over: Mapping[str, str], pooled: bool,
                     units_of_group: Mapping[str, set[str]], counted: Mapping[str, set[str]],
                     ) -> tuple[dict[str, dict[str, str]], list[str]]:
    """(column -> metric -> how its cells aggregate a suite's breakdown: "mean over FIELD" or "pooled";
    footnote lines: per such suite, what its cells are and the other figure: the pooled values
    beside a mean, or where the benchmark's own figure is)."""
    aggregates: dict[str, str] = {}
    lines: list[str] = []
    for suite in sorted(str(x) for x in df["suite"].unique()):
        field = mean_over.get(suite) if not pooled else declared_mean_over(suite)
        if field is None:
            continue
        cols = [c for c, groups in layout.items() if any(g.split("/", 1)[0] == suite for g in groups)]
        # (column, metric) whose value averages several units of the suite's (a mean that differs from pooling)
        multi = {(c, m) for c in cols for m in metrics
                 if any(len([u for u in units_of_group.get(g, ()) if u in counted.get(m, ())]) > 1
                        for g in layout[c] if g.split("/", 1)[0] == suite)}
        several = [c for c in cols if pooled or any((c, m) in multi for m in metrics)]
        if pooled:
            mine = df[(df["suite"].astype(str) == suite).to_numpy()]
            try:
                values = mine[field] if field in mine.columns else declared_breakdown(mine, field)
            except ValueError:
                continue
            if not (values.groupby([mine["variant"].astype(str), _split_labels(mine)]).nunique() > 1).any():
                continue
            for c in several:
                aggregates[c] = {m: "pooled" for m in metrics if m not in COST_METRICS}
            lines.append(f"{suite}: each cell pools its episodes (--pooled); its benchmark's overall figures are the "
                         f"mean over {field}, the table's cells without --pooled.")
            continue
        if not several:
            continue
        for c in several:
            aggregates[c] = {m: f"mean over {field}" for m in metrics if (c, m) in multi}
        mine = df[(df["suite"].astype(str) == suite).to_numpy()]
        cells = _summarize(mine.assign(group=_split_labels(mine).to_numpy()), ["variant", "group"],
                           [m for m in metrics if m not in COST_METRICS or m in mine.columns]).set_index(["variant", "group"])
        figures = []
        for c in several:
            groups = [g for g in layout[c] if g.split("/", 1)[0] == suite]
            for metric in metrics:
                if (c, metric) not in multi or metric not in cells.columns:  # (one unit: the mean is the pooled value)
                    continue
                per = pd.DataFrame({g: _cell_column(cells, variants, g, metric) for g in groups}).mean(axis=1, skipna=False)
                shown = [f"{v} {format_metric(x, metric)}" for v, x in per.items() if not math.isnan(x)]
                if shown:
                    figures.append(f"{c} {_metric_label(metric)}: " + ", ".join(shown))
        lines.append(f"{suite}: each cell is the mean over its {field} values (each counts once, whatever its number "
                     f"of episodes), as its benchmark reports its overall figures; pooled over episodes instead: "
                     + ("; ".join(figures) if figures else "no value") + " (harness table --pooled prints pooled cells).")
    return aggregates, lines


#: Columns a record's repeat is told by: the run's trial seed offset and its declared repeat
#: index (harness.tables.selection adds both; a frame without them is one repeat).
REPEAT_KEYS = ("repeat", "repeat_index")


def repeat_labels(df: pd.DataFrame) -> pd.Series:
    """Each record's repeat, as a label ('seed+1/r0'): runs of one cell that differ only in
    their trial seed or their declared repeat index."""
    parts = [df[c].fillna(0).astype(int).astype(str) if c in df.columns else pd.Series("0", index=df.index)
             for c in REPEAT_KEYS]
    return "seed+" + parts[0] + "/r" + parts[1]


def _pair_keys(df: pd.DataFrame) -> list[str]:
    """What pairs a variant's episode with the baseline's: episode id and seed, and the
    declared repeat index where there is one (repeats with one seed differ only by it)."""
    return ["episode_id", "seed", *(["repeat_index"] if "repeat_index" in df.columns else [])]


def has_repeats(df: pd.DataFrame) -> bool:
    """Whether some variant ran some suite/split more than once (repeats)."""
    if not len(df) or not any(c in df.columns for c in REPEAT_KEYS):
        return False
    frame = pd.DataFrame({"v": df["variant"].astype(str).to_numpy(), "g": _split_labels(df).to_numpy(),
                          "r": repeat_labels(df).to_numpy()})
    return bool((frame.groupby(["v", "g"])["r"].nunique() > 1).any())


def _with_repeat_columns(table_columns: dict, df: pd.DataFrame, variants: list[str],
                         unit_weights: Mapping[tuple[str, str], Mapping[str, float]],
                         values: dict, unit_of: pd.Series) -> dict:
    """``table_columns`` with, after each SR / GC value column, its spread over repeats:
    ``:sd`` (sd of the per-repeat values), ``:k`` (repeats), ``:lo`` / ``:hi`` (two-stage
    bootstrap 95 % interval over repeats and their episodes; harness.stats.paired)."""
    frame = df.assign(_group=unit_of.to_numpy(), _repeat=repeat_labels(df).to_numpy(),
                      _error=_error_mask(df), _variant=df["variant"].astype(str).to_numpy())
    episode_values = scoring.value_rows(frame)
    position = pd.Series(range(len(frame)), index=frame.index)
    cells_of = {key: cell for key, cell in frame.groupby(["_variant", "_group", "_repeat"], sort=True)}
    out: dict = {}
    for (col, metric), series in table_columns.items():
        out[(col, metric)] = series
        if metric in COST_METRICS or _is_delta(metric) or _is_stat(metric):
            continue
        declared = scoring.known_metric(metric)
        matrices: dict[tuple[str, str, str], np.ndarray] = {}
        for key, cell in cells_of.items():
            err = cell["_error"].to_numpy(dtype=bool)
            success = cell["success"].astype(bool).to_numpy() & ~err
            s = np.where(err, 0, pd.to_numeric(cell["gc_satisfied"]).to_numpy(dtype=float))
            ts = pd.to_numeric(cell["gc_total"]).to_numpy(dtype=float)
            num, den = scoring.columns(declared, [episode_values[i] for i in position.loc[cell.index]])
            matrices[key] = value_matrix(success, s, ts, num, den)
        weights = unit_weights[(col, metric)]
        stats = {":sd": [], ":k": [], ":lo": [], ":hi": []}
        for variant in variants:
            reps = [set(r for v, g, r in matrices if v == variant and g == group) for group in weights]
            common = sorted(set.intersection(*reps)) if reps else []
            defined = not math.isnan(values[(col, metric)].get(variant, math.nan))
            if not defined or not common:
                for column in stats.values():
                    column.append(np.nan)
                continue
            result = repeat_interval([[matrices[(variant, g, r)] for g in weights] for r in common],
                                     list(weights.values()), declared)
            stats[":sd"].append(result.sd)
            stats[":k"].append(float(result.repeats))
            stats[":lo"].append(result.lo)
            stats[":hi"].append(result.hi)
        for suffix, column in stats.items():
            out[(col, metric + suffix)] = pd.Series(column, index=variants, dtype=float)
    return out


def relabel(table: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """The table with rows renamed for display (attrs follow: marks, footnotes, baseline)."""
    labels = {str(k): str(v) for k, v in labels.items()}
    seen: dict[str, str] = {}
    for row in table.index:
        new = labels.get(str(row), str(row))
        if new in seen:
            raise ValueError(f"rows {seen[new]!r} and {row!r} would both be labelled {new!r}")
        seen[new] = str(row)
    out = table.rename(index=lambda r: labels.get(str(r), r))
    attrs = dict(table.attrs)
    name = lambda r: labels.get(str(r), r)  # noqa: E731
    attrs["marked"] = [(name(r), g) for r, g in attrs.get("marked", [])]
    attrs["errors"] = [{**e, "row": name(e["row"])} for e in attrs.get("errors", [])]
    attrs["mismatch"] = [{**e, "row": name(e["row"])} for e in attrs.get("mismatch", [])]
    attrs["units_differ"] = [{**e, "rows": {name(r): u for r, u in e["rows"].items()}}
                             for e in attrs.get("units_differ", [])]
    if attrs.get("caveats"):
        attrs["caveats"] = caveats.relabel(attrs["caveats"], name)
    if attrs.get("baseline") is not None:
        attrs["baseline"] = name(attrs["baseline"])
    attrs["labels"] = {**attrs.get("labels", {}), **{name(k): k for k in labels}}
    out.attrs = attrs
    return out


def select(df: pd.DataFrame, suites: Sequence[str] = (), splits: Sequence[str] = (),
           variants: Sequence[str] = ()) -> pd.DataFrame:
    """Records whose suite, split and variant each match one of the patterns given
    (shell globs, ``fnmatch``; an empty list matches everything). ValueError naming
    what is present when a pattern matches nothing."""
    import fnmatch

    keep = np.ones(len(df), dtype=bool)
    for column, patterns, what in (("suite", suites, "--suite"), ("split", splits, "--split"),
                                   ("variant", variants, "--variant")):
        if not patterns:
            continue
        values = df[column].astype(str)
        present = sorted(set(values))
        for pattern in patterns:
            if not fnmatch.filter(present, pattern):
                raise ValueError(f"{what} {pattern!r} matches nothing; present: {', '.join(present) or '(none)'}")
        keep &= values.map(lambda v: any(fnmatch.fnmatchcase(v, p) for p in patterns)).to_numpy(dtype=bool)
    return df[keep]


def _episode_set_mismatches(df: pd.DataFrame, variants: list[str], baseline: str,
                            layout: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One entry per (variant, column) whose episodes differ from the baseline's there.

    Counts: the variant's episodes, the baseline's and the shared ones (episode
    id and seed), summed over the column's suite/split cells (``avg``: all).
    """
    keys = df.assign(_group=_split_labels(df).to_numpy(), _variant=df["variant"].astype(str).to_numpy())
    pair = _pair_keys(df)
    sets = {(v, g): set(zip(*(cell[k] for k in pair))) for (v, g), cell in keys.groupby(["_variant", "_group"])}
    out = []
    columns = {**layout, AVG: [g for gs in layout.values() for g in gs]}
    for variant in variants:
        if variant == baseline:
            continue
        for col, groups in columns.items():
            mine = [sets.get((variant, g), set()) for g in groups]
            base = [sets.get((baseline, g), set()) for g in groups]
            if all(a == b for a, b in zip(mine, base)):
                continue
            out.append({"row": variant, "group": col, "episodes": sum(map(len, mine)),
                        "baseline_episodes": sum(map(len, base)),
                        "shared": sum(len(a & b) for a, b in zip(mine, base))})
    return out


def _cell_weights(layout: dict[str, list[str]], col: str) -> dict[str, float]:
    """Weight of each suite/split cell in a column's value (``avg``: equal per column)."""
    if col != AVG:
        return {g: 1.0 / len(layout[col]) for g in layout[col]}
    return {g: 1.0 / (len(layout) * len(gs)) for gs in layout.values() for g in gs}


def _paired_columns(df: pd.DataFrame, variants: list[str], baseline: str, weights: Mapping[str, float],
                    metric: str, unit_of: pd.Series | None = None) -> dict[str, pd.Series]:
    """Each variant's paired Δ vs the baseline (key ``""``), its ``:lo``, ``:hi``
    (for SR ``:p``) and ``:n``, the number of episode pairs it is computed on; ``weights``:
    each unit's (``unit_of``, default the suite/split) weight."""
    labels = _split_labels(df) if unit_of is None else unit_of
    frame = df.assign(_group=labels.to_numpy(), _error=_error_mask(df), _repeat=repeat_labels(df).to_numpy())
    keys = _pair_keys(df)
    declared = scoring.known_metric(metric)
    num, den = scoring.columns(declared, scoring.value_rows(df))
    frame = frame.assign(_num=num, _den=den)
    # (the baseline's rows after the metric's columns: both sides of a pair carry them)
    base = frame[frame["variant"].astype(str) == baseline]
    out = {"": [], ":lo": [], ":hi": []} | ({":p": []} if declared.binary else {}) | {":n": []}
    for variant in variants:
        if variant == baseline:
            for column in out.values():
                column.append(np.nan)
            continue
        mine = frame[frame["variant"].astype(str) == variant]
        cells = []
        for group, weight in weights.items():
            a = mine[mine["_group"] == group]
            b = base[base["_group"] == group]
            pairs = a.merge(b, on=keys, suffixes=("_v", "_b"))
            cells.append(_paired_cell(pairs, weight))
        result = paired_delta(cells, declared)
        out[""].append(result.delta)
        out[":n"].append(float(result.pairs))
        out[":lo"].append(result.lo)
        out[":hi"].append(result.hi)
        if ":p" in out:
            out[":p"].append(result.p)
    return {k: pd.Series(v, index=variants, dtype=float) for k, v in out.items()}


def _paired_cell(pairs: pd.DataFrame, weight: float) -> PairedCell:
    """Arrays of one cell's pairs; error records count as failures with no goal condition met."""
    def side(suffix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        err = pairs[f"_error{suffix}"].to_numpy(dtype=bool)
        success = pairs[f"success{suffix}"].to_numpy(dtype=bool) & ~err
        s = np.where(err, 0, pd.to_numeric(pairs[f"gc_satisfied{suffix}"]).to_numpy(dtype=float))
        ts = pd.to_numeric(pairs[f"gc_total{suffix}"]).to_numpy(dtype=float)
        return success, s, ts

    sv, s_v, ts_v = side("_v")
    sb, s_b, ts_b = side("_b")
    repeat = pairs["_repeat_v"].to_numpy(dtype=object) if "_repeat_v" in pairs.columns else None
    if "_num_v" not in pairs.columns:
        return PairedCell(sv, sb, s_v, ts_v, s_b, ts_b, weight, repeat)
    nv, dv = _filled(pairs["_num_v"], pairs["_den_v"])
    nb, db = _filled(pairs["_num_b"], pairs["_den_b"])
    return PairedCell(sv, sb, s_v, ts_v, s_b, ts_b, weight, repeat, nv, dv, nb, db)


def _error_mask(df: pd.DataFrame) -> np.ndarray:
    kinds = df["error_kind"]
    return kinds.notna().to_numpy() & (kinds.astype("object") != "").to_numpy()


def _cell_column(cells: pd.DataFrame, variants: list[str], group: str, metric: str) -> pd.Series:
    """The metric for each variant on one group; NaN where the variant has no records."""
    values = [
        cells.at[(v, group), metric] if (v, group) in cells.index else np.nan for v in variants
    ]
    return pd.Series(values, index=variants, dtype=float)


def _delta(column: pd.Series, baseline: str) -> pd.Series:
    """column minus its baseline entry; NaN on the baseline row itself."""
    delta = column - column.get(baseline, np.nan)
    if baseline in delta.index:
        delta[baseline] = np.nan
    return delta


def breakdown_table(
    df: pd.DataFrame,
    by: str = "task_type",
    metrics: Sequence[str] | None = None,
    baseline: str | None = "base",
    variants_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Rows = values of ``by`` (e.g. task types), columns = (variant, metric).

    A final ``all`` row pools every record of the variant. When the records
    span several suites, row labels are ``suite/value`` so equal names from
    different suites are not merged (``by="split"`` always gives ``suite/split``).
    Variants are ordered as in :func:`transfer_table`, but the baseline is only
    used for ordering here and need not be present.
    """
    metrics = _check_metrics(metrics, df)
    if by not in df.columns:
        df = df.assign(**{by: declared_breakdown(df, by)})
    variants = ordered_variants(df, baseline, variants_order, require_baseline=False)
    df = df[df["variant"].astype(str).isin(variants)]
    rows = _breakdown_labels(df, by)
    row_order = sorted(set(rows)) + [ALL]
    cells = _summarize(df.assign(_row=rows.to_numpy()), ["variant", "_row"], metrics).set_index(
        ["variant", "_row"]
    )
    pooled = _summarize(df, ["variant"], metrics).set_index("variant")

    table_columns: dict[tuple[str, str], list[float]] = {}
    for variant in variants:
        for metric in metrics:
            values = [
                cells.at[(variant, r), metric] if (variant, r) in cells.index else np.nan
                for r in row_order[:-1]
            ]
            values.append(pooled.at[variant, metric])
            table_columns[(variant, metric)] = values
    means = _means_over(df, by, rows, row_order[:-1], table_columns)  # the benchmarks' own aggregate rows
    row_order += list(means)
    table = pd.DataFrame(table_columns, index=pd.Index(row_order, name=by), dtype=float)
    table.columns = pd.MultiIndex.from_tuples(list(table_columns), names=["group", "metric"])
    errors = _error_entries(df, rows, df["variant"].astype(str))
    marked = [(e["row"], e["group"]) for e in errors]
    marked += [(label, group) for label in (ALL, *means) for group in dict.fromkeys(e["group"] for e in errors)]
    units, units_differ = _length_units(df, rows, df["variant"].astype(str))
    variant_of = df["variant"].astype(str)
    cell_caveats = caveats.of(df, rows, variant_of, settings_row_of=variant_of)
    cell_caveats["cells"] = caveats.cells(df, rows, variant_of, totals=False)  # a task type has no split total
    cell_caveats["cells"] += caveats.cells(df, pd.Series(ALL, index=df.index), variant_of)
    for label, over in means.items():  # a mean row carries its records' coverage like any cell
        part = rows.isin(over).to_numpy()
        cell_caveats["cells"] += caveats.cells(df[part], pd.Series(label, index=df.index[part]), variant_of[part],
                                               totals=False)
    table.attrs.update(
        {"caveats": cell_caveats, "kind": "breakdown", "baseline": baseline, "row_name": by, "marked": marked, "errors": errors,
         "units": units, "units_differ": units_differ, "means_over": {label: rows for label, rows in means.items()}}
    )
    if means:
        table.attrs["extra_notes"] = [
            f"{ALL}: pooled over every episode of the variant; "
            + "; ".join(f"{label}: per column, the mean of the {by} rows above it where the metric counts (each "
                        "counts once, whatever its number of episodes; one of them without a value leaves no mean), "
                        "as the suite's benchmark reports its overall figures"
                        for label in means) + "."]
    return table


#: Label of a breakdown table's row holding the mean over the rows of a field (``SuitePlugin.mean_over``).
MEAN_OVER = "mean over {by}"


def declared_mean_over(suite: str) -> str | None:
    """The breakdown over whose values ``suite``'s benchmark averages (``SuitePlugin.mean_over``), or None."""
    try:
        from harness.registry.catalog import SUITES

        entry = SUITES.entry(suite) if suite in SUITES.names() else None
    except Exception:  # noqa: BLE001 - a broken plugin elsewhere must not hide a store's tables
        entry = None
    return getattr(entry, "mean_over", None)


def _means_over(df: pd.DataFrame, by: str, rows: pd.Series, labels: Sequence[str],
                columns: dict[tuple[str, str], list[float]]) -> dict[str, list[str]]:
    """The rows a breakdown by ``by`` gains for the suites that declare ``mean_over=by``: per such
    suite, the mean of its ``by`` rows (those defined for the column; :data:`UNKNOWN` left out),
    appended to each of ``columns`` (whose values follow ``labels``). Returns label -> rows averaged."""
    suites = sorted(str(s) for s in df["suite"].unique() if declared_mean_over(str(s)) == by)
    out: dict[str, list[str]] = {}
    counted: dict[str, dict[str, set[str]]] = {}
    metrics = list(dict.fromkeys(m for _, m in columns))
    for suite in suites:
        mask = (df["suite"].astype(str) == suite).to_numpy()
        mine = set(rows[mask])
        over = [r for r in labels if r in mine and r.rpartition("/")[2] != UNKNOWN]
        if over:
            prefix = f"{suite}/" if df["suite"].nunique() > 1 else ""
            out[prefix + MEAN_OVER.format(by=by)] = over
            # the rows each metric counts on (a value, or answers awaiting a score): never fewer for one column
            counted[prefix + MEAN_OVER.format(by=by)] = counted_units(df[mask], rows[mask], metrics,
                                                                      fallback=df[mask].assign(_unit=rows[mask].to_numpy()))
    for (_, metric), values in columns.items():
        for label, over in out.items():
            mean_of = [values[labels.index(r)] for r in over if r in counted[label][metric]]
            values.append(float(np.mean(mean_of)) if mean_of and not np.isnan(mean_of).any() else np.nan)
    return out


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


def _breakdown_labels(df: pd.DataFrame, by: str) -> pd.Series:
    """Row label per record: the value of ``by`` (UNKNOWN if missing), suite-prefixed if needed."""
    values = df[by].astype("object").where(df[by].notna(), UNKNOWN).astype(str)
    if by == "split" or df["suite"].nunique() > 1:
        values = df["suite"].astype(str) + "/" + values
    return values


# --- Rendering ----------------------------------------------------------------


def _is_delta(metric: str) -> bool:
    return metric.startswith(DELTA)


def _is_stat(metric: str) -> bool:
    """A paired-statistics column (``Δsr:lo``, ``Δsr:hi``, ``Δsr:p``)."""
    return ":" in metric


def _shown_columns(table: pd.DataFrame) -> list[tuple[str, str]]:
    """Columns printed as their own cells in Markdown / LaTeX (statistics join their Δ cell)."""
    return [(g, m) for g, m in table.columns if not _is_stat(m)]


def format_p(p: float) -> str:
    """A p-value: two significant digits, '<0.001' below that; '' for NaN."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "<0.001" if p < 0.001 else f"{p:.2g}" if p < 0.1 else f"{p:.2f}"


def _stats_suffix(table: pd.DataFrame, row: Any, group: str, metric: str) -> str:
    """' [lo, hi] p=…' for a Δ cell that has paired statistics."""
    cols = table.columns
    text = ""
    if (group, metric + ":lo") in cols:
        lo, hi = table.at[row, (group, metric + ":lo")], table.at[row, (group, metric + ":hi")]
        if not (math.isnan(lo) or math.isnan(hi)):
            text += f" [{format_metric(lo, metric)}, {format_metric(hi, metric)}]"  # a score in its own unit
    if (group, metric + ":p") in cols:
        p = format_p(table.at[row, (group, metric + ":p")])
        if p:
            text += f" p={p}" if not p.startswith("<") else f" p{p}"
    return text


def _repeat_suffix(table: pd.DataFrame, row: Any, group: str, metric: str) -> str:
    """' ±3.2 (r=3)' for a value cell of a table with repeats: the sd over repeats and their count."""
    k_col = (group, metric + ":k")
    if k_col not in table.columns:
        return ""
    k = table.at[row, k_col]
    if k is None or math.isnan(k):
        return ""
    sd = table.at[row, (group, metric + ":sd")]
    spread = "" if math.isnan(sd) else f" ±{format_value(sd)}"
    return f"{spread} (r={int(k)})"


def _repeat_notes(table: pd.DataFrame) -> list[str]:
    """The repeats convention, and with statistics each value's two-stage interval."""
    if not table.attrs.get("repeats"):
        return []
    notes = ["r: repeats of the cell (runs that differ only in their trial seed or repeat index); the value pools "
             "every repeat's episodes (the mean over repeats when they ran the same episodes); ±: sd of the "
             "per-repeat values."]
    if not (table.attrs.get("stats") or table.attrs.get("stats_in_notes")):
        return notes
    notes[0] += (f" [lo, hi]: 95 % two-stage bootstrap interval ({BOOTSTRAP_RESAMPLES} resamples, seed 0: repeats "
                 "drawn with replacement, then each drawn repeat's episodes within each suite/split).")
    for row in table.index:
        for group, metric in _shown_columns(table):
            if _is_delta(metric) or (group, metric + ":lo") not in table.columns:
                continue
            lo, hi = table.at[row, (group, metric + ":lo")], table.at[row, (group, metric + ":hi")]
            if math.isnan(lo) or math.isnan(hi):
                continue
            value = format_metric(table.at[row, (group, metric)], metric)
            notes.append(f"{row}, {group}: {_metric_label(metric)} {value}{_repeat_suffix(table, row, group, metric)} "
                         f"[{format_value(lo)}, {format_value(hi)}].")
    return notes


def format_metric(value: float, metric: str) -> str:
    """A cell of ``metric`` (or its Δ): a cost metric as a plain number, a rate as a percentage."""
    base = metric[len(DELTA):] if _is_delta(metric) else metric
    if base in _COST_FORMAT or not scoring.is_percent(base):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        text = _COST_FORMAT.get(base, "{:.2f}").format(value)
        return ("+" + text if value >= 0 else text) if _is_delta(metric) else text
    return format_value(value, _is_delta(metric))


def format_value(value: float, delta: bool = False) -> str:
    """Percentage with one decimal; signed for deltas; '' for NaN (callers substitute)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{100 * value:+.1f}" if delta else f"{100 * value:.1f}"


def length_unit(table: pd.DataFrame, group: str, metric: str) -> str | None:
    """The unit of L* and T behind a path-length-weighted value column; None otherwise."""
    if not scoring.is_path_length_weighted(metric):
        return None
    return table.attrs.get("units", {}).get(group)


def _column_label(table: pd.DataFrame, group: str, metric: str) -> str:
    """A column's metric label, with the unit of a path-length-weighted value column and how a
    value column aggregates its suite's breakdown ("(mean over task_type)", "(pooled)")."""
    unit = length_unit(table, group, metric)
    how = table.attrs.get("aggregates", {}).get(group, {}).get(metric) if not _is_delta(metric) else None
    return _metric_label(metric) + (f" [{unit}]" if unit else "") + (f" ({how})" if how else "")


def _metric_label(metric: str) -> str:
    metric, _, stat = metric.partition(":")
    if _is_delta(metric):
        base = metric[len(DELTA):]
        label = DELTA + (_METRIC_LABELS.get(base) or scoring.label_of(base) or base)
    else:
        label = _METRIC_LABELS.get(metric) or scoring.label_of(metric) or metric
    return f"{label} {stat}" if stat else label


def _cell_strings(table: pd.DataFrame, missing: str, dagger: str, merge_stats: bool = True) -> list[list[str]]:
    """Formatted body cells: percentages, "missing" for NaN, dagger on marked cells.

    With ``merge_stats`` (Markdown, LaTeX) paired statistics are appended to
    their Δ cell; otherwise (CSV) each is a cell of its own.
    """
    marked = {tuple(m) for m in table.attrs.get("marked", [])}
    differs = {(m["row"], m["group"]) for m in table.attrs.get("mismatch", [])}
    columns = _shown_columns(table) if merge_stats else list(table.columns)
    body = []
    for row in table.index:
        cells = []
        for group, metric in columns:
            value = table.at[row, (group, metric)]
            if metric.endswith(":p") or metric.endswith(":n") or metric.endswith(":k"):
                if merge_stats and metric.endswith(":p"):
                    cells.append(format_p(value) or missing)
                else:  # CSV stays numeric
                    cells.append(missing if math.isnan(value) else f"{value:.6g}")
                continue
            text = format_metric(value, metric) or missing
            if (row, group) in marked and not _is_delta(metric) and text != missing:
                text += dagger
            if dagger and not _is_delta(metric) and text != missing:  # caveat marks (not in CSV)
                text += caveats.marks(table, row, group, metric)
            if merge_stats and not _is_delta(metric) and text != missing:
                text += _repeat_suffix(table, row, group, metric)
            if (row, group) in differs and _is_delta(metric) and text != missing and dagger:
                text += DIFFERENT
            if merge_stats and _is_delta(metric) and text != missing and not table.attrs.get("stats_in_notes"):
                text += _stats_suffix(table, row, group, metric)
            cells.append(text)
        body.append(cells)
    return body


def _notes(table: pd.DataFrame) -> list[str]:
    """Footnote lines: the delta convention and one line per cell with errors."""
    notes = []
    if any(_is_delta(m) for _, m in table.columns):
        cost = " (s/ep, tok/ep: in their own units)" if any(
            (m[len(DELTA):] if _is_delta(m) else m) in COST_METRICS for _, m in table.columns) else ""
        scores = list(dict.fromkeys(_metric_label(m[len(DELTA):]) for _, m in table.columns if _is_delta(m)
                                    and not _is_stat(m) and m[len(DELTA):] not in COST_METRICS
                                    and not scoring.is_percent(m[len(DELTA):])))
        if scores:  # a score's Δ is in the score's own unit
            cost = cost[:-1] + f"; {', '.join(scores)}: in their own units)" if cost else \
                f" ({', '.join(scores)}: in their own units)"
        notes.append(f"{DELTA}: percentage points vs {table.attrs.get('baseline')}{cost}.")
    shown = {m[len(DELTA):] if _is_delta(m) else m for _, m in table.columns}
    if shown & set(COST_METRICS):
        notes.append("s/ep: mean wall time per episode (s); prompt/output tok/ep: mean tokens per episode over the "
                     "episodes whose agent calls were counted (summed over the episode's calls); not percentages.")
    if table.attrs.get("stats"):
        notes.append(
            f"{DELTA} (with its [lo, hi], the paired bootstrap 95 % interval) over the episodes both variants ran "
            f"({BOOTSTRAP_RESAMPLES} resamples within each suite/split, seed 0"
            + ("; over several repeats, repeats first, then pairs within each" if table.attrs.get("repeats") else "")
            + "); p: two-sided exact McNemar test on per-episode success."
        )
    notes.extend(_repeat_notes(table))
    if table.attrs.get("stats_in_notes"):
        notes.extend(_stats_notes(table))
    delta_groups = {g for g, m in table.columns if _is_delta(m)}
    for e in table.attrs.get("mismatch", []):
        if e["group"] not in delta_groups:
            continue
        notes.append(
            f"{DIFFERENT} {e['row']}, {e['group']}: ran {e['episodes']} episodes, {table.attrs.get('baseline')} "
            f"{e['baseline_episodes']}, {e['shared']} shared; "
            + (f"the {DELTA} and its interval are over the {e['shared']} shared episodes."
               if table.attrs.get("stats") else f"the {DELTA} compares different episode sets (--stats pairs them).")
        )
    if table.attrs.get("paper_note"):
        notes.append(table.attrs["paper_note"])
    notes.extend(table.attrs.get("extra_notes", []))  # what the table's maker adds (harness.tables.experiments)
    if any(scoring.is_path_length_weighted(m) for _, m in table.columns):
        for e in table.attrs.get("units_differ", []):
            rows = "; ".join(f"{row}: {unit}" for row, unit in e["rows"].items())
            notes.append(f"PLW [{UNITS_DIFFER}] in {e['group']}: L* and T are counted in {rows}.")
    for e in table.attrs.get("errors", []):
        notes.append(
            f"{DAGGER} {e['row']}, {e['group']}: {e['errors']} of {e['episodes']} episodes "
            f"ended in errors ({e['kinds']}), counted as failures"
            + (" (no goal condition met)." if e.get("goals", True) else ".")
        )
    notes.extend(caveats.notes(table, AVG))
    notes.extend(table.attrs.get("judge_notes", []))  # harness.judging.views: whose verdicts, how many unread
    notes.extend(table.attrs.get("run_notes", []))  # harness.tables.selection: which of several runs each cell shows
    return notes


def _stats_notes(table: pd.DataFrame) -> list[str]:
    """One footnote line per row and Δ column with paired statistics: 'row, column: ΔSR +5.0 [lo, hi] p=…, n pairs'."""
    lines = []
    for row in table.index:
        for group, metric in _shown_columns(table):
            if not _is_delta(metric) or (group, metric + ":lo") not in table.columns:
                continue
            value = table.at[row, (group, metric)]
            if value is None or math.isnan(value):
                continue
            n = table.at[row, (group, metric + ":n")] if (group, metric + ":n") in table.columns else math.nan
            if math.isnan(n):  # a row with no paired episodes (the paper's numbers): nothing to test
                continue
            pairs = f", {int(n)} pair{'' if int(n) == 1 else 's'}"
            lines.append(f"{row}, {group}: {_metric_label(metric)} {format_metric(value, metric)}"
                         f"{_stats_suffix(table, row, group, metric)}{pairs}.")
    return lines


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def to_markdown(table: pd.DataFrame) -> str:
    """GitHub Markdown table; headers 'group metric'; footnotes below the table."""
    row_name = table.attrs.get("row_name", table.index.name or "")
    shown = _shown_columns(table)
    header = [row_name] + [f"{g} {_column_label(table, g, m)}" for g, m in shown]
    lines = [
        "| " + " | ".join(_md_escape(h) for h in header) + " |",
        "|" + "|".join([":---"] + ["---:"] * len(shown)) + "|",
    ]
    for row, cells in zip(table.index, _cell_strings(table, MISSING, DAGGER)):
        lines.append("| " + " | ".join([_md_escape(row), *cells]) + " |")
    notes = _notes(table)
    if notes:
        lines.append("")
        lines.extend(notes)
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    DELTA: r"$\Delta$",
    "ρ": r"$\rho$",
    "<": r"$<$",
    DAGGER: r"$^\dagger$",
    DIFFERENT: r"$^\ddagger$",
    caveats.PARTIAL: r"$^\circ$",
    caveats.UNUSABLE: r"\S{}",
    MISSING: "--",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX specials (``_`` etc.) and map Δ, † and – to LaTeX."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _column_spans(table: pd.DataFrame) -> list[tuple[str, int, int]]:
    """(group, first, last) 1-based column spans of consecutive equal groups, after the row column."""
    spans: list[tuple[str, int, int]] = []
    for i, (group, _) in enumerate(_shown_columns(table), start=2):
        if spans and spans[-1][0] == group:
            spans[-1] = (group, spans[-1][1], i)
        else:
            spans.append((group, i, i))
    return spans


def to_latex(table: pd.DataFrame) -> str:
    """booktabs tabular: grouped header with cmidrules; footnotes as rows after bottomrule."""
    n = len(_shown_columns(table)) + 1
    spans = _column_spans(table)
    row_name = table.attrs.get("row_name", table.index.name or "")
    lines = [
        r"\begin{tabular}{l" + "r" * (n - 1) + "}",
        r"\toprule",
        " & ".join([""] + [rf"\multicolumn{{{b - a + 1}}}{{c}}{{{latex_escape(g)}}}" for g, a, b in spans])
        + r" \\",
        " ".join(rf"\cmidrule(lr){{{a}-{b}}}" for _, a, b in spans),
        " & ".join([latex_escape(row_name)]
                   + [latex_escape(_column_label(table, g, m)) for g, m in _shown_columns(table)]) + r" \\",
        r"\midrule",
    ]
    for row, cells in zip(table.index, _cell_strings(table, MISSING, DAGGER)):
        lines.append(" & ".join(latex_escape(c) for c in [row, *cells]) + r" \\")
    lines.append(r"\bottomrule")
    for note in _notes(table):
        lines.append(rf"\multicolumn{{{n}}}{{l}}{{\footnotesize {latex_escape(note)}}} \\")
    lines.append(r"\end{tabular}")
    return "\n".join(lines) + "\n"


def to_csv(table: pd.DataFrame) -> str:
    """CSV with header 'group:metric', percentages, empty fields for NaN, no daggers.

    A trailing ``errors`` column lists, per row, the groups whose records had
    errors as 'group: errors/episodes (kinds)'; then ``caveats``, per row, each group's
    episodes run of the split's total, agent failures and the row's settings
    (:func:`harness.tables.caveats.csv_text`).
    """
    row_name = table.attrs.get("row_name", table.index.name or "")
    per_row: dict[Any, list[str]] = {}
    for e in table.attrs.get("errors", []):
        per_row.setdefault(e["row"], []).append(
            f"{e['group']}: {e['errors']}/{e['episodes']} ({e['kinds']})"
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    units = {(g, m): length_unit(table, g, m) for g, m in table.columns}
    writer.writerow([row_name] + [f"{g}:{m}" + (f" [{units[g, m]}]" if units[g, m] else "") for g, m in table.columns]
                    + ["errors", "caveats"])
    for row, cells in zip(table.index, _cell_strings(table, "", "", merge_stats=False)):
        writer.writerow([row, *cells, "; ".join(per_row.get(row, [])), caveats.csv_text(table, row)])
    return out.getvalue()
