"""Cost of the open-time check of the result store (``harness.store.integrity.inspect_db``).

Every open by ``harness run`` / ``table`` / ``report`` runs the same check as ``harness
store check``: SQLite's full ``integrity_check``, then every row of every table read by a
table scan, decoded, and its CRC-32 recomputed. This builds a store of ``--episodes``
episodes (each with ``--calls`` transcript rows of ~300 characters, as a VLM planner's
run keeps) through :class:`harness.store.ResultStore` and times each part of the check
and a whole read-only open.

    python benchmarks/store_check.py --episodes 100000 --calls 3
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from harness.store import ResultStore, Verdict, inspect_db
from harness.store.integrity import _check_rows
from harness.types import EpisodeRecord, RunSpec


def build(out: Path, episodes: int, calls: int) -> None:
    with ResultStore(out) as store:
        store.begin_run("r1", RunSpec(suite="eb_alfred", split="seen", agent="vlm", variant="base"), {}, {})
        for start in range(0, episodes, 5000):
            store.add_many([(EpisodeRecord("r1", "base", "eb_alfred", "seen", f"seen/{i:06d}", i, success=i % 3 == 0,
                                           steps=12, extra={"task_type": "pick_and_place", "history": [["find", "ok"]]}),
                             [{"call": c, "raw_output": "plan: " + "x" * 300, "latency_s": 0.5, "prompt_tokens": 900}
                              for c in range(calls)])
                            for i in range(start, min(episodes, start + 5000))])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "o"
        t = time.perf_counter()
        build(out, args.episodes, args.calls)
        file = out / "results.sqlite"
        print(f"built {args.episodes} episodes, {args.episodes * args.calls} transcript rows, "
              f"{file.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s")
        db = sqlite3.connect(file)
        for pragma in ("quick_check", "integrity_check"):
            t = time.perf_counter()
            db.execute(f"PRAGMA {pragma}").fetchall()
            print(f"  PRAGMA {pragma}: {time.perf_counter() - t:.2f} s")
        for table in ("runs", "sessions", "episodes", "transcripts"):
            t = time.perf_counter()
            _check_rows(db, table, Verdict("sound"))
            print(f"  rows of {table} (decode + CRC-32 + unique key): {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        verdict = inspect_db(db, file)
        print(f"  whole check (inspect_db): {time.perf_counter() - t:.2f} s -> {verdict.kind}")
        db.close()
        t = time.perf_counter()
        with ResultStore(out, readonly=True):
            pass
        print(f"  read-only open (what `harness table` pays before reading): {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        with ResultStore(out):
            pass
        print(f"  writable open (what `harness run` pays before resuming): {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
