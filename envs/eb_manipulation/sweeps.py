"""Oracle and random sweeps over the fixed evaluation set (the figures in docs/eb_manipulation.md).

    python -m envs.eb_manipulation.sweeps oracle [--dz 2] [--dyaw 15] [--subsets base spatial]
    python -m envs.eb_manipulation.sweeps random [--subsets ...]

``--dz`` raises every Z bin of the oracle's actions, ``--dyaw`` turns every yaw bin (15 bins =
45 degrees): how forgiving the grasp rule is to pose errors. common_sense, complex and visual
reuse base's scenes, so for an agent that ignores the instruction (these two) their results
equal base's; ``--subsets base spatial`` covers the 96 distinct scenes.
"""

from __future__ import annotations

import argparse
from typing import Iterable, Sequence

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation.agents import RandomAgent, oracle_plan
from envs.eb_manipulation.env import EBManipulationEnv
from harness.interfaces import AgentRequest
from harness.types import INFO_PRIVILEGED


def _perturb(action: Sequence[int], dz: int, dyaw: int) -> list[int]:
    a = list(action)
    a[2] += dz
    a[5] = (a[5] + dyaw) % 120
    return a


def oracle_sweep(subsets: Iterable[str], dz: int = 0, dyaw: int = 0) -> tuple[int, int, list[str]]:
    """(successes, episodes, failed episode ids) of the oracle with its actions perturbed."""
    ok = total = 0
    failed = []
    for subset in subsets:
        for spec in E.episodes(subset):
            env = EBManipulationEnv(render=False)
            _, info = env.reset(seed=spec.seed, options={"episode": spec, "privileged": True})
            done = False
            while not done:
                for a in oracle_plan(info[INFO_PRIVILEGED]):
                    _, _, term, trunc, info = env.step(_perturb(a, dz, dyaw))
                    if term or trunc:
                        done = True
                        break
            env.close()
            total += 1
            ok += bool(info["success"])
            if not info["success"]:
                failed.append(spec.episode_id)
    return ok, total, failed


def random_sweep(subsets: Iterable[str], seed: int = 0) -> tuple[int, int, list[str]]:
    """(successes, episodes, successful episode ids) of the seeded random agent."""
    agent = RandomAgent(seed=seed)
    ok = total = 0
    won = []
    for subset in subsets:
        for spec in E.episodes(subset):
            env = EBManipulationEnv(render=False)
            obs, info = env.reset(seed=spec.seed, options={"episode": spec})
            agent.reset(spec)
            done = False
            while not done:
                (a,) = agent.act([AgentRequest(spec, obs, info)])[0]
                obs, _, term, trunc, info = env.step(a)
                done = term or trunc
            env.close()
            total += 1
            ok += bool(info["success"])
            if info["success"]:
                won.append(spec.episode_id)
    return ok, total, won


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("agent", choices=("oracle", "random"))
    p.add_argument("--dz", type=int, default=0)
    p.add_argument("--dyaw", type=int, default=0)
    p.add_argument("--subsets", nargs="+", default=list(E.SUBSETS), choices=E.SUBSETS)
    args = p.parse_args(argv)
    if args.agent == "oracle":
        ok, total, ids = oracle_sweep(args.subsets, args.dz, args.dyaw)
        print(f"oracle dz={args.dz} dyaw={args.dyaw}: {ok}/{total}; failed: {ids}")
    else:
        ok, total, ids = random_sweep(args.subsets)
        print(f"random: {ok}/{total}; succeeded: {ids}")


if __name__ == "__main__":
    main()
