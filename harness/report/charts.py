"""The report's SVG charts: each variant's rate per suite/split with its Wilson 95 % interval,
and the failure classes' shares per variant and suite/split."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from harness.report.page import esc

_PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e",
            "#9498a0", "#1b1b1b", "#bcbd22")


#: Approximate width of one character of an 11 px tick label (system sans-serif).
_CHAR_W = 6.6


def sr_chart(cells: Any, variants: Sequence[str], groups: Sequence[str], title: str, metric: Any) -> str:
    """Grouped bars: a binary declared ``metric`` (:class:`harness.scoring.policy.Metric`) per
    (group, variant) with Wilson 95 % interval whiskers.

    Legible at any number of groups: a group's label is its split (the title
    names the suite); when the longest label is wider than a group's bars the
    labels are turned 40° and the chart grows downwards to hold them, so
    neighbouring labels never overlap.
    """
    bar_w, gap, left, top, height = 22, 18, 46, 28, 200
    labels = [g.split("/", 1)[1] if "/" in g else g for g in groups]
    slot = len(variants) * bar_w + gap
    longest = max((len(t) for t in labels), default=0) * _CHAR_W
    turn = longest > slot - 6
    label_h = longest * math.sin(math.radians(40)) + 16 if turn else 18
    width = left + len(groups) * slot + 10 + (longest * 0.5 if turn else 0)
    legend_top = top + height + label_h + 18
    legend_h = 18 * len(variants)
    svg = [f'<svg class="chart" role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{max(width, left + 8 * len(title)):.0f}" height="{legend_top + legend_h + 4:.0f}" data-chart="{esc(metric.name)}">',
           f'<text x="{left}" y="16" class="title">{esc(title)}</text>']
    for tick in range(0, 101, 25):
        y = top + height - tick / 100 * height
        svg.append(f'<line x1="{left - 4}" x2="{left + len(groups) * slot}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{left - 8}" y="{y + 4:.1f}" class="tick" text-anchor="end">{tick}</text>')
    x = left + gap / 2
    for group, label in zip(groups, labels):
        gx = x
        for i, variant in enumerate(variants):
            row = cells.get((variant, group))
            name = metric.name
            if row is not None and not math.isnan(row[name]):
                sr, lo, hi = row[name], row[f"{name}_lo"], row[f"{name}_hi"]
                h = sr * height
                svg.append(
                    f'<rect x="{x:.1f}" y="{top + height - h:.1f}" width="{bar_w - 3}" height="{h:.1f}" '
                    f'fill="{_PALETTE[i % len(_PALETTE)]}"><title>{esc(variant)} · {esc(group)}: {esc(metric.label)} {100 * sr:.1f} '
                    f'[{100 * lo:.1f}, {100 * hi:.1f}] (n={int(row["episodes"])})</title></rect>')
                cx = x + (bar_w - 3) / 2
                y_lo, y_hi = top + height - lo * height, top + height - hi * height
                svg.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y_lo:.1f}" y2="{y_hi:.1f}" class="whisker"/>'
                           f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y_lo:.1f}" y2="{y_lo:.1f}" class="whisker"/>'
                           f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y_hi:.1f}" y2="{y_hi:.1f}" class="whisker"/>')
            x += bar_w
        mid, ly = (gx + x) / 2, top + height + 14
        if turn:
            svg.append(f'<text x="{mid:.1f}" y="{ly}" class="tick xlabel" text-anchor="end" '
                       f'transform="rotate(-40 {mid:.1f} {ly})">{esc(label)}<title>{esc(group)}</title></text>')
        else:
            svg.append(f'<text x="{mid:.1f}" y="{ly + 2}" class="tick xlabel" text-anchor="middle">{esc(label)}'
                       f'<title>{esc(group)}</title></text>')
        x += gap
    for i, variant in enumerate(variants):
        svg.append(f'<rect x="{left}" y="{legend_top + 18 * i - 10:.0f}" width="12" height="12" '
                   f'fill="{_PALETTE[i % len(_PALETTE)]}"/>'
                   f'<text x="{left + 18}" y="{legend_top + 18 * i:.0f}" class="tick">{esc(variant)}</text>')
    svg.append(f'<text x="10" y="{top + height / 2}" class="tick" transform="rotate(-90 10 {top + height / 2})" '
               f'text-anchor="middle">{esc(metric.label)} %</text></svg>')
    return "".join(svg)


def failure_chart(shares: Mapping[str, Mapping[str, float]], classes: Sequence[Any], title: str) -> str:
    """Horizontal stacked bars: share of each failure class per row (variant · suite/split).

    ``classes``: :class:`harness.interfaces.FailureClass` declarations (each drawn in its own
    colour, the same in every report), or bare names (palette colours by position)."""
    colours = [getattr(c, "colour", None) or _PALETTE[i % len(_PALETTE)] for i, c in enumerate(classes)]
    classes = [getattr(c, "name", c) for c in classes]
    left, bar_h, width, top = 230, 20, 460, 28
    rows = list(shares)
    height = top + len(rows) * (bar_h + 8) + 20 + 18 * ((len(classes) + 2) // 3)
    svg = [f'<svg class="chart" role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{left + width + 20}" height="{height}" data-chart="failure">',
           f'<text x="10" y="16" class="title">{esc(title)}</text>']
    y = top
    for row in rows:
        svg.append(f'<text x="{left - 8}" y="{y + 14}" class="tick" text-anchor="end">{esc(row)}</text>')
        x = left
        for i, cls in enumerate(classes):
            share = shares[row].get(cls, 0.0)
            if share <= 0:
                continue
            w = share / 100 * width
            svg.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{colours[i]}"><title>{esc(row)}: {esc(cls)} {share:.1f} %</title></rect>')
            x += w
        y += bar_h + 8
    y += 8
    for i, cls in enumerate(classes):
        lx, ly = 10 + (i % 3) * 230, y + 18 * (i // 3)
        svg.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colours[i]}"/>'
                   f'<text x="{lx + 18}" y="{ly + 10}" class="tick">{esc(cls)}</text>')
    svg.append("</svg>")
    return "".join(svg)
