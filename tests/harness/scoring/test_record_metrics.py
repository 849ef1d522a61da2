"""The record's own metrics (SR, GC, ...) through the public API (harness.scoring.record_metrics /
record_values): a plugin declares them beside its own and imports nothing from the project's suites."""

from __future__ import annotations

import re

import pytest

from harness.scoring.record_fields import METRICS, values
from harness.scoring.policy import record_metrics, record_values
from tests.conftest import REPO_ROOT


def test_record_metrics_are_the_built_in_suites_declarations():
    assert record_metrics() == METRICS
    assert [m.name for m in record_metrics("gc", "sr")] == ["gc", "sr"]
    record = {"success": True, "gc_satisfied": 1, "gc_total": 2, "steps": 3, "invalid_actions": 0,
              "expert_length": 3, "error_kind": None}
    assert record_values(record) == values(record)
    with pytest.raises(ValueError, match=r"no record metric 'nope' \(record metrics: sr, gc"):
        record_metrics("nope")


def test_the_example_plugin_imports_nothing_from_envs(monkeypatch):
    # From the tree when the plugin is not installed (the README's install does not install it).
    monkeypatch.syspath_prepend(str(REPO_ROOT / "examples" / "plugin_suite"))
    for path in sorted((REPO_ROOT / "examples" / "plugin_suite").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+envs\b", text, flags=re.M), path
    from example_suite.plugin import SUITE

    assert {"sr", "gc"} <= {m.name for m in SUITE.metrics} and SUITE.values == "harness.scoring:record_values"
