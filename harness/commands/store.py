"""``harness store check|repair``: the store's verdict, or a salvage into a new store."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.commands.common import UsageError, first_lines, one_line  # noqa: F401


def add_parser(sub: Any) -> None:
    p = sub.add_parser("store", help="check a result store, or salvage a damaged one into a new store")
    p.add_argument("action", choices=["check", "repair"])
    p.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p.add_argument("--dest", default=None, help="repair: the new store's output directory (default: OUTDIR-repaired)")


def main(args: argparse.Namespace) -> int:
    """``check``: exit 0 when sound, 1 with the problems when damaged. ``repair``: every
    readable row into a new store (the damaged one is left as it is)."""
    from pathlib import Path

    from harness.store import StoreError, check_store, repair_store

    try:
        if args.action == "check":
            problems = check_store(args.outdir)
            if not problems:
                print(f"{args.outdir}: the store is sound", file=sys.stderr)
                return 0
            print(f"{args.outdir}: the store is damaged ({len(problems)} problem(s)): {problems[0]}; "
                  f"`harness store repair {args.outdir}` salvages its readable records", file=sys.stderr)
            return 1
        src = Path(args.outdir)
        dest = Path(args.dest) if args.dest else src.with_name((src.stem if src.suffix == ".sqlite" else src.name)
                                                                + "-repaired")
        report = repair_store(src, dest)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    kept, lost = report.get("episodes", (0, 0))
    print(f"salvaged {kept} episode(s) ({lost} unreadable) and {report.get('transcripts', (0, 0))[0]} transcript "
          f"row(s) into {dest}; `harness table {dest}` reads it, and rerunning with out={dest} resumes", file=sys.stderr)
    return 0

