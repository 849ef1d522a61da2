"""Measurements behind docs/eb_alfred.md's put-counter row (household backend, official subsets).

    python -m envs.eb_alfred.sweeps put-counter [--forget 0.0 0.5 1.0] [--subsets base ...]

EmbodiedBench counts put attempts per receptacle name in a dictionary that lives as long as
its ``ThorConnector`` (thor_connector.py:32, :97-100 at commit
b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04), i.e. for a whole subset: the evaluator makes one
env per subset (eb_alfred_evaluator.py:53-58) and nothing resets the counter. From the third put
on a name, a failed put also drops the object (:105-109). The name is what follows ``find a``
after EBAlfEnv.step's mapping (EBAlfEnv.py:304-307): the type (``Fridge``) when the scene has one
instance, else that instance's AI2-THOR id. Here the counter lives per episode (so an episode's
result never depends on the episodes run before it).

This sweep runs each subset's 50 episodes in the subset's order twice, once with our per-episode
counter and once with a counter shared over the subset (keyed as EmbodiedBench keys it: the type
for a single-instance type; for several instances, the instance within its floor plan, standing
in for the AI2-THOR id), and prints what changes: successes, env steps, failed puts, drops.

The agent is the privileged oracle (a plan from the true state, replanned after a failed action,
as the runner does). ``--forget p`` makes it a forgetful oracle: each ``open the X`` of each plan
is left out with probability p (a seeded draw per episode, decision and step, the same for both
counters), so puts into closed receptacles fail and the agent recovers from the feedback, as a
model that forgets to open the Fridge would.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Hashable, Iterator, Sequence

from envs.eb_alfred.env import EBAlfredEnv
from envs.eb_alfred.episodes import load_official, resolve_data_dir
from envs.eb_alfred.executor import ExecutorState, SkillExecutor
from envs.eb_alfred.expert import expert_plan
from envs.eb_alfred.protocol import OFFICIAL_SPLITS
from envs.eb_alfred.skills import OPEN, PUT, parse_skill
from harness.types import INFO_ACTION_OK, INFO_FEEDBACK, INFO_PRIVILEGED, EpisodeSpec

#: What EmbodiedBench appends when a failed put drops the object (thor_connector.py:108).
DROPPED = "The robot dropped the object instead."
SCOPES = ("episode", "subset")


class SubsetCounts(MutableMapping):
    """``ExecutorState.put_counts`` for one episode, backed by a dictionary shared over a subset
    and keyed by the name EmbodiedBench would have found the receptacle by."""

    def __init__(self, shared: dict[Hashable, int], executor: SkillExecutor, floor_plan: int) -> None:
        self.shared, self.executor, self.floor_plan = shared, executor, floor_plan

    def _key(self, recep: str) -> Hashable:
        world = self.executor.world
        rtype = world.objects[recep].type
        instances = sum(1 for o in world.objects.values() if o.type == rtype and not o.is_piece)
        return rtype if instances == 1 else (self.floor_plan, recep)

    def __getitem__(self, recep: str) -> int:
        return self.shared[self._key(recep)]

    def __setitem__(self, recep: str, value: int) -> None:
        self.shared[self._key(recep)] = value

    def __delitem__(self, recep: str) -> None:
        del self.shared[self._key(recep)]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.shared)

    def __len__(self) -> int:
        return len(self.shared)


@dataclass
class Outcome:
    success: bool
    steps: int
    failed_puts: int
    drops: int


def _plan(info: dict, env: EBAlfredEnv, rng: random.Random, forget: float) -> list[str]:
    world = info[INFO_PRIVILEGED]
    executor = SkillExecutor(world.copy(), env._executor.vocab, ExecutorState())
    plan = expert_plan(executor, world.task) or []
    return [a for a in plan if parse_skill(a).verb != OPEN or rng.random() >= forget]


def run_episode(env: EBAlfredEnv, spec: EpisodeSpec, forget: float, shared: dict | None) -> Outcome:
    """One episode; ``shared`` is the subset's counter (None: a fresh one per episode)."""
    _, info = env.reset(seed=spec.seed, options={"episode": spec, "privileged": True, "render": False})
    if shared is not None:
        env._executor.state.put_counts = SubsetCounts(shared, env._executor, int(spec.metadata["floor_plan"]))
    rng = random.Random(f"{spec.episode_id}/forget")
    steps = failed_puts = drops = 0
    done = False
    while not done:
        plan = _plan(info, env, rng, forget)
        if not plan:
            break
        for action in plan:
            _, _, terminated, truncated, info = env.step(action)
            steps += 1
            if parse_skill(action).verb == PUT and not info[INFO_ACTION_OK]:
                failed_puts += 1
                drops += DROPPED in info[INFO_FEEDBACK]
            done = terminated or truncated
            if done or not info[INFO_ACTION_OK]:
                break
    return Outcome(bool(info["success"]), steps, failed_puts, drops)


def put_counter(subsets: Sequence[str], forget: float) -> dict[str, dict[str, list[Outcome]]]:
    """{scope: {subset: [outcome per episode, in the subset's order]}}."""
    official = load_official(resolve_data_dir(None))
    env = EBAlfredEnv(render_images=False)
    out: dict[str, dict[str, list[Outcome]]] = {s: {} for s in SCOPES}
    for subset in subsets:
        for scope in SCOPES:
            shared: dict | None = {} if scope == "subset" else None
            out[scope][subset] = [run_episode(env, spec, forget, shared) for spec in official[subset]]
    return out


def _report(subsets: Sequence[str], forget: float) -> None:
    res = put_counter(subsets, forget)
    print(f"forget={forget}: per subset, counter per episode (ours) vs per subset (EmbodiedBench)")
    print("subset               SR ours  SR subset  steps ours  steps subset  failed puts  drops ours  drops subset"
          "  episodes changed")
    totals = [0] * 8
    for subset in subsets:
        a, b = res["episode"][subset], res["subset"][subset]
        row = [sum(o.success for o in a), sum(o.success for o in b), sum(o.steps for o in a),
               sum(o.steps for o in b), sum(o.failed_puts for o in a), sum(o.drops for o in a),
               sum(o.drops for o in b), sum((x.success, x.steps) != (y.success, y.steps) for x, y in zip(a, b))]
        totals = [t + r for t, r in zip(totals, row)]
        print(f"{subset:20s} {row[0]:7d} {row[1]:10d} {row[2]:11d} {row[3]:13d} {row[4]:12d} {row[5]:11d} "
              f"{row[6]:13d} {row[7]:17d}")
    t = totals
    print(f"{'all':20s} {t[0]:7d} {t[1]:10d} {t[2]:11d} {t[3]:13d} {t[4]:12d} {t[5]:11d} {t[6]:13d} {t[7]:17d}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m envs.eb_alfred.sweeps", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pc = sub.add_parser("put-counter", help="per-episode vs per-subset put counter")
    pc.add_argument("--forget", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    pc.add_argument("--subsets", nargs="+", default=list(OFFICIAL_SPLITS), choices=OFFICIAL_SPLITS)
    args = ap.parse_args(argv)
    for p in args.forget:
        _report(args.subsets, p)


if __name__ == "__main__":
    main()
