"""executor=ray on a local Ray cluster started here, in one process: what Ray
costs per step, and episodes/s on 1 vs 2 actors (``local`` for reference).

    python benchmarks/ray_throughput.py                         # EB-ALFRED, household backend
    python benchmarks/ray_throughput.py --render                # ... rendering every step
    MUJOCO_GL=egl python benchmarks/ray_throughput.py --suite libero --episodes 8
    python benchmarks/ray_throughput.py --overhead-only

1. **Per-step overhead**: the executor's round trip around an env whose step
   costs ~0 (:class:`NullEnv`): ``advance`` of one action on one slot, of N
   actions, of one action on each of 4 slots of one actor, and with an image
   observation (as numpy and as nested lists) in every Transition. The
   headline ``per-step overhead: X ms`` is one 1-action ``advance`` on one
   slot minus the same on ``local``.
2. **Throughput**: the EB-ALFRED ``seen`` split with the random planner, or
   (``--suite libero``) LIBERO libero_spatial with the zero policy declared to
   read images, so every step renders. Episodes/s after the first wave (one
   episode per slot: actor start-up and env builds, paid once per run, are
   shown apart), and ``ratio 2 actors / 1 actor``. On a machine whose cores are busy with
   other work the ratio is lower than the actor count suggests: quote it with
   ``uptime``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


class NullEnv:
    """An env whose reset and step cost ~0: the executor's own cost is all that is timed."""

    def __init__(self, image: int = 0, as_list: bool = False):
        img = np.zeros((image, image, 3), np.uint8) if image else None
        self.obs = {"image": img.tolist() if as_list and img is not None else img, "text": "ok"}

    def reset(self, *, seed=None, options=None):
        return self.obs, {}

    def step(self, action):
        return self.obs, 0.0, False, False, {"feedback": "ok"}

    def close(self):
        pass


class NullEnvFactory:
    def __init__(self, image: int = 0, as_list: bool = False):
        self.image, self.as_list = image, as_list

    def __call__(self) -> NullEnv:
        return NullEnv(self.image, self.as_list)


def _episode():
    from harness.types import EpisodeSpec

    return EpisodeSpec(suite="null", split="null", episode_id="0", seed=0, instruction="")


def _advance_ms(executor, slots: int, actions: int, calls: int) -> float:
    """Median wall time (ms) of one ``advance`` of ``actions`` actions on each of ``slots`` slots."""
    executor.reset([(s, {"episode": _episode()}) for s in range(slots)])
    moves = [(s, [0] * actions, None) for s in range(slots)]
    for _ in range(5):
        executor.advance(moves)  # warm-up
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        executor.advance(moves)
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def overhead(calls: int) -> float:
    """Print the per-step cost table; return the headline per-step overhead (ms)."""
    from harness.run.executors import LocalExecutor
    from harness.run.executors_ray import RayExecutor

    print(f"per-step cost of the executor around a zero-cost env (median of {calls} advance calls)")
    rows = []
    local = LocalExecutor(NullEnvFactory(), slots=1)
    local_ms = _advance_ms(local, 1, 1, calls)
    rows.append(("local, 1 slot, 1 action", local_ms, 1))
    cases = [("ray 1 actor, 1 slot, 1 action", 1, 1, 1, NullEnvFactory()),
             ("ray 1 actor, 1 slot, 10 actions", 1, 1, 10, NullEnvFactory()),
             ("ray 1 actor, 4 slots, 1 action", 1, 4, 1, NullEnvFactory()),
             ("ray 2 actors, 4 slots, 1 action", 2, 4, 1, NullEnvFactory()),
             ("ray 1 actor, 1 slot, 224px image", 1, 1, 1, NullEnvFactory(224)),
             ("ray 1 actor, 1 slot, 224px as lists", 1, 1, 1, NullEnvFactory(224, as_list=True))]
    ray_1 = None
    for label, actors, slots, actions, factory in cases:
        ex = RayExecutor(factory, actors=actors, envs_per_actor=-(-slots // actors))
        try:
            ms = _advance_ms(ex, slots, actions, calls if "lists" not in label else max(5, calls // 10))
        finally:
            ex.close()
        rows.append((label, ms, slots * actions))
        if ray_1 is None:
            ray_1 = ms
    for label, ms, steps in rows:
        print(f"  {label:38s} {ms:8.3f} ms per call, {ms / steps:7.3f} ms per env step")
    headline = ray_1 - local_ms
    print(f"per-step overhead: {headline:.2f} ms  (ray, one 1-action advance on one slot, minus local)")
    return headline


def _agent(suite_name: str, render: bool):
    """The random planner (EB-ALFRED) or the zero policy (LIBERO), declared to read images when
    rendering is wanted, so every step renders the image observation."""
    from harness.registry.catalog import PLANNERS, POLICIES

    inner = POLICIES.build("zero") if suite_name == "libero" else PLANNERS.build("random")

    class ReadsImages:
        name, privileged, reads_images = inner.name, False, render
        replan_steps = getattr(inner, "replan_steps", None)

        def identity(self):
            return inner.identity()

        def reset(self, e):
            inner.reset(e)

        def act(self, r):
            return inner.act(r)

    return ReadsImages()


def throughput(suite_name: str, episodes: int, render: bool, max_steps: int) -> None:
    from harness.run.executors import SuiteEnvFactory
    from harness.run.runner import Runner
    from harness.types import RunSpec

    if suite_name == "libero":
        from envs.libero.suite import LiberoSuite

        params = {"max_steps": max_steps, "fast_render": True, "tasks": [0], "trials": max(episodes, 2)}
        suite, split, agent_name = LiberoSuite(**params), "libero_spatial", "zero"
        render = True
    else:
        from envs.eb_alfred.suite import EBAlfredSuite

        params = {"render": render, "generated_per_split": max(episodes, 40)}
        suite, split, agent_name = EBAlfredSuite(**params), "seen", "random"
    factory = SuiteEnvFactory(suite_name, params)
    rates = {}
    settings = [("ray 1 actor", dict(executor="ray", num_workers=1)),
                ("ray 2 actors", dict(executor="ray", num_workers=2))]
    if suite_name != "libero":
        settings.insert(0, ("local", dict(executor="local")))
    batch = 4 if suite_name != "libero" else 2
    if episodes < 2 * batch:
        raise SystemExit(f"--episodes must be at least {2 * batch} (two waves of {batch} slots)")
    for label, kw in settings:
        spec = RunSpec(suite=suite_name, split=split, agent=agent_name, variant=agent_name, limit=episodes,
                       batch_size=batch, suite_params=params, **kw)
        stamps: list[float] = []
        t0 = time.perf_counter()
        s = Runner(spec, suite, _agent(suite_name, render), None,
                   env_factory=factory if kw["executor"] == "ray" else None,
                   on_record=lambda r: stamps.append(time.perf_counter())).run()
        errors = [r.error_message for r in s.records if r.error_kind]
        if errors:
            raise SystemExit(f"{label}: {len(errors)} episodes failed: {errors[0][-500:]}")
        # Steady state: after the first wave (one episode per slot, which pays the env builds).
        rates[label] = (len(stamps) - batch) / (stamps[-1] - stamps[batch - 1])
        print(f"{label:14s} {s.finished} episodes, first wave of {batch} after {stamps[batch - 1] - t0:5.2f} s, "
              f"then {rates[label]:7.3f} episodes/s")
    print(f"ratio 2 actors / 1 actor: {rates['ray 2 actors'] / rates['ray 1 actor']:.2f}  "
          f"({suite_name}, render={'on' if render else 'off'}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", choices=["eb_alfred", "libero"], default="eb_alfred")
    ap.add_argument("--episodes", type=int, default=None, help="default: 60 (eb_alfred), 8 (libero)")
    ap.add_argument("--render", action="store_true", help="eb_alfred: render every step (libero always does)")
    ap.add_argument("--max-steps", type=int, default=60, help="libero: steps per episode")
    ap.add_argument("--calls", type=int, default=300, help="advance calls per overhead setting")
    ap.add_argument("--overhead-only", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONPATH", str(REPO))  # the actors import the repo's packages
    os.environ.setdefault("MUJOCO_GL", "egl")
    sys.path.insert(0, str(REPO))
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        if not args.overhead_only:
            episodes = args.episodes or (8 if args.suite == "libero" else 60)
            throughput(args.suite, episodes, args.render, args.max_steps)
        overhead(args.calls)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
