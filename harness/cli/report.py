"""``harness report``: a static HTML report of a store (reads the store only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli.common import UsageError, check_output, one_line, summary
from harness.report import build_report
from harness.store import StoreError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help=summary("report"))
    p.add_argument("outdir", nargs="+", help="output directory of `harness run` (or its results.sqlite); "
                   "several are read as one store, as by `harness table`")
    p.add_argument("--dest", default=None, help="report file or folder (default: OUTDIR/report/index.html); "
                   "an existing report file there is replaced only with --force")
    p.add_argument("--force", action="store_true", help="replace the report file --dest names if it exists")
    p.add_argument("--baseline", default=None, help="variant for Δ and the paired view (default: 'base' or the first)")
    p.add_argument("--experiment", default=None,
                   help="open the report with experiment NAME's table, as `harness table --experiment` prints it "
                        "(configs/experiment/NAME.yaml, or a YAML file), and where it declares diagnostic and "
                        "transfer columns, the charts of their Δ per variant")
    p.add_argument("--paper", action="store_true",
                   help="with --experiment: add the numbers the paper reports, as rows marked '(paper)'")
    p.add_argument("--run", action="append", default=[], metavar="RUN_ID",
                   help="show this run (id or prefix) for its variant, suite and split, over any other")
    p.add_argument("--judge", default=None, metavar="NAME|A,B|all",
                   help="whose verdicts fill the judged metrics (as harness table --judge)")
    p.add_argument("--prefer", action="append", default=[], metavar="OUTDIR",
                   help="where several stores hold the same episode of a run with different results, "
                        "this store's rows win (otherwise that is refused)")


def main(args: argparse.Namespace) -> int:
    if args.dest is not None:
        html = Path(args.dest)
        html = html if html.suffix.lower() in (".html", ".htm") else html / "index.html"
        check_output(html, args.outdir, args.force, make_parents=True)
    outdir = args.outdir[0] if len(args.outdir) == 1 else args.outdir
    path = write_report(outdir, dest=args.dest, baseline=args.baseline,
                        picks=[p.strip() for v in args.run for p in v.split(",") if p.strip()],
                        prefer=args.prefer, judge=args.judge, experiment=args.experiment, paper=args.paper)
    print(f"report written to {path}", file=sys.stderr)
    return 0


def write_report(outdir: Any, **options: Any) -> Path:
    """:func:`harness.report.build_report` of ``outdir`` (one output directory or several) with
    ``options``, as ``harness report`` writes it: its path; UsageError naming what failed."""
    try:
        return build_report(outdir, **options)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(one_line(exc)) from None
