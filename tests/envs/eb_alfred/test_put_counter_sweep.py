"""The put-counter sweep (envs/eb_alfred/sweeps.py): a counter shared over a subset carries puts
from earlier episodes, as EmbodiedBench's ``put_count_dict`` does (thor_connector.py:32, 97-109 at
b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04); our per-episode counter does not."""

from __future__ import annotations

from pathlib import Path

from envs.eb_alfred.env import EBAlfredEnv
from envs.eb_alfred.episodes import load_official
from envs.eb_alfred.executor import ExecutorState, SkillExecutor
from envs.eb_alfred.expert import expert_plan
from envs.eb_alfred.skills import PUT_DOWN
from envs.eb_alfred.sweeps import DROPPED, SubsetCounts, run_episode
from harness.types import INFO_ACTION_OK, INFO_FEEDBACK, INFO_PRIVILEGED


def _failed_put_into_closed_fridge(data_dir: Path, shared: dict | None) -> str:
    spec = next(e for e in load_official(data_dir)["long_horizon"] if e.episode_id == "long_horizon/05")
    env = EBAlfredEnv(render_images=False)
    _, info = env.reset(seed=spec.seed, options={"episode": spec, "privileged": True})
    if shared is not None:
        env._executor.state.put_counts = SubsetCounts(shared, env._executor, int(spec.metadata["floor_plan"]))
    world = info[INFO_PRIVILEGED]
    plan = expert_plan(SkillExecutor(world.copy(), env._executor.vocab, ExecutorState()), world.task)
    for action in plan[:plan.index("find a Fridge") + 1]:  # carrying the object, facing the closed Fridge
        _, _, _, _, info = env.step(action)
        assert info[INFO_ACTION_OK], action
    _, _, _, _, info = env.step(PUT_DOWN)
    assert not info[INFO_ACTION_OK]
    return info[INFO_FEEDBACK]


def test_a_counter_shared_over_the_subset_drops_on_the_third_fridge_put(data_dir: Path) -> None:
    shared = {"Fridge": 2}  # two Fridge puts in earlier episodes of the subset (a single-instance type)
    assert DROPPED in _failed_put_into_closed_fridge(data_dir, shared)
    assert shared == {"Fridge": 3}
    assert DROPPED not in _failed_put_into_closed_fridge(data_dir, None)  # ours: the first put of the episode


def test_the_oracle_is_unchanged_by_the_counters_scope(data_dir: Path) -> None:
    specs = load_official(data_dir)["long_horizon"][:6]
    env = EBAlfredEnv(render_images=False)
    shared: dict = {}
    ours = [run_episode(env, s, 0.0, None) for s in specs]
    theirs = [run_episode(env, s, 0.0, shared) for s in specs]
    assert ours == theirs and all(o.success and o.failed_puts == 0 for o in ours)
    assert shared  # the puts were counted in the shared dictionary
