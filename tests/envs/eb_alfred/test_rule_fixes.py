"""The household rule fixes as EB-ALFRED's expert sees them (suite 1.1.0)."""

from __future__ import annotations

from envs.eb_alfred.expert import plan_from_world
from envs.eb_alfred.suite import EBAlfredSuite
from envs.household import build_world
from envs.eb_alfred.episodes import task_from_metadata


def _episodes(task_type: str, n: int = 60):
    suite = EBAlfredSuite(render=False, generated_per_split=n)
    return [e for e in suite.episodes("seen") if e.metadata["task_type"] == task_type]


def test_expert_closes_the_microwave_before_turning_it_on() -> None:
    episodes = _episodes("pick_heat_then_place_in_recep")
    assert episodes
    for ep in episodes:
        task = task_from_metadata(ep.metadata)
        plan = plan_from_world(build_world(ep.metadata["floor_plan"], ep.seed, task), task)
        assert plan is not None
        on = plan.index("turn on the Microwave")
        assert "close the Microwave" in plan[:on], plan
        closes = [i for i, a in enumerate(plan[:on]) if a == "close the Microwave"]
        opens = [i for i, a in enumerate(plan[:on]) if a == "open the Microwave"]
        assert max(closes) > max(opens, default=-1), plan
        # The generated episode's recorded expert length is this plan's length.
        assert ep.metadata["expert_length"] == len(plan)


def test_sliced_tasks_still_solvable_with_the_whole_kept() -> None:
    suite = EBAlfredSuite(render=False, generated_per_split=80)
    sliced = [e for e in suite.episodes("seen") if e.metadata["pddl_params"]["object_sliced"]]
    assert sliced
    for ep in sliced:
        task = task_from_metadata(ep.metadata)
        world = build_world(ep.metadata["floor_plan"], ep.seed, task)
        plan = plan_from_world(world, task)
        assert plan is not None and any(a.startswith("slice the") for a in plan)
