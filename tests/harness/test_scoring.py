"""Metric declarations (harness.scoring): broken ones fail at once, cells aggregate generically."""

import math

import pytest

from harness.plugins import SuitePlugin
from harness.scoring import Metric, aggregate, check_metrics, columns


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
    with pytest.raises(ValueError, match="not a harness.scoring.Metric"):
        check_metrics(["acc"])
    assert SuitePlugin(name="qa", target="x:y", metrics=[m]).metrics == (m,)


def test_mean_skips_missing_values_and_ratio_pools():
    mean = Metric("s", "S", "score", range=(0, 10), unit="score")
    values = [{"score": 4}, {"score": None}, {}, {"score": 8.0}]
    assert aggregate(mean, values) == 6.0
    assert aggregate(mean, [{}, {"score": None}]) != aggregate(mean, [{}, {"score": None}])  # NaN
    ratio = Metric("gc", "GC", "met", aggregation="ratio", weight="total")
    assert aggregate(ratio, [{"met": 1, "total": 4}, {"met": 3, "total": 4}, {"met": 2}]) == 0.5
    assert math.isnan(aggregate(ratio, [{"met": 0, "total": 0}]))
    assert columns(ratio, [{"met": 2}]) != ([2.0], [1.0])
