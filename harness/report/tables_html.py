"""The report's HTML tables: a harness table (transfer or breakdown) with the same cells and
footnotes as its Markdown (:mod:`harness.tables.render`), an experiment's headline, the failure table."""

from __future__ import annotations

from typing import Any, Sequence

from harness.report.page import esc
from harness.scoring import policy as scoring
from harness.tables.columns import COST_METRICS, DAGGER, DELTA, MISSING, is_delta
from harness.tables.failures import column_classes
from harness.tables.render import cell_strings, column_label, footnotes, shown_columns


def table_html(table: Any, caption: str, cls: str = "") -> str:
    """A harness table (transfer or breakdown) as HTML, same cells and footnotes as Markdown."""
    shown = shown_columns(table)  # the Markdown renderer's own cells
    row_name = table.attrs.get("row_name", table.index.name or "")
    head = "".join(f"<th>{esc(g)}<br>{esc(column_label(table, g, m))}</th>" for g, m in shown)
    body = []
    for row, cells in zip(table.index, cell_strings(table, MISSING, DAGGER)):
        body.append(f"<tr><th>{esc(row)}</th>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    return (f'<table class="{cls}"><caption>{esc(caption)}</caption><thead><tr><th>{esc(row_name)}</th>{head}'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table>' + folded_notes(footnotes(table)))


def headline_html(table: Any, experiment: Any, caption: str) -> str:
    """An experiment's headline: one row per variant, one column per (column, metric) of the
    table, each cell its value with its Δ vs the baseline beneath ("50.0° / +25.0‡", the same
    strings and marks as the full table); columns grouped by role (diagnostic, transfer), so
    that it fits one screen where the full table (a Δ column beside each value) does not."""

    roles = {c.label: c.role or "" for c in experiment.columns}
    shown = [(g, m) for g, m in shown_columns(table) if not is_delta(m)]
    shown.sort(key=lambda gm: {"diagnostic": 0, "transfer": 1}.get(roles.get(gm[0], ""), 2))
    strings = cell_strings(table, MISSING, DAGGER)
    position = {c: i for i, c in enumerate(shown_columns(table))}
    groups: list[tuple[str, int]] = []
    for g, _ in shown:
        role = roles.get(g, "") or "other"
        if groups and groups[-1][0] == role:
            groups[-1] = (role, groups[-1][1] + 1)
        else:
            groups.append((role, 1))
    top = "".join(f'<th colspan="{n}" class="role">{esc(role)}</th>' for role, n in groups)
    head = "".join(f"<th>{esc(g)}<br>{esc(column_label(table, g, m))}</th>" for g, m in shown)
    body = []
    for row, cells in zip(table.index, strings):
        tds = []
        for g, m in shown:
            value = cells[position[(g, m)]]
            d = position.get((g, DELTA + m))
            delta = cells[d] if d is not None and cells[d] != MISSING else ""
            tds.append(f"<td>{esc(value)}" + (f'<br><span class="delta">{esc(delta)}</span>' if delta else "")
                       + "</td>")
        body.append(f"<tr><th>{esc(row)}</th>{''.join(tds)}</tr>")
    baseline = table.attrs.get("baseline")
    note = (f"Each cell: the value, and beneath it its Δ vs {baseline} (points for a percentage, the score's own "
            "unit otherwise); marks and intervals are explained under the full table." if baseline else "")
    return (f'<table class="headline"><caption>{esc(caption)}</caption><thead><tr><th rowspan="2">'
            f'{esc(table.attrs.get("row_name", "variant"))}</th>{top}</tr><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>' + (f'<p class="notes">{esc(note)}</p>' if note else ""))


def folded_notes(notes: Sequence[str], what: str = "Notes") -> str:
    """A table's footnotes folded under it (``<details>``): the table reads first, its notes
    open on a click ('' when there is none)."""
    if not notes:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return (f'<details class="notes"><summary>{esc(what)} ({len(notes)})</summary>'
            f'<ul class="notes">{items}</ul></details>')


def declared_only(table: Any) -> Any:
    """The table without a (column, metric) that no suite of the column declares, nor its Δ and
    statistics: a column of one suite shows that suite's metrics only (cost metrics stay)."""
    layout = table.attrs.get("layout") or {}
    suites_of = {col: {g.split("/", 1)[0] for g in groups} for col, groups in layout.items()}
    every = set().union(*suites_of.values()) if suites_of else set()
    keep = []
    for group, metric in table.columns:
        base = metric.split(":", 1)[0]
        base = base[len(DELTA):] if base.startswith(DELTA) else base
        declared = {m.name for m in scoring.of_frame(table).declared(sorted(suites_of.get(group, every))).values()}
        keep.append(base in COST_METRICS or base in declared)
    return keep_attrs(table.loc[:, keep], table)


def keep_attrs(part: Any, table: Any) -> Any:
    """``part`` (a selection of ``table``'s columns) with ``table``'s attrs (its notes and marks)."""
    part.attrs = dict(table.attrs)
    return part


def failure_table_html(table: Any) -> str:
    classes = column_classes(table)
    head = "".join(f'<th title="{esc(c.label)}">{esc(c.name)}</th>' for c in classes)
    body = "".join(
        f"<tr><th>{esc(v)}</th><th>{esc(g)}</th><td>{int(row['n'])}</td>"
        + "".join(f"<td>{row[c.name]:.1f}</td>" for c in classes) + "</tr>"
        for (v, g), row in table.iterrows())
    legend = "".join(f"<li><b>{esc(c.name)}</b>: {esc(c.label)}</li>" for c in classes)
    return (f'<table id="failure-table"><caption>Failure classes, % of episodes (rules: harness/scoring/failures.py and '
            f'each suite\'s reader)</caption>'
            f'<thead><tr><th>variant</th><th>suite/split</th><th>n</th>{head}</tr></thead><tbody>{body}</tbody></table>'
            f'<details class="notes"><summary>What each class means ({len(classes)})</summary>'
            f'<ul class="notes">{legend}</ul></details>')
