"""Oracle and random sweeps over the fixed evaluation set (the figures in docs/eb_manipulation.md).

    python -m envs.eb_manipulation.sweeps oracle [--dz 2] [--dyaw 15] [--subsets base spatial]
    python -m envs.eb_manipulation.sweeps random [--subsets ...]
    python -m envs.eb_manipulation.sweeps spread [--subsets base spatial]   # object bins at the start

``spread`` prints the X / Y bins of every object in the first observation's coordinate dictionary
over the scenes, beside the same over the distinct scenes of EmbodiedBench's own examples
(``evaluator/config/eb_manipulation_example.py``) when ``EMBODIEDBENCH_DIR`` names a checkout.

``--dz`` raises every Z bin of the oracle's actions, ``--dyaw`` turns every yaw bin (15 bins =
45 degrees): how forgiving the grasp rule is to pose errors. common_sense, complex and visual
reuse base's scenes, so for an agent that ignores the instruction (these two) their results
equal base's; ``--subsets base spatial`` covers the 96 distinct scenes.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
from pathlib import Path
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


def scene_bins(subsets: Iterable[str]) -> list[list[int]]:
    """The [X, Y, Z] bins of every object the first observation lists, over the distinct scenes."""
    out, seen = [], set()
    for subset in subsets:
        for spec in E.episodes(subset):
            if spec.metadata["scene_id"] in seen:
                continue
            seen.add(spec.metadata["scene_id"])
            env = EBManipulationEnv(render=False)
            obs, _ = env.reset(seed=spec.seed, options={"episode": spec})
            out.extend(obs["object_coordinates"].values())
            env.close()
    return out


_COORD = re.compile(r"'object \d+': \[(\d+), (\d+), (\d+)\]")


def original_example_bins(root: str | os.PathLike) -> list[list[int]]:
    """The [X, Y, Z] bins of the objects of each distinct scene in EmbodiedBench's examples
    (the same dictionary appears at every step of an example: counted once)."""
    from envs.eb_manipulation.prompt import load_examples

    path = Path(root) / "embodiedbench" / "evaluator" / "config" / "eb_manipulation_example.py"
    out, seen = [], set()
    for texts in load_examples(path).values():
        for text in texts:
            for line in text.splitlines():
                scene = tuple(tuple(int(v) for v in m) for m in _COORD.findall(line))
                if scene and scene not in seen:
                    seen.add(scene)
                    out.extend(list(b) for b in scene)
    return out


def spread_line(name: str, bins: Sequence[Sequence[int]]) -> str:
    xs, ys = [b[0] for b in bins], [b[1] for b in bins]
    return (f"{name}: {len(bins)} objects; X {min(xs)}-{max(xs)} mean {statistics.mean(xs):.1f} "
            f"sd {statistics.pstdev(xs):.1f}; Y {min(ys)}-{max(ys)} mean {statistics.mean(ys):.1f} "
            f"sd {statistics.pstdev(ys):.1f}")


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("agent", choices=("oracle", "random", "spread"))
    p.add_argument("--dz", type=int, default=0)
    p.add_argument("--dyaw", type=int, default=0)
    p.add_argument("--subsets", nargs="+", default=list(E.SUBSETS), choices=E.SUBSETS)
    args = p.parse_args(argv)
    if args.agent == "spread":
        print(spread_line(f"twin ({' '.join(args.subsets)}, distinct scenes)", scene_bins(args.subsets)))
        root = os.environ.get("EMBODIEDBENCH_DIR")
        if root:
            print(spread_line("EmbodiedBench examples (distinct scenes)", original_example_bins(root)))
    elif args.agent == "oracle":
        ok, total, ids = oracle_sweep(args.subsets, args.dz, args.dyaw)
        print(f"oracle dz={args.dz} dyaw={args.dyaw}: {ok}/{total}; failed: {ids}")
    else:
        ok, total, ids = random_sweep(args.subsets)
        print(f"random: {ok}/{total}; succeeded: {ids}")


if __name__ == "__main__":
    main()
