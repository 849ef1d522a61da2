"""``harness report OUTDIR``: a static HTML report of a store, fast at any size.

``OUTDIR/report/index.html`` (or ``--dest``) holds what every reader needs at
once: the transfer table with paired statistics (McNemar p, bootstrap 95 %
intervals; :func:`harness.tables.build.transfer_table`), SR bar charts with Wilson
95 % intervals, the per-task-type breakdown, the power line, the failure
taxonomy (:mod:`harness.scoring.failures`), the cost of the agent calls (tokens and
latency per variant), each run's provenance (checkpoint and adapter hashes,
package versions, commit and dirty flag, resolved config), and one light
summary line per episode for the episode browser (paged, 100 per page) and
the paired view.

The heavy parts live in files beside the page and are loaded on demand, when
an episode is opened: each episode's instruction, step history and agent
calls (prompts as chat turns, raw answers, token counts, latency) sit in
``data/<build>/episodes-<k>.js`` (:data:`CHUNK` episodes per file, loaded
with a ``<script>`` element, so the page works from ``file://`` without a
server); the frames the model saw and the videos are the store's own files
(``OUTDIR/artifacts/...``), linked by relative path, so the report folder and
the store travel together. No CDN, no network.

Regeneration is safe for a reader: the chunks of a build go to a new
``data/<build>/`` folder, the page is written atomically (a temporary file,
then ``os.replace``) and only then are older builds removed.
"""

from __future__ import annotations

import html
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.report.page import render_page
from harness.tables.build import breakdown_table, ordered_variants, transfer_table
from harness.tables.columns import COST_METRICS, DAGGER, DELTA, MISSING, is_delta
from harness.tables.render import cell_strings, column_label, footnotes, metric_label, shown_columns

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
#: Episodes per detail file (``data/<build>/episodes-<k>.js``).
CHUNK = 50
#: Episodes per page of the browser's list.
PAGE = 100


def _artifact_file(path: Any, store_dir: Path) -> Path:
    """Where a recorded artifact lies: an absolute path as it is; a relative one is
    relative to the store's folder (how runs record them). Stores written before that
    kept paths relative to the run's working directory (``out/artifacts/...``): when
    the store-relative file does not exist, the tail from an ``artifacts`` folder is
    tried against the store's folder, then the path against this working directory."""
    p = Path(str(path))
    if p.is_absolute():
        return p
    candidates = [store_dir / p]
    candidates += [store_dir.joinpath(*p.parts[i:]) for i, part in enumerate(p.parts) if part == "artifacts" and i]
    candidates.append(Path.cwd() / p)
    return next((c for c in candidates if c.exists()), candidates[0])


def _artifact_link(path: Any, report_dir: Path, store_dir: Path) -> str:
    """A relative link from the report folder to a store artifact (see :func:`_artifact_file`)."""
    return Path(os.path.relpath(os.path.abspath(_artifact_file(path, store_dir)),
                                os.path.abspath(report_dir))).as_posix()


def _messages(prompt: Any) -> list[dict[str, Any]] | None:
    """A recorded prompt as chat turns ``[{role, parts: [{type: text|image, ...}]}]``.

    Prompts are stored as text or as the JSON of the model's messages (role and
    content parts, images replaced by their size); plain text is one user turn.
    """
    if prompt is None or (isinstance(prompt, float) and math.isnan(prompt)):
        return None
    value = prompt
    if isinstance(prompt, str):
        try:
            value = json.loads(prompt) if prompt.lstrip()[:1] in "[{" else prompt
        except ValueError:
            value = prompt
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        turns = []
        for m in value:
            content = m.get("content")
            parts = []
            for part in (content if isinstance(content, list) else [content]):
                if isinstance(part, dict) and part.get("type") in ("image", "image_url"):
                    parts.append({"type": "image", "size": part.get("size")})
                elif isinstance(part, dict):
                    parts.append({"type": "text", "text": str(part.get("text", ""))})
                elif part is not None:
                    parts.append({"type": "text", "text": str(part)})
            turns.append({"role": str(m["role"]), "parts": parts})
        return turns
    return [{"role": "user", "parts": [{"type": "text", "text": str(value)}]}]


def _call_payload(t: Mapping[str, Any], report_dir: Path, store_dir: Path) -> dict[str, Any]:
    images = []
    for im in t.get("images") or []:
        entry = {"name": im.get("name"), "size": [im.get("width"), im.get("height")]}
        if im.get("path"):
            entry["src"] = _artifact_link(im["path"], report_dir, store_dir)
        else:
            entry["skipped"] = im.get("skipped") or "not recorded"
        images.append(entry)
    return {"call": t["call"], "step": t["step"], "raw": t.get("raw_output"), "error": t.get("output_error"),
            "actions": t.get("actions"), "messages": _messages(t.get("prompt")), "images": images,
            "latency_s": t.get("latency_s"), "batch": t.get("batch"),
            "prompt_tokens": t.get("prompt_tokens"), "output_tokens": t.get("output_tokens")}


def _episode_payload(df: Any, classes: Sequence[str], transcripts: Mapping[tuple, list[dict]],
                     instructions: Mapping[tuple, str], report_dir: Path,
                     store_dir: Path | Mapping[str, Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(summaries, details): one light summary per episode (the page) and one
    detail each (the chunk files), in the same order; ``id`` is the position.
    ``store_dir``: the folder artifact paths are relative to, or one per value of
    the records' ``store`` column (several stores read as one)."""
    summaries, details = [], []
    dirs = store_dir if isinstance(store_dir, Mapping) else None
    for rec, cls in zip(df.to_dict("records"), classes):
        if dirs is not None:
            store_dir = dirs[rec["store"]]
        key = (rec["run_id"], rec["suite"], rec["split"], rec["episode_id"], int(rec["seed"]))
        extra = rec.get("extra") or {}
        artifacts = extra.get("artifacts") or {}
        video = None
        if isinstance(artifacts, Mapping) and artifacts.get("video"):
            video = _artifact_link(artifacts["video"], report_dir, store_dir)
        calls = [_call_payload(t, report_dir, store_dir) for t in transcripts.get(key, [])]
        tokens = [c["prompt_tokens"] for c in calls if c["prompt_tokens"] is not None]
        out_tokens = [c["output_tokens"] for c in calls if c["output_tokens"] is not None]
        eid = len(summaries)
        summaries.append({
            "id": eid, "run": rec["run_id"], "variant": str(rec["variant"]), "suite": rec["suite"],
            "split": rec["split"], "episode": rec["episode_id"], "seed": int(rec["seed"]),
            "task_type": _text(rec.get("task_type")), "success": bool(rec["success"]),
            "termination": _text(rec.get("termination")), "error": _text(rec.get("error_kind")),
            "goals": [int(rec.get("gc_satisfied") or 0), int(rec.get("gc_total") or 0)],
            "steps": int(rec.get("steps") or 0), "invalid": int(rec.get("invalid_actions") or 0),
            "output_errors": int(rec.get("planner_output_errors") or 0), "failure": cls,
            "calls": len(calls), "video": video is not None,
            "seconds": round(float(rec.get("wall_time_s") or 0.0), 3),
            "tokens": [sum(tokens), sum(out_tokens)] if tokens or out_tokens else None,
        })
        details.append({
            "id": eid, "instruction": extra.get("instruction") or instructions.get(key[1:4]) or "",
            "error_message": _text(rec.get("error_message")), "history": extra.get("history") or [],
            "calls": calls, "video": video, "task": extra.get("task") or None,
            "actions": extra.get("actions") or [],
        })
    return summaries, details


def _search_index(details: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """What the browser's search reads besides the list's fields: each episode's
    instruction, each distinct text once (variants, trials and seeds of one task share it);
    ``of[id]`` is the position of episode ``id``'s text (-1: none)."""
    texts: dict[str, int] = {}
    of = []
    for d in details:
        text = d.get("instruction") or ""
        of.append(texts.setdefault(text, len(texts)) if text else -1)
    return {"texts": list(texts), "of": of}


def _text(value: Any) -> str:
    """A record's optional text field as a string ('' for None / NaN from pandas)."""
    return value if isinstance(value, str) else ""


def _instructions_from_suites(store: Any, df: Any) -> dict[tuple[str, str, str], str]:
    """Instructions of episodes whose records carry none (stores written before
    ``extra["instruction"]``), from each run's suite where it can be built here."""
    from harness.registry.catalog import SUITES

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
    svg = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{max(width, left + 8 * len(title)):.0f}" height="{legend_top + legend_h + 4:.0f}" data-chart="{_esc(metric.name)}">',
           f'<text x="{left}" y="16" class="title">{_esc(title)}</text>']
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
                    f'fill="{_PALETTE[i % len(_PALETTE)]}"><title>{_esc(variant)} · {_esc(group)}: {_esc(metric.label)} {100 * sr:.1f} '
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
                       f'transform="rotate(-40 {mid:.1f} {ly})">{_esc(label)}<title>{_esc(group)}</title></text>')
        else:
            svg.append(f'<text x="{mid:.1f}" y="{ly + 2}" class="tick xlabel" text-anchor="middle">{_esc(label)}'
                       f'<title>{_esc(group)}</title></text>')
        x += gap
    for i, variant in enumerate(variants):
        svg.append(f'<rect x="{left}" y="{legend_top + 18 * i - 10:.0f}" width="12" height="12" '
                   f'fill="{_PALETTE[i % len(_PALETTE)]}"/>'
                   f'<text x="{left + 18}" y="{legend_top + 18 * i:.0f}" class="tick">{_esc(variant)}</text>')
    svg.append(f'<text x="10" y="{top + height / 2}" class="tick" transform="rotate(-90 10 {top + height / 2})" '
               f'text-anchor="middle">{_esc(metric.label)} %</text></svg>')
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
                       f'fill="{colours[i]}"><title>{_esc(row)}: {_esc(cls)} {share:.1f} %</title></rect>')
            x += w
        y += bar_h + 8
    y += 8
    for i, cls in enumerate(classes):
        lx, ly = 10 + (i % 3) * 230, y + 18 * (i // 3)
        svg.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colours[i]}"/>'
                   f'<text x="{lx + 18}" y="{ly + 10}" class="tick">{_esc(cls)}</text>')
    svg.append("</svg>")
    return "".join(svg)


# --- HTML tables -------------------------------------------------------------------
def table_html(table: Any, caption: str, cls: str = "") -> str:
    """A harness table (transfer or breakdown) as HTML, same cells and footnotes as Markdown."""
    shown = shown_columns(table)  # the Markdown renderer's own cells
    row_name = table.attrs.get("row_name", table.index.name or "")
    head = "".join(f"<th>{_esc(g)}<br>{_esc(column_label(table, g, m))}</th>" for g, m in shown)
    body = []
    for row, cells in zip(table.index, cell_strings(table, MISSING, DAGGER)):
        body.append(f"<tr><th>{_esc(row)}</th>" + "".join(f"<td>{_esc(c)}</td>" for c in cells) + "</tr>")
    return (f'<table class="{cls}"><caption>{_esc(caption)}</caption><thead><tr><th>{_esc(row_name)}</th>{head}'
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
    top = "".join(f'<th colspan="{n}" class="role">{_esc(role)}</th>' for role, n in groups)
    head = "".join(f"<th>{_esc(g)}<br>{_esc(column_label(table, g, m))}</th>" for g, m in shown)
    body = []
    for row, cells in zip(table.index, strings):
        tds = []
        for g, m in shown:
            value = cells[position[(g, m)]]
            d = position.get((g, DELTA + m))
            delta = cells[d] if d is not None and cells[d] != MISSING else ""
            tds.append(f"<td>{_esc(value)}" + (f'<br><span class="delta">{_esc(delta)}</span>' if delta else "")
                       + "</td>")
        body.append(f"<tr><th>{_esc(row)}</th>{''.join(tds)}</tr>")
    baseline = table.attrs.get("baseline")
    note = (f"Each cell: the value, and beneath it its Δ vs {baseline} (points for a percentage, the score's own "
            "unit otherwise); marks and intervals are explained under the full table." if baseline else "")
    return (f'<table class="headline"><caption>{_esc(caption)}</caption><thead><tr><th rowspan="2">'
            f'{_esc(table.attrs.get("row_name", "variant"))}</th>{top}</tr><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>' + (f'<p class="notes">{_esc(note)}</p>' if note else ""))


def folded_notes(notes: Sequence[str], what: str = "Notes") -> str:
    """A table's footnotes folded under it (``<details>``): the table reads first, its notes
    open on a click ('' when there is none)."""
    if not notes:
        return ""
    items = "".join(f"<li>{_esc(n)}</li>" for n in notes)
    return (f'<details class="notes"><summary>{_esc(what)} ({len(notes)})</summary>'
            f'<ul class="notes">{items}</ul></details>')


def declared_only(table: Any) -> Any:
    """The table without a (column, metric) that no suite of the column declares, nor its Δ and
    statistics: a column of one suite shows that suite's metrics only (cost metrics stay)."""
    from harness.scoring import policy as scoring

    layout = table.attrs.get("layout") or {}
    suites_of = {col: {g.split("/", 1)[0] for g in groups} for col, groups in layout.items()}
    every = set().union(*suites_of.values()) if suites_of else set()
    keep = []
    for group, metric in table.columns:
        base = metric.split(":", 1)[0]
        base = base[len(DELTA):] if base.startswith(DELTA) else base
        declared = {m.name for m in scoring.declared(sorted(suites_of.get(group, every))).values()}
        keep.append(base in COST_METRICS or base in declared)
    return _keep_attrs(table.loc[:, keep], table)


def _keep_attrs(part: Any, table: Any) -> Any:
    """``part`` (a selection of ``table``'s columns) with ``table``'s attrs (its notes and marks)."""
    part.attrs = dict(table.attrs)
    return part


def _failure_table_html(table: Any) -> str:
    from harness.tables.failures import column_classes

    classes = column_classes(table)
    head = "".join(f'<th title="{_esc(c.label)}">{_esc(c.name)}</th>' for c in classes)
    body = "".join(
        f"<tr><th>{_esc(v)}</th><th>{_esc(g)}</th><td>{int(row['n'])}</td>"
        + "".join(f"<td>{row[c.name]:.1f}</td>" for c in classes) + "</tr>"
        for (v, g), row in table.iterrows())
    legend = "".join(f"<li><b>{_esc(c.name)}</b>: {_esc(c.label)}</li>" for c in classes)
    return (f'<table id="failure-table"><caption>Failure classes, % of episodes (rules: harness/scoring/failures.py and '
            f'each suite\'s reader)</caption>'
            f'<thead><tr><th>variant</th><th>suite/split</th><th>n</th>{head}</tr></thead><tbody>{body}</tbody></table>'
            f'<details class="notes"><summary>What each class means ({len(classes)})</summary>'
            f'<ul class="notes">{legend}</ul></details>')


# --- build -------------------------------------------------------------------------
def build_report(outdir: str | Path | Sequence[str | Path], dest: str | Path | None = None,
                 baseline: str | None = None, title: str | None = None, picks: Sequence[str] = (),
                 prefer: Sequence[str] = (), judge: str | None = None, experiment: str | None = None,
                 paper: bool = False) -> Path:
    """Write the report of the store in ``outdir`` (or of several stores read as one, as
    ``harness table A B``: :func:`harness.tables.selection.load`); returns the HTML file's path
    (default: under the first store's folder).

    ``baseline``: the variant Δ columns and the paired view compare against
    (default: ``base`` if present, else the first variant in run order). ``picks``:
    run ids (or prefixes) chosen where stores disagree. ``judge``: whose verdicts fill the
    judged metrics (:mod:`harness.judging.views`, as ``harness table --judge``). ``experiment``:
    an experiment's name (or file) whose table (:meth:`harness.tables.experiments.Experiment.table`,
    as ``harness table --experiment`` prints it; ``paper``: with the paper's rows) opens the
    report; for an experiment with diagnostic and transfer columns, also the charts of their Δ
    and the questions where the variants differ most (:mod:`harness.report.joint`). Raises
    :class:`harness.store.database.StoreError` / ``ValueError`` with one-line messages.
    """
    import pandas as pd

    from harness.scoring import failures
    from harness.tables import failures as failure_table
    from harness.tables import selection as results
    from harness.scoring.summaries import summarize
    from harness.store.database import ResultStore

    paths = [str(outdir)] if isinstance(outdir, (str, Path)) else [str(p) for p in dict.fromkeys(outdir)]
    selection = results.load(paths, picks, prefer, judge=judge)  # SelectionError is a ValueError: one line
    df, notes = selection.frame, selection.notes
    if df.empty:
        raise ValueError(f"the store in {' and '.join(paths)} holds no episodes yet")
    run_ids = sorted(set(df["run_id"]))
    transcripts: dict[tuple, list[dict]] = {}
    tasks: dict = {}
    instructions: dict = {}
    store_dirs: dict[str, Path] = {}
    store_files: dict[str, Path] = {}
    all_runs = []
    provenance: dict[str, list[dict]] = {}
    for path in paths:
        mine = df[df["store"] == path]
        with ResultStore(path, readonly=True) as store:
            store_dirs[path] = store.path.parent
            store_files[path] = store.path
            if mine.empty:
                continue
            ids = sorted(set(mine["run_id"]))
            for t in store.transcripts(ids):
                key = (t["run_id"], t["suite"], t["split"], t["episode_id"], int(t["seed"]))
                if key not in transcripts or transcripts[key][0].get("_store") == path:
                    transcripts.setdefault(key, []).append({**t, "_store": path})
            tasks.update(failures.tasks_from_suites(store, mine))
            instructions.update(_instructions_from_suites(store, mine))
            all_runs.append(store.runs())
            for run_id in ids:
                provenance.setdefault(run_id, store.provenance(run_id))
    for calls in transcripts.values():
        for t in calls:
            t.pop("_store", None)
    runs = pd.concat(all_runs, ignore_index=True).drop_duplicates("run_id", keep="first")
    classes = failures.classify_frame(df, tasks)

    variants_all = list(dict.fromkeys(df["variant"].astype(str)))
    from harness.stats.sequential import stored_comparisons  # stopping=sequential runs among the shown ones

    comparisons = stored_comparisons(df, selection.runs) if len(selection.runs) else []
    if baseline is None and len({c.baseline for c in comparisons}) == 1:
        baseline = comparisons[0].baseline
    if baseline is None:
        baseline = "base" if "base" in variants_all else variants_all[0]
    if baseline not in variants_all:
        raise ValueError(f"baseline {baseline!r} is not a variant of this store (variants: {', '.join(variants_all)})")
    variants = ordered_variants(df, baseline, None)
    experiment_section = ""
    if experiment is not None:  # the experiment's own table first, as `harness table --experiment` prints it
        from harness.tables import experiments

        declared = experiments.load(experiment)  # before anything is written: a bad name writes nothing
        etable = declared.table(df, paper=paper, out=paths[0])
        etable.attrs["run_notes"] = list(selection.run_lines)
        title = etable.attrs.get("title") or declared.name
        # The headline first (each variant's figures with their Δ, diagnostic then transfer, one
        # screen wide), the full table with its notes folded below it.
        experiment_section = ('<section id="experiment"><h2>Experiment</h2>'
                              + headline_html(etable, declared, title)
                              + '<details class="full-table"><summary>Full table, paired intervals and notes'
                              '</summary>' + table_html(etable, title, "experiment") + "</details></section>")
    elif paper:
        raise ValueError("--paper needs --experiment NAME (the paper's numbers are declared there)")
    dest_path = Path(dest) if dest is not None else store_dirs[paths[0]] / "report" / "index.html"
    if dest_path.suffix.lower() not in (".html", ".htm"):
        dest_path = dest_path / "index.html"
    report_dir = dest_path.parent
    report_dir.mkdir(parents=True, exist_ok=True)

    sections: list[str] = []
    if experiment_section:
        sections.append(experiment_section)
    # Transfer table (paired statistics where there is more than one variant).
    # As `harness table OUT` prints it: each column the metrics its suite declares and defines
    # (no SR on a question-answering suite's cells), an avg column only within one suite.
    several = df["suite"].nunique() > 1
    transfer = declared_only(transfer_table(df, baseline=baseline if len(variants) > 1 else None,
                                                   stats=len(variants) > 1, average=not several, drop_undefined=True))
    transfer.attrs["judge_notes"] = selection.judges.notes() if selection.judges is not None else []
    transfer.attrs["run_notes"] = list(selection.run_lines)  # which of several runs each cell shows (harness.tables.selection)
    if several:
        transfer.attrs["extra_notes"] = [*transfer.attrs.get("extra_notes", []),
                                         "No avg column: the columns span several suites."]
    shown = list(dict.fromkeys(metric_label(m) for _, m in shown_columns(transfer)
                               if not m.startswith(DELTA)))
    delta = f", Δ vs {baseline}" if len(variants) > 1 else ""
    generic = table_html(transfer, f"{' / '.join(shown)} per suite/split (%){delta}", "transfer")
    if experiment_section:  # the experiment's headline reads first; every suite/split folds below it
        generic = ('<details class="full-table"><summary>Every suite/split, with paired statistics</summary>'
                   + generic + "</details>")
    sections.append('<section id="transfer"><h2>Transfer table</h2>' + generic + "</section>")
    if comparisons:  # each sequential comparison's interval against the pairs run
        from harness.report.sequential import sequential_section

        sections.append(sequential_section(comparisons))
    from harness.tables.sweeps import stored_sweeps  # +experiment=checkpoint_sweep runs among the shown ones

    sweeps = stored_sweeps(df, selection.runs) if len(selection.runs) else []
    if sweeps:  # each checkpoint sweep's metric against training step, the chosen one held out
        from harness.report.sweep import sweep_section

        sections.append(sweep_section(sweeps))
    if experiment is not None and any(c.role for c in declared.columns):  # diagnostic vs transfer charts
        from harness.report.joint import joint_section

        sections.append(joint_section(declared, etable, df))

    # SR charts with Wilson intervals, one per suite.
    summary = summarize(df, ["variant", "suite", "split"])
    cells = {(r["variant"], f'{r["suite"]}/{r["split"]}'): r for r in summary.to_dict("records")}
    charts = []
    for suite in sorted(set(df["suite"])):
        groups = sorted({f"{suite}/{s}" for s in df.loc[df["suite"] == suite, "split"]})
        # The suite's headline binary metric (its first default one), titled by the words before
        # a colon in its description (else its label).
        from harness.scoring.policy import suite_scoring

        binary = [m for m in suite_scoring(suite)[0] if m.binary and m.default]
        if binary:
            m = binary[0]
            phrase = m.description.split(":", 1)[0] if ":" in m.description else m.label
            charts.append(sr_chart(cells, variants, groups, f"{suite}: {phrase} with Wilson 95 % intervals", m))
    sections.append('<section id="charts"><h2>Success rates</h2>' + "".join(charts) + "</section>")

    # Power line per suite, from the baseline's rate there.
    # The rate is the suite's headline binary metric (its chart's), over the episodes it scores.
    import numpy as np

    from harness.scoring.policy import columns, suite_scoring, value_rows

    power_items = []
    for suite in sorted(set(df["suite"])):
        sub = df[(df["suite"] == suite) & (df["variant"].astype(str) == baseline)]
        binary = [m for m in suite_scoring(suite)[0] if m.binary and m.default]
        if sub.empty or not binary:
            continue
        num = np.asarray(columns(binary[0], value_rows(sub))[0], dtype=float)
        known = num[~np.isnan(num)]
        if not known.size:
            continue
        p = float(known.mean())
        need = episodes_for_power(p)
        per_variant = int(known.size)
        power_items.append(
            f'<li class="power" data-suite="{_esc(suite)}"><b>{_esc(suite)}</b>: base rate ({_esc(binary[0].label)}) '
            f'{100 * p:.1f} % ({_esc(baseline)}, {per_variant} episodes) → <b>{need}</b> episodes per variant to '
            f'detect a Δ of '
            f'{100 * POWER_DELTA:.0f} points at {100 * POWER:.0f} % power (two-sided α={ALPHA}); '
            + ("this store has enough." if per_variant >= need else f"this store has {per_variant}.") + "</li>")
    sections.append('<section id="power"><h2>Power</h2><ul>' + "".join(power_items) + "</ul>"
                    '<p class="notes">Two-proportion normal approximation for independent samples; the paired '
                    "design here (same episodes, McNemar) needs fewer when variants agree on most episodes.</p></section>")

    # Per-task-type breakdown: one table per suite, with that suite's metrics (its `all` row pools
    # that suite's episodes only).
    breakdowns = []
    for suite in sorted(set(df["suite"])):
        mine = df[df["suite"] == suite]
        if not mine["task_type"].notna().any():
            continue
        breakdown = breakdown_table(mine, by="task_type", baseline=baseline)
        defined = [c for c in breakdown.columns if breakdown[c].notna().any()]
        breakdown = _keep_attrs(breakdown.loc[:, defined], breakdown)
        labels = list(dict.fromkeys(metric_label(m) for _, m in breakdown.columns))
        breakdowns.append(table_html(breakdown, f"{suite}: {' / '.join(labels)} per task type (%)", "breakdown"))
    if breakdowns:
        sections.append('<section id="task-types"><h2>Per task type</h2>' + "".join(breakdowns) + "</section>")

    # Failure taxonomy.
    ftable = failure_table.failure_table(df, classes)
    present = failure_table.column_classes(ftable)  # the table's classes, order and colours
    shares = {f"{v} · {g}": {c.name: float(row[c.name]) for c in present} for (v, g), row in ftable.iterrows()}
    sections.append('<section id="failures"><h2>Failure taxonomy</h2>'
                    + failure_chart(shares, present, "Failure classes per variant and suite/split (%)")
                    + _failure_table_html(ftable) + "</section>")

    # Cost of the agent calls (tokens, latency) per variant.
    summaries, details = _episode_payload(df, classes, transcripts, instructions, report_dir, store_dirs)
    cost = cost_section(df, transcripts)
    if cost:
        sections.append(cost)

    # Browser and paired view (filled in by the inline script: summaries on the page,
    # details in chunk files loaded on demand).
    build = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{os.urandom(3).hex()}"
    data_dir = report_dir / "data"
    chunk_dir = data_dir / build
    chunk_dir.mkdir(parents=True, exist_ok=True)
    for k in range(0, max(len(details), 1), CHUNK):
        part = details[k:k + CHUNK]
        _write_atomic(chunk_dir / f"episodes-{k // CHUNK}.js",  # a new folder, unreferenced until the page is
                      f"window.__reportChunk({k // CHUNK}, {_json_for_html(part)});\n", sync=False)
    fields = list(summaries[0]) if summaries else []
    run_list = list(dict.fromkeys(e["run"] for e in summaries))
    run_pos = {r: i for i, r in enumerate(run_list)}
    for e in summaries:  # the 16-character run id once, not on each row
        e["run"] = run_pos[e["run"]]
    payload = {"baseline": baseline, "variants": variants, "chunk": CHUNK, "page": PAGE, "data": f"data/{build}",
               "runs": run_list,
               # column-wise: the field names once, one row of values per episode (half the bytes of objects)
               "fields": fields, "rows": [[e[f] for f in fields] for e in summaries]}
    title = title or f"Transfer report: {', '.join(d.name for d in store_dirs.values())}"
    doc = render_page(
        title=title, store=" + ".join(str(f) for f in store_files.values()), episodes=len(df), variants=variants, baseline=baseline,
        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), has_cost=bool(cost), notes=list(notes),
        has_experiment=bool(experiment_section), has_sequential=bool(comparisons), has_sweep=bool(sweeps),
        sections=sections, runs=provenance_section(runs[runs["run_id"].isin(run_ids)], provenance),
        data_json=_json_for_html(payload), search_json=_json_for_html(_search_index(details)))
    _write_atomic(dest_path, doc)
    for old in data_dir.iterdir():  # earlier builds, now that no page refers to them
        if old.is_dir() and old.name != build:
            shutil.rmtree(old, ignore_errors=True)
    return dest_path


def _quantiles(values: Sequence[float]) -> str:
    """'median · p90 · max' of values ('–' when none)."""
    import numpy as np

    if not len(values):
        return "–"
    q = np.percentile(np.asarray(values, dtype=float), [50, 90, 100])
    return " · ".join(f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}" for v in q)


def cost_section(df: Any, transcripts: Mapping[tuple, list[dict]]) -> str:
    """Per variant: agent calls, total and per-episode tokens, latency per call and
    wall time per episode, each with its distribution (median · p90 · max).

    A call's latency is the wall time of the batched agent call that served it
    (shared by the ``batch`` episodes of that call). Token counts appear where
    the backend reported them. '' when no episode has a recorded call.
    """
    if not any(transcripts.values()):
        return ""
    rows = []
    for variant, group in df.groupby(df["variant"].astype(str), sort=False):
        calls = [t for r in group.itertuples() for t in transcripts.get(
            (r.run_id, r.suite, r.split, r.episode_id, int(r.seed)), [])]
        per_ep_prompt, per_ep_out = [], []
        for r in group.itertuples():
            ts = transcripts.get((r.run_id, r.suite, r.split, r.episode_id, int(r.seed)), [])
            if any(t.get("prompt_tokens") is not None for t in ts):
                per_ep_prompt.append(sum(t.get("prompt_tokens") or 0 for t in ts))
                per_ep_out.append(sum(t.get("output_tokens") or 0 for t in ts))
        latency = [float(t["latency_s"]) for t in calls if t.get("latency_s") is not None]
        seconds = [float(v) for v in group["wall_time_s"].fillna(0.0)]
        rows.append(
            f'<tr data-variant="{_esc(variant)}"><th>{_esc(variant)}</th><td>{len(group)}</td><td>{len(calls)}</td>'
            f"<td>{sum(per_ep_prompt):,}</td><td>{sum(per_ep_out):,}</td>"
            f"<td>{_quantiles(per_ep_prompt)}</td><td>{_quantiles(per_ep_out)}</td>"
            f"<td>{sum(latency):,.1f}</td><td>{_quantiles(latency)}</td><td>{_quantiles(seconds)}</td></tr>")
    return ('<section id="cost"><h2>Cost of the agent calls</h2><table id="cost-table"><thead><tr>'
            "<th>variant</th><th>episodes</th><th>calls</th><th>prompt tokens</th><th>output tokens</th>"
            "<th>prompt tokens / episode<br>median · p90 · max</th><th>output tokens / episode<br>median · p90 · max</th>"
            "<th>call latency s<br>total</th><th>call latency s<br>median · p90 · max</th>"
            "<th>episode wall time s<br>median · p90 · max</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            '<details class="notes"><summary>Notes (1)</summary><p class="notes">Tokens as the backend counted them '
            "(0 where it reports none: scripted agents). A call's "
            "latency is the wall time of the batched agent call that served it. <code>harness table --metrics "
            "prompt_tokens,output_tokens,seconds</code> gives the per-episode means as a table.</p></details></section>")


def _hashes(identity: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, value) of every hash in an agent identity (checkpoint, adapter, examples...)."""
    out: list[tuple[str, str]] = []
    if isinstance(identity, Mapping):
        for k, v in identity.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, (Mapping, list)):
                out += _hashes(v, key)
            elif isinstance(v, str) and ("sha" in str(k).lower() or "hash" in str(k).lower()):
                out.append((key, v))
    elif isinstance(identity, list):
        for i, v in enumerate(identity):
            out += _hashes(v, f"{prefix}[{i}]")
    return out


def provenance_section(runs: Any, provenance: Mapping[str, list[dict[str, Any]]]) -> str:
    """Per run: variant, suite/split, sessions, checkpoint and adapter hashes (from
    the run identity), and per session its time, commit and dirty flag, Python and
    platform, package versions and the resolved config (folded)."""
    blocks = []
    for r in runs.itertuples():
        identity = json.loads(r.identity) if isinstance(r.identity, str) else {}
        hashes = _hashes(identity.get("agent_identity", {}), "agent")
        hash_rows = "".join(f"<tr><th>{_esc(k)}</th><td><code>{_esc(v)}</code></td></tr>" for k, v in hashes)
        sessions = []
        for i, p in enumerate(provenance.get(r.run_id, [])):
            git = p.get("git") or {}
            commit = git.get("commit")
            state = (f"<code>{_esc(commit[:12])}</code>" + (' <span class="dirty">dirty</span>' if git.get("dirty")
                                                            else " clean")) if commit else "not a git checkout"
            packages = " · ".join(f"{_esc(k)} {_esc(v)}" for k, v in sorted((p.get("packages") or {}).items()))
            config = json.dumps(p.get("config") or {}, indent=1, sort_keys=True, default=str)
            sessions.append(
                f'<li class="session">session {i + 1}: {_esc(p.get("time", ""))} · commit {state} · Python '
                f'{_esc(p.get("python", ""))} · {_esc(p.get("platform", ""))}<br><span class="notes">{packages}</span>'
                f"<details><summary>resolved config</summary><pre>{_esc(config)}</pre></details></li>")
        ident = json.dumps(identity, indent=1, sort_keys=True, default=str)
        blocks.append(
            f'<div class="run" data-run="{_esc(r.run_id)}"><h3><code>{_esc(r.run_id)}</code> · {_esc(r.variant)} · '
            f"{_esc(r.suite)}/{_esc(r.split)} · {int(r.sessions)} session(s)</h3>"
            + (f'<table class="hashes"><tbody>{hash_rows}</tbody></table>' if hash_rows
               else '<p class="notes">No checkpoint hash in the agent identity (a scripted agent).</p>')
            + f"<ul>{''.join(sessions)}</ul><details><summary>run identity (what the run id hashes)</summary>"
              f"<pre>{_esc(ident)}</pre></details></div>")
    return '<section id="runs"><h2>Runs and provenance</h2>' + "".join(blocks) + "</section>"


def _json_for_html(payload: Any) -> str:
    """JSON safe inside a <script> element (no '</', no '<!--')."""
    text = json.dumps(payload, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _write_atomic(path: Path, text: str, sync: bool = True) -> None:
    from harness.util.redact import redact_text

    text = redact_text(text)  # the known secrets of this process too, whatever the store holds
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
