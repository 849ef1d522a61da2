"""The built-in suites' declared metrics (harness/scoring/record_fields.py), aggregated generically by
harness.scoring.policy, give exactly (bit for bit) what harness.scoring.summaries' formulas give."""

import math
import random

import pytest

from harness.scoring.record_fields import METRICS, values
from harness.scoring.summaries import records_frame, summarize_group
from harness.registry.catalog import SUITES
from harness.scoring.policy import aggregate
from harness.types import EpisodeRecord


def _records(seed: int, n: int) -> list[EpisodeRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ts = rng.choice([0, 1, 2, 3, 5])
        error = rng.random() < 0.15
        out.append(EpisodeRecord(
            run_id="r", variant="v", suite="eb_alfred", split="s", episode_id=f"e{i}", seed=0,
            success=rng.random() < 0.5, gc_satisfied=rng.randint(0, ts), gc_total=ts,
            steps=rng.randint(0, 30), invalid_actions=rng.randint(0, 5),
            expert_length=rng.choice([None, 0, 3, 7, 12]),
            path_length=rng.choice([None, None, 0, 9, 40]),
            error_kind="env" if error else None))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_declared_metrics_equal_the_formulas_bit_for_bit(seed):
    records = _records(seed, 1 + 7 * seed)
    expected = summarize_group(records_frame(records))
    per_episode = [values(r.to_dict()) for r in records]
    for metric in METRICS:
        got, want = aggregate(metric, per_episode), expected[metric.name]
        assert (math.isnan(got) and math.isnan(want)) or got == want, metric.name


def test_every_built_in_suite_declares_them():
    for name in ("eb_alfred", "alfred", "libero", "eb_manipulation"):
        entry = SUITES.entry(name)
        assert entry.metrics == METRICS and entry.values == "harness.scoring.record_fields:values"
        assert [m.name for m in entry.metrics if m.default] == ["sr", "gc"]


def test_summary_columns_follow_the_declarations():
    from harness.scoring.record_fields import SUMMARY_COLUMNS
    from harness.scoring.summaries import summary_columns

    assert tuple(summary_columns(METRICS)) == SUMMARY_COLUMNS
