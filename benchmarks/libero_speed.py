"""LIBERO speed on this machine, in one run (libero_spatial task 0, 256 px cameras):

1. steps/s of the provider's stock ``OffScreenRenderEnv`` (two cameras on);
2. steps/s of our env with cameras, with the fast-render switch (shadows and
   anti-aliasing off), and without cameras (``render=False``);
3. the cost of the ``sequence`` fixture-RNG choice: one hard ``reset()`` vs
   one replayed reset (draws only), and a cold start at trial 49;
4. steps/s of the runner (process executor, an agent that reads images and
   returns 10-action chunks of the dummy action) with 1 worker and with
   N = cores workers (and ``--envs-per-worker`` envs each), end to end:
   env builds and resets included.

    python benchmarks/libero_speed.py                     # defaults: short, fits a 2-core machine
    python benchmarks/libero_speed.py --steps 300 --episode-steps 200 --workers 16

Ratios are measured in the same run; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")


class ImageZeroPolicy:
    """The zero policy, but declared to read images, so every step renders (a VLA's cost profile)."""

    name = "zero_images"
    privileged = False
    reads_images = True
    replan_steps = None

    def identity(self):
        return {"name": self.name}

    def reset(self, episode):
        pass

    def act(self, requests):
        from envs.libero.protocol import DUMMY_ACTION

        for r in requests:
            assert r.observation["agentview_image"].shape[-1] == 3
        return [[list(DUMMY_ACTION)] * 10 for _ in requests]


def _rate(step, n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        step()
    return n / (time.perf_counter() - t)


def stock_env(suite, n: int) -> float:
    provider = suite.provider
    task = provider.suite("libero_spatial").get_task(0)
    size = suite.preset["camera_size"]
    env = provider.env_class()(bddl_file_name=provider.bddl_path(task), camera_heights=size, camera_widths=size)
    try:
        env.seed(7)
        env.reset()
        env.set_init_state(provider.init_states(task)[0])
        action = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]
        env.step(action)
        return _rate(lambda: env.step(action), n)
    finally:
        env.close()


def our_env(fast: bool, render: bool, n: int) -> tuple[float, dict]:
    from envs.libero.suite import LiberoSuite

    suite = LiberoSuite(fast_render=fast, max_steps=n + 10)
    env = suite.make_env()
    extra: dict = {}
    try:
        eps = suite.episodes("libero_spatial")
        t = time.perf_counter()
        env.reset(options={"episode": eps[0], "render": render})
        extra["reset_s"] = time.perf_counter() - t
        action = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]
        rate = _rate(lambda: env.step(action), n)
        if not fast and render:
            # fixture-RNG cost: a cold start at trial 49 replays 49 resets' draws
            before = env.replayed_resets
            t = time.perf_counter()
            env._seed_fixture_rng("libero_spatial", 0, 49, 7)
            dt = time.perf_counter() - t
            extra["replayed"] = env.replayed_resets - before
            extra["replay_per_reset_s"] = dt / max(1, extra["replayed"])
            t = time.perf_counter()
            env.reset(options={"episode": eps[49], "render": render})
            extra["reset_49_s"] = time.perf_counter() - t
        return rate, extra
    finally:
        env.close()


def runner(workers: int, envs_per_worker: int, episodes: int, episode_steps: int) -> tuple[float, float, int]:
    from harness.run.executors import SuiteEnvFactory
    from harness.run.runner import Runner
    from harness.types import RunSpec

    params = {"max_steps": episode_steps, "tasks": [0], "trials": episodes}
    from envs.libero.suite import LiberoSuite

    suite = LiberoSuite(**params)
    spec = RunSpec(suite="libero", split="libero_spatial", agent="zero_images", variant="bench",
                   agent_kind="policy", executor="process", num_workers=workers,
                   envs_per_worker=envs_per_worker)
    t = time.perf_counter()
    summary = Runner(spec, suite, ImageZeroPolicy(), None, env_factory=SuiteEnvFactory("libero", params)).run()
    wall = time.perf_counter() - t
    steps = sum(r.steps for r in summary.records)
    assert summary.errors == 0, [r.error_message for r in summary.records if r.error_kind]
    return steps / wall, wall, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60, help="steps timed per single-env figure")
    ap.add_argument("--episode-steps", type=int, default=40, help="step budget of each runner episode")
    ap.add_argument("--episodes-per-worker", type=int, default=2)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="N (default: cores)")
    ap.add_argument("--envs-per-worker", type=int, default=1)
    args = ap.parse_args()

    from envs.libero.suite import LiberoSuite

    suite = LiberoSuite()
    print(f"cores: {os.cpu_count()}; libero_spatial task 0; {suite.preset['camera_size']} px cameras")
    stock = stock_env(suite, args.steps)
    print(f"stock OffScreenRenderEnv, cameras on : {stock:7.2f} steps/s")
    ours, extra = our_env(False, True, args.steps)
    print(f"our env, cameras on                  : {ours:7.2f} steps/s  ({ours / stock:.2f}x stock)")
    fast, _ = our_env(True, True, args.steps)
    print(f"our env, fast_render=true            : {fast:7.2f} steps/s  ({fast / ours:.2f}x cameras on)")
    blind, _ = our_env(False, False, args.steps)
    print(f"our env, render=False (no cameras)   : {blind:7.2f} steps/s  ({blind / ours:.2f}x cameras on)")
    print(f"env build + first reset (10 waits)   : {extra['reset_s']:7.2f} s")
    print(f"fixture RNG replay (draws only)      : {1000 * extra['replay_per_reset_s']:7.1f} ms per replayed reset; "
          f"cold start at trial 49: {extra['replayed']} replayed, reset {extra['reset_49_s']:.2f} s")

    n = args.workers
    one, wall1, steps1 = runner(1, 1, args.episodes_per_worker, args.episode_steps)
    print(f"runner, 1 worker                     : {one:7.2f} steps/s  ({steps1} steps in {wall1:.1f} s, builds and resets included)")
    for k in sorted({1, args.envs_per_worker}):
        many, walln, stepsn = runner(n, k, args.episodes_per_worker * n * k, args.episode_steps)
        print(f"runner, {n} workers x {k} envs each     : {many:7.2f} steps/s  ({stepsn} steps in {walln:.1f} s; "
              f"{many / one:.2f}x one worker, ideal {n}x)")


if __name__ == "__main__":
    main()
