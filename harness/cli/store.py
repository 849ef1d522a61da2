"""``harness store check|repair``: the store's verdict, or a salvage into a new store."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli.common import UsageError, summary
from harness.store import RepairRefused, StoreError, inspect_store, repair_store


def add_parser(sub: Any) -> None:
    p = sub.add_parser("store", help=summary("store"))
    p.add_argument("action", choices=["check", "repair"])
    p.add_argument("outdir", help="output directory of `harness run` (or its results.sqlite)")
    p.add_argument("--dest", default=None, help="repair: the new store's output directory (default: OUTDIR-repaired)")


def main(args: argparse.Namespace) -> int:
    """``check``: one line and the verdict's exit status (0 sound, 1 damaged, 3 unknown schema
    version, 4 not a harness store; harness.store.EXIT_STATUS). ``repair``: every sound row
    into a new store (the damaged one is left as it is); a file that is not a harness store or
    of an unknown schema is refused with that verdict's status."""
    from pathlib import Path

    try:
        if args.action == "check":
            verdict = inspect_store(args.outdir)
            print(verdict.line(args.outdir), file=sys.stderr)
            return verdict.exit_status
        src = Path(args.outdir)
        dest = Path(args.dest) if args.dest else src.with_name((src.stem if src.suffix == ".sqlite" else src.name)
                                                                + "-repaired")
        report = repair_store(src, dest)
    except RepairRefused as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.verdict.exit_status
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    kept, lost = report.get("episodes")
    dups = report.duplicates
    dropped = (f"; dropped {len(dups)} duplicate episode row(s): {', '.join(dups[:5])}"
               + (f" and {len(dups) - 5} more" if len(dups) > 5 else "")) if dups else ""
    print(f"salvaged {kept} episode(s) ({lost} lost: unreadable, failing their checksum or duplicate) and "
          f"{report.get('transcripts')[0]} transcript row(s) into {dest}{dropped}; `harness table {dest}` reads it, "
          f"and rerunning with out={dest} resumes", file=sys.stderr)
    return 0
