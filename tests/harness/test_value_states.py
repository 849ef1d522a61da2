"""One meaning per state of a per-episode value, from the env to the cell (docs/tables.md, "What
a value can be"), each read by one rule (harness.values.read_value): a number is a *value*; None
from the env is *missing* (counted as the metric's ``missing`` value); the marker AWAITS_SCORE is
*unscored*; NaN, an infinity or text where a declared metric reads a value is *not delivered* (an
env error record naming the suite and the metric, harness.run.record_checks; a NaN an in-memory
caller passes a cell counts as that error record's value would, never as unscored); a ratio
keeps ``lo * weight <= value <= hi * weight`` per episode; the built-in metrics declare the
ranges their values really take."""

from __future__ import annotations

import copy
import json
import math
import pickle
from decimal import Decimal

import numpy as np
import pytest

from harness.interfaces import AgentReply
from harness.judging.stage import unanswered
from harness.metric_declaration import Metric, not_delivered, value_problems
from harness.run.record_checks import problems_of
from harness.run.records import episode_values as _episode_values
from harness.run.runner import Runner
from harness.scoring.policy import aggregate, classify, record_metrics, tally, value_rows
from harness.store import ResultStore
from harness.types import INFO_VALUES, EpisodeRecord, RunSpec
from harness.values import AWAITS_SCORE, DELIVERED, ValueState, read_value
from tests.harness.check.test_conformance import _example


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
    from tests.harness.tables.test_tables import plw_frame

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


# --- the one reading rule (harness.values.read_value) -----------------------------------------------

V, M, U, ND = ValueState.VALUE, ValueState.MISSING, ValueState.UNSCORED, ValueState.NOT_DELIVERED


@pytest.mark.parametrize("raw, state, number", [
    (0, V, 0.0), (3, V, 3.0), (0.25, V, 0.25), (True, V, 1.0), (False, V, 0.0), (np.float32(0.5), V, 0.5),
    (np.int64(2), V, 2.0), (Decimal("1.5"), V, 1.5),
    (None, M, None),
    (AWAITS_SCORE, U, None),
    (math.nan, ND, None), (math.inf, ND, None), (-math.inf, ND, None), (np.nan, ND, None), ("near", ND, None),
    ("0.5", ND, None), (b"1", ND, None), ([1], ND, None), ({}, ND, None), (10 ** 400, ND, None),
], ids=repr)
def test_each_state_is_read_by_the_one_rule(raw, state, number):
    assert read_value(raw) == (state, number)


def test_the_unscored_marker_stays_itself_and_is_never_stored():
    assert copy.deepcopy(AWAITS_SCORE) is AWAITS_SCORE and pickle.loads(pickle.dumps(AWAITS_SCORE)) is AWAITS_SCORE
    with pytest.raises(TypeError):
        json.dumps({"judge_score": AWAITS_SCORE})


def test_a_nan_in_a_values_mapping_is_not_unscored():
    """A NaN an in-memory caller puts among a cell's values was not delivered: it counts as an
    error record's value would (the metric's missing value), never as a score still to come;
    only the marker (or a judged value's absence) is unscored."""
    j = Metric("j", "J", "judge_score", range=(0.0, 5.0), judged=True)
    rows = [{"judge_score": 4.0}, {"judge_score": math.nan}, {"judge_score": AWAITS_SCORE}, {}]
    t = tally(j, rows)
    assert (t.n, t.valued, t.missing, t.unscored) == (4, 1, 1, 2)
    assert aggregate(j, rows) == pytest.approx(2.0)  # (4 + 0) / 2: the NaN counts as its missing 0
    left_out = Metric("j", "J", "judge_score", range=(0.0, 5.0), judged=True, missing=None)
    assert tally(left_out, rows).missing == 1 and aggregate(left_out, rows) == 4.0
    assert classify(j, {"judge_score": math.nan})[2] is ValueState.NOT_DELIVERED


def test_the_marker_is_unscored_for_any_metric_and_a_weight():
    plain = Metric("m", "M", "x")
    assert classify(plain, {"x": AWAITS_SCORE})[2] is ValueState.UNSCORED
    ratio = Metric("r", "R", "x", aggregation="ratio", weight="w")
    x, w, state = classify(ratio, {"x": 1.0, "w": AWAITS_SCORE})
    assert state is ValueState.UNSCORED and math.isnan(x) and math.isnan(w)


# --- the runner and the record checks read an env's values by the same rule --------------------------

RAWS = [0, 1.5, True, None, math.nan, math.inf, -math.inf, "near", "0.5", [1], AWAITS_SCORE, np.float32(2.0)]


@pytest.mark.parametrize("raw", RAWS, ids=repr)
def test_the_runner_and_the_conformance_check_agree_on_not_delivered(raw):
    """What the runner keeps as not delivered is what harness.metric_declaration.not_delivered (the
    conformance checker's) finds, and what the runner stores is a JSON number or None."""
    stored, undelivered = _episode_values({"v": raw})
    flagged = not_delivered("s", [Metric("m", "M", "v")], {"v": raw})
    assert ("v" in undelivered) == bool(flagged) == (read_value(raw)[0] not in DELIVERED)
    json.dumps(stored, allow_nan=False)
    assert stored["v"] == (None if "v" in undelivered or raw is None else read_value(raw)[1])


def test_the_runner_keeps_the_undelivered_names_and_the_stored_numbers():
    stored, undelivered = _episode_values({"a": 1, "b": True, "c": None, "d": math.nan, "e": "x", 5: 2.5})
    assert stored == {"a": 1, "b": 1, "c": None, "d": None, "e": None, "5": 2.5}
    assert type(stored["a"]) is int and type(stored["b"]) is int and type(stored["5"]) is float
    assert set(undelivered) == {"d", "e"} and undelivered["e"] == "x"
    assert _episode_values(None) == ({}, {}) and _episode_values([1]) == ({}, {})


def test_the_record_checks_name_only_what_the_runner_found_undelivered():
    """record_checks reads no raw env mapping: a stored None is missing (no problem); a name the
    runner kept as not delivered is named with the metric that reads it."""
    _example()  # registers the example suite, whose metric 'closeness' reads the value 'closeness'
    rec = EpisodeRecord("r", "v", "example", "test", "e0", 0, success=True, steps=1, values={"closeness": None})
    assert problems_of(rec) == ([], set())
    lines, keys = problems_of(rec, {"closeness": math.inf})
    assert keys == {"closeness"} and lines == [
        "suite example: metric 'closeness' value 'closeness' is inf, not a number: not delivered (an env gives a "
        "finite number, or None for no value)"]
    assert problems_of(rec, {"unread": math.nan}) == ([], set())  # a value no declared metric reads


def test_a_value_no_metric_reads_is_stored_as_none_without_an_error(monkeypatch, tmp_path):
    S = _example()
    original = S.NumberLineEnv._info

    def info(self, **kw):
        out = original(self, **kw)
        out[INFO_VALUES] = {**(out.get(INFO_VALUES) or {}), "unread": math.nan}
        return out

    monkeypatch.setattr(S.NumberLineEnv, "_info", info)
    records, _ = _run(S, tmp_path)
    assert all(r.error_kind is None and r.values["unread"] is None for r in records)
    assert all(isinstance(r.values["closeness"], float) for r in records)
