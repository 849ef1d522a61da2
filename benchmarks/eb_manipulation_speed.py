"""EB-Manipulation twin speed: simulator steps and grammar actions per second, with and without
cameras, with 1 vs N worker processes. Prints ratios measured in the same run.

    python benchmarks/eb_manipulation_speed.py [--episodes 4] [--workers 2] [--image-size 500]

Workload: the oracle's actions on the first ``--episodes`` base episodes of each family
(every action a full grammar action: motion, gripper, settling), plus a pure physics loop.
Worker start-up (imports, robosuite's model) is excluded; scene building per episode is
included (reported separately).
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp

os.environ.setdefault("MUJOCO_GL", "egl")


def _episodes(n: int):
    from envs.eb_manipulation import episodes as E

    return [e for e in E.episodes("base") if e.metadata["index"] < n]


def run_chunk(args) -> tuple[int, int, float, float]:
    """Run the oracle on some episodes; returns (actions, sim steps, env build seconds, total seconds)."""
    ids, render, size = args
    from envs.eb_manipulation import episodes as E
    from envs.eb_manipulation.agents import oracle_plan
    from envs.eb_manipulation.env import EBManipulationEnv

    by_id = {e.episode_id: e for e in E.episodes("base")}
    env = EBManipulationEnv(render=render, image_size=size)
    actions = sim = 0
    build = 0.0
    t0 = time.perf_counter()
    for eid in ids:
        spec = by_id[eid]
        tb = time.perf_counter()
        obs, info = env.reset(options={"episode": spec, "privileged": True})
        build += time.perf_counter() - tb
        start_sim = info["sim_steps"]
        done = False
        while not done:
            for a in oracle_plan(info["privileged_state"]):
                obs, _, term, trunc, info = env.step(a)
                actions += 1
                if term or trunc:
                    done = True
                    break
        sim += info["sim_steps"] - start_sim
    env.close()
    return actions, sim, build, time.perf_counter() - t0


def physics_only(seconds: float = 2.0) -> float:
    """Bare controller + mj_step rate (steps/s) on one scene."""
    from envs.eb_manipulation import episodes as E
    from envs.eb_manipulation.sim import PandaTable

    world = PandaTable(E.episodes("base")[0].metadata["scene"])
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        world._run(100)
        n += 100
    return n / (time.perf_counter() - t0)


def _warm_up(_: int = 0) -> None:
    """Imports, robosuite's base model and one scene build: paid once per process, not timed."""
    from envs.eb_manipulation import episodes as E
    from envs.eb_manipulation.sim import PandaTable

    PandaTable(E.episodes("base")[0].metadata["scene"])
    time.sleep(0.2)  # keep this worker busy so every worker takes one warm-up task


def measure(ids, render, size, workers):
    chunks = [ids[i::workers] for i in range(workers)]
    if workers == 1:
        _warm_up()
        t0 = time.perf_counter()
        results = [run_chunk((chunks[0], render, size))]
        wall = time.perf_counter() - t0
    else:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_warm_up,
                                 initargs=(0,)) as pool:
            list(pool.map(time.sleep, [0.5] * workers))  # all workers started and warmed up
            t0 = time.perf_counter()
            results = list(pool.map(run_chunk, [(c, render, size) for c in chunks]))
            wall = time.perf_counter() - t0
    actions = sum(r[0] for r in results)
    sim = sum(r[1] for r in results)
    build = sum(r[2] for r in results)
    return {"actions": actions, "sim_steps": sim, "wall_s": wall, "actions_per_s": actions / wall,
            "sim_steps_per_s": sim / wall, "build_s_per_episode": build / len(ids)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=2, help="episodes per family")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=500)
    args = ap.parse_args()
    ids = [e.episode_id for e in _episodes(args.episodes)]
    print(f"workload: oracle on {len(ids)} base episodes; {os.cpu_count()} CPUs")
    print(f"physics only (controller + mj_step): {physics_only():,.0f} sim steps/s")
    rows = {}
    for render in (False, True):
        for workers in (1, args.workers):
            r = measure(ids, render, args.image_size, workers)
            rows[(render, workers)] = r
            print(f"cameras={'on ' if render else 'off'} ({args.image_size}px) workers={workers}: "
                  f"{r['actions_per_s']:.2f} grammar actions/s, {r['sim_steps_per_s']:,.0f} sim steps/s "
                  f"({r['actions']} actions, {r['sim_steps']} sim steps, {r['wall_s']:.1f}s; "
                  f"scene build {r['build_s_per_episode']:.2f}s/episode)")
    off, on = rows[(False, 1)], rows[(True, 1)]
    print(f"ratio cameras on/off (1 worker): {on['actions_per_s'] / off['actions_per_s']:.2f}")
    for render in (False, True):
        a, b = rows[(render, 1)], rows[(render, args.workers)]
        print(f"ratio {args.workers} workers / 1 (cameras {'on' if render else 'off'}): "
              f"{b['actions_per_s'] / a['actions_per_s']:.2f}")


if __name__ == "__main__":
    main()
