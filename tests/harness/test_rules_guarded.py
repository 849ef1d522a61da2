"""One test per rule that a mutation of the rule once left unnoticed (each rule was broken by hand
and its test watched fail): the missing-value policy of a declared metric, the record checks'
``expert_length``, the one-per-step rise of ``invalid_actions`` over a sequence of steps, the
required keys of a ``Record`` space and nested wall-clock deadlines. The sequential test's rules
are in test_sequential_rules.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gymnasium import spaces

from harness.run.record_checks import problems_of, record_problems
from harness.scoring.policy import Metric, classify, columns
from harness.spaces import Record, outside
from harness.check.invariants import EpisodeWatch
from harness.types import INFO_INVALID_ACTIONS, EpisodeRecord
from harness.values import ValueState

MISSING, UNSCORED, VALUE = ValueState.MISSING, ValueState.UNSCORED, ValueState.VALUE


# --- harness.scoring.policy.classify: an episode without a value counts as Metric.missing ------------

def test_an_episode_without_a_value_counts_as_the_declared_missing_value():
    """Mutations caught: ``classify`` counting a missing value as 0 whatever ``missing`` says, or
    counting it at all where ``missing=None``."""
    quarter = Metric("score", "Score", "score", range=(0.0, 1.0), unit="score", missing=0.25)
    assert classify(quarter, {"score": None}) == (0.25, 1.0, MISSING)
    # Text was not delivered: counted as an error record's value would be, its missing value.
    assert classify(quarter, {"score": "not a number"}) == (0.25, 1.0, ValueState.NOT_DELIVERED)
    assert classify(quarter, {"score": 0.75}) == (0.75, 1.0, VALUE)
    # missing=None: left out (NaN), still classified as missing.
    out = Metric("score", "Score", "score", range=(0.0, 1.0), unit="score", missing=None)
    x, w, kind = classify(out, {"score": None})
    assert math.isnan(x) and math.isnan(w) and kind == MISSING
    # The default for a binary lower-is-better metric is its failure, 1, not 0.
    fail = Metric("fail", "Failure", "fail", binary=True, higher_is_better=False)
    assert fail.missing == 1.0 and classify(fail, {"fail": None}) == (1.0, 1.0, MISSING)
    # A range that excludes 0: the bottom of the range.
    steps = Metric("len", "Length", "len", range=(1.0, 50.0), unit="steps", higher_is_better=False)
    assert classify(steps, {"len": None}) == (1.0, 1.0, MISSING)
    # A ratio weights the missing value by the episode's weight.
    ratio = Metric("spl", "SPL", "spl", aggregation="ratio", weight="w", missing=0.5)
    assert classify(ratio, {"spl": None, "w": 4.0}) == (2.0, 4.0, MISSING)
    # A judged metric whose verdict is absent is unscored, not missing.
    judged = Metric("judge", "Judge", "judge", judged=True, missing=0.5)
    x, w, kind = classify(judged, {})
    assert kind == UNSCORED and math.isnan(x)
    # Through the columns a table aggregates.
    num, den = columns(quarter, [{"score": 1.0}, {"score": None}, {}])
    assert num == [1.0, 0.25, 0.25] and den == [1.0, 1.0, 1.0]


# --- harness.run.record_checks: expert_length must be a number >= 0 --------------------------------

def _record(**kw) -> EpisodeRecord:
    return EpisodeRecord("r", "v", "eb_alfred", "seen", "seen/0", 0, **kw)


@pytest.mark.parametrize("length", [-1, -0.5, "7", float("nan")])
def test_a_negative_or_non_numeric_expert_length_is_refused(length):
    """Mutation caught: ``expert_length`` -1 accepted by the record checks."""
    problems = record_problems(_record(expert_length=length, success=True, steps=3))
    assert len(problems) == 1 and "expert_length" in problems[0] and "eb_alfred" in problems[0], problems
    lines, _keys = problems_of(_record(expert_length=length, success=True, steps=3))
    assert any("expert_length" in line for line in lines), lines


@pytest.mark.parametrize("length", [None, 0, 12, 3.5])
def test_an_unknown_or_non_negative_expert_length_is_accepted(length):
    assert record_problems(_record(expert_length=length, success=True, steps=3)) == []


# --- harness.check.invariants: invalid_actions rises by at most one per step -------------------

class _Env:
    observation_space = action_space = None


def _walk(counts: list[int]) -> list[str | None]:
    """The watch's verdict on each step of an episode whose ``invalid_actions`` is ``counts[0]``
    at reset and ``counts[i]`` after step i."""
    watch = EpisodeWatch(_Env(), "e0")
    assert watch.reset(None, {INFO_INVALID_ACTIONS: counts[0]}) is None
    return [watch.step("noop", None, False, False, {INFO_INVALID_ACTIONS: c}) for c in counts[1:]]


def test_invalid_actions_rise_by_at_most_one_per_step_over_a_sequence():
    """Each step is compared with the one before it, not with the reset: 0, 1, 2, 3 is fine; a
    step that counts two (or three) at once, or a count that falls, is refused at that step.
    Mutations caught: the bound loosened (``rise > 2``) and the comparison made with the reset."""
    assert _walk([0, 1, 1, 2, 3]) == [None] * 4
    verdicts = _walk([0, 1, 3])  # 1 -> 3: one step counted two invalid actions
    assert verdicts[0] is None and verdicts[1] is not None
    assert "invalid_actions went 1 -> 3" in verdicts[1] and "step 2" in verdicts[1]
    assert _walk([0, 0, 3])[1] is not None  # a rise of three
    assert _walk([0, 2])[0] is not None  # two on the first step
    falls = _walk([0, 1, 0])
    assert falls[0] is None and "invalid_actions went 1 -> 0" in falls[1]


# --- harness.spaces.Record: a required key must be present --------------------------------------

def test_a_record_space_refuses_a_missing_required_key():
    """Optional keys may be absent or None; a required one may be neither. Mutation caught: a
    missing required key accepted."""
    space = Record({"text": spaces.Text(20), "step": spaces.Discrete(5)},
                   {"image": spaces.Box(0, 255, (2, 2, 3), np.uint8)})
    assert space.contains({"text": "hi", "step": 1})
    assert space.contains({"text": "hi", "step": 1, "image": None})
    assert space.contains({"text": "hi", "step": 1, "image": np.zeros((2, 2, 3), np.uint8)})
    assert not space.contains({"text": "hi"})
    assert outside(space, {"text": "hi"}) == "['step']: missing"
    assert not space.contains({"text": "hi", "step": None})  # None stands for absent only where optional
    assert not space.contains({"text": "hi", "step": 1, "extra": 0})


# --- planners.vlm.wallclock: nested deadlines keep the earlier one -------------------------------

def test_nested_wall_clock_deadlines_keep_the_earlier_one():
    """Mutation caught: an inner, later deadline replacing the outer one (a call made inside
    would then outlive the limit of the exchange around it)."""
    from planners.vlm import wallclock

    assert wallclock.time_left() is None
    with wallclock.deadline(5.0) as outer:
        with wallclock.deadline(500.0) as inner:
            assert inner == outer and wallclock.time_left() <= 5.0
        with wallclock.deadline(None) as unlimited:
            assert unlimited == outer
        with wallclock.deadline(0.5) as sooner:
            assert sooner < outer and wallclock.time_left() <= 0.5
        assert 0.5 < wallclock.time_left() <= 5.0  # the outer one is back
    assert wallclock.time_left() is None
    with wallclock.deadline(-1.0):  # already past: a socket operation fails at once
        with wallclock.deadline(60.0):
            assert wallclock.time_left() < 0
            with pytest.raises(TimeoutError, match="wall-clock limit"):
                wallclock._clamp(10.0, TimeoutError, aborted=False)
