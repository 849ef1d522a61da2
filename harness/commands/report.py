"""``harness report``: a static HTML report of a store (reads the store only)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.commands.common import UsageError, one_line


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="write a static HTML report of an output directory (reads the store only)")
    p.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p.add_argument("--dest", default=None, help="report file or folder (default: OUTDIR/report/index.html)")
    p.add_argument("--baseline", default=None, help="variant for Δ and the paired view (default: 'base' or the first)")


def main(args: argparse.Namespace) -> int:
    from harness.report import build_report
    from harness.store import StoreError

    try:
        path = build_report(args.outdir, dest=args.dest, baseline=args.baseline)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(one_line(exc)) from None
    print(f"report written to {path}", file=sys.stderr)
    return 0

