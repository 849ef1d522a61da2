"""A run with an unreachable tracker against the same run without one, whole process.

    python benchmarks/tracker_overhead.py                  # 9 pairs, eb_alfred/base, 20 episodes
    python benchmarks/tracker_overhead.py --pairs 15 --limit 100

Each pair starts ``harness run`` twice as a fresh process, into a new output folder each time
(nothing resumed): once plain, once with ``tracker=mlflow tracker.tracking_uri=URL`` where
nothing listens at URL (``127.0.0.1:9`` by default). The two take turns, and which goes first
alternates from pair to pair, so a machine that speeds up or slows down during the call moves
both sides of a pair alike. Printed: each pair's wall seconds and ratio tracker / plain, and
the median ratio over the pairs with its min and max. The claim (docs/benchmarks.md): the
median stays within 1.10.

Start-up (imports, the suite's data) counts on both sides: a short run is the hard case,
since whatever the tracker costs once is not spread over many episodes. The default
scripted planner (``oracle``) costs nothing a step, so the run is all harness and suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(out: Path, args: argparse.Namespace, tracker: bool) -> float:
    cmd = [sys.executable, "-m", "harness.cli", "run", f"suite={args.suite}", f"split={args.split}",
           f"planner={args.planner}", f"limit={args.limit}", "progress=false", f"out={out}"]
    if tracker:
        cmd += ["tracker=mlflow", f"tracker.tracking_uri={args.uri}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"harness run exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    if tracker and "tracker mlflow: off" not in done.stderr:
        sys.exit(f"the tracker at {args.uri} was reachable: this measures an unreachable one")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--suite", default="eb_alfred")
    ap.add_argument("--split", default="base")
    ap.add_argument("--planner", default="oracle")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--uri", default="http://127.0.0.1:9", help="a tracking URI where nothing listens")
    args = ap.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        one_run(Path(tmp) / "warm-up", args, tracker=True)  # file cache: both sides start warm
        for i in range(args.pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            walls = {t: one_run(Path(tmp) / f"{i}-{int(t)}", args, t) for t in order}
            ratios.append(walls[True] / walls[False])
            print(f"pair {i + 1}: plain {walls[False]:.2f} s, unreachable tracker {walls[True]:.2f} s, "
                  f"ratio {ratios[-1]:.3f}", flush=True)
    print(f"{args.suite}/{args.split} planner={args.planner} limit={args.limit}, {args.pairs} pairs: "
          f"ratio tracker/plain median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, "
          f"max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
