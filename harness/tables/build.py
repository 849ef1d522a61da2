"""Transfer and breakdown tables built only from stored episode records.

Nothing here runs an episode: every figure is recomputed from the records via
:mod:`harness.scoring.summaries`. A table is a pandas DataFrame whose values are
fractions (deltas are differences of fractions), with two-level columns
``(group, metric)`` and what its footnotes need in ``table.attrs``; the column
vocabulary is :mod:`harness.tables.columns`, what a cell averages over
:mod:`harness.tables.units`, the paired-statistics and repeat columns
:mod:`harness.tables.paired`, and the text forms (Markdown, LaTeX, CSV) and their
display conventions :mod:`harness.tables.render`.
"""

from __future__ import annotations

import fnmatch
import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.scoring import policy as scoring
from harness.tables import caveats
from harness.tables.columns import (
    ALL,
    AVG,
    COST_METRICS,
    DELTA,
    UNITS_DIFFER,
    UNKNOWN,
    check_metrics,
    split_labels,
    summarize_cells,
)
from harness.tables.paired import episode_set_mismatches, has_repeats, paired_columns, with_repeat_columns
from harness.tables.render import format_metric, metric_label
from harness.tables.units import counted_units, declared_breakdown, declared_mean_over, unit_labels
from harness.types import PROTOCOL_EXPERT_LENGTH_UNIT


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
    number of episodes (:func:`harness.tables.units.unit_labels`); the column header says so ("S (mean over
    task_type)") and a footnote gives the pooled figures. ``pooled`` pools every episode
    instead, and the header says "(pooled)".

    **What an average is over** (a mean over task types, a column over several splits,
    ``avg``): the units where the metric *counts* -- some record has a value, or awaits a
    score (:func:`harness.tables.units.counted_units`) -- decided from ``columns_of`` (default ``df``: the
    records of every variant of the suites and splits shown, so that choosing rows never
    changes a row's average). A row without a value in one of them has no average (NaN):
    no average is ever over a subset of its units. ``drop_undefined`` drops a column only
    where the metric counts nowhere in it (never a column whose answers await a score);
    ``drop_undefined="valueless"`` also drops one no row has a value in, for a caller that
    names each such column itself (an experiment's "no value in the store" lines).
    """
    metrics = check_metrics(metrics, df)
    if columns not in ("split", "suite"):
        raise ValueError(f"columns must be 'split' or 'suite', got {columns!r}")
    if stats and baseline is None:
        raise ValueError("paired statistics compare against a baseline: name one with --baseline")
    if layout is not None:
        layout = {str(col): [str(g) for g in groups] for col, groups in layout.items()}
        if not layout or any(not groups for groups in layout.values()):
            raise ValueError("a table layout needs at least one column, each with at least one suite/split")
        wanted = {g for groups in layout.values() for g in groups}
        df = df[split_labels(df).isin(wanted).to_numpy()]
    variants = ordered_variants(df, baseline, variants_order, require_baseline=baseline is not None)
    # The columns and what an average is over come from the records before the rows are chosen:
    # which rows are shown never changes a row's cells.
    every_row = df if columns_of is None else columns_of
    if layout is not None:
        every_row = every_row[split_labels(every_row).isin(wanted).to_numpy()]
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
    for unit, group in zip(basis_units, split_labels(basis)):
        units_of_group.setdefault(group, set()).add(unit)
    for unit, group in zip(unit_of, split_labels(df)):  # (records the basis lacks: their own units)
        units_of_group.setdefault(group, set()).add(unit)
    counted = counted_units(basis, basis_units, metrics, fallback=df.assign(_unit=unit_of.to_numpy()))
    cells = summarize_cells(df.assign(group=unit_of.to_numpy()), ["variant", "group"], metrics)
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
                    paired = paired_columns(df, variants, baseline, unit_weights[(col, metric)], metric, unit_of)
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
        table_columns = with_repeat_columns(table_columns, df, variants, unit_weights, values, unit_of)
    table = pd.DataFrame(table_columns, index=pd.Index(variants, name="variant"))
    table.columns = pd.MultiIndex.from_tuples(list(table_columns), names=["group", "metric"])
    column_of = {g: col for col, groups in layout.items() for g in groups}
    group_labels = split_labels(df).map(column_of)
    errors = _error_entries(df, df["variant"].astype(str), group_labels)
    marked = [(e["row"], e["group"]) for e in errors]
    if average:
        marked += [(row, AVG) for row in dict.fromkeys(e["row"] for e in errors)]
    mismatch = episode_set_mismatches(df, variants, baseline, layout) if baseline is not None else []
    if not average:
        mismatch = [m for m in mismatch if m["group"] != AVG]
    units, units_differ = _length_units(df, df["variant"].astype(str), group_labels, AVG if average else None)
    # episodes run of the split's total, agent failures, settings (harness.tables.caveats)
    cell_caveats = caveats.of(df, df["variant"].astype(str), group_labels, {AVG: list(layout)} if average else {})
    table.attrs.update(
        {
            "caveats": cell_caveats, scoring.FRAME_ATTR: scoring.of_frame(df),  # the view's (harness.report.tables_html.declared_only)
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
            if not (values.groupby([mine["variant"].astype(str), split_labels(mine)]).nunique() > 1).any():
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
        cells = summarize_cells(mine.assign(group=split_labels(mine).to_numpy()), ["variant", "group"],
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
                    figures.append(f"{c} {metric_label(metric)}: " + ", ".join(shown))
        lines.append(f"{suite}: each cell is the mean over its {field} values (each counts once, whatever its number "
                     f"of episodes), as its benchmark reports its overall figures; pooled over episodes instead: "
                     + ("; ".join(figures) if figures else "no value") + " (harness table --pooled prints pooled cells).")
    return aggregates, lines


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
    metrics = check_metrics(metrics, df)
    if by not in df.columns:
        df = df.assign(**{by: declared_breakdown(df, by)})
    variants = ordered_variants(df, baseline, variants_order, require_baseline=False)
    df = df[df["variant"].astype(str).isin(variants)]
    rows = _breakdown_labels(df, by)
    row_order = sorted(set(rows)) + [ALL]
    cells = summarize_cells(df.assign(_row=rows.to_numpy()), ["variant", "_row"], metrics).set_index(
        ["variant", "_row"]
    )
    pooled = summarize_cells(df, ["variant"], metrics).set_index("variant")

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


def _breakdown_labels(df: pd.DataFrame, by: str) -> pd.Series:
    """Row label per record: the value of ``by`` (UNKNOWN if missing), suite-prefixed if needed."""
    values = df[by].astype("object").where(df[by].notna(), UNKNOWN).astype(str)
    if by == "split" or df["suite"].nunique() > 1:
        values = df["suite"].astype(str) + "/" + values
    return values
