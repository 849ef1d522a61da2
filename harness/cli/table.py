"""``harness table``: the transfer table of a store (reads the store only)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from harness.cli.common import UsageError, one_line, summary
from harness.scoring import failures
from harness.scoring.policy import known_metric
from harness.stats.sequential import describe as describe_sequential, stored_comparisons
from harness.store import ResultStore, StoreError
from harness.tables import (
    experiments,
    failures as failure_table,
    json_table as table_json,
    selection as results,
    sweeps as sweep,
)
from harness.tables.build import breakdown_table, select, transfer_table
from harness.tables.columns import COST_METRICS, add_cost_columns, default_metrics
from harness.tables.render import to_csv, to_latex, to_markdown
from harness.tables.sweeps import stored_sweeps


def add_parser(sub: Any) -> None:
    p = sub.add_parser("table", help=summary("table"))
    p.add_argument("outdir", nargs="+", help="output directory of `harness run` (or its results.sqlite); "
                   "several are read as one store")
    p.add_argument("--format", choices=["markdown", "latex", "csv", "json"], default="markdown",
                   help="json: every cell's value, n, interval, Δ, p and the runs behind it")
    p.add_argument("--experiment", default=None,
                   help="print experiment NAME's table (configs/experiment/NAME.yaml, or a YAML file)")
    p.add_argument("--paper", action="store_true",
                   help="with --experiment: add the numbers the paper reports, as rows marked '(paper)'")
    p.add_argument("--suite", action="append", default=[], metavar="PATTERN",
                   help="only these suites (several: repeat or comma-separate; shell globs)")
    p.add_argument("--split", action="append", default=[], metavar="PATTERN", help="only these splits (globs)")
    p.add_argument("--variant", action="append", default=[], metavar="PATTERN", help="only these variants (globs)")
    p.add_argument("--order", default=None, help="row order, comma-separated variant names (also selects)")
    p.add_argument("--label", action="append", default=[], metavar="NAME=Label", help="display label of a row")
    p.add_argument("--average", action="store_true",
                   help="an avg column even across different suites (default: only within one suite)")
    p.add_argument("--run", action="append", default=[], metavar="RUN_ID",
                   help="show this run (id or prefix) for its variant, suite and split, over any other")
    p.add_argument("--prefer", action="append", default=[], metavar="OUTDIR",
                   help="where several stores hold the same episode of a run with different results, "
                        "this store's rows win (otherwise that is refused)")
    p.add_argument("--baseline", default=None,
                   help="variant the Δ columns compare against (default: 'base' if present, else no Δ columns)")
    p.add_argument("--metrics", default=None, type=_metric_names,
                   help="comma-separated metrics the store's suites declare (default: their default ones; "
                        "harness list shows each suite's); cost per episode: seconds, prompt_tokens, output_tokens")
    p.add_argument("--judge", default=None, metavar="NAME|A,B|all",
                   help="whose verdicts fill the judged metrics (harness judge): a judge's name, A,B for the "
                        "mean of several, all for each side by side (default: the store's only judge, or each)")
    p.add_argument("--by", default=None, metavar="FIELD",
                   help="a breakdown instead (takes --metrics): task_type, split, or a field the store's suites "
                        "declare (harness list shows them, e.g. procobject's pattern); or failure, the failure "
                        "taxonomy (harness/scoring/failures.py; takes no --metrics/--stats/--columns)")
    p.add_argument("--columns", choices=["split", "suite"], default=None,
                   help="one column group per suite/split (default) or per suite (the mean over its splits)")
    p.add_argument("--pooled", action="store_true",
                   help="a suite whose benchmark averages over a breakdown (cfg_bench: task types) shows that mean "
                        "in its cells by default; --pooled pools every episode instead (labelled pooled)")
    p.add_argument("--stats", action="store_true",
                   help="paired statistics for every Δ: exact McNemar p-value (SR) and paired bootstrap "
                        "95%% intervals (ΔSR, ΔGC) over episodes both variants ran")


def _patterns(values: list[str]) -> list[str]:
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _metric_names(text: str) -> str:
    """--metrics: comma-separated names, none of them empty ('' and 'sr,,gc' are refused)."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"comma-separated metric names expected, got {text!r} (an empty name)")
    return text


def main(args: argparse.Namespace) -> int:
    text, notes = table_text(args)
    sys.stdout.write(text)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def render(out: str, fmt: str = "markdown", experiment: str | None = None) -> str:
    """The table of the store in ``out`` as ``harness table OUT --format FMT [--experiment NAME]``
    prints it (its notes left out); UsageError where that command fails with one."""
    parser = argparse.ArgumentParser(prog="harness")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["table", "."])  # the command's defaults
    args.outdir, args.format, args.experiment = [out], fmt, experiment
    return table_text(args)[0]


def table_text(args: argparse.Namespace) -> tuple[str, list[str]]:
    """What ``harness table`` prints: (the table as its format writes it, the notes for stderr)."""
    outdirs = list(dict.fromkeys(args.outdir))
    try:  # each verified once, then read as one snapshot (a run may be writing meanwhile)
        # --suite / --split choose the columns; --variant / --order choose rows afterwards (_table),
        # so that which rows are shown never changes a row's average
        selection = results.load(outdirs, _patterns(args.run), args.prefer, judge=args.judge,
                                 where=lambda df: _select(args, df, variants=False))
    except (StoreError, results.SelectionError) as exc:
        raise UsageError(str(exc)) from None
    store = None
    try:
        if args.by or (args.metrics and any(m in args.metrics for m in ("seconds", "tokens"))):
            if len(outdirs) > 1:
                raise UsageError("--by and cost metrics read one store: give one output directory")
            store = ResultStore(outdirs[0], readonly=True)
        return _table(args, store, selection)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if store is not None:
            store.close()


def _select(args: argparse.Namespace, df: Any, variants: bool = True) -> Any:
    try:
        return select(df, _patterns(args.suite), _patterns(args.split),
                      _patterns(args.variant) if variants else ())
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None


def _labels(args: argparse.Namespace) -> dict[str, str]:
    out = {}
    for item in args.label:
        name, sep, label = item.partition("=")
        if not sep or not name.strip() or not label.strip():
            raise UsageError(f"--label {item!r}: give NAME=Label")
        out[name.strip()] = label.strip()
    return out


def _table(args: argparse.Namespace, store: Any, selection: Any) -> tuple[str, list[str]]:
    df, notes = selection.frame, selection.notes
    where = " and ".join(selection.stores)
    if df.empty:
        raise UsageError(f"the store in {where} holds no episodes yet")
    if args.paper and not args.experiment:
        raise UsageError("--paper needs --experiment NAME (the paper's numbers are declared there)")
    if args.experiment:
        return _experiment_table(args, _select(args, df), notes, selection)
    every_row = df  # the records of every variant on the columns shown (what an average is over)
    df = _select(args, df)
    shown = {f"{v} on {s}/{p}:" for v, s, p in zip(df["variant"], df["suite"], df["split"])}
    lines = [line for line in selection.run_lines if any(line.startswith(x) for x in shown)]
    selection.run_lines = selection.run_lines[:1] + lines if lines else []  # the rule, then the rows shown
    if args.format == "json" and args.by:
        raise UsageError("--format json prints the transfer table (not --by)")
    render = _renderer(args, selection)
    baseline = args.baseline
    sequential = _sequential(df, selection)
    if baseline is None and len({c.baseline for c in sequential}) == 1:
        baseline = sequential[0].baseline  # stopping=sequential: Δ against the comparisons' baseline
    if baseline is None:
        if "base" in set(df["variant"].astype(str)):
            baseline = "base"
        elif not args.by:
            # printed after the table: a failure must stay one line (exit 2)
            notes = ["no variant is called 'base', so the table has no Δ columns "
                     "(--baseline NAME compares against NAME)", *notes]
    # Flags a view cannot honour are refused (exit 2), not silently ignored.
    given = [f for f, on in (("--metrics", args.metrics is not None), ("--stats", args.stats),
                             ("--columns", args.columns is not None), ("--pooled", args.pooled)) if on]
    refused = given if args.by == "failure" else [f for f in given if f != "--metrics"] if args.by else []
    if refused:
        raise UsageError(f"--by {args.by} does not take {', '.join(refused)}"
                         + (" (it prints failure classes)" if args.by == "failure" else
                            " (its columns are variants; it has no Δ)"))
    if args.by == "failure":
        return _failure_table(args, df, notes, store)
    metrics = (tuple(m.strip() for m in args.metrics.split(",") if m.strip()) if args.metrics
               else tuple(default_metrics(df)))
    try:
        if set(metrics) & set(COST_METRICS):
            df = add_cost_columns(df, store.transcripts(sorted(set(df["run_id"]))))
        order = [v.strip() for v in args.order.split(",") if v.strip()] if args.order else None
        if args.by:
            table = breakdown_table(df, by=args.by, metrics=metrics, baseline=baseline, variants_order=order)
            if args.label:  # the variants are the columns here: their caveats follow the new names
                labels = _labels(args)
                table = table.rename(columns=labels, level=0)
                cav = table.attrs.get("caveats")
                if cav:
                    table.attrs["caveats"] = {
                        **cav, "cells": [{**c, "group": labels.get(c["group"], c["group"])} for c in cav["cells"]],
                        "settings": [{**x, "rows": {labels.get(r, r): v for r, v in x["rows"].items()}}
                                     for x in cav.get("settings", [])]}
        else:
            several = df["suite"].nunique() > 1
            table = transfer_table(df, baseline=baseline, metrics=metrics, columns=args.columns or "split",
                                   stats=args.stats, variants_order=order, labels=_labels(args),
                                   average=args.average or not several, drop_undefined=True,
                                   pooled=args.pooled, columns_of=every_row)
            if several and not args.average:
                notes = [*notes, "no avg column: the columns span several suites (--average adds one)"]
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None
    return _write(args, render, table, [] if args.by else sequential, notes, [] if args.by else _sweeps(df, selection))


def _write(args: argparse.Namespace, render: Any, table: Any, sequential: list[Any], notes: list[str],
           sweeps: list[Any] = ()) -> tuple[str, list[str]]:
    """The table, and below it (markdown) or among the notes (csv, latex) where and why
    each sequential comparison stopped and how each checkpoint sweep chose (JSON carries them
    in its ``sequential`` and ``checkpoint_sweeps`` keys); (that text, the notes)."""
    if sequential:
        table.attrs["sequential"] = [c.to_json() for c in sequential]
    if sweeps:
        table.attrs["checkpoint_sweeps"] = [s.to_json() for s in sweeps]
    text = render(table)
    text = text if text.endswith("\n") else text + "\n"
    if args.format == "csv":  # CSV has no footnotes: which runs it shows goes with the notes
        notes = [*table.attrs.get("run_notes", []), *notes]
    if (sequential or sweeps) and args.format != "json":
        lines = (_sequential_lines(sequential) if sequential else []) + [x for s in sweeps for x in sweep.describe(s)]
        if args.format == "markdown":  # below the table, like its footnotes
            text += "\n" + "\n".join(lines) + "\n"
        else:
            notes = [*notes, *lines]
    return text, notes


def _sequential(df: Any, selection: Any) -> list[Any]:
    """The stopped comparisons (``stopping=sequential``) among the shown rows."""
    shown = set(df["run_id"])
    runs = selection.runs
    if runs is None or not len(runs) or "identity" not in runs:
        return []
    return stored_comparisons(df, runs[runs["run_id"].isin(shown)])


def _sweeps(df: Any, selection: Any) -> list[Any]:
    """The checkpoint sweeps (``+experiment=checkpoint_sweep``) among the shown rows."""
    runs = selection.runs
    if runs is None or not len(runs) or "identity" not in runs:
        return []
    return stored_sweeps(df, runs[runs["run_id"].isin(set(df["run_id"]))])


def _sequential_lines(comparisons: list[Any]) -> list[str]:
    """Where and why each sequential comparison stopped, and which interval to read."""
    lines = ["Sequential comparisons (stopping=sequential; each decision and interval valid for the looks its "
             "comparison took, wherever it stopped):"]
    for c in comparisons:
        metric = known_metric(c.metric)
        lines.append(f"- {describe_sequential(c, percent=metric is None or metric.percent)}")
    lines.append("The Δ columns' fixed-sample figures (and their paired interval and p with --stats) are not valid "
                 "under optional stopping: read the sequential interval above.")
    return lines


def _renderer(args: argparse.Namespace, selection: Any) -> Any:
    """The format's writer; the table's footnotes gain which judges' scores it shows."""
    if args.format == "json":
        write = lambda table: table_json.to_json(table, selection)  # noqa: E731
    else:
        write = {"markdown": to_markdown, "latex": to_latex, "csv": to_csv}[args.format]

    def render(table: Any) -> str:
        if selection.judges is not None:
            table.attrs["judge_notes"] = selection.judges.notes()
        table.attrs["run_notes"] = list(getattr(selection, "run_lines", []))  # which runs it shows (footnotes)
        return write(table)

    return render


def _experiment_table(args: argparse.Namespace, df: Any, notes: list[str], selection: Any) -> tuple[str, list[str]]:
    given = [f for f, on in (("--by", args.by), ("--metrics", args.metrics), ("--columns", args.columns),
                             ("--stats", args.stats), ("--order", args.order), ("--baseline", args.baseline),
                             ("--average", args.average), ("--pooled", args.pooled)) if on]
    if given:
        raise UsageError(f"--experiment lays out its own table: it does not take {', '.join(given)} "
                         "(edit the experiment file, or print the store without --experiment)")
    try:
        experiment = experiments.load(args.experiment)
        if args.label:  # the user's labels over the experiment's
            labels = _labels(args)
            experiment = dataclasses.replace(experiment, variants=tuple(
                dataclasses.replace(v, label=labels.get(v.name, v.label)) for v in experiment.variants))
        table = experiment.table(df, paper=args.paper, out=args.outdir[0])
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None
    text, notes = _write(args, _renderer(args, selection), table, _sequential(df, selection), notes)
    if args.format == "csv":  # CSV has no footnotes: what the experiment adds below its table goes to stderr
        notes = [*table.attrs.get("extra_notes", []), *notes]
    return text, notes


def _failure_table(args: argparse.Namespace, df: Any, notes: list[str], store: Any) -> tuple[str, list[str]]:
    if args.format == "latex":
        raise UsageError("--by failure prints markdown or csv")
    tasks = failures.tasks_from_suites(store, df)  # old stores: task params re-derived from the suite
    table = failure_table.failure_table(df, failures.classify_frame(df, tasks))
    return (failure_table.failure_csv(table) if args.format == "csv" else failure_table.failure_markdown(table)), notes

