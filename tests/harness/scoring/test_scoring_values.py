"""A record's per-episode values (harness/scoring/policy.py ``episode_values``, ``value_rows``): the
suite's derived values first, then the values the episode stored, which win where both name
the same value (a stored None too: the episode said it has no such value)."""

from __future__ import annotations

import math

import pandas as pd

from harness.scoring import policy as scoring
from harness.scoring import record_fields as episode_metrics


def test_stored_values_win_over_derived_ones():
    def derive(record):
        return {"a": 1.0, "b": 2.0, "c": 3.0}

    record = {"success": True, "values": {"b": 9.0, "c": None, "d": 4.0}}
    assert scoring.episode_values(record, derive) == {"a": 1.0, "b": 9.0, "c": None, "d": 4.0}
    assert scoring.episode_values(record) == {"b": 9.0, "c": None, "d": 4.0}  # no derived values
    for nothing_stored in ({"success": True}, {"values": None}, {"values": math.nan}, {"values": {}}):
        assert scoring.episode_values(nothing_stored, derive) == {"a": 1.0, "b": 2.0, "c": 3.0}
    assert record["values"] == {"b": 9.0, "c": None, "d": 4.0}  # the record is left as it was


def test_a_stored_value_decides_the_cell_over_the_derived_one():
    """The fallback scoring derives ``success`` from the record's field; a stored ``success``
    (an unknown suite here, so its records are scored by the fallback declarations) wins."""
    rows = [{"run_id": "r", "suite": "no_such_suite_here", "split": "t", "episode_id": f"e{i}", "seed": i,
             "success": True, "gc_satisfied": 1, "gc_total": 1, "expert_length": 1, "steps": 1,
             "invalid_actions": 0, "error_kind": None, "values": values}
            for i, values in enumerate([{"success": 0.0}, {"success": 0.0}, {}, {"success": None}])]
    got = scoring.value_rows(pd.DataFrame(rows))
    assert [v[episode_metrics.SUCCESS] for v in got] == [0.0, 0.0, 1.0, None]
    sr = next(m for m in episode_metrics.METRICS if m.name == "sr")
    assert scoring.aggregate(sr, got) == 1 / 4  # 0, 0, 1, and the stored None: no value counts as a failure
