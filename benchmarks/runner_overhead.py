"""Runner overhead: the shared runner (local executor, SQLite store) against a
bare loop over the same suite with the same zero-cost agent, in one process.

    python benchmarks/runner_overhead.py            # both render settings

Prints the time of each and the ratio runner / bare loop (target <= 1.05):
wall-clock, and CPU time of the main thread (steadier on a shared machine).
The fastest of ``--repeats`` alternating trials of each is compared. With
rendering off the env is pure logic (~0.036 ms a step, ~10 agent calls per
0.46 ms episode), the worst case for the runner's fixed bookkeeping per agent
call and per episode; the store commits in groups every 0.25 s
(``RecordWriter``).

Also timed: the bare loop storing its records through the store's writer,
the floor for any loop that keeps its results.

The pipelined runner (the default) is timed beside lockstep (``runner.pipeline=false``).
A zero-cost agent's calls are made on the runner's own thread (harness.run.calls.INLINE_BELOW_S)
and one episode in flight runs lockstep, so main-thread CPU still counts all the work.

Measured (idle 2-core machine, 2026-12-01, wall, two runs of three trials, +-10% between
runs): rendering off 1.07-1.26 pipelined at batch 8, 1.13-1.19 lockstep, 1.16 at batch 1;
rendering on 1.06-1.08 pipelined, 0.93-1.03 lockstep, 0.88-0.90 at batch 1.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.run.allocator import keep_freed_heap  # noqa: E402
from harness.interfaces import AgentRequest  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.store import ResultStore  # noqa: E402
from harness.types import INFO_ACTION_OK, INFO_SUCCESS, EpisodeRecord, RunSpec  # noqa: E402

FLOOR_RUN = "bare-loop-floor"


class ZeroCostAgent:
    """Returns a fixed plan of valid skills (by index into the episode's action list)."""

    name = "zero_cost"
    privileged = False

    def __init__(self, plan_length: int = 5):
        self.plan_length = plan_length

    def identity(self):
        return {"plan_length": self.plan_length}

    def reset(self, episode):
        pass

    def act(self, requests):
        plans = []
        for r in requests:
            actions = r.observation["actions"]
            start = (r.episode.seed + len(r.history)) % len(actions)
            plans.append([actions[(start + 7 * i) % len(actions)] for i in range(self.plan_length)])
        return plans


def bare_loop(suite, split: str, n: int, agent, store: ResultStore | None = None) -> int:
    """The episodes with nothing around them. With ``store``, each episode's record (its step
    history in ``extra``, as the runner keeps it) also goes through the store's writer: the
    least that any loop which keeps its results pays."""
    env = suite.make_env()
    writer = store.writer() if store is not None else None
    steps = 0
    for spec in list(suite.episodes(split))[:n]:
        started = time.monotonic()
        obs, info = env.reset(seed=spec.seed, options={"episode": spec, "privileged": False})
        agent.reset(spec)
        history: list = []
        done = False
        calls = 0
        while not done:
            plan = agent.act([AgentRequest(spec, obs, info, tuple(history))])[0]
            calls += 1
            if not plan:
                break
            for action in plan:
                obs, _, terminated, truncated, info = env.step(action)
                steps += 1
                history.append((action, info.get("feedback", "")))
                if terminated or truncated:
                    done = True
                    break
                if info.get(INFO_ACTION_OK, True) is False:
                    break
        if writer is not None:
            writer.check()
            writer.add(EpisodeRecord(
                run_id=FLOOR_RUN, variant="bench", suite=spec.suite, split=split, episode_id=spec.episode_id,
                seed=spec.seed, success=bool(info.get(INFO_SUCCESS, False)), steps=len(history),
                agent_calls=calls, wall_time_s=time.monotonic() - started,
                extra={"history": [[a, f] for a, f in history]}))
    if writer is not None:
        writer.close()
    env.close()
    return steps


def bare_loop_stored(suite, split: str, n: int, agent) -> int:
    with tempfile.TemporaryDirectory() as tmp, ResultStore(tmp) as store:
        spec = RunSpec(suite=suite.name, split=split, agent=agent.name, variant="bench", limit=n)
        store.begin_run(FLOOR_RUN, spec, {}, {})
        return bare_loop(suite, split, n, agent, store)


def with_runner(suite, split: str, n: int, agent, batch_size: int, pipeline: bool = True) -> int:
    spec = RunSpec(suite=suite.name, split=split, agent=agent.name, variant="bench", limit=n,
                   batch_size=batch_size, pipeline=pipeline)
    with tempfile.TemporaryDirectory() as tmp, ResultStore(tmp) as store:
        summary = Runner(spec, suite, agent, store).run()
    return sum(r.steps for r in summary.records)


def measure(render: bool, episodes: int, split: str, repeats: int) -> None:
    from envs.eb_alfred.suite import EBAlfredSuite

    suite = EBAlfredSuite(render=render, generated_per_split=episodes)
    list(suite.episodes(split))  # generate (lazily built episodes) outside the timings
    agent = ZeroCostAgent()
    bare_loop(suite, split, min(episodes, 20), agent)  # warm caches (expert lengths, fonts)
    names = ("bare", "floor", "runner_b1", "runner_b8", "lockstep_b8")
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    steps: dict[str, int] = {}
    jobs = dict(zip(names, (
        lambda: bare_loop(suite, split, episodes, agent),
        lambda: bare_loop_stored(suite, split, episodes, agent),
        lambda: with_runner(suite, split, episodes, agent, 1),
        lambda: with_runner(suite, split, episodes, agent, 8),
        lambda: with_runner(suite, split, episodes, agent, 8, pipeline=False),
    )))
    order = list(names)
    shuffle = random.Random(0).shuffle
    for _ in range(repeats):
        shuffle(order)  # no trial always runs first (warm-up and drift spread evenly)
        for name in order:
            fn = jobs[name]
            t0, c0 = time.perf_counter(), time.thread_time()
            steps[name] = fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.thread_time() - c0)
    if len(set(steps.values())) != 1:
        raise SystemExit(f"runs disagree on the number of env steps: {steps}")
    base, base_cpu = min(wall["bare"]), min(cpu["bare"])
    fixed = []
    for _ in range(repeats):  # the store's fixed cost per run: create, WAL on, rollback journal at close
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp, ResultStore(tmp):
            pass
        fixed.append(time.perf_counter() - t0)
    print(f"render={'on ' if render else 'off'} episodes={episodes} env_steps={steps['bare']} repeats={repeats}")
    print(f"  bare loop:          wall {base:.3f} s ({steps['bare'] / base:,.0f} steps/s)  main-thread cpu {base_cpu:.3f} s")
    for name, label in (("floor", "bare loop + store"), ("runner_b1", "runner (batch 1)"),
                        ("runner_b8", "runner (batch 8)"), ("lockstep_b8", "lockstep (batch 8)")):
        t, c = min(wall[name]), min(cpu[name])
        print(f"  {label + ':':<19} wall {t:.3f} s  ratio {t / base:.3f}   main-thread cpu {c:.3f} s  ratio {c / base_cpu:.3f}"
              + ("   (floor: records kept)" if name == "floor" else "   (target <= 1.05)"))
    print(f"  (of which the store's fixed open/close cost per run: wall {min(fixed):.3f} s; "
          f"wall ratio without it: {(min(wall['runner_b8']) - min(fixed)) / base:.3f} at batch 8)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1000, help="episodes without rendering")
    parser.add_argument("--render-episodes", type=int, default=200, help="episodes with rendering")
    parser.add_argument("--split", default="seen")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--render", choices=["off", "on", "both"], default="both",
                        help="off: logic-only env (worst case for overhead); on: the suite's default observations")
    args = parser.parse_args()
    # The runner fixes glibc's heap settings for its process (harness.run.allocator); the bare
    # loop runs under the same ones, whichever trial comes first.
    keep_freed_heap()
    if args.render in ("off", "both"):
        measure(False, args.episodes, args.split, args.repeats)
    if args.render in ("on", "both"):
        measure(True, args.render_episodes, args.split, args.repeats)


if __name__ == "__main__":
    main()
