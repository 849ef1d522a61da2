"""``harness report OUTDIR``: a static, self-contained HTML report of a store.

One file, ``OUTDIR/report/index.html`` (or ``--dest``), regenerated from the
store alone and written atomically (a temporary file in the same directory,
then ``os.replace``): a reader never sees half a report. No CDN, no network:
charts are inline SVG written here, the episode browser is a small inline
script over the episodes embedded as JSON. The only external references are
the episodes' own video files (``OUTDIR/artifacts/...``), linked by relative
path so the report folder and the store travel together.

Sections: transfer table with paired statistics (McNemar p, bootstrap 95 %
intervals; :func:`harness.tables.transfer_table`), SR bar charts with Wilson
95 % intervals per suite/split and variant, per-task-type breakdown, the
power line per suite, the failure taxonomy (:mod:`harness.failures`) as a
chart and a table, the episode browser (filters: suite, split, variant,
success, termination, failure class; each episode's instruction, goal
conditions, plan/step history with feedback, agent calls with raw output and
prompt where recorded, video) and the paired view of the episodes on which
each variant and the baseline disagree, side by side.
"""

from __future__ import annotations

import html
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.report.page import CSS, SCRIPT

#: Statistical power of the power line (conventional 80 %).
POWER = 0.80
#: Two-sided significance level of the power line.
ALPHA = 0.05
#: Effect the power line is stated for: 5 percentage points of SR.
POWER_DELTA = 0.05


def episodes_for_power(p_base: float, delta: float = POWER_DELTA, alpha: float = ALPHA, power: float = POWER) -> int:
    """Episodes per variant to detect ``p_base`` -> ``p_base + delta`` (two-sided test
    of two proportions, normal approximation; Fleiss, *Statistical Methods for
    Rates and Proportions*, eq. 4.14 without continuity correction).

    Stated for independent samples: the paired design (same episodes for every
    variant, McNemar) needs fewer when the variants agree on most episodes.
    """
    from statistics import NormalDist

    p1 = min(max(p_base, 0.0), 1.0)
    p2 = p1 + delta if p1 + delta <= 1.0 else p1 - delta
    pbar = (p1 + p2) / 2
    z_a = NormalDist().inv_cdf(1 - alpha / 2)
    z_b = NormalDist().inv_cdf(power)
    num = (z_a * math.sqrt(2 * pbar * (1 - pbar)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2
    return int(math.ceil(num / (delta ** 2)))


# --- data ------------------------------------------------------------------------
def _episode_payload(df: Any, classes: Sequence[str], transcripts: Mapping[tuple, list[dict]],
                     instructions: Mapping[tuple, str], report_dir: Path, store_dir: Path) -> list[dict[str, Any]]:
    out = []
    for rec, cls in zip(df.to_dict("records"), classes):
        key = (rec["run_id"], rec["suite"], rec["split"], rec["episode_id"], int(rec["seed"]))
        extra = rec.get("extra") or {}
        video = None
        artifacts = extra.get("artifacts") or {}
        if isinstance(artifacts, Mapping) and artifacts.get("video"):
            path = Path(str(artifacts["video"]))
            if not path.is_absolute():
                path = store_dir / path
            video = os.path.relpath(path, report_dir)
        calls = [
            {"call": t["call"], "step": t["step"], "raw": t.get("raw_output"), "error": t.get("output_error"),
             "actions": t.get("actions"), "prompt": t.get("prompt")}
            for t in transcripts.get(key, [])
        ]
        out.append({
            "id": len(out),
            "run": rec["run_id"], "variant": str(rec["variant"]), "suite": rec["suite"], "split": rec["split"],
            "episode": rec["episode_id"], "seed": int(rec["seed"]),
            "instruction": extra.get("instruction") or instructions.get(key[1:4]) or "",
            "task_type": _text(rec.get("task_type")),
            "success": bool(rec["success"]), "termination": _text(rec.get("termination")),
            "error": _text(rec.get("error_kind")), "error_message": _text(rec.get("error_message")),
            "gc": [int(rec.get("gc_satisfied") or 0), int(rec.get("gc_total") or 0)],
            "steps": int(rec.get("steps") or 0), "invalid": int(rec.get("invalid_actions") or 0),
            "output_errors": int(rec.get("planner_output_errors") or 0),
            "failure": cls,
            "history": extra.get("history") or [],
            "calls": calls,
            "video": video,
            "task": extra.get("task") or None,
        })
    return out


def _text(value: Any) -> str:
    """A record's optional text field as a string ('' for None / NaN from pandas)."""
    return value if isinstance(value, str) else ""


def _instructions_from_suites(store: Any, df: Any) -> dict[tuple[str, str, str], str]:
    """Instructions of episodes whose records carry none (stores written before
    ``extra["instruction"]``), from each run's suite where it can be built here."""
    from harness.catalog import SUITES

    need = df[[not (e or {}).get("instruction") for e in df["extra"]]]
    out: dict[tuple[str, str, str], str] = {}
    if need.empty:
        return out
    runs = store.runs().set_index("run_id")
    for run_id, group in need.groupby("run_id"):
        if run_id not in runs.index:
            continue
        spec = json.loads(runs.loc[run_id, "spec"])
        try:
            suite = SUITES.build(spec["suite"], **dict(spec.get("suite_params") or {}))
            for e in suite.episodes(spec["split"]):
                out[(e.suite, e.split, e.episode_id)] = e.instruction
        except Exception:  # noqa: BLE001 - best effort: the browser then shows no instruction
            continue
    return out


# --- SVG charts --------------------------------------------------------------------
_PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e",
            "#9498a0", "#1b1b1b", "#bcbd22")


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def sr_chart(cells: Any, variants: Sequence[str], groups: Sequence[str], title: str) -> str:
    """Grouped bars: SR per (group, variant) with Wilson 95 % interval whiskers."""
    bar_w, gap, left, top, height = 22, 18, 46, 28, 200
    width = left + len(groups) * (len(variants) * bar_w + gap) + 10
    legend_h = 18 * len(variants)
    svg = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{max(width, left + 8 * len(title))}" height="{top + height + 70 + legend_h}" data-chart="sr">',
           f'<text x="{left}" y="16" class="title">{_esc(title)}</text>']
    for tick in range(0, 101, 25):
        y = top + height - tick / 100 * height
        svg.append(f'<line x1="{left - 4}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{left - 8}" y="{y + 4:.1f}" class="tick" text-anchor="end">{tick}</text>')
    x = left + gap / 2
    for group in groups:
        gx = x
        for i, variant in enumerate(variants):
            row = cells.get((variant, group))
            if row is not None and not math.isnan(row["sr"]):
                sr, lo, hi = row["sr"], row["sr_lo"], row["sr_hi"]
                h = sr * height
                svg.append(
                    f'<rect x="{x:.1f}" y="{top + height - h:.1f}" width="{bar_w - 3}" height="{h:.1f}" '
                    f'fill="{_PALETTE[i % len(_PALETTE)]}"><title>{_esc(variant)} · {_esc(group)}: SR {100 * sr:.1f} '
                    f'[{100 * lo:.1f}, {100 * hi:.1f}] (n={int(row["episodes"])})</title></rect>')
                cx = x + (bar_w - 3) / 2
                y_lo, y_hi = top + height - lo * height, top + height - hi * height
                svg.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y_lo:.1f}" y2="{y_hi:.1f}" class="whisker"/>'
                           f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y_lo:.1f}" y2="{y_lo:.1f}" class="whisker"/>'
                           f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y_hi:.1f}" y2="{y_hi:.1f}" class="whisker"/>')
            x += bar_w
        svg.append(f'<text x="{(gx + x) / 2:.1f}" y="{top + height + 16}" class="tick" text-anchor="middle">'
                   f'{_esc(group)}</text>')
        x += gap
    ly = top + height + 36
    for i, variant in enumerate(variants):
        svg.append(f'<rect x="{left}" y="{ly + 18 * i - 10}" width="12" height="12" fill="{_PALETTE[i % len(_PALETTE)]}"/>'
                   f'<text x="{left + 18}" y="{ly + 18 * i}" class="tick">{_esc(variant)}</text>')
    svg.append(f'<text x="10" y="{top + height / 2}" class="tick" transform="rotate(-90 10 {top + height / 2})" '
               'text-anchor="middle">SR %</text></svg>')
    return "".join(svg)


def failure_chart(shares: Mapping[str, Mapping[str, float]], classes: Sequence[str], title: str) -> str:
    """Horizontal stacked bars: share of each failure class per row (variant · suite/split)."""
    left, bar_h, width, top = 230, 20, 460, 28
    rows = list(shares)
    height = top + len(rows) * (bar_h + 8) + 20 + 18 * ((len(classes) + 2) // 3)
    svg = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{left + width + 20}" height="{height}" data-chart="failure">',
           f'<text x="10" y="16" class="title">{_esc(title)}</text>']
    y = top
    for row in rows:
        svg.append(f'<text x="{left - 8}" y="{y + 14}" class="tick" text-anchor="end">{_esc(row)}</text>')
        x = left
        for i, cls in enumerate(classes):
            share = shares[row].get(cls, 0.0)
            if share <= 0:
                continue
            w = share / 100 * width
            svg.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{_PALETTE[i % len(_PALETTE)]}"><title>{_esc(row)}: {_esc(cls)} {share:.1f} %</title></rect>')
            x += w
        y += bar_h + 8
    y += 8
    for i, cls in enumerate(classes):
        lx, ly = 10 + (i % 3) * 230, y + 18 * (i // 3)
        svg.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{_PALETTE[i % len(_PALETTE)]}"/>'
                   f'<text x="{lx + 18}" y="{ly + 10}" class="tick">{_esc(cls)}</text>')
    svg.append("</svg>")
    return "".join(svg)


# --- HTML tables -------------------------------------------------------------------
def table_html(table: Any, caption: str, cls: str = "") -> str:
    """A harness table (transfer or breakdown) as HTML, same cells and footnotes as Markdown."""
    from harness import tables

    shown = tables._shown_columns(table)  # noqa: SLF001 - the Markdown renderer's own cell logic
    row_name = table.attrs.get("row_name", table.index.name or "")
    head = "".join(f"<th>{_esc(g)}<br>{_esc(tables._metric_label(m))}</th>" for g, m in shown)  # noqa: SLF001
    body = []
    for row, cells in zip(table.index, tables._cell_strings(table, tables.MISSING, tables.DAGGER)):  # noqa: SLF001
        body.append(f"<tr><th>{_esc(row)}</th>" + "".join(f"<td>{_esc(c)}</td>" for c in cells) + "</tr>")
    notes = "".join(f"<li>{_esc(n)}</li>" for n in tables._notes(table))  # noqa: SLF001
    return (f'<table class="{cls}"><caption>{_esc(caption)}</caption><thead><tr><th>{_esc(row_name)}</th>{head}'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table>' + (f'<ul class="notes">{notes}</ul>' if notes else ""))


def _failure_table_html(table: Any) -> str:
    from harness.failures import FAILURE_LABELS

    cols = [c for c in table.columns if c != "n"]
    head = "".join(f'<th title="{_esc(FAILURE_LABELS[c])}">{_esc(c)}</th>' for c in cols)
    body = "".join(
        f"<tr><th>{_esc(v)}</th><th>{_esc(g)}</th><td>{int(row['n'])}</td>"
        + "".join(f"<td>{row[c]:.1f}</td>" for c in cols) + "</tr>"
        for (v, g), row in table.iterrows())
    legend = "".join(f"<li><b>{_esc(c)}</b>: {_esc(FAILURE_LABELS[c])}</li>" for c in cols)
    return (f'<table id="failure-table"><caption>Failure classes, % of episodes (rules: harness/failures.py)</caption>'
            f'<thead><tr><th>variant</th><th>suite/split</th><th>n</th>{head}</tr></thead><tbody>{body}</tbody></table>'
            f'<ul class="notes">{legend}</ul>')


# --- build -------------------------------------------------------------------------
def build_report(outdir: str | Path, dest: str | Path | None = None, baseline: str | None = None,
                 title: str | None = None) -> Path:
    """Write the report of the store in ``outdir``; returns the HTML file's path.

    ``baseline``: the variant Δ columns and the paired view compare against
    (default: ``base`` if present, else the first variant in run order).
    Raises :class:`harness.store.StoreError` / ``ValueError`` with one-line messages.
    """
    from harness import failures, tables
    from harness.metrics import summarize
    from harness.store import ResultStore

    with ResultStore(outdir, readonly=True) as store:
        df, notes = store.latest_frame()
        if df.empty:
            raise ValueError(f"the store in {outdir} holds no episodes yet")
        run_ids = sorted(set(df["run_id"]))
        transcripts: dict[tuple, list[dict]] = {}
        for t in store.transcripts(run_ids):
            transcripts.setdefault((t["run_id"], t["suite"], t["split"], t["episode_id"], int(t["seed"])), []).append(t)
        tasks = failures.tasks_from_suites(store, df)
        instructions = _instructions_from_suites(store, df)
        store_path = store.path
        runs = store.runs()
    classes = failures.classify_frame(df, tasks)

    variants_all = list(dict.fromkeys(df["variant"].astype(str)))
    if baseline is None:
        baseline = "base" if "base" in variants_all else variants_all[0]
    if baseline not in variants_all:
        raise ValueError(f"baseline {baseline!r} is not a variant of this store (variants: {', '.join(variants_all)})")
    variants = tables.ordered_variants(df, baseline, None)
    dest_path = Path(dest) if dest is not None else store_path.parent / "report" / "index.html"
    if dest_path.suffix.lower() not in (".html", ".htm"):
        dest_path = dest_path / "index.html"
    report_dir = dest_path.parent
    report_dir.mkdir(parents=True, exist_ok=True)

    sections: list[str] = []
    # Transfer table (paired statistics where there is more than one variant).
    transfer = tables.transfer_table(df, baseline=baseline if len(variants) > 1 else None, stats=len(variants) > 1)
    sections.append('<section id="transfer"><h2>Transfer table</h2>'
                    + table_html(transfer, f"SR / GC per suite/split (%), Δ vs {baseline}", "transfer") + "</section>")

    # SR charts with Wilson intervals, one per suite.
    summary = summarize(df, ["variant", "suite", "split"])
    cells = {(r["variant"], f'{r["suite"]}/{r["split"]}'): r for r in summary.to_dict("records")}
    charts = []
    for suite in sorted(set(df["suite"])):
        groups = sorted({f"{suite}/{s}" for s in df.loc[df["suite"] == suite, "split"]})
        charts.append(sr_chart(cells, variants, groups, f"{suite}: success rate with Wilson 95 % intervals"))
    sections.append('<section id="charts"><h2>Success rates</h2>' + "".join(charts) + "</section>")

    # Power line per suite, from the baseline's rate there.
    power_items = []
    for suite in sorted(set(df["suite"])):
        sub = df[(df["suite"] == suite) & (df["variant"].astype(str) == baseline)]
        if sub.empty:
            continue
        p = float((sub["success"] & sub["error_kind"].isna()).mean())
        need = episodes_for_power(p)
        per_variant = len(sub)
        power_items.append(
            f'<li class="power" data-suite="{_esc(suite)}"><b>{_esc(suite)}</b>: base rate {100 * p:.1f} % '
            f'({_esc(baseline)}, {per_variant} episodes) → <b>{need}</b> episodes per variant to detect a Δ of '
            f'{100 * POWER_DELTA:.0f} points at {100 * POWER:.0f} % power (two-sided α={ALPHA}); '
            + ("this store has enough." if per_variant >= need else f"this store has {per_variant}.") + "</li>")
    sections.append('<section id="power"><h2>Power</h2><ul>' + "".join(power_items) + "</ul>"
                    '<p class="notes">Two-proportion normal approximation for independent samples; the paired '
                    "design here (same episodes, McNemar) needs fewer when variants agree on most episodes.</p></section>")

    # Per-task-type breakdown.
    if df["task_type"].notna().any():
        breakdown = tables.breakdown_table(df, by="task_type", baseline=baseline)
        sections.append('<section id="task-types"><h2>Per task type</h2>'
                        + table_html(breakdown, "SR / GC per task type (%)", "breakdown") + "</section>")

    # Failure taxonomy.
    ftable = failures.failure_table(df, classes)
    present = [c for c in failures.FAILURE_CLASSES if c in ftable.columns]
    shares = {f"{v} · {g}": {c: float(row[c]) for c in present} for (v, g), row in ftable.iterrows()}
    sections.append('<section id="failures"><h2>Failure taxonomy</h2>'
                    + failure_chart(shares, present, "Failure classes per variant and suite/split (%)")
                    + _failure_table_html(ftable) + "</section>")

    # Browser and paired view (filled in by the inline script from the embedded JSON).
    payload = {
        "baseline": baseline, "variants": variants,
        "episodes": _episode_payload(df, classes, transcripts, instructions, report_dir, store_path.parent),
    }
    sections.append(
        '<section id="browser"><h2>Episodes</h2><div id="filters" class="filters"></div>'
        '<p id="count" class="notes"></p><div class="browser"><ul id="episode-list"></ul>'
        '<div id="episode-detail" class="detail"><p class="notes">Select an episode.</p></div></div></section>')
    sections.append(
        '<section id="paired"><h2>Paired view: episodes where variants disagree</h2>'
        '<div id="pair-controls" class="filters"></div><p id="pair-count" class="notes"></p>'
        '<div id="pair-list"></div></section>')

    note_html = "".join(f"<li>{_esc(n)}</li>" for n in notes)
    run_rows = "".join(
        f"<tr><td><code>{_esc(r.run_id)}</code></td><td>{_esc(r.variant)}</td><td>{_esc(r.suite)}/{_esc(r.split)}</td>"
        f"<td>{r.sessions}</td></tr>" for r in runs.itertuples() if r.run_id in run_ids)
    title = title or f"Transfer report: {store_path.parent.name}"
    doc = (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{_esc(title)}</title>"
        f"<style>{CSS}</style></head><body><header><h1>{_esc(title)}</h1>"
        f'<p class="notes">Store <code>{_esc(store_path)}</code> · {len(df)} episodes · variants '
        f'{_esc(", ".join(variants))} · baseline {_esc(baseline)} · generated '
        f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}</p>'
        '<nav><a href="#transfer">table</a> <a href="#charts">charts</a> <a href="#power">power</a> '
        '<a href="#task-types">task types</a> <a href="#failures">failures</a> <a href="#browser">episodes</a> '
        '<a href="#paired">paired</a></nav>'
        + (f'<ul class="notes">{note_html}</ul>' if note_html else "")
        + "</header><main>" + "".join(sections)
        + f'<section id="runs"><h2>Runs</h2><table><thead><tr><th>run</th><th>variant</th><th>suite/split</th>'
          f"<th>sessions</th></tr></thead><tbody>{run_rows}</tbody></table></section></main>"
        + '<script type="application/json" id="report-data">' + _json_for_html(payload) + "</script>"
        + f"<script>{SCRIPT}</script></body></html>\n"
    )
    _write_atomic(dest_path, doc)
    return dest_path


def _json_for_html(payload: Any) -> str:
    """JSON safe inside a <script> element (no '</', no '<!--')."""
    text = json.dumps(payload, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
