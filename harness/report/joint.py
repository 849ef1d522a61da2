"""The report's "Diagnostics and transfer" section (``harness report OUT --experiment NAME``).

Below the experiment's table (:meth:`harness.tables.experiments.Experiment.table`, with the
association of diagnostic Δ and transfer Δ in its notes, :mod:`harness.tables.joint`; the report
opens with it), one scatter chart per
diagnostic (column, metric) and transfer (column, metric): each variant a point at
(diagnostic Δ, transfer Δ) vs the baseline; and, per diagnostic (column, metric) and
variant, the questions where it differs most from the baseline, each linked to its
episode in the report's browser (and to the baseline's answer to the same question).
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

from harness.scoring import policy as scoring
from harness.tables import joint
from harness.tables.columns import declared_columns

#: Questions listed per diagnostic (column, metric) and variant.
TOP = 5
_PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"]


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _shown(value: float, metric: str) -> float:
    """A Δ as the table prints it: points for a rate, the score's own unit otherwise."""
    return 100 * value if scoring.is_percent(metric) else value


def _axis_label(column: str, metric: str) -> str:
    unit = " (points)" if scoring.is_percent(metric) else ""
    return f"Δ {column} {scoring.label_of(metric) or metric}{unit}"


def scatter_chart(result: Mapping[str, Any]) -> str:
    """SVG: one point per variant at (diagnostic Δ, transfer Δ), the zero lines, ρ in the title."""
    x_metric, y_metric = result["x"]["metric"], result["y"]["metric"]
    pts = [(p["label"], _shown(p["x_delta"], x_metric), _shown(p["y_delta"], y_metric)) for p in result["points"]]
    w, h, left, top, right, bottom = 380, 250, 64, 48, 84, 44
    xs, ys = [0.0, *[p[1] for p in pts]], [0.0, *[p[2] for p in pts]]

    def span(values: Sequence[float]) -> tuple[float, float]:
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.12 or 1.0
        return lo - pad, hi + pad

    (x0, x1), (y0, y1) = span(xs), span(ys)
    px = lambda v: left + (v - x0) / (x1 - x0) * (w - left - right)  # noqa: E731
    py = lambda v: top + (1 - (v - y0) / (y1 - y0)) * (h - top - bottom)  # noqa: E731
    rho = (f"ρ = {result['rho']:+.2f}" + (f" [{result['interval'][0]:+.2f}, {result['interval'][1]:+.2f}]"
                                          if result.get("interval") else "")
           if result["rho"] is not None else "ρ not computed")
    name = lambda side: f"{result[side]['column']} {scoring.label_of(result[side]['metric']) or result[side]['metric']}"  # noqa: E731
    title = f"{name('x')} vs {name('y')}"
    subtitle = f"{rho}, n = {result['n']}"
    svg = [f'<svg class="chart joint" role="img" aria-label="{_esc(title)}: {_esc(subtitle)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{w}" height="{h}" data-chart="joint" data-x="{_esc(result["x"]["column"])}" '
           f'data-y="{_esc(result["y"]["column"])}">',
           f'<text x="4" y="14" class="title">{_esc(title)}</text>',
           f'<text x="4" y="30" class="tick">{_esc(subtitle)}</text>',
           f'<line x1="{px(0):.1f}" x2="{px(0):.1f}" y1="{top}" y2="{h - bottom}" class="grid"/>',
           f'<line x1="{left}" x2="{w - right}" y1="{py(0):.1f}" y2="{py(0):.1f}" class="grid"/>',
           f'<text x="{(left + w - right) / 2:.0f}" y="{h - 8}" class="tick" text-anchor="middle">'
           f'{_esc(_axis_label(result["x"]["column"], x_metric))}</text>',
           f'<text x="12" y="{(top + h - bottom) / 2:.0f}" class="tick" text-anchor="middle" '
           f'transform="rotate(-90 12 {(top + h - bottom) / 2:.0f})">{_esc(_axis_label(result["y"]["column"], y_metric))}</text>']
    if len(_axis_label(result["y"]["column"], y_metric)) * 6 > h - top - bottom:  # too long beside the plot
        svg[-1] = (f'<text x="12" y="{(top + h - bottom) / 2:.0f}" class="tick" text-anchor="middle" '
                   f'transform="rotate(-90 12 {(top + h - bottom) / 2:.0f})">Δ {_esc(result["y"]["column"])}</text>')
    for v, anchor in ((x0, "start"), (x1, "end")):
        svg.append(f'<text x="{px(v):.1f}" y="{h - bottom + 14}" class="tick" text-anchor="{anchor}">{v:+.3g}</text>')
    for v in (y0, y1):
        svg.append(f'<text x="{left - 4}" y="{py(v) + 4:.1f}" class="tick" text-anchor="end">{v:+.3g}</text>')
    places = place_labels([(px(x), py(y), label) for label, x, y in pts], w, h, top=34)
    for i, ((label, x, y), (lx, ly, anchor)) in enumerate(zip(pts, places)):
        colour = _PALETTE[i % len(_PALETTE)]
        svg.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="5" fill="{colour}" data-variant="{_esc(label)}">'
                   f'<title>{_esc(label)}: Δ {x:+.3g}, {y:+.3g}</title></circle>'
                   f'<text x="{lx:.1f}" y="{ly:.1f}" class="tick point-label" text-anchor="{anchor}" '
                   f'fill="{colour}">{_esc(label)}</text>')
    svg.append("</svg>")
    return "".join(svg)


#: A point label's assumed extent (11 px text): width per character and line height, in px,
#: generous for proportional fonts so that placed boxes that do not touch never overlap drawn.
_CHAR_W, _LINE_H = 7.0, 13.0


def _box(x: float, y: float, anchor: str, text: str) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a label drawn at baseline (x, y) with ``anchor``."""
    width = _CHAR_W * len(text)
    left = x if anchor == "start" else x - width if anchor == "end" else x - width / 2
    return left, y - _LINE_H + 3, left + width, y + 3


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(points: Sequence[tuple[float, float, str]], width: float, height: float,
                 top: float = 0.0) -> list[tuple[float, float, str]]:
    """A position (x, y, text-anchor) per point label such that no two labels overlap, nor a
    label another point, and each stays inside the chart (below ``top``, the title): the first
    free of eight places around its point, else the nearest free row below or above it."""
    circles = [(x - 6, y - 6, x + 6, y + 6) for x, y, _ in points]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for i, (x, y, text) in enumerate(points):
        candidates = [(x + 8, y - 6, "start"), (x + 8, y + 13, "start"), (x - 8, y - 6, "end"),
                      (x - 8, y + 13, "end"), (x, y - 10, "middle"), (x, y + 20, "middle"),
                      (x + 8, y + 4, "start"), (x - 8, y + 4, "end")]
        for step in range(1, 40):  # then rows further away, below and above
            candidates += [(x + 8, y + 4 + step * _LINE_H, "start"), (x + 8, y + 4 - step * _LINE_H, "start"),
                           (x - 8, y + 4 + step * _LINE_H, "end"), (x - 8, y + 4 - step * _LINE_H, "end")]
        others = [c for j, c in enumerate(circles) if j != i]

        def free(cand: tuple[float, float, str]) -> bool:
            box = _box(cand[0], cand[1], cand[2], text)
            inside = box[0] >= 0 and box[2] <= width and box[1] >= top and box[3] <= height
            return inside and not any(_overlaps(box, o) for o in (*placed, *others))

        choice = next((c for c in candidates if free(c)), candidates[0])
        placed.append(_box(choice[0], choice[1], choice[2], text))
        out.append(choice)
    return out


def _differences_html(df: Any, experiment: Any, baseline: str) -> str:
    labels = experiment.labels
    available = [m for m in declared_columns(df)]
    variants = [v for v in dict.fromkeys(df["variant"].astype(str)) if v != baseline]
    variants = [v.name for v in experiment.variants if v.name in variants] + sorted(
        v for v in variants if v not in {x.name for x in experiment.variants})
    blocks = []
    for column in experiment.columns:
        if column.role != "diagnostic":
            continue
        for metric in experiment.metrics_of(column, available):
            jc = joint.JointColumn(column.label, tuple(column.cells), metric)
            mlabel = scoring.label_of(metric) or metric
            items = []
            for variant in variants:
                rows = joint.largest_differences(df, jc, baseline, variant, TOP)
                for r in rows:
                    diff = _shown(r["difference"], metric)
                    kind = f" ({_esc(r['task_type'])})" if r.get("task_type") else ""
                    items.append(
                        f'<li data-variant="{_esc(variant)}"><a class="ep-link" href="{_esc(r["link"])}">'
                        f'{_esc(labels.get(variant, variant))} · {_esc(r["split"])}/{_esc(r["episode_id"])}</a>{kind}: '
                        f'{_esc(mlabel)} {_shown(r["value"], metric):.3g} vs {_shown(r["baseline_value"], metric):.3g} '
                        f'(<a href="{_esc(r["baseline_link"])}">{_esc(labels.get(baseline, baseline))}</a>), '
                        f'Δ {diff:+.3g}</li>')
            if items:
                blocks.append(f'<h3>{_esc(column.label)} {_esc(mlabel)}</h3><ul class="joint-questions">'
                              + "".join(items) + "</ul>")
    if not blocks:
        return '<p class="notes">No diagnostic question has a value that differs between a variant and the baseline.</p>'
    return (f'<p class="notes">Per diagnostic column and variant, the {TOP} questions whose value differs most from '
            f'{_esc(labels.get(baseline, baseline))}\'s (largest |Δ| first); each opens the episode below.</p>'
            + "".join(blocks))


def joint_section(experiment: Any, table: Any, df: Any) -> str:
    """The section's HTML (escaped where it is made): the charts of the association that
    ``experiment.table`` put in ``table`` (the report shows that table above), and the
    questions where the variants differ most."""
    baseline = experiment.baseline or experiment.variants[0].name
    charts = [scatter_chart(r) for r in table.attrs.get("association", []) if r["points"]]
    parts = ['<section id="joint"><h2>Diagnostics and transfer</h2>',
             '<div class="joint-charts">' + "".join(charts) + "</div>" if charts else
             '<p class="notes">No chart: the store holds no diagnostic and transfer columns with values for the '
             "same variants.</p>",
             "<h3>Where the variants differ most</h3>", _differences_html(df, experiment, baseline), "</section>"]
    return "".join(parts)
