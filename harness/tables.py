"""Transfer and breakdown tables built only from stored episode records.

Nothing here runs an episode: every figure is recomputed from the records via
:mod:`harness.metrics`. A table is a pandas DataFrame whose values are
fractions (deltas are differences of fractions), with two-level columns
``(group, metric)``; the renderers :func:`to_markdown`, :func:`to_latex` and
:func:`to_csv` print rates as percentages with one decimal (``56.3``) and
deltas signed in percentage points (``+5.0``, ``-0.4``).

Display conventions
-------------------
* NaN (a metric a suite lacks, e.g. GC where no episode has goal conditions,
  or a variant with no records on a suite/split) prints as "–" ("--" in LaTeX,
  an empty field in CSV).
* Error records count as failures (see :mod:`harness.metrics`). A cell whose
  records include errors gets a "†" suffix and a footnote line with the error
  counts; CSV, which has no footnotes and should stay numeric, instead gets a
  trailing ``errors`` column. The information travels in ``table.attrs``
  (``"marked"``: (row, group) pairs to mark; ``"errors"``: one dict per
  (row, group) with errors, episodes and error kinds).
* Delta columns have metric names starting with "Δ"; the baseline row has no
  delta (NaN, printed "–").
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.metrics import RATE_COLUMNS, summarize

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
#: Printed for NaN.
MISSING = "–"

_METRIC_LABELS = {
    "sr": "SR",
    "sr_lo": "SR lo",
    "sr_hi": "SR hi",
    "gc": "GC",
    "progress": "Progress",
    "plw_sr": "PLW SR",
    "plw_gc": "PLW GC",
    "invalid_rate": "Invalid",
}


# --- Building tables ----------------------------------------------------------


def _check_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics as a list; ValueError unless each is a rate column."""
    metrics = list(metrics)
    bad = [m for m in metrics if m not in RATE_COLUMNS]
    if bad or not metrics:
        raise ValueError(f"table metrics must be among {list(RATE_COLUMNS)}, got {metrics}")
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
    frame = pd.DataFrame(
        {"row": row_of.to_numpy(), "group": group_of.to_numpy(), "kind": df["error_kind"].to_numpy()}
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
                }
            )
    return entries


def _split_labels(df: pd.DataFrame) -> pd.Series:
    """'suite/split' label of each record (a transfer-table column group)."""
    return df["suite"].astype(str) + "/" + df["split"].astype(str)


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
    baseline: str = "base",
    metrics: Sequence[str] = ("sr", "gc"),
    variants_order: Sequence[str] | None = None,
    per_column_delta: bool = False,
) -> pd.DataFrame:
    """Variants x (suite/split, metric) table with averages and deltas vs the baseline.

    Rows: the baseline, then ``variants_order`` (which also selects) or the other
    variants alphabetically. Columns: ``(suite/split, metric)`` for each
    suite/split present (sorted), each ``(suite/split, Δmetric)`` too when
    ``per_column_delta``, then ``("avg", metric)`` (see :func:`_row_average`)
    and ``("avg", Δmetric)``. Values are fractions; deltas are row minus
    baseline, NaN on the baseline row. Raises ValueError if the baseline has no
    records.
    """
    metrics = _check_metrics(metrics)
    variants = ordered_variants(df, baseline, variants_order)
    df = df[df["variant"].astype(str).isin(variants)]
    groups = _sorted_groups(df)
    cells = summarize(df.assign(group=_split_labels(df)), ["variant", "group"])
    cells = cells.set_index(["variant", "group"])

    columns: dict[tuple[str, str], pd.Series] = {}
    for group in groups:
        for metric in metrics:
            columns[(group, metric)] = _cell_column(cells, variants, group, metric)
    for metric in metrics:
        per_group = pd.DataFrame({g: columns[(g, metric)] for g in groups})
        columns[(AVG, metric)] = _row_average(per_group)

    table_columns: dict[tuple[str, str], pd.Series] = {}
    for group in [*groups, AVG]:
        for metric in metrics:
            table_columns[(group, metric)] = columns[(group, metric)]
        if per_column_delta or group == AVG:
            for metric in metrics:
                table_columns[(group, DELTA + metric)] = _delta(columns[(group, metric)], baseline)

    table = pd.DataFrame(table_columns, index=pd.Index(variants, name="variant"))
    table.columns = pd.MultiIndex.from_tuples(list(table_columns), names=["group", "metric"])
    errors = _error_entries(df, df["variant"].astype(str), _split_labels(df))
    marked = [(e["row"], e["group"]) for e in errors]
    marked += [(row, AVG) for row in dict.fromkeys(e["row"] for e in errors)]
    table.attrs.update(
        {
            "kind": "transfer",
            "baseline": baseline,
            "row_name": "variant",
            "marked": marked,
            "errors": errors,
        }
    )
    return table


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
    metrics: Sequence[str] = ("sr", "gc"),
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
    metrics = _check_metrics(metrics)
    if by not in df.columns:
        raise ValueError(f"cannot break down by {by!r}: not a record column")
    variants = ordered_variants(df, baseline, variants_order, require_baseline=False)
    df = df[df["variant"].astype(str).isin(variants)]
    rows = _breakdown_labels(df, by)
    row_order = sorted(set(rows)) + [ALL]
    cells = summarize(df.assign(_row=rows.to_numpy()), ["variant", "_row"]).set_index(
        ["variant", "_row"]
    )
    pooled = summarize(df, ["variant"]).set_index("variant")

    table_columns: dict[tuple[str, str], list[float]] = {}
    for variant in variants:
        for metric in metrics:
            values = [
                cells.at[(variant, r), metric] if (variant, r) in cells.index else np.nan
                for r in row_order[:-1]
            ]
            values.append(pooled.at[variant, metric])
            table_columns[(variant, metric)] = values
    table = pd.DataFrame(table_columns, index=pd.Index(row_order, name=by), dtype=float)
    table.columns = pd.MultiIndex.from_tuples(list(table_columns), names=["group", "metric"])
    errors = _error_entries(df, rows, df["variant"].astype(str))
    marked = [(e["row"], e["group"]) for e in errors]
    marked += [(ALL, group) for group in dict.fromkeys(e["group"] for e in errors)]
    table.attrs.update(
        {"kind": "breakdown", "baseline": baseline, "row_name": by, "marked": marked, "errors": errors}
    )
    return table


def _breakdown_labels(df: pd.DataFrame, by: str) -> pd.Series:
    """Row label per record: the value of ``by`` (UNKNOWN if missing), suite-prefixed if needed."""
    values = df[by].astype("object").where(df[by].notna(), UNKNOWN).astype(str)
    if by == "split" or df["suite"].nunique() > 1:
        values = df["suite"].astype(str) + "/" + values
    return values


# --- Rendering ----------------------------------------------------------------


def _is_delta(metric: str) -> bool:
    return metric.startswith(DELTA)


def format_value(value: float, delta: bool = False) -> str:
    """Percentage with one decimal; signed for deltas; '' for NaN (callers substitute)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{100 * value:+.1f}" if delta else f"{100 * value:.1f}"


def _metric_label(metric: str) -> str:
    if _is_delta(metric):
        return DELTA + _METRIC_LABELS.get(metric[len(DELTA):], metric[len(DELTA):])
    return _METRIC_LABELS.get(metric, metric)


def _cell_strings(table: pd.DataFrame, missing: str, dagger: str) -> list[list[str]]:
    """Formatted body cells: percentages, "missing" for NaN, dagger on marked cells."""
    marked = {tuple(m) for m in table.attrs.get("marked", [])}
    body = []
    for row in table.index:
        cells = []
        for group, metric in table.columns:
            value = table.at[row, (group, metric)]
            text = format_value(value, _is_delta(metric)) or missing
            if (row, group) in marked and not _is_delta(metric) and text != missing:
                text += dagger
            cells.append(text)
        body.append(cells)
    return body


def _notes(table: pd.DataFrame) -> list[str]:
    """Footnote lines: the delta convention and one line per cell with errors."""
    notes = []
    if any(_is_delta(m) for _, m in table.columns):
        notes.append(f"{DELTA}: percentage points vs {table.attrs.get('baseline')}.")
    for e in table.attrs.get("errors", []):
        notes.append(
            f"{DAGGER} {e['row']}, {e['group']}: {e['errors']} of {e['episodes']} episodes "
            f"ended in errors ({e['kinds']}), counted as failures."
        )
    return notes


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def to_markdown(table: pd.DataFrame) -> str:
    """GitHub Markdown table; headers 'group metric'; footnotes below the table."""
    row_name = table.attrs.get("row_name", table.index.name or "")
    header = [row_name] + [f"{g} {_metric_label(m)}" for g, m in table.columns]
    lines = [
        "| " + " | ".join(_md_escape(h) for h in header) + " |",
        "|" + "|".join([":---"] + ["---:"] * len(table.columns)) + "|",
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
    DAGGER: r"$^\dagger$",
    MISSING: "--",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX specials (``_`` etc.) and map Δ, † and – to LaTeX."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _column_spans(table: pd.DataFrame) -> list[tuple[str, int, int]]:
    """(group, first, last) 1-based column spans of consecutive equal groups, after the row column."""
    spans: list[tuple[str, int, int]] = []
    for i, (group, _) in enumerate(table.columns, start=2):
        if spans and spans[-1][0] == group:
            spans[-1] = (group, spans[-1][1], i)
        else:
            spans.append((group, i, i))
    return spans


def to_latex(table: pd.DataFrame) -> str:
    """booktabs tabular: grouped header with cmidrules; footnotes as rows after bottomrule."""
    n = len(table.columns) + 1
    spans = _column_spans(table)
    row_name = table.attrs.get("row_name", table.index.name or "")
    lines = [
        r"\begin{tabular}{l" + "r" * (n - 1) + "}",
        r"\toprule",
        " & ".join([""] + [rf"\multicolumn{{{b - a + 1}}}{{c}}{{{latex_escape(g)}}}" for g, a, b in spans])
        + r" \\",
        " ".join(rf"\cmidrule(lr){{{a}-{b}}}" for _, a, b in spans),
        " & ".join([latex_escape(row_name)] + [latex_escape(_metric_label(m)) for _, m in table.columns])
        + r" \\",
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
    errors as 'group: errors/episodes (kinds)'.
    """
    row_name = table.attrs.get("row_name", table.index.name or "")
    per_row: dict[Any, list[str]] = {}
    for e in table.attrs.get("errors", []):
        per_row.setdefault(e["row"], []).append(
            f"{e['group']}: {e['errors']}/{e['episodes']} ({e['kinds']})"
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([row_name] + [f"{g}:{m}" for g, m in table.columns] + ["errors"])
    for row, cells in zip(table.index, _cell_strings(table, "", "")):
        writer.writerow([row, *cells, "; ".join(per_row.get(row, []))])
    return out.getvalue()
