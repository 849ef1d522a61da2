"""The text forms of a table (:mod:`harness.tables.build`): Markdown, LaTeX and CSV, their
cells, column labels and footnotes.

A table is a pandas DataFrame whose values are fractions (deltas are
differences of fractions), with two-level columns ``(group, metric)``; the renderers :func:`to_markdown`, :func:`to_latex` and
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
from typing import Any

import pandas as pd

from harness.scoring import policy as scoring
from harness.stats.paired import BOOTSTRAP_RESAMPLES
from harness.tables import caveats
from harness.tables.columns import (
    AVG,
    COST_METRICS,
    DAGGER,
    DELTA,
    DIFFERENT,
    MISSING,
    UNITS_DIFFER,
    is_delta,
    is_stat,
)

#: Labels of the cost metrics (declared metrics' labels come from their declarations).
_METRIC_LABELS = {
    "seconds": "s/ep",
    "prompt_tokens": "prompt tok/ep",
    "output_tokens": "output tok/ep",
}

_COST_FORMAT = {"seconds": "{:.3g}", "prompt_tokens": "{:.0f}", "output_tokens": "{:.0f}"}


def shown_columns(table: pd.DataFrame) -> list[tuple[str, str]]:
    """Columns printed as their own cells in Markdown / LaTeX (statistics join their Δ cell)."""
    return [(g, m) for g, m in table.columns if not is_stat(m)]


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
        for group, metric in shown_columns(table):
            if is_delta(metric) or (group, metric + ":lo") not in table.columns:
                continue
            lo, hi = table.at[row, (group, metric + ":lo")], table.at[row, (group, metric + ":hi")]
            if math.isnan(lo) or math.isnan(hi):
                continue
            value = format_metric(table.at[row, (group, metric)], metric)
            notes.append(f"{row}, {group}: {metric_label(metric)} {value}{_repeat_suffix(table, row, group, metric)} "
                         f"[{format_value(lo)}, {format_value(hi)}].")
    return notes


def format_metric(value: float, metric: str) -> str:
    """A cell of ``metric`` (or its Δ): a cost metric as a plain number, a rate as a percentage."""
    base = metric[len(DELTA):] if is_delta(metric) else metric
    if base in _COST_FORMAT or not scoring.is_percent(base):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        text = _COST_FORMAT.get(base, "{:.2f}").format(value)
        return ("+" + text if value >= 0 else text) if is_delta(metric) else text
    return format_value(value, is_delta(metric))


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


def column_label(table: pd.DataFrame, group: str, metric: str) -> str:
    """A column's metric label, with the unit of a path-length-weighted value column and how a
    value column aggregates its suite's breakdown ("(mean over task_type)", "(pooled)")."""
    unit = length_unit(table, group, metric)
    how = table.attrs.get("aggregates", {}).get(group, {}).get(metric) if not is_delta(metric) else None
    return metric_label(metric) + (f" [{unit}]" if unit else "") + (f" ({how})" if how else "")


def metric_label(metric: str) -> str:
    metric, _, stat = metric.partition(":")
    if is_delta(metric):
        base = metric[len(DELTA):]
        label = DELTA + (_METRIC_LABELS.get(base) or scoring.label_of(base) or base)
    else:
        label = _METRIC_LABELS.get(metric) or scoring.label_of(metric) or metric
    return f"{label} {stat}" if stat else label


def cell_strings(table: pd.DataFrame, missing: str, dagger: str, merge_stats: bool = True) -> list[list[str]]:
    """Formatted body cells: percentages, "missing" for NaN, dagger on marked cells.

    With ``merge_stats`` (Markdown, LaTeX) paired statistics are appended to
    their Δ cell; otherwise (CSV) each is a cell of its own.
    """
    marked = {tuple(m) for m in table.attrs.get("marked", [])}
    differs = {(m["row"], m["group"]) for m in table.attrs.get("mismatch", [])}
    columns = shown_columns(table) if merge_stats else list(table.columns)
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
            if (row, group) in marked and not is_delta(metric) and text != missing:
                text += dagger
            if dagger and not is_delta(metric) and text != missing:  # caveat marks (not in CSV)
                text += caveats.marks(table, row, group, metric)
            if merge_stats and not is_delta(metric) and text != missing:
                text += _repeat_suffix(table, row, group, metric)
            if (row, group) in differs and is_delta(metric) and text != missing and dagger:
                text += DIFFERENT
            if merge_stats and is_delta(metric) and text != missing and not table.attrs.get("stats_in_notes"):
                text += _stats_suffix(table, row, group, metric)
            cells.append(text)
        body.append(cells)
    return body


def footnotes(table: pd.DataFrame) -> list[str]:
    """Footnote lines: the delta convention and one line per cell with errors."""
    notes = []
    if any(is_delta(m) for _, m in table.columns):
        cost = " (s/ep, tok/ep: in their own units)" if any(
            (m[len(DELTA):] if is_delta(m) else m) in COST_METRICS for _, m in table.columns) else ""
        scores = list(dict.fromkeys(metric_label(m[len(DELTA):]) for _, m in table.columns if is_delta(m)
                                    and not is_stat(m) and m[len(DELTA):] not in COST_METRICS
                                    and not scoring.is_percent(m[len(DELTA):])))
        if scores:  # a score's Δ is in the score's own unit
            cost = cost[:-1] + f"; {', '.join(scores)}: in their own units)" if cost else \
                f" ({', '.join(scores)}: in their own units)"
        notes.append(f"{DELTA}: percentage points vs {table.attrs.get('baseline')}{cost}.")
    shown = {m[len(DELTA):] if is_delta(m) else m for _, m in table.columns}
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
    delta_groups = {g for g, m in table.columns if is_delta(m)}
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
        for group, metric in shown_columns(table):
            if not is_delta(metric) or (group, metric + ":lo") not in table.columns:
                continue
            value = table.at[row, (group, metric)]
            if value is None or math.isnan(value):
                continue
            n = table.at[row, (group, metric + ":n")] if (group, metric + ":n") in table.columns else math.nan
            if math.isnan(n):  # a row with no paired episodes (the paper's numbers): nothing to test
                continue
            pairs = f", {int(n)} pair{'' if int(n) == 1 else 's'}"
            lines.append(f"{row}, {group}: {metric_label(metric)} {format_metric(value, metric)}"
                         f"{_stats_suffix(table, row, group, metric)}{pairs}.")
    return lines


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def to_markdown(table: pd.DataFrame) -> str:
    """GitHub Markdown table; headers 'group metric'; footnotes below the table."""
    row_name = table.attrs.get("row_name", table.index.name or "")
    shown = shown_columns(table)
    header = [row_name] + [f"{g} {column_label(table, g, m)}" for g, m in shown]
    lines = [
        "| " + " | ".join(_md_escape(h) for h in header) + " |",
        "|" + "|".join([":---"] + ["---:"] * len(shown)) + "|",
    ]
    for row, cells in zip(table.index, cell_strings(table, MISSING, DAGGER)):
        lines.append("| " + " | ".join([_md_escape(row), *cells]) + " |")
    notes = footnotes(table)
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
    for i, (group, _) in enumerate(shown_columns(table), start=2):
        if spans and spans[-1][0] == group:
            spans[-1] = (group, spans[-1][1], i)
        else:
            spans.append((group, i, i))
    return spans


def to_latex(table: pd.DataFrame) -> str:
    """booktabs tabular: grouped header with cmidrules; footnotes as rows after bottomrule."""
    n = len(shown_columns(table)) + 1
    spans = _column_spans(table)
    row_name = table.attrs.get("row_name", table.index.name or "")
    lines = [
        r"\begin{tabular}{l" + "r" * (n - 1) + "}",
        r"\toprule",
        " & ".join([""] + [rf"\multicolumn{{{b - a + 1}}}{{c}}{{{latex_escape(g)}}}" for g, a, b in spans])
        + r" \\",
        " ".join(rf"\cmidrule(lr){{{a}-{b}}}" for _, a, b in spans),
        " & ".join([latex_escape(row_name)]
                   + [latex_escape(column_label(table, g, m)) for g, m in shown_columns(table)]) + r" \\",
        r"\midrule",
    ]
    for row, cells in zip(table.index, cell_strings(table, MISSING, DAGGER)):
        lines.append(" & ".join(latex_escape(c) for c in [row, *cells]) + r" \\")
    lines.append(r"\bottomrule")
    for note in footnotes(table):
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
    for row, cells in zip(table.index, cell_strings(table, "", "", merge_stats=False)):
        writer.writerow([row, *cells, "; ".join(per_row.get(row, [])), caveats.csv_text(table, row)])
    return out.getvalue()
