"""The report's section on checkpoint sweeps (``+experiment=checkpoint_sweep``): the metric
against training step, each checkpoint's selection estimate with its anytime-valid interval
(those dropped from the race marked), and the chosen checkpoint's held-out value with its
interval (:mod:`harness.run.sweep`)."""

from __future__ import annotations

import math
from typing import Any, Sequence

from harness.report.page import esc
from harness.tables.sweeps import describe


def curve_chart(s: Any) -> str:
    """An SVG of one sweep: x the training step (the checkpoints' order where a name carries
    none), y the metric; a dot and an interval bar per checkpoint on its selection episodes
    (hollow: dropped from the race), a diamond and its bar for the chosen one held out."""
    scale = 100.0 if s.percent else 1.0
    points = s.points
    steps = [p.step for p in points]
    use_steps = all(v is not None for v in steps) and len(set(steps)) == len(steps)
    xs = [float(v) for v in steps] if use_steps else [float(i) for i in range(len(points))]
    x_lo, x_hi = min(xs), max(xs)
    values = [v for p in points for v in (p.lo, p.hi, p.mean) if not math.isnan(v)]
    if s.held_out is not None:
        values += [v for v in s.held_out[:3] if not math.isnan(v)]
    y_lo, y_hi = (0.0, 1.0) if s.percent else (min(values, default=0.0), max(values, default=1.0))
    if y_hi <= y_lo:
        y_hi = y_lo + 1.0
    left, top, width, height = 52, 28, 520, 200
    title = f"Checkpoint sweep on {s.suite}/{s.split}: {s.metric} against training step"

    def x(v: float) -> float:
        return left + 20 + (v - x_lo) / max(1e-9, x_hi - x_lo) * (width - 40)

    def y(v: float) -> float:
        return top + height - (v - y_lo) / (y_hi - y_lo) * height

    svg = [f'<svg class="chart" role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{left + width + 20}" height="{top + height + 44}" data-chart="checkpoint-sweep">',
           f'<text x="{left}" y="16" class="title">{esc(title)}</text>']
    for k in range(5):
        tick = y_lo + k * (y_hi - y_lo) / 4
        svg.append(f'<line x1="{left - 4}" x2="{left + width}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="grid"/>'
                   f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" class="tick" text-anchor="end">'
                   f'{scale * tick:.0f}</text>')
    line = " ".join(f"{x(xv):.1f},{y(p.mean):.1f}" for xv, p in zip(xs, points) if not math.isnan(p.mean))
    if line:
        svg.append(f'<polyline points="{line}" fill="none" stroke="#4269d0" stroke-opacity="0.5"/>')
    for xv, p in zip(xs, points):
        label = p.name if not use_steps else f"{p.step}"
        svg.append(f'<text x="{x(xv):.1f}" y="{top + height + 16}" class="tick" text-anchor="middle">'
                   f'{esc(label)}</text>')
        if math.isnan(p.mean):
            continue
        how = (f"dropped after {p.episodes} selection episodes ({p.drop.by} better)" if p.drop is not None
               else f"{'chosen' if p.name == s.chosen else 'kept'} after {p.episodes} selection episodes")
        tip = (f"{p.name}: selection {s.metric} {scale * p.mean:.1f} [{scale * p.lo:.1f}, {scale * p.hi:.1f}] "
               f"(anytime-valid), {how}")
        svg.append(f'<line x1="{x(xv):.1f}" x2="{x(xv):.1f}" y1="{y(p.lo):.1f}" y2="{y(p.hi):.1f}" '
                   f'stroke="#4269d0" stroke-width="2"/>'
                   f'<circle cx="{x(xv):.1f}" cy="{y(p.mean):.1f}" r="4" stroke="#4269d0" '
                   f'fill="{"white" if p.drop is not None else "#4269d0"}" data-checkpoint="{esc(p.name)}">'
                   f'<title>{esc(tip)}</title></circle>')
    if s.held_out is not None and s.chosen is not None:
        mean, lo, hi, n, size = s.held_out
        xv = next(xv for xv, p in zip(xs, points) if p.name == s.chosen) + 0.02 * max(1e-9, x_hi - x_lo)
        cx, cy = x(xv), y(mean)
        tip = f"{s.chosen} held out: {s.metric} {scale * mean:.1f} [{scale * lo:.1f}, {scale * hi:.1f}], {n} episodes"
        svg.append(f'<line x1="{cx + 6:.1f}" x2="{cx + 6:.1f}" y1="{y(lo):.1f}" y2="{y(hi):.1f}" stroke="#ef8a17" '
                   f'stroke-width="2"/><polygon points="{cx + 6:.1f},{cy - 6:.1f} {cx + 12:.1f},{cy:.1f} '
                   f'{cx + 6:.1f},{cy + 6:.1f} {cx:.1f},{cy:.1f}" fill="#ef8a17" data-held-out="{esc(s.chosen)}">'
                   f'<title>{esc(tip)}</title></polygon>')
    axis = "training step" if use_steps else "checkpoint"
    svg.append(f'<text x="{left + width / 2}" y="{top + height + 36}" class="tick" text-anchor="middle">{axis} '
               '(blue: selection estimate, hollow: dropped; orange: the chosen one on held-out episodes)</text></svg>')
    return "".join(svg)


def sweep_section(sweeps: Sequence[Any]) -> str:
    """The section: each sweep's lines (as ``harness table`` prints them) and its curve."""
    if not sweeps:
        return ""
    parts = ['<section id="checkpoint-sweep"><h2>Checkpoint sweeps</h2>']
    for s in sweeps:
        lines = describe(s)
        parts.append(f'<p class="sequential">{esc(lines[0])}</p><ul>'
                     + "".join(f"<li>{esc(x[2:])}</li>" for x in lines[1:-1]) + "</ul>"
                     + f'<p class="sequential">{esc(lines[-1])}</p>' + curve_chart(s))
    parts.append('<p class="notes">The selection estimates chose the checkpoint; their intervals are anytime-valid '
                 "(valid although the race stopped each checkpoint when it chose). The held-out value is measured "
                 "on episodes selection never saw: it is the figure to report.</p></section>")
    return "".join(parts)
