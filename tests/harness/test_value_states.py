"""One meaning per state of a per-episode value, from the env to the cell (docs/tables.md, "What
a value can be"): a number is a *value*; None from the env is *missing* (counted as the metric's
``missing`` value); NaN, an infinity or text where a declared metric reads a value is *not
delivered* (an env error record naming the suite and the metric, harness.run.record_checks); a ratio
keeps ``lo * weight <= value <= hi * weight`` per episode; the built-in metrics declare the
ranges their values really take."""

from __future__ import annotations

import math

import pytest

from harness.interfaces import AgentReply
from harness.judging.stage import unanswered
from harness.metric_declaration import Metric, not_delivered, value_problems
from harness.run.runner import Runner
from harness.scoring.policy import aggregate, record_metrics, tally, value_rows
from harness.store import ResultStore
from harness.types import INFO_VALUES, RunSpec
from tests.harness.test_conformance import _example


def _run(S, tmp_path, agent=None, limit=3):
    from example_suite.agents import ExampleOracle

    spec = RunSpec(suite="example", split="test", agent="oracle", variant="v", limit=limit)
    with ResultStore(tmp_path / "store") as store:
        Runner(spec, S.ExampleSuite(), agent or ExampleOracle(), store).run()
        return store.records(), store.frame()


def _deliver(S, monkeypatch, closeness):
    original = S.NumberLineEnv._info

    def info(self, **kw):
        out = original(self, **kw)
        out[INFO_VALUES] = {"closeness": closeness}
        return out

    monkeypatch.setattr(S.NumberLineEnv, "_info", info)


@pytest.mark.parametrize("bad", [math.nan, math.inf, "near"], ids=["NaN", "infinity", "text"])
def test_a_declared_value_that_is_not_a_number_is_not_delivered(monkeypatch, tmp_path, bad):
    S = _example()
    _deliver(S, monkeypatch, bad)
    records, frame = _run(S, tmp_path)
    assert {r.error_kind for r in records} == {"env"}
    assert all(f"suite example: metric 'closeness' value 'closeness' is {bad!r}, not a number: not delivered"
               in r.error_message for r in records)
    assert all(r.values["closeness"] is None for r in records)
    from example_suite.plugin import METRICS

    closeness = next(m for m in METRICS if m.name == "closeness")
    t = tally(closeness, value_rows(frame))  # errors: counted as the metric's missing value (0)
    assert (t.n, t.valued, t.missing, t.unscored) == (3, 0, 3, 0)


def test_none_from_the_env_is_missing_not_an_error(monkeypatch, tmp_path):
    S = _example()
    _deliver(S, monkeypatch, None)
    records, frame = _run(S, tmp_path)
    assert all(r.error_kind is None and r.values["closeness"] is None for r in records)
    from example_suite.plugin import METRICS

    closeness = next(m for m in METRICS if m.name == "closeness")
    assert aggregate(closeness, value_rows(frame)) == 0.0  # counted, as its missing value


def test_not_delivered_names_values_weights_and_applies_once():
    hit = Metric("hit", "Hit", "hits", aggregation="ratio", weight="tries", applies="asked")
    also = Metric("rate", "Rate", "tries")
    found = not_delivered("qa", [hit, also], {"hits": 1, "tries": math.nan, "asked": "yes", "other": math.nan})
    assert [k for k, _ in found] == ["tries", "asked"]  # 'other' is no metric's; 'tries' named once
    assert found[0][1] == ("suite qa: metric 'hit' weight 'tries' is nan, not a number: not delivered (an env gives "
                           "a finite number, or None for no value)")
    assert not_delivered("qa", [hit], {"hits": None, "tries": True, "asked": 1}) == []


@pytest.mark.parametrize("hits, tries, broken", [
    (2, 1, "hits"), (1, 1, None), (0, 0, None), (1, 0, "hits"), (-1, 2, "hits"), (1, -1, "tries"), (0.5, 2, None),
])
def test_a_ratio_keeps_its_declared_range_per_episode(hits, tries, broken):
    ratio = Metric("hit", "Hit", "hits", aggregation="ratio", weight="tries")
    found = value_problems("qa", [ratio], {"hits": hits, "tries": tries})
    assert [k for k, _ in found] == ([broken] if broken else [])


def test_a_ratio_over_range_names_its_rule():
    ratio = Metric("hit", "Hit", "hits", aggregation="ratio", weight="tries", range=(0.0, 2.0))
    [(key, message)] = value_problems("qa", [ratio], {"hits": 5, "tries": 2})
    assert message == ("suite qa: metric 'hit' value 'hits' 5 over weight 'tries' 2 is outside its declared range "
                       "[0, 2] (a ratio's value must be within lo * weight .. hi * weight)")
    assert value_problems("qa", [ratio], {"hits": 4, "tries": 2}) == []
    unbounded = Metric("per", "Per", "hits", aggregation="ratio", weight="tries", range=(0.0, math.inf))
    assert value_problems("qa", [unbounded], {"hits": 7, "tries": 0}) == []


def test_record_metrics_declare_the_ranges_their_values_take():
    """invalid_rate: an unusable output counts an invalid action and takes no step (harness.interfaces.
    InvalidOutput), so invalid actions may outnumber steps; the others are shares in [0, 1]."""
    ranges = {m.name: tuple(m.range) for m in record_metrics()}
    assert ranges["invalid_rate"] == (0.0, math.inf)
    assert all(r == (0.0, 1.0) for name, r in ranges.items() if name != "invalid_rate")


class _Unusable:
    """A planner whose every reply is unusable: invalid actions, no step taken."""

    name, privileged, reads_images = "unusable", False, False

    def identity(self):
        return {"agent": "unusable"}

    def reset(self, episode):
        pass

    def act(self, requests):
        return [AgentReply((), raw_output="{not json", output_error="unusable") for _ in requests]


def test_more_invalid_actions_than_steps_is_a_value_not_an_error(tmp_path):
    records, frame = _run(_example(), tmp_path, _Unusable(), limit=2)
    assert all(r.error_kind is None and r.steps == 0 and r.invalid_actions == 5 for r in records)
    invalid_rate = record_metrics("invalid_rate")[0]
    assert math.isnan(aggregate(invalid_rate, value_rows(frame)))  # 10 invalid over 0 steps: no rate


def test_a_unit_no_record_states_is_never_printed_as_nan():
    """pandas gives a missing unit as NaN: tables name it 'unstated' (or no unit), never 'nan'."""
    from harness.tables.build import breakdown_table
    from harness.tables.render import to_markdown
    from tests.harness.test_tables import plw_frame

    df = plw_frame()
    df["expert_length_unit"] = [math.nan if v == "thor" else u for v, u in zip(df["variant"], df["expert_length_unit"])]
    md = to_markdown(breakdown_table(df, by="split", metrics=("plw_sr",)))
    assert "nan" not in md.lower() and "| thor PLW SR |" in md
    df.loc[df["variant"] == "base", "expert_length_unit"] = math.nan
    df.loc[(df["variant"] == "thor") & (df["split"] == "valid_seen"), "expert_length_unit"] = "steps"
    md = to_markdown(breakdown_table(df, by="split", metrics=("plw_sr",)))
    assert "nan" not in md.lower() and "alfred/eb_valid_seen: unstated" in md


def test_an_answer_its_env_marks_as_none_is_unanswered():
    judged = {"judge_score"}
    assert unanswered(None, {"answer": "x"}, {"judge_score": None}, judged)
    assert unanswered("env", {"answer": "x"}, {}, judged) and unanswered(None, {"answer": " "}, {}, judged)
    assert not unanswered(None, {"answer": "x"}, {}, judged)  # not judged yet: unscored, not missing
    assert not unanswered(None, {"answer": "x"}, {"judge_score": 3.0, "iou": None}, judged)
    assert not unanswered(float("nan"), {"answer": "x"}, {}, judged)  # pandas' missing error kind


def test_a_judged_value_marked_none_counts_as_missing():
    j = Metric("j", "J", "judge_score", range=(0.0, 5.0), judged=True)
    rows = [{"judge_score": 4.0}, {"judge_score": None}, {}]
    t = tally(j, rows)
    assert (t.valued, t.missing, t.unscored) == (1, 1, 1) and aggregate(j, rows) == pytest.approx(2.0)
