"""What a suite declares is enforced where records are made: the runner turns an episode whose
record breaks its suite's metric declarations or the record's invariants into an error record
naming the suite and the rule (harness.run.record_checks), so no table shows such a value."""

from __future__ import annotations

import math


from harness.metric_declaration import Metric, value_problems
from harness.run.runner import Runner
from harness.scoring.policy import aggregate, value_rows
from harness.store import ResultStore
from harness.types import INFO_GC_SATISFIED, INFO_VALUES, RunSpec
from tests.harness.check.test_conformance import _example


def _run(S, tmp_path, agent=None):
    from example_suite.agents import ExampleOracle

    spec = RunSpec(suite="example", split="test", agent="oracle", variant="v", limit=3)
    with ResultStore(tmp_path / "store") as store:
        Runner(spec, S.ExampleSuite(), agent or ExampleOracle(), store).run()
        return store.records(), store.frame()


def _patch_info(S, monkeypatch, edit):
    original = S.NumberLineEnv._info

    def info(self, **kw):
        out = original(self, **kw)
        edit(self, out)
        return out

    monkeypatch.setattr(S.NumberLineEnv, "_info", info)


def test_a_value_outside_its_range_is_an_error_record_and_never_a_table_value(monkeypatch, tmp_path):
    S = _example()
    _patch_info(S, monkeypatch, lambda env, i: i.update({INFO_VALUES: {"closeness": 2.0}}))
    records, frame = _run(S, tmp_path)
    assert {r.error_kind for r in records} == {"env"} and not any(r.success for r in records)
    assert all("suite example: metric 'closeness' value 2 is outside its declared range [0, 1]" in r.error_message
               for r in records)
    assert all(r.values["closeness"] is None for r in records)  # the broken value is not kept
    from example_suite.plugin import METRICS

    closeness = next(m for m in METRICS if m.name == "closeness")
    cell = aggregate(closeness, value_rows(frame))
    assert math.isnan(cell) or 0.0 <= cell <= 1.0


def test_a_declared_value_the_env_never_delivers_is_an_error_record(monkeypatch, tmp_path):
    S = _example()
    _patch_info(S, monkeypatch, lambda env, i: i.pop(INFO_VALUES))
    records, _ = _run(S, tmp_path)
    assert all(r.error_kind == "env" and "metric 'closeness' applies but the episode ended without its value "
               "'closeness'" in r.error_message for r in records)


def test_goal_conditions_above_the_total_are_an_error_record(monkeypatch, tmp_path):
    S = _example()
    _patch_info(S, monkeypatch, lambda env, i: i.update({INFO_GC_SATISFIED: 3}))
    records, _ = _run(S, tmp_path)
    assert all(r.error_kind == "env" and "suite example: gc_satisfied 3 is above gc_total 1" in r.error_message
               for r in records)


def test_the_unchanged_suite_has_no_error_record(tmp_path):
    records, _ = _run(_example(), tmp_path)
    assert len(records) == 3 and all(r.error_kind is None and r.success for r in records)
    assert all(r.values["closeness"] == 1.0 for r in records)


def test_an_episode_the_agent_ended_with_an_empty_plan_owes_no_value(monkeypatch, tmp_path):
    S = _example()
    _patch_info(S, monkeypatch, lambda env, i: i.pop(INFO_VALUES))

    class Empty:
        name, privileged, reads_images = "empty", False, False

        def identity(self):
            return {"agent": "empty"}

        def reset(self, episode):
            pass

        def act(self, requests):
            return [[] for _ in requests]

    records, _ = _run(S, tmp_path, Empty())
    assert all(r.error_kind is None and r.empty_plan for r in records)


def test_value_problems_respects_applies_and_judged():
    acc = Metric("acc", "Acc", "correct", binary=True, applies="multiple_choice")
    judged = Metric("j", "J", "judge_score", range=(0.0, 10.0), judged=True)
    assert value_problems("qa", [acc, judged], {"multiple_choice": 0}) == []  # does not apply; judged later
    assert value_problems("qa", [acc], {"multiple_choice": 1, "correct": None}) == []  # delivered: no value
    [(key, message)] = value_problems("qa", [acc], {"multiple_choice": 1})
    assert key == "correct" and message.startswith("suite qa: metric 'acc' applies but")
    ratio = Metric("hit", "Hit", "hits", aggregation="ratio", weight="tries")
    assert [k for k, _ in value_problems("qa", [ratio], {"hits": -1, "tries": 2})] == ["hits"]
