"""The oracle re-emitted as model JSON through the real parser scores what the oracle scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envs.eb_alfred.suite import EBAlfredSuite
from harness.run.runner import Runner
from harness.types import RunSpec
from envs.eb_alfred.oracle_json import OracleJSONPlanner, plan_to_output
from envs.eb_alfred.parse import parse_plan


def run(suite: EBAlfredSuite, split: str, agent, limit: int | None = None):
    spec = RunSpec(suite=suite.name, split=split, agent=agent.name, variant=agent.name, limit=limit)
    return Runner(spec, suite, agent, None).run().records


def test_plan_round_trips_through_the_parser() -> None:
    actions = ["find a Apple", "pick up the Apple", "find a Cabinet_2"]
    text = plan_to_output(["find a Cabinet_2", "pick up the Apple"], actions, "x")
    assert json.loads(text)["executable_plan"][0] == {"action_id": 2, "action_name": "find a Cabinet_2"}
    for mode in ("embodiedbench", "lenient"):
        assert parse_plan(text, actions, mode).actions == [2, 1]


@pytest.mark.parametrize("parser", ["embodiedbench", "lenient"])
def test_oracle_json_solves_generated_sample(parser: str) -> None:
    suite = EBAlfredSuite(render=False, generated_per_split=12)
    records = run(suite, "seen", OracleJSONPlanner(parser=parser))
    assert len(records) == 12
    for r in records:
        assert r.success and r.error_kind is None and r.planner_output_errors == 0, r.episode_id
        assert r.steps == r.expert_length


@pytest.mark.slow
@pytest.mark.ci
def test_oracle_json_solves_all_300_official_episodes(data_dir: Path) -> None:
    """SR 100 % on EB-ALFRED's 300 episodes with every plan written as JSON text and parsed back."""
    suite = EBAlfredSuite(data_dir=str(data_dir), render=False, generated_per_split=0)
    records = [r for split in suite.splits()[:6] for r in run(suite, split, OracleJSONPlanner())]
    assert len(records) == 300
    failures = [(r.split, r.episode_id, r.termination, r.error_message) for r in records if not r.success]
    assert not failures
    assert sum(r.planner_output_errors for r in records) == 0
