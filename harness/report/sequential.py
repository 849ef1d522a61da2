"""The report's section on sequential comparisons (``stopping=sequential``): each comparison's
sequential interval on the paired difference against the pairs run (after every pair for a
betting rule's confidence sequence, at every look for the bounded design's repeated interval),
with where it stopped (:mod:`harness.stats.sequential`)."""

from __future__ import annotations

import math
from typing import Any, Sequence

from harness.report.page import esc
from harness.scoring.policy import known_metric
from harness.stats.sequential import describe


def interval_chart(c: Any, percent: bool) -> str:
    """An SVG of one comparison: the band between the interval's bounds after each pair, the
    zero line (and ±margin), the running mean of the differences, the pair it was decided at."""
    d = c.decision
    # the pair count of each point of the path: every look of the bounded design, else every pair
    at = list(getattr(d, "looks", None) or []) or list(range(1, len(d.path_lo) + 1))
    n = at[-1] if at else 0
    scale = 100.0 if percent else 1.0
    span = max(abs(v) for v in [*d.path_lo, *d.path_hi, 1e-9] if not math.isnan(v))
    left, top, width, height = 52, 28, 520, 180
    kind = "repeated interval" if c.interval_kind == "repeated_confidence_interval" else "anytime-valid interval"
    title = f"{c.variant} vs {c.baseline} on {c.suite}/{c.split} ({c.metric}): {kind} of Δ"

    def x(i: float) -> float:
        return left + (i - 1) / max(1, n - 1) * width

    def y(v: float) -> float:
        return top + height / 2 - v / span * height / 2

    svg = [f'<svg class="chart" role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{left + width + 20}" height="{top + height + 40}" data-chart="sequential">',
           f'<text x="{left}" y="16" class="title">{esc(title)}</text>']
    for tick in (-span, -span / 2, 0.0, span / 2, span):
        svg.append(f'<line x1="{left - 4}" x2="{left + width}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                   f'class="{"whisker" if tick == 0 else "grid"}"/><text x="{left - 8}" y="{y(tick) + 4:.1f}" '
                   f'class="tick" text-anchor="end">{scale * tick:+.0f}</text>')
    if d.margin is not None:
        for v in (-d.margin, d.margin):
            svg.append(f'<line x1="{left}" x2="{left + width}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="whisker" '
                       'stroke-dasharray="4 3"/>')
    kept = [(i, lo, hi) for i, lo, hi in zip(at, d.path_lo, d.path_hi) if not (math.isnan(lo) or math.isnan(hi))]
    if kept:
        upper = " ".join(f"{x(i):.1f},{y(hi):.1f}" for i, _lo, hi in kept)
        lower = " ".join(f"{x(i):.1f},{y(lo):.1f}" for i, lo, _hi in reversed(kept))
        svg.append(f'<polygon points="{upper} {lower}" fill="#4269d0" fill-opacity="0.25" stroke="#4269d0">'
                   f'<title>{esc(title)}</title></polygon>')
    if d.at is not None:
        svg.append(f'<line x1="{x(d.at):.1f}" x2="{x(d.at):.1f}" y1="{top}" y2="{top + height}" class="whisker"/>'
                   f'<text x="{x(d.at) - 4:.1f}" y="{top + 12}" class="tick" text-anchor="end">'
                   f'{esc(d.outcome)} at pair {d.at}</text>')
    svg.append(f'<text x="{left + width / 2}" y="{top + height + 30}" class="tick" text-anchor="middle">'
               f'paired episodes (1 … {n})</text></svg>')
    return "".join(svg)


def sequential_section(comparisons: Sequence[Any]) -> str:
    """The section: a line and a chart per comparison ('' when there is none)."""
    if not comparisons:
        return ""
    parts = ['<section id="sequential"><h2>Sequential comparisons</h2>']
    for c in comparisons:
        metric = known_metric(c.metric)
        percent = metric is None or metric.percent
        parts.append(f'<p class="sequential">{esc(describe(c, percent))}</p>' + interval_chart(c, percent))
    parts.append("<p class=\"notes\">Sequential intervals: a betting rule's holds at every number of pairs at once, "
                 "the bounded design's repeated interval at every look it took, so the comparison could stop as "
                 "soon as it was decided. The transfer table's Δ interval and p are fixed-sample figures, not "
                 "valid under optional stopping.</p></section>")
    return "".join(parts)
