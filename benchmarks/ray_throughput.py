"""Episodes per second with executor=ray on 1 vs 2 actors (and ``local`` for
reference), on a local Ray cluster started here, in one process.

    python benchmarks/ray_throughput.py [--episodes 60] [--render]

The random planner on the generated EB-ALFRED ``seen`` split (household
backend). With ``--render`` every step renders the image observation, so the
simulator's cost dominates and a second actor has work to share; without it a
step is ~0.1 ms of pure logic and Ray's per-call round trip (~1 ms) dominates.
Prints each setting's episodes/s and the ratio 2 actors / 1 actor measured in
this run. On a machine whose cores are busy with other work the ratio is
lower than the actor count suggests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=60)
    ap.add_argument("--render", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONPATH", str(REPO))
    sys.path.insert(0, str(REPO))
    import ray

    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.catalog import PLANNERS
    from harness.executors import SuiteEnvFactory
    from harness.runner import Runner
    from harness.types import RunSpec

    params = {"render": args.render, "generated_per_split": max(args.episodes, 40)}
    suite = EBAlfredSuite(**params)
    factory = SuiteEnvFactory("eb_alfred", params)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    class ReadsImages:  # the random planner, asking for image observations when --render
        def __init__(self):
            self.inner = PLANNERS.build("random")
            self.name, self.privileged, self.reads_images = self.inner.name, False, args.render

        def identity(self):
            return self.inner.identity()

        def reset(self, e):
            self.inner.reset(e)

        def act(self, r):
            return self.inner.act(r)

    rates = {}
    for label, kw in [("local", dict(executor="local")), ("ray 1 actor", dict(executor="ray", num_workers=1)),
                      ("ray 2 actors", dict(executor="ray", num_workers=2))]:
        spec = RunSpec(suite="eb_alfred", split="seen", agent="random", variant="random", limit=args.episodes,
                       batch_size=4, suite_params=params, **kw)
        # Steady state: from the first finished episode to the last (actor start-up, ~1 s
        # per actor on a loaded machine, is paid once per run and reported apart).
        stamps: list[float] = []
        t0 = time.perf_counter()
        s = Runner(spec, suite, ReadsImages(), None, env_factory=factory if kw["executor"] == "ray" else None,
                   on_record=lambda r: stamps.append(time.perf_counter())).run()
        dt = stamps[-1] - stamps[0]
        rates[label] = (len(stamps) - 1) / dt
        print(f"{label:14s} {s.finished} episodes, first after {stamps[0] - t0:5.2f} s, then "
              f"{rates[label]:7.2f} episodes/s")
    print(f"ratio 2 actors / 1 actor: {rates['ray 2 actors'] / rates['ray 1 actor']:.2f}  "
          f"(render={'on' if args.render else 'off'}, {os.cpu_count()} CPUs)")
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
