"""Breakdowns a suite declares (``SuitePlugin.breakdowns``): stored per episode in the record's
``extra["breakdown"]`` and offered by ``harness table --by NAME`` beside task_type."""

from __future__ import annotations

import pytest

from harness.scoring.summaries import records_frame
from harness.plugins import SuitePlugin
from harness.tables.build import breakdown_table
from harness.types import EpisodeRecord


def rec(variant: str, episode: str, ok: bool, pattern: str | None) -> EpisodeRecord:
    extra = {"breakdown": {"pattern": pattern}} if pattern else {}
    return EpisodeRecord(run_id=f"r-{variant}", variant=variant, suite="qa", split="test", episode_id=episode,
                         seed=0, task_type="t", success=ok, extra=extra)


def test_a_declared_field_breaks_the_table_down():
    df = records_frame([rec("base", "1", True, "needle"), rec("base", "2", False, "needle"),
                        rec("base", "3", True, "multi_hop"), rec("base", "4", True, None)])
    t = breakdown_table(df, by="pattern", metrics=("sr",))
    assert list(t.index) == ["multi_hop", "needle", "unknown", "all"]
    assert t[("base", "sr")].tolist() == pytest.approx([1.0, 0.5, 1.0, 0.75])


def test_an_undeclared_field_is_one_line():
    df = records_frame([rec("base", "1", True, "needle")])
    with pytest.raises(ValueError, match=r"cannot break down by 'domain'.*\(task_type, split, pattern\)"):
        breakdown_table(df, by="domain", metrics=("sr",))


@pytest.mark.parametrize("name", ["task_type", "failure", "not a name", ""])
def test_a_suite_cannot_declare_a_reserved_or_bad_name(name):
    with pytest.raises(ValueError, match="breakdown"):
        SuitePlugin(name="qa", target="m:a", breakdowns=(name,))



def test_mean_over_names_task_type_or_a_declared_breakdown():
    assert SuitePlugin(name="qa", target="m:a", breakdowns=("pattern",), mean_over="pattern").mean_over == "pattern"
    assert SuitePlugin(name="qa", target="m:a", mean_over="task_type").mean_over == "task_type"
    with pytest.raises(ValueError, match=r"mean_over 'domain' must be task_type or one of its breakdowns \(pattern\)"):
        SuitePlugin(name="qa", target="m:a", breakdowns=("pattern",), mean_over="domain")


def test_a_suite_that_declares_no_mean_over_gets_no_mean_row():
    df = records_frame([rec("base", "1", True, "needle"), rec("base", "2", False, "multi_hop")])
    t = breakdown_table(df, by="pattern", metrics=("sr",))
    assert list(t.index) == ["multi_hop", "needle", "all"]
    assert "extra_notes" not in t.attrs
