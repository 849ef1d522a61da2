"""``harness table``: the transfer table of a store (reads the store only)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.commands.common import UsageError, one_line


def add_parser(sub: Any) -> None:
    p = sub.add_parser("table", help="print the transfer table of an output directory (reads the store only)")
    p.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p.add_argument("--format", choices=["markdown", "latex", "csv"], default="markdown")
    p.add_argument("--baseline", default=None,
                   help="variant the Δ columns compare against (default: 'base' if present, else no Δ columns)")
    p.add_argument("--metrics", default=None,
                   help="comma-separated (default sr,gc): sr, gc, progress, plw_sr, plw_gc, invalid_rate; "
                        "cost per episode: seconds, prompt_tokens, output_tokens")
    p.add_argument("--by", choices=["task_type", "failure"], default=None,
                   help="per-task-type breakdown (takes --metrics), or the failure taxonomy "
                        "(harness/failures.py; takes no --metrics/--stats/--columns), instead")
    p.add_argument("--columns", choices=["split", "suite"], default=None,
                   help="one column group per suite/split (default) or per suite (the mean over its splits)")
    p.add_argument("--stats", action="store_true",
                   help="paired statistics for every Δ: exact McNemar p-value (SR) and paired bootstrap "
                        "95%% intervals (ΔSR, ΔGC) over episodes both variants ran")


def main(args: argparse.Namespace) -> int:
    from harness.store import ResultStore, StoreError

    try:  # verified once, then read as one snapshot (a run may be writing meanwhile)
        store = ResultStore(args.outdir, readonly=True)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        return _table(args, store)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()


def _table(args: argparse.Namespace, store: Any) -> int:
    from harness import tables

    df, notes = store.latest_frame()
    if df.empty:
        raise UsageError(f"the store in {args.outdir} holds no episodes yet")
    render = {"markdown": tables.to_markdown, "latex": tables.to_latex, "csv": tables.to_csv}[args.format]
    baseline = args.baseline
    if baseline is None:
        if "base" in set(df["variant"].astype(str)):
            baseline = "base"
        elif not args.by:
            # printed after the table: a failure must stay one line (exit 2)
            notes = ["no variant is called 'base', so the table has no Δ columns "
                     "(--baseline NAME compares against NAME)", *notes]
    # Flags a view cannot honour are refused (exit 2), not silently ignored.
    given = [f for f, on in (("--metrics", args.metrics is not None), ("--stats", args.stats),
                             ("--columns", args.columns is not None)) if on]
    refused = given if args.by == "failure" else [f for f in given if f != "--metrics"] if args.by else []
    if refused:
        raise UsageError(f"--by {args.by} does not take {', '.join(refused)}"
                         + (" (it prints failure classes)" if args.by == "failure" else
                            " (its columns are variants; it has no Δ)"))
    if args.by == "failure":
        return _failure_table(args, df, notes, store)
    metrics = tuple(m.strip() for m in (args.metrics or "sr,gc").split(",") if m.strip())
    try:
        if set(metrics) & set(tables.COST_METRICS):
            df = tables.add_cost_columns(df, store.transcripts(sorted(set(df["run_id"]))))
        if args.by:
            table = tables.breakdown_table(df, by=args.by, metrics=metrics, baseline=baseline)
        else:
            table = tables.transfer_table(df, baseline=baseline, metrics=metrics, columns=args.columns or "split",
                                          stats=args.stats)
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None
    text = render(table)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _failure_table(args: argparse.Namespace, df: Any, notes: list[str], store: Any) -> int:
    from harness import failures

    if args.format == "latex":
        raise UsageError("--by failure prints markdown or csv")
    tasks = failures.tasks_from_suites(store, df)  # old stores: task params re-derived from the suite
    table = failures.failure_table(df, failures.classify_frame(df, tasks))
    sys.stdout.write(failures.failure_csv(table) if args.format == "csv" else failures.failure_markdown(table))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0

