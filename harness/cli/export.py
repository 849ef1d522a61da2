"""``harness export``: the shown episode records of one or more stores, one row per episode, for pandas."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli.common import UsageError, check_output, one_line, summary, write_atomically
from harness.cli.table import _patterns
from harness.store import StoreError
from harness.tables import caveats, export, selection as results
from harness.tables.build import select


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help=summary("export"))
    p.add_argument("outdir", nargs="+", help="output directories of `harness run` (several are read as one)")
    p.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    p.add_argument("-o", "--output", default="-", help="file to write (default: standard output; parquet needs a file); "
                   "an existing file is replaced only with --force, an input store never")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--all-runs", action="store_true", help="every stored run, superseded ones too")
    p.add_argument("--suite", action="append", default=[], metavar="PATTERN")
    p.add_argument("--split", action="append", default=[], metavar="PATTERN")
    p.add_argument("--variant", action="append", default=[], metavar="PATTERN")
    p.add_argument("--run", action="append", default=[], metavar="RUN_ID")
    p.add_argument("--judge", default=None, metavar="NAME|A,B|all",
                   help="whose verdicts fill the judged values (as harness table --judge; not with --all-runs)")
    p.add_argument("--prefer", action="append", default=[], metavar="OUTDIR",
                   help="where several stores hold the same episode of a run with different results, "
                        "this store's rows win (otherwise that is refused)")


def main(args: argparse.Namespace) -> int:

    if args.format == "parquet" and args.output == "-":
        raise UsageError("--format parquet writes a file: give -o FILE.parquet")
    if args.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ModuleNotFoundError:
            raise UsageError("--format parquet needs pyarrow: pip install -e '.[export]' (or use --format jsonl)") from None
    if args.all_runs and args.judge is not None:
        raise UsageError("--judge reads the shown runs' verdicts: it does not go with --all-runs")
    out = check_output(args.output, args.outdir, args.force) if args.output != "-" else None
    try:
        df = (export.all_runs(args.outdir, args.prefer) if args.all_runs
              else results.load(args.outdir, _patterns(args.run), args.prefer, judge=args.judge,
                                where=lambda d: select(d, _patterns(args.suite), _patterns(args.split),
                                                       _patterns(args.variant))).frame)
        df = select(df, _patterns(args.suite), _patterns(args.split), _patterns(args.variant))
        df = df.drop(columns=[caveats.SPLIT_EPISODES, caveats.RUN_SETTINGS], errors="ignore")  # tables' footnotes only
        df = export.with_metrics(df)
    except (StoreError, results.SelectionError, ValueError) as exc:
        raise UsageError(one_line(exc)) from None
    if out is None:
        sys.stdout.write(export.to_jsonl(df))
    elif args.format == "jsonl":
        text = export.to_jsonl(df)
        write_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    else:
        write_atomically(out, lambda tmp: export.to_parquet(df, str(tmp)))
    if out is not None:
        print(f"{len(df)} episodes -> {args.output}", file=sys.stderr)
    return 0
