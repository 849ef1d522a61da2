"""Runner overhead on a zero-policy LIBERO slice against a bare loop.

Both run the same episodes of one task in one process, in order, cameras off
(the zero policy reads no images, so the runner tells the env not to render):

* bare loop: the provider's ``OffScreenRenderEnv`` with the camera observables
  disabled, ``env.seed(7)`` once, then per trial ``reset()``,
  ``set_init_state(init[i])``, 10 dummy actions and ``--steps`` dummy actions
  with ``check_success()`` after each (what any evaluation loop must do);
* runner: ``Runner`` with the local executor, the ``zero`` policy (10-action
  chunks) and a SQLite store in a temporary folder: env build, fixture-RNG
  bookkeeping, goal-condition counting, records and all.

    python benchmarks/libero_overhead.py                  # 3 trials x 40 steps, best of 2
    python benchmarks/libero_overhead.py --trials 5 --steps 100 --repeats 3

Prints each wall time (best of ``--repeats``, alternating which runs first), each side's
env constructions and model compiles, and the ratio runner / bare loop (target: <= 1.05
at ``--batch-size 1`` on an idle machine). Nothing here is a test.

Measured 2026-12-01 on a 2-core machine shared with other jobs (load average 2.4-3.0,
not idle), default arguments:

* ``--batch-size 1``: runner 16.28 s (1 build, 3 compiles), bare loop 21.52 s (1 build,
  4 compiles): ratio 0.756 (an earlier run: 0.813). The same benchmark on commit
  ca8e6d2's env: 0.940 (runner 1 build, 4 compiles).
* ``--batch-size 8`` (the runner's default): runner 15.98 s (3 builds, 3 compiles), bare
  loop 20.50 s: ratio 0.780; on ca8e6d2: 1.397 (3 builds, 6 compiles). The 3 trials run
  at once in 3 slots, so 3 envs are built; each build's first reset reuses its
  construction's compile, so a trial costs one compile either way.

The runner's side compiles once less than the bare loop (the first trial's reset
reuses the construction's compile), so on an idle machine expect a ratio a little
under 1; the bare loop's own repeats varied 20-34 s under this load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's packages, not an installed copy

SPLIT = "libero_spatial"


@contextmanager
def counting():
    """Counts robosuite env constructions (``ControlEnv.__init__``) and model compiles
    (``MujocoEnv._initialize_sim``: one per construction, one per hard reset) while open,
    by wrapping those two methods of the installed classes; yields the counts dict."""
    from libero.libero.envs.env_wrapper import ControlEnv
    from robosuite.environments.base import MujocoEnv

    counts = {"builds": 0, "compiles": 0}
    init, compile_ = ControlEnv.__dict__["__init__"], MujocoEnv.__dict__["_initialize_sim"]

    def counted_init(self, *a, **k):
        counts["builds"] += 1
        init(self, *a, **k)

    def counted_compile(self, *a, **k):
        counts["compiles"] += 1
        compile_(self, *a, **k)

    ControlEnv.__init__, MujocoEnv._initialize_sim = counted_init, counted_compile
    try:
        yield counts
    finally:
        ControlEnv.__init__, MujocoEnv._initialize_sim = init, compile_


def bare_loop(trials: int, steps: int) -> float:
    from envs.libero.suite import LiberoSuite

    provider = LiberoSuite().provider
    t0 = time.perf_counter()
    task = provider.suite(SPLIT).get_task(0)
    inits = provider.init_states(task)
    env = provider.env_class()(bddl_file_name=provider.bddl_path(task), camera_heights=256, camera_widths=256)
    for cam in ("agentview", "robot0_eye_in_hand"):
        env.env.modify_observable(observable_name=f"{cam}_image", attribute="enabled", modifier=False)
    dummy = [0.0] * 6 + [-1.0]
    try:
        env.seed(7)
        for i in range(trials):
            env.reset()
            env.set_init_state(inits[i])
            for _ in range(10):
                env.step(dummy)
            for _ in range(steps):
                env.step(dummy)
                if env.check_success():
                    break
    finally:
        env.close()
    return time.perf_counter() - t0


def runner(trials: int, steps: int, batch_size: int = 1) -> float:
    from envs.libero import env as env_module
    from envs.libero.suite import LiberoSuite
    from harness.registry.catalog import POLICIES
    from harness.run.runner import Runner
    from harness.store import ResultStore
    from harness.types import RunSpec

    env_module._RNG_TABLES.clear()  # no head start from an earlier repeat
    env_module.POOL.clear()  # nor an env built by one
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        suite = LiberoSuite(tasks=[0], trials=trials, max_steps=steps)
        store = ResultStore(out)
        spec = RunSpec(suite="libero", split=SPLIT, agent="zero", variant="bench", agent_kind="policy",
                       executor="local", batch_size=batch_size)
        summary = Runner(spec, suite, POLICIES.build("zero"), store).run()
        store.close()
        wall = time.perf_counter() - t0
    assert summary.total == trials and summary.errors == 0, summary
    return wall


def _timed(fn, *args) -> tuple[float, dict]:
    with counting() as counts:
        wall = fn(*args)
    return wall, dict(counts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=1,
                    help="the runner's in-flight episodes (RunSpec.batch_size; its default is 8)")
    ap.add_argument("--profile", metavar="FILE", help="also cProfile one runner pass into FILE (pstats)")
    args = ap.parse_args()
    from envs.libero.suite import LiberoSuite

    LiberoSuite().provider.env_class()  # imports (robosuite, MuJoCo, LIBERO's envs) outside the timings
    bare, ours = [], []
    for k in range(args.repeats):  # alternating which goes first, so neither always gets the warmer cache
        order = [("bare", bare_loop, (args.trials, args.steps)),
                 ("runner", runner, (args.trials, args.steps, args.batch_size))]
        for name, fn, fargs in (order if k % 2 == 0 else order[::-1]):
            (bare if name == "bare" else ours).append(_timed(fn, *fargs))
    if args.profile:
        import cProfile

        cProfile.runctx("runner(a.trials, a.steps, a.batch_size)", globals(), {"runner": runner, "a": args},
                        args.profile)
    b, r = min(bare, key=lambda x: x[0]), min(ours, key=lambda x: x[0])
    print(f"cores: {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.2f}; {SPLIT} task 0, "
          f"{args.trials} trials x {args.steps} steps, zero policy, cameras off, runner batch_size {args.batch_size}")
    for name, runs, best in (("bare loop", bare, b), ("runner", ours, r)):
        print(f"{name:10}: {best[0]:7.2f} s (runs: {', '.join(f'{w:.2f}' for w, _ in runs)}); "
              f"env builds {best[1]['builds']}, model compiles {best[1]['compiles']}")
    print(f"ratio runner / bare loop: {r[0] / b[0]:.3f}")


if __name__ == "__main__":
    main()
