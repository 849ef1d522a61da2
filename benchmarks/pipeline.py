"""Pipelined runner against the ideal bound, with lockstep beside it.

A synthetic batched agent whose call on n requests costs ``a + b*n`` seconds and
a synthetic env whose step costs ``s`` seconds, in ``--workers`` worker
processes (``executor=process``). Both sleep, as a GPU or a server and a
simulator in another process would: the 2 cores of this machine are not what
is measured. ``--episodes`` episodes of ``--calls`` agent calls each, every plan
``--plan`` actions long.

The ideal bound (episodes/s) is ``1 / max(A, E / workers)``: ``A`` the agent's
time per episode with full batches (``calls * (a / batch + b)``), ``E`` the
env's time per episode (``calls * plan * s``). Three settings: agent-bound
(E/workers = A/2), env-bound (E/workers = 2A) and balanced (equal). Lockstep's
rounds add the two sides up, so in the balanced case it cannot pass 0.5 of the
bound (it runs with ``batch`` episodes in flight, each call serving all of them);
pipelined, each side works while the other does, with ``workers x envs-per-worker``
episodes in flight (enough that a worker always has an env to step while its
other episodes wait for the agent).

``--unequal`` runs the same three settings with episodes of unequal length:
answers of 50-2,000 tokens (the call costs ``a + b_tok * tokens`` summed over its
requests, a server's per-token cost) and plans of 1-30 actions, drawn per
episode and call from a seeded RNG; the bound is computed from the drawn totals.
A lockstep round waits for its longest plan; pipelined, nothing waits for a round.

Throughput is measured from the first agent call to the last record (the worker
processes' start-up is left out, on both sides).

    python benchmarks/pipeline.py                 # equal lengths
    python benchmarks/pipeline.py --unequal       # unequal answers and plans

The last line reads ``worst fraction of the bound: 0.NN`` (pipelined, the
minimum over the settings). Figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

from harness.interfaces import AgentRequest  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.types import INFO_SUCCESS, EpisodeSpec, RunSpec  # noqa: E402

TOKENS = (50, 2000)
PLAN = (1, 30)


def _draws(seed: int, call: int) -> tuple[int, int]:
    """(answer tokens, plan length) of an episode's call, for --unequal."""
    rng = random.Random(f"{seed}|{call}")
    return rng.randint(*TOKENS), rng.randint(*PLAN)


@dataclass(frozen=True)
class Workload:
    calls: int
    plan: int
    a: float
    b: float
    s: float
    unequal: bool = False

    def tokens_and_plan(self, seed: int, call: int) -> tuple[int, int]:
        return _draws(seed, call) if self.unequal else (0, self.plan)


class SleepEnv:
    """An episode of ``calls`` plans; each step sleeps ``s``; the episode ends when its
    last plan has run."""

    def __init__(self, work: Workload):
        self.work = work

    def reset(self, *, seed=None, options=None):
        self.seed, self.call, self.left = int(seed), 0, 0
        return {"call": 0}, {}

    def step(self, action):
        time.sleep(self.work.s)
        if self.left == 0:  # the first step of a new plan
            self.left = self.work.tokens_and_plan(self.seed, self.call)[1]
            self.call += 1
        self.left -= 1
        done = self.left == 0 and self.call == self.work.calls
        return {"call": self.call}, 0.0, done, False, {INFO_SUCCESS: done}

    def close(self):
        pass


@dataclass(frozen=True)
class SleepEnvFactory:
    work: Workload

    def __call__(self) -> SleepEnv:
        return SleepEnv(self.work)


class SleepSuite:
    name, version = "sleep", "1"

    def __init__(self, work: Workload, episodes: int):
        self.work, self.n = work, episodes

    def protocol(self, split):
        return {}

    def splits(self):
        return ["all"]

    def episodes(self, split):
        return [EpisodeSpec(suite="sleep", split="all", episode_id=f"e{i}", seed=i, instruction="")
                for i in range(self.n)]

    def make_env(self):
        return SleepEnv(self.work)


class SleepAgent:
    """A batched call costs ``a + b * n`` (equal) or ``a + b * tokens`` (unequal)."""

    name, privileged, reads_images = "sleep", False, False

    def __init__(self, work: Workload):
        self.work = work
        self.first_call: float | None = None

    def identity(self):
        return {}

    def reset(self, episode):
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[list[int]]:
        self.first_call = self.first_call or time.perf_counter()
        plans, cost = [], self.work.a
        for r in requests:
            tokens, plan = self.work.tokens_and_plan(r.episode.seed, r.observation["call"])
            cost += self.work.b * (tokens if self.work.unequal else 1)
            plans.append([0] * plan)
        time.sleep(cost)
        return plans


def bound(work: Workload, episodes: int, batch: int, workers: int) -> float:
    """The ideal episodes/s: the busier side working without a pause, full batches."""
    agent = env = 0.0
    for seed in range(episodes):
        for call in range(work.calls):
            tokens, plan = work.tokens_and_plan(seed, call)
            agent += work.a / batch + work.b * (tokens if work.unequal else 1)
            env += plan * work.s
    return episodes / max(agent, env / workers)


def measure(work: Workload, episodes: int, batch: int, workers: int, envs_per_worker: int, pipeline: bool) -> float:
    agent = SleepAgent(work)
    spec = RunSpec(suite="sleep", split="all", agent="sleep", variant="bench", executor="process",
                   num_workers=workers, envs_per_worker=envs_per_worker, batch_size=batch, pipeline=pipeline)
    stamps: list[float] = []
    Runner(spec, SleepSuite(work, episodes), agent, None, env_factory=SleepEnvFactory(work),
           on_record=lambda r: stamps.append(time.perf_counter())).run()
    return len(stamps) / (stamps[-1] - agent.first_call)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=96)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--envs-per-worker", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4, help="requests per agent call (executor.batch_size)")
    ap.add_argument("--calls", type=int, default=8, help="agent calls per episode")
    ap.add_argument("--plan", type=int, default=5, help="actions per plan (equal lengths)")
    ap.add_argument("--a", type=float, default=0.020, help="fixed cost of an agent call (s)")
    ap.add_argument("--b", type=float, default=0.005, help="cost per request (s), or per 1000 tokens with --unequal")
    ap.add_argument("--unequal", action="store_true")
    args = ap.parse_args()

    b = args.b / 1000 if args.unequal else args.b
    mean_tokens, mean_plan = (sum(TOKENS) / 2, sum(PLAN) / 2) if args.unequal else (1, args.plan)
    agent_per_call = args.a / args.batch + b * mean_tokens  # the agent's time per episode and call
    worst = 1.0
    print(f"{args.episodes} episodes x {args.calls} calls, {args.workers} workers x {args.envs_per_worker} envs, "
          f"batch {args.batch}, a={args.a * 1e3:g} ms, b={args.b * 1e3:g} ms"
          f"{' per 1000 tokens, answers 50-2000 tokens, plans 1-30 actions' if args.unequal else ''}")
    for setting, env_over_agent in (("agent-bound", 0.5), ("env-bound", 2.0), ("balanced", 1.0)):
        # the step cost that makes (env time per episode / workers) = env_over_agent * agent time
        s = env_over_agent * agent_per_call * args.workers / mean_plan
        work = Workload(args.calls, args.plan, args.a, b, s, args.unequal)
        ideal = bound(work, args.episodes, args.batch, args.workers)
        piped = measure(work, args.episodes, args.batch, args.workers, args.envs_per_worker, True) / ideal
        # lockstep with as many episodes in flight as one call takes (its own setting: a call
        # serves every episode in flight); more in flight would give it bigger batches than the bound's
        lock = measure(work, args.episodes, args.batch, args.workers, max(1, args.batch // args.workers), False) / ideal
        worst = min(worst, piped)
        print(f"{setting:12s} step {s * 1e3:6.2f} ms  bound {ideal:6.2f} episodes/s  "
              f"pipelined {piped:.2f} of the bound  lockstep {lock:.2f}", flush=True)
    print(f"worst fraction of the bound: {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
