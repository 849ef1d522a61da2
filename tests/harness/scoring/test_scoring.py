"""Metric declarations (harness.scoring.policy): broken ones fail at once, cells aggregate generically."""

import math

import pytest

from harness.plugins import SuitePlugin
from harness.metric_declaration import check_metrics
from harness.scoring.policy import EpisodeValues, Metric, Tally, aggregate, classify, columns, tally
from harness.values import AWAITS_SCORE, ValueState


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="", label="X", value="x"), "empty name"),
    (dict(name="m", label="X", value="x", aggregation="median"), "unknown aggregation 'median'"),
    (dict(name="m", label="X", value="x", aggregation="ratio"), "declares no weight"),
    (dict(name="m", label="X", value="x", weight="w"), "declares a weight"),
    (dict(name="m", label="X", value="x", range=(1.0, 1.0)), "empty range"),
    (dict(name="m", label="X", value="x", range=(10, 0)), "empty range"),
    (dict(name="m", label="X", value=""), "names no per-episode value"),
    (dict(name="m", label="", value="x"), "empty label"),
    (dict(name="m", label="X", value="x", binary=True, range=(0, 10)), "is binary"),
])
def test_a_broken_declaration_fails_with_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        Metric(**kwargs)
    assert "\n" not in str(info.value)


def test_duplicate_names_fail_in_the_suite_declaration():
    m = Metric("acc", "Acc", "correct", binary=True)
    with pytest.raises(ValueError, match="declares metric 'acc' twice"):
        SuitePlugin(name="qa", target="x:y", metrics=(m, m))
    with pytest.raises(ValueError, match="not a harness.scoring.policy.Metric"):
        check_metrics(["acc"])
    assert SuitePlugin(name="qa", target="x:y", metrics=[m]).metrics == (m,)


def test_a_missing_value_counts_as_the_policy_says_and_ratio_pools():
    mean = Metric("s", "S", "score", range=(0, 10), unit="score")  # default: no value counts as 0
    values = [{"score": 4}, {"score": None}, {}, {"score": 8.0}]
    assert aggregate(mean, values) == 3.0
    assert tally(mean, values) == Tally(n=4, valued=2, missing=2, unscored=0)
    left_out = Metric("s", "S", "score", range=(0, 10), unit="score", missing=None)
    assert aggregate(left_out, values) == 6.0 and tally(left_out, values).counted == 2
    assert math.isnan(aggregate(left_out, [{}, {"score": None}]))
    ratio = Metric("gc", "GC", "met", aggregation="ratio", weight="total")
    assert aggregate(ratio, [{"met": 1, "total": 4}, {"met": 3, "total": 4}, {"met": 2}]) == 0.5
    assert aggregate(ratio, [{"met": 1, "total": 4}, {"met": None, "total": 4}]) == 0.125  # no value: 0 of 4
    assert math.isnan(aggregate(ratio, [{"met": 0, "total": 0}]))
    assert columns(ratio, [{"met": 2}]) != ([2.0], [1.0])


@pytest.mark.parametrize("kwargs, missing", [
    (dict(binary=True), 0.0),  # a failure
    (dict(binary=True, higher_is_better=False), 1.0),  # a failure where lower is better (an unreadable reply)
    (dict(range=(0.0, 10.0), unit="score"), 0.0),
    (dict(range=(-1.0, 1.0), unit="score"), 0.0),
    (dict(range=(1.0, 5.0), unit="score"), 1.0),  # 0 is outside: the bottom of the range
    (dict(missing=None), None),
    (dict(range=(0.0, 10.0), missing=2.5), 2.5),
])
def test_the_default_missing_value_is_a_failure_or_zero(kwargs, missing):
    assert Metric("m", "M", "x", **kwargs).missing == missing


def test_a_missing_value_outside_the_range_fails():
    with pytest.raises(ValueError, match="outside its range"):
        Metric("m", "M", "x", missing=2.0)


def test_applies_and_unscored_and_another_suites_value():
    """Only the episodes a metric applies to count; the marker AWAITS_SCORE (or no value of a
    judged metric) is unscored, left out but tallied; a value of a suite that does not declare
    the metric is not counted."""
    acc = Metric("acc", "Acc", "correct", binary=True, applies="is_mc")
    values = [{"is_mc": 1, "correct": 1}, {"is_mc": 1}, {"is_mc": 0, "correct": 1}, {"correct": 1}]
    assert aggregate(acc, values) == 0.5 and tally(acc, values) == Tally(n=2, valued=1, missing=1)
    judged = Metric("j", "J", "judge_score", range=(0, 10), unit="score", judged=True)
    values = [{"judge_score": 6}, {"judge_score": None}, {}, {"judge_score": AWAITS_SCORE}]
    assert aggregate(judged, values) == 3.0  # (6 + 0) / 2: the empty answer counts 0
    assert tally(judged, values) == Tally(n=4, valued=1, missing=1, unscored=2)
    mine = EpisodeValues({"judge_score": 8}, "no_such_suite_declares_j")  # the fallback scoring: no 'j'
    assert classify(judged, mine)[2] is ValueState.NOT_APPLICABLE
    assert aggregate(judged, [{"judge_score": 6}, mine]) == 6.0


def test_one_value_name_of_two_suites_never_pools():
    """cfg_bench's S and procobject's J both read the value ``judge_score``: a procobject episode
    never counts in S, a cfg_bench one never in J, whatever the cell pools."""
    from envs.cfg_bench.plugin import METRICS as CFG
    from envs.procobject.plugin import METRICS as PO

    s, j = next(m for m in CFG if m.name == "cfg_s"), next(m for m in PO if m.name == "procobject_j")
    assert s.value == j.value == "judge_score"
    cfg = EpisodeValues({"is_open": 1.0, "judge_score": 8.0}, "cfg_bench")
    po = EpisodeValues({"judge_score": 2.0}, "procobject")
    assert aggregate(s, [cfg, po]) == 8.0 and aggregate(j, [cfg, po]) == 2.0
    assert tally(s, [cfg, po]).n == 1 and tally(j, [cfg, po]).n == 1


def test_judge_agreement_is_per_suite():
    import pandas as pd

    from harness.judging.agreement import agreement

    rows = []
    for suite, scale in (("cfg_bench", 2.0), ("procobject", 1.0)):
        for i in range(4):
            for judge, bump in (("a", 0.0), ("b", 0.5)):
                rows.append({"run_id": "r", "suite": suite, "split": "s", "episode_id": str(i), "seed": i,
                             "judge_id": judge, "status": "ok", "values": {"judge_score": scale * i + bump}})
    out = agreement(pd.DataFrame(rows))
    assert sorted(out) == ["cfg_bench:judge_score", "procobject:judge_score"]
    assert all(a["answers"] == 4 for a in out.values())
    one = agreement(pd.DataFrame([r for r in rows if r["suite"] == "procobject"]))
    assert list(one) == ["judge_score"] and one["judge_score"]["answers"] == 4
