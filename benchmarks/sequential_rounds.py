"""What a round of ``stopping=sequential`` costs, with real (tiny) checkpoints.

A comparison runs its variants in rounds (harness/cli/run_sequential.py): after each round
the test reads the stored records and the open runs go on. Each run's agent, and so its model,
is built once and kept for all rounds; what a round adds is the rest of a run's start (the
store opened and the run resumed, the executor's workers, the progress line) and the test
itself. This script measures it: two ``vlm`` variants on the ``hf`` backend (tiny random-weight
Qwen2.5-VL checkpoints, built as the tests build them: tests/planners/tiny_vlm.py), EB-ALFRED's
generated ``seen`` split on the embedded engine, ``--episodes`` pairs

* in rounds of ``--round`` episodes (``stopping.max_episodes`` keeps the comparison to that
  many pairs; the tiny models never succeed, so it is never decided earlier), and
* in one round of ``--episodes`` (the same pairs, one start per run),

each in its own process and output folder, alternated ``--repeats`` times; it prints the wall
times, the run invocations each made (one per run per round) and the overhead per extra round:
(rounds - one round) / (rounds - 1), with the median over the repeats. A real checkpoint's load
(tens of seconds for 7B) is not part of a round: it happens once per run either way
(tests/harness/stats/test_sequential_trust.py checks that an agent is built once for all its rounds).

    python benchmarks/sequential_rounds.py [--episodes 40] [--round 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXPERIMENT = """# @package _global_
experiment:
  name: tiny_pair
  description: two tiny random-weight checkpoints
  runs:
    eb_alfred: [seen]
  variants:
    a: {{label: A, overrides: [planner=vlm, "planner.params.model={a}", planner.params.max_new_tokens=8]}}
    b: {{label: B, overrides: [planner=vlm, "planner.params.model={b}", planner.params.max_new_tokens=8]}}
  table:
    baseline: b
    metrics: [sr]
    columns:
      - {{label: EB-ALFRED, suite: eb_alfred}}
"""


def run(spec: Path, out: Path, episodes: int, round_: int) -> dict[str, float]:
    argv = [sys.executable, "-m", "harness.cli", "run", f"+experiment={spec}", "stopping=sequential",
            "stopping.baseline=b", f"stopping.round={round_}", f"stopping.max_episodes={episodes}",
            "suite.params.render=false", "suite.params.generated_per_split=100", "progress=false",
            "planner.params.num_examples=0", f"out={out}"]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"harness run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    runs = sum(1 for line in proc.stderr.splitlines() if " episodes run, " in line)
    return {"wall_s": wall, "run_invocations": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--round", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--checkpoints", type=Path, default=Path(tempfile.gettempdir()) / "et_bench_rounds")
    args = parser.parse_args()
    from tests.planners.tiny_vlm import build_base

    os.environ.setdefault("EB_ALFRED_DATA_DIR", str(ROOT.parent / "shared" / "data" / "eb_alfred"))
    a = build_base(args.checkpoints / "a", seed=0)
    b = build_base(args.checkpoints / "b", seed=1)
    work = Path(tempfile.mkdtemp(prefix="et_rounds_"))
    spec = work / "tiny_pair.yaml"
    spec.write_text(EXPERIMENT.format(a=a, b=b), encoding="utf-8")
    rounds = -(-args.episodes // args.round)
    results: dict[str, list[dict[str, float]]] = {"rounds": [], "one_round": []}
    run(spec, work / "warmup", args.round, args.round)  # imports, the page cache
    for i in range(args.repeats):
        results["rounds"].append(run(spec, work / f"r{i}", args.episodes, args.round))
        results["one_round"].append(run(spec, work / f"o{i}", args.episodes, args.episodes))
    per_round = [(r["wall_s"] - o["wall_s"]) / max(1, rounds - 1)
                 for r, o in zip(results["rounds"], results["one_round"])]
    out = {"episodes": args.episodes, "round": args.round, "rounds": rounds,
           "rounds_wall_s": [round(r["wall_s"], 2) for r in results["rounds"]],
           "one_round_wall_s": [round(o["wall_s"], 2) for o in results["one_round"]],
           "run_invocations": {"rounds": results["rounds"][0]["run_invocations"],
                               "one_round": results["one_round"][0]["run_invocations"]},
           "overhead_per_round_s": [round(x, 3) for x in per_round],
           "overhead_per_round_median_s": round(statistics.median(per_round), 3),
           "ratio_median": round(statistics.median(r["wall_s"] / o["wall_s"] for r, o in
                                                   zip(results["rounds"], results["one_round"])), 3)}
    print(json.dumps(out, indent=2))
    print(f"{args.episodes} pairs of two tiny hf checkpoints: in {rounds} rounds of {args.round} "
          f"{statistics.median(out['rounds_wall_s']):.1f} s, in one round "
          f"{statistics.median(out['one_round_wall_s']):.1f} s (median of {args.repeats}); "
          f"{out['overhead_per_round_median_s']:.2f} s per extra round for the comparison (both runs), "
          f"ratio {out['ratio_median']:.2f}")


if __name__ == "__main__":
    main()
