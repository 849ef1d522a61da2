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

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from harness.report.charts import failure_chart, sr_chart
from harness.report.episodes import CHUNK, PAGE, episode_payload, instructions_from_suites, search_index
from harness.report.joint import joint_section
from harness.report.page import render_page
from harness.report.sections import cost_section, power_section, provenance_section
from harness.report.sequential import sequential_section
from harness.report.sweep import sweep_section
from harness.report.tables_html import declared_only, failure_table_html, headline_html, keep_attrs, table_html
from harness.scoring import failures
from harness.scoring.policy import suite_scoring
from harness.scoring.summaries import summarize
from harness.stats.sequential import stored_comparisons  # stopping=sequential runs among the shown ones
from harness.store import ResultStore
from harness.tables import experiments
from harness.tables import failures as failure_table
from harness.tables import selection as results
from harness.tables.build import breakdown_table, ordered_variants, transfer_table
from harness.tables.columns import DELTA
from harness.tables.render import metric_label, shown_columns
from harness.tables.sweeps import stored_sweeps  # +experiment=checkpoint_sweep runs among the shown ones
from harness.util.redact import redact_text


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
            instructions.update(instructions_from_suites(store, mine))
            all_runs.append(store.runs())
            for run_id in ids:
                provenance.setdefault(run_id, store.provenance(run_id))
    for calls in transcripts.values():
        for t in calls:
            t.pop("_store", None)
    runs = pd.concat(all_runs, ignore_index=True).drop_duplicates("run_id", keep="first")
    classes = failures.classify_frame(df, tasks)

    variants_all = list(dict.fromkeys(df["variant"].astype(str)))
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
        sections.append(sequential_section(comparisons))
    sweeps = stored_sweeps(df, selection.runs) if len(selection.runs) else []
    if sweeps:  # each checkpoint sweep's metric against training step, the chosen one held out
        sections.append(sweep_section(sweeps))
    if experiment is not None and any(c.role for c in declared.columns):  # diagnostic vs transfer charts
        sections.append(joint_section(declared, etable, df))

    # SR charts with Wilson intervals, one per suite.
    summary = summarize(df, ["variant", "suite", "split"])
    cells = {(r["variant"], f'{r["suite"]}/{r["split"]}'): r for r in summary.to_dict("records")}
    charts = []
    for suite in sorted(set(df["suite"])):
        groups = sorted({f"{suite}/{s}" for s in df.loc[df["suite"] == suite, "split"]})
        # The suite's headline binary metric (its first default one), titled by the words before
        # a colon in its description (else its label).
        binary = [m for m in suite_scoring(suite)[0] if m.binary and m.default]
        if binary:
            m = binary[0]
            phrase = m.description.split(":", 1)[0] if ":" in m.description else m.label
            charts.append(sr_chart(cells, variants, groups, f"{suite}: {phrase} with Wilson 95 % intervals", m))
    sections.append('<section id="charts"><h2>Success rates</h2>' + "".join(charts) + "</section>")

    # Power line per suite, from the baseline's rate there.
    sections.append(power_section(df, baseline))

    # Per-task-type breakdown: one table per suite, with that suite's metrics (its `all` row pools
    # that suite's episodes only).
    breakdowns = []
    for suite in sorted(set(df["suite"])):
        mine = df[df["suite"] == suite]
        if not mine["task_type"].notna().any():
            continue
        breakdown = breakdown_table(mine, by="task_type", baseline=baseline)
        defined = [c for c in breakdown.columns if breakdown[c].notna().any()]
        breakdown = keep_attrs(breakdown.loc[:, defined], breakdown)
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
                    + failure_table_html(ftable) + "</section>")

    # Cost of the agent calls (tokens, latency) per variant.
    summaries, details = episode_payload(df, classes, transcripts, instructions, report_dir, store_dirs)
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
        data_json=_json_for_html(payload), search_json=_json_for_html(search_index(details)))
    _write_atomic(dest_path, doc)
    for old in data_dir.iterdir():  # earlier builds, now that no page refers to them
        if old.is_dir() and old.name != build:
            shutil.rmtree(old, ignore_errors=True)
    return dest_path


def _json_for_html(payload: Any) -> str:
    """JSON safe inside a <script> element (no '</', no '<!--')."""
    text = json.dumps(payload, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _write_atomic(path: Path, text: str, sync: bool = True) -> None:
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
