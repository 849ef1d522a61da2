"""Throughput of the household engine on one core.

Runs a random-but-plausible skill workload (go to an object, then a random
primitive on something in reach; a fresh copy of the world every 30 steps,
EB-ALFRED's episode cap) and prints one line per figure:

    primitive steps/s (no render), primitive steps/s (with render),
    render calls/s, build_world calls/s, world.copy calls/s.

Usage: ``python benchmarks/household_engine.py [--steps N] [--floor-plan N] [--size 224]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.household import PRIMITIVES, HouseholdEngine, World, build_world, render  # noqa: E402

EPISODE_STEPS = 30  # EB-ALFRED's step cap (EmbodiedBench EBAlfEnv), used as the reset period


def _workload(world: World, steps: int, seed: int) -> list[tuple[str, str | None]]:
    """A fixed action list: even steps go to a random object, odd steps try a random
    primitive on a random object sharing the faced object's receptacle."""
    rng = random.Random(seed)
    ids = list(world.objects)
    by_root: dict[str, list[str]] = {}
    for k in ids:
        by_root.setdefault(world.root(k), []).append(k)
    actions: list[tuple[str, str | None]] = []
    current = ids[0]
    for i in range(steps):
        if i % 2 == 0:
            current = rng.choice(ids)
            actions.append(("goto", current))
        else:
            prim = rng.choice(PRIMITIVES[1:])
            actions.append((prim, None if prim == "drop" else rng.choice(by_root[world.root(current)])))
    return actions


def run_steps(base: World, actions: list[tuple[str, str | None]], render_size: int | None) -> tuple[float, int]:
    """Seconds taken and successful actions, resetting to ``base`` every EPISODE_STEPS."""
    ok = 0
    engine = HouseholdEngine(base.copy())
    start = time.perf_counter()
    for i, (prim, obj) in enumerate(actions):
        if i % EPISODE_STEPS == 0:
            engine.world = base.copy()
        result = engine.execute(prim, obj)
        ok += result.ok
        if render_size is not None:
            render(engine.world, render_size)
    return time.perf_counter() - start, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="primitive steps without rendering")
    parser.add_argument("--render-steps", type=int, default=2_000, help="primitive steps with rendering")
    parser.add_argument("--floor-plan", type=int, default=1)
    parser.add_argument("--size", type=int, default=224, help="rendered image side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", type=int, default=None, help="pin to this core (Linux)")
    args = parser.parse_args(argv)

    if hasattr(os, "sched_setaffinity"):
        cpu = args.cpu if args.cpu is not None else sorted(os.sched_getaffinity(0))[0]
        os.sched_setaffinity(0, {cpu})

    base = build_world(args.floor_plan, args.seed)
    actions = _workload(base, args.steps, args.seed)
    secs, ok = run_steps(base, actions, None)
    print(f"primitive steps/s (no render): {args.steps / secs:,.0f} "
          f"[{args.steps} steps, {ok / args.steps:.0%} succeeded, FloorPlan{args.floor_plan}, "
          f"{len(base.objects)} objects]")

    secs, _ = run_steps(base, actions[: args.render_steps], args.size)
    print(f"primitive steps/s (with {args.size}px render): {args.render_steps / secs:,.0f}")

    n = min(args.render_steps, 1000)
    start = time.perf_counter()
    for _ in range(n):
        render(base, args.size)
    print(f"render calls/s ({args.size}px): {n / (time.perf_counter() - start):,.0f}")

    start = time.perf_counter()
    for s in range(200):
        build_world(args.floor_plan, s)
    print(f"build_world calls/s: {200 / (time.perf_counter() - start):,.0f}")

    start = time.perf_counter()
    for _ in range(2000):
        base.copy()
    print(f"world.copy calls/s: {2000 / (time.perf_counter() - start):,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
