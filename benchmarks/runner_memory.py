"""Main-process memory of a long run: does the runner stay flat at 100,000 episodes?

    python benchmarks/runner_memory.py --episodes 100000 --warmup 10000

Runs the random planner on generated EB-ALFRED episodes (rendering off, local
executor, the real SQLite store in a temporary folder) through
:class:`harness.run.runner.Runner` as ``harness run`` does (``keep_records=False``),
and samples this process's resident set size (``VmRSS``) every ``--every``
finished episodes. Prints the RSS after the warm-up (the generator's episode
cache holds 8,192 episodes, the allocator settles) and the growth from there to
the end; the target is < 5 MB over 100,000 episodes. It is a
benchmark, run once, not a timed test.

Measured (this version, 2-core machine shared with six other jobs, 2,831 s):
RSS 52.9 MB at 2,000 episodes, 66.4 MB after the 10,000-episode warm-up, 67.7 MB
at 100,000: +1.3 MB after warm-up (147 KB per 10,000 episodes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=2_000)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.registry.catalog import PLANNERS
    from harness.run.runner import Runner
    from harness.store import ResultStore
    from harness.types import RunSpec

    suite = EBAlfredSuite(render=False, generated_per_split=args.episodes)
    spec = RunSpec(suite="eb_alfred", split="seen", agent="random", variant="random", limit=args.episodes,
                   batch_size=args.batch_size)
    samples: list[tuple[int, float, float]] = []
    t0 = time.monotonic()
    count = 0

    def on_record(_record: object) -> None:
        nonlocal count
        count += 1
        if count % args.every == 0 or count == args.warmup:
            samples.append((count, rss_mb(), time.monotonic() - t0))
            print(f"{count:>7} episodes  RSS {samples[-1][1]:8.1f} MB  {samples[-1][2]:7.0f} s", flush=True)

    with tempfile.TemporaryDirectory() as tmp, ResultStore(tmp) as store:
        summary = Runner(spec, suite, PLANNERS.build("random"), store, on_record=on_record,
                         keep_records=False).run()
    warm = next((s for s in samples if s[0] >= args.warmup), samples[0])
    last = samples[-1]
    print(f"episodes run: {summary.finished}; RSS after {warm[0]} (warm-up): {warm[1]:.1f} MB; "
          f"at {last[0]}: {last[1]:.1f} MB; growth after warm-up {last[1] - warm[1]:+.1f} MB "
          f"({(last[1] - warm[1]) / max(1, last[0] - warm[0]) * 1e4 * 1024:.1f} KB per 10k episodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
