"""Oracle and random planners, driven on the EB-ALFRED env in a simple loop."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envs.eb_alfred.suite import EBAlfredSuite
from harness.interfaces import Agent, AgentRequest
from harness.types import INFO_ACTION_OK, INFO_SUCCESS
from planners.oracle import OraclePlanner
from planners.random_planner import RandomPlanner

REPO_ROOT = Path(__file__).resolve().parents[2]


def _data_dir() -> Path | None:
    env = os.environ.get("EB_ALFRED_DATA_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "eb_alfred"
    return path if (path / "splits" / "splits.json").is_file() else None


def run_episode(env, agent, episode) -> dict:
    """Reset, then ask the agent and execute its plans open-loop until the episode ends."""
    obs, info = env.reset(seed=episode.seed, options={"episode": episode, "privileged": agent.privileged})
    agent.reset(episode)
    history: list[tuple[str, str]] = []
    done = False
    while not done:
        plan = agent.act([AgentRequest(episode, obs, info, tuple(history))])[0]
        if not plan:
            break
        for action in plan:
            obs, _, terminated, truncated, info = env.step(action)
            history.append((action, info["feedback"]))
            done = terminated or truncated
            if done or not info[INFO_ACTION_OK]:
                break
    return info


def test_planners_satisfy_the_agent_protocol() -> None:
    for agent in (OraclePlanner(), RandomPlanner(seed=1)):
        assert isinstance(agent, Agent)
    assert OraclePlanner.privileged and not RandomPlanner.privileged
    assert RandomPlanner(seed=1).identity() != RandomPlanner(seed=2).identity()


@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_solves_generated_sample(split: str) -> None:
    suite = EBAlfredSuite(data_dir=None, render=False, generated_per_split=14)
    env = suite.make_env()
    oracle = OraclePlanner()
    for episode in suite.episodes(split):
        info = run_episode(env, oracle, episode)
        assert info[INFO_SUCCESS], episode.episode_id
        assert info["env_steps"] == info["expert_length"]


def test_oracle_solves_official_sample() -> None:
    data = _data_dir()
    if data is None:
        pytest.skip("EB-ALFRED data not found (EB_ALFRED_DATA_DIR or ../shared/data/eb_alfred)")
    suite = EBAlfredSuite(data_dir=str(data), render=False, generated_per_split=0)
    env = suite.make_env()
    for split in suite.splits()[:6]:
        for episode in list(suite.episodes(split))[::10]:
            assert run_episode(env, OraclePlanner(), episode)[INFO_SUCCESS], episode.episode_id


def test_oracle_replans_after_a_disturbance() -> None:
    suite = EBAlfredSuite(render=False, generated_per_split=6)
    env = suite.make_env()
    episode = suite.episodes("seen")[0]
    oracle = OraclePlanner()
    obs, info = env.reset(seed=episode.seed, options={"episode": episode, "privileged": True})
    oracle.reset(episode)
    first = oracle.act([AgentRequest(episode, obs, info)])[0]
    # Execute half the plan plus a stray action, then ask again from the new state.
    for action in list(first[: len(first) // 2]) + ["drop the object in hand"]:
        obs, _, term, trunc, info = env.step(action)
    assert not (term or trunc)
    for _ in range(5):
        plan = oracle.act([AgentRequest(episode, obs, info)])[0]
        for action in plan:
            obs, _, term, trunc, info = env.step(action)
            if term or trunc or not info[INFO_ACTION_OK]:
                break
        if term or trunc:
            break
    assert info[INFO_SUCCESS]


def test_oracle_needs_privileged_state() -> None:
    suite = EBAlfredSuite(render=False, generated_per_split=1)
    env = suite.make_env()
    episode = suite.episodes("seen")[0]
    obs, info = env.reset(seed=episode.seed, options={"episode": episode})
    with pytest.raises(ValueError, match="privileged"):
        OraclePlanner().act([AgentRequest(episode, obs, info)])


def test_random_planner_is_seeded_and_uses_the_action_list() -> None:
    suite = EBAlfredSuite(render=False, generated_per_split=2)
    env = suite.make_env()
    episode = suite.episodes("unseen")[0]
    obs, info = env.reset(seed=episode.seed, options={"episode": episode})

    def actions(seed: int) -> list[str]:
        agent = RandomPlanner(seed=seed)
        agent.reset(episode)
        out = []
        for _ in range(8):
            (plan,) = agent.act([AgentRequest(episode, obs, info)])
            assert len(plan) == 1 and plan[0] in obs["actions"]
            out.append(plan[0])
        return out

    assert actions(0) == actions(0)
    assert actions(0) != actions(1)
    result = run_episode(env, RandomPlanner(seed=0), episode)
    assert result["termination"] in {"success", "max_steps", "max_invalid"}


def _sr(suite: EBAlfredSuite, split: str, agent) -> tuple[int, int]:
    env = suite.make_env()
    episodes = suite.episodes(split)
    return sum(bool(run_episode(env, agent, e)[INFO_SUCCESS]) for e in episodes), len(episodes)


@pytest.mark.slow
def test_oracle_solves_all_official_and_generated_episodes() -> None:
    """Oracle SR must be 100% on the 300 official and 500 generated episodes per split."""
    data = _data_dir()
    suite = EBAlfredSuite(data_dir=str(data) if data else None, render=False, generated_per_split=500)
    splits = list(suite.splits()) if data else ["seen", "unseen"]
    results = {split: _sr(suite, split, OraclePlanner()) for split in splits}
    print("oracle SR:", results)
    for split, (ok, n) in results.items():
        assert ok == n, (split, ok, n)


@pytest.mark.slow
def test_random_planner_baseline_on_generated_splits() -> None:
    suite = EBAlfredSuite(render=False, generated_per_split=500)
    results = {split: _sr(suite, split, RandomPlanner(seed=0)) for split in ("seen", "unseen")}
    print("random SR:", results)
    for ok, n in results.values():
        assert n == 500 and ok < n * 0.1


def test_episode_cache_is_bounded_and_lru() -> None:
    from planners.episode_cache import EpisodeCache

    cache: EpisodeCache[int] = EpisodeCache(capacity=3)
    for i in range(3):
        cache.get(i, lambda i=i: i * 10)
    assert cache.get(0, lambda: -1) == 0  # 0 becomes most recent
    cache.get(3, lambda: 30)  # evicts 1, the least recently used
    assert len(cache) == 3
    assert cache.get(1, lambda: -1) == -1
    assert cache.get(0, lambda: -1) == 0
