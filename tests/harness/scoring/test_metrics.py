"""Metric formulas against hand-computed cases (ALFRED eval_task.py, EmbodiedBench)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.scoring.summaries import RECORD_COLUMNS, by_split, by_task_type, records_frame, summarize, wilson_interval
from harness.scoring.policy import aggregate
from harness.types import EpisodeRecord
from harness.scoring.record_fields import METRICS, SUMMARY_COLUMNS, values as record_values

_DECLARED = {m.name: m for m in METRICS}


def rec(episode: str, variant: str = "base", split: str = "valid", **kw) -> EpisodeRecord:
    """A hand-written record with sensible identity fields."""
    return EpisodeRecord(
        run_id="r", variant=variant, suite="alfred", split=split, episode_id=episode, seed=0, **kw
    )


# --- records_frame ------------------------------------------------------------


def test_records_frame_columns_are_record_fields_in_order() -> None:
    df = records_frame([rec("e1", success=True), rec("e2")])
    assert list(df.columns) == list(RECORD_COLUMNS)
    assert RECORD_COLUMNS[:3] == ("run_id", "variant", "suite")
    assert df["episode_id"].tolist() == ["e1", "e2"]


def test_records_frame_empty_keeps_columns() -> None:
    df = records_frame([])
    assert list(df.columns) == list(RECORD_COLUMNS)
    assert len(df) == 0


# --- formulas -----------------------------------------------------------------


def cell(metric: str, **columns) -> float:
    """The cell of a declared record-field metric over records built from per-field columns."""
    n = len(next(iter(columns.values())))
    rows = [record_values({k: v[i] for k, v in columns.items()}) for i in range(n)]
    return aggregate(_DECLARED[metric], rows)


def factor(length, steps) -> float:
    """The path-length weight of one successful episode (its PLW SR value over L*)."""
    v = record_values({"success": True, "expert_length": length, "steps": steps})
    return math.nan if v["plw_success"] is None else v["plw_success"] / length


def test_success_rate() -> None:
    assert cell("sr", success=[True, False, True, True]) == 0.75
    assert cell("sr", success=[1, 0]) == 0.5
    assert math.isnan(cell("sr", success=[]))


def test_pooled_gc_differs_from_mean_of_ratios() -> None:
    s, ts = [1, 3], [1, 4]
    # ALFRED pools: (1 + 3) / (1 + 4) = 0.8
    assert cell("gc", gc_satisfied=s, gc_total=ts) == pytest.approx(0.8)
    # EB-ALFRED task_progress averages per-episode ratios: (1/1 + 3/4) / 2 = 0.875
    assert cell("progress", gc_satisfied=s, gc_total=ts) == pytest.approx(0.875)


def test_gc_undefined_without_goal_conditions() -> None:
    assert math.isnan(cell("gc", gc_satisfied=[0, 0], gc_total=[0, 0]))
    assert math.isnan(cell("progress", gc_satisfied=[0], gc_total=[0]))
    assert math.isnan(cell("gc", gc_satisfied=[], gc_total=[]))


def test_progress_ignores_episodes_without_goal_conditions() -> None:
    # (1/2 + 2/2) / 2; the ts=0 episode is not an episode with progress 0
    assert cell("progress", gc_satisfied=[1, 0, 2], gc_total=[2, 0, 2]) == pytest.approx(0.75)


def test_path_length_factor_matches_alfred_when_steps_positive() -> None:
    lengths = np.array([1, 3, 5, 10, 10])
    steps = np.array([1, 6, 5, 4, 30])
    alfred = np.minimum(1.0, lengths / steps)  # eval_task.py: min(1., L* / float(t))
    np.testing.assert_allclose([factor(int(a), int(b)) for a, b in zip(lengths, steps)], alfred)


def test_path_length_factor_zero_steps_and_unknown_length() -> None:
    assert factor(4, 0) == 1.0  # T = 0: limit of min(1, L*/T), full credit
    assert math.isnan(factor(None, 3))


def test_plw_success_rate_hand_computed() -> None:
    # s_spl = [1*min(1, 4/8), 1*min(1, 10/5), 0] = [0.5, 1, 0]
    # PLW SR = (0.5*4 + 1*10 + 0*5) / (4 + 10 + 5) = 12 / 19
    value = cell("plw_sr", success=[True, True, False], expert_length=[4, 10, 5], steps=[8, 5, 20])
    assert value == pytest.approx(12 / 19)


def test_plw_with_zero_steps_does_not_crash_and_credits_success() -> None:
    # a zero-step success (goal satisfied at reset): factor 1, so PLW SR = SR
    assert cell("plw_sr", success=[True], expert_length=[3], steps=[0]) == 1.0
    # a zero-step failure stays a failure
    assert cell("plw_sr", success=[False, True], expert_length=[3, 1], steps=[0, 2]) == pytest.approx(0.5 * 1 / 4)
    assert cell("plw_gc", gc_satisfied=[1], gc_total=[2], expert_length=[3], steps=[0]) == pytest.approx(0.5)


def test_plw_only_over_known_expert_lengths() -> None:
    # the episode with unknown L* is left out of both sums
    assert cell("plw_sr", success=[True, False], expert_length=[2, None], steps=[4, 9]) == pytest.approx(0.5)
    assert math.isnan(cell("plw_sr", success=[True], expert_length=[None], steps=[3]))
    assert math.isnan(cell("plw_sr", success=[True], expert_length=[0], steps=[0]))  # sum(L*) = 0


def test_plw_goal_condition_hand_computed() -> None:
    # pc_spl = [(1/2)*min(1, 4/8), (3/3)*min(1, 6/3)] = [0.25, 1]
    # PLW GC = (0.25*4 + 1*6) / (4 + 6) = 0.7; the ts=0 episode has no s/ts
    value = cell("plw_gc", gc_satisfied=[1, 3, 0], gc_total=[2, 3, 0], expert_length=[4, 6, 5], steps=[8, 3, 1])
    assert value == pytest.approx(0.7)


def test_invalid_action_rate_is_pooled() -> None:
    # (1 + 0 + 3) / (2 + 8 + 10) = 0.2, not mean(0.5, 0, 0.3)
    assert cell("invalid_rate", invalid_actions=[1, 0, 3], steps=[2, 8, 10]) == pytest.approx(0.2)
    assert math.isnan(cell("invalid_rate", invalid_actions=[0], steps=[0]))


def test_wilson_known_value() -> None:
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=5e-4)
    assert hi == pytest.approx(0.9433, abs=5e-4)


def test_wilson_edges() -> None:
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0.0 < hi < 0.35
    lo2, hi2 = wilson_interval(10, 10)
    assert hi2 == 1.0 and lo2 == pytest.approx(1 - hi)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)


def test_wilson_narrower_with_higher_z_lower() -> None:
    lo90, hi90 = wilson_interval(5, 20, z=1.645)
    lo95, hi95 = wilson_interval(5, 20)
    assert lo95 < lo90 < 0.25 < hi90 < hi95


# --- summarize ----------------------------------------------------------------


def test_summarize_counts_errors_as_failures() -> None:
    df = records_frame(
        [
            rec("e1", success=True, gc_satisfied=2, gc_total=2, steps=4, expert_length=4),
            rec("e2", success=False, gc_satisfied=1, gc_total=4, steps=10, invalid_actions=2),
            # an error record is a failure even if it claims success
            rec("e3", success=True, gc_satisfied=0, gc_total=2, steps=1, error_kind="agent"),
            rec("e4", error_kind="env", error_message="crashed"),
        ]
    )
    row = summarize(df, ["variant"]).iloc[0]
    assert row["episodes"] == 4
    assert row["errors"] == 2
    assert row["successes"] == 1
    assert row["sr"] == 0.25
    lo, hi = wilson_interval(1, 4)
    assert (row["sr_lo"], row["sr_hi"]) == (lo, hi)
    assert row["gc"] == pytest.approx(3 / 8)  # (2 + 1 + 0 + 0) / (2 + 4 + 2 + 0)
    assert row["progress"] == pytest.approx((1 + 0.25 + 0) / 3)
    assert row["plw_sr"] == 1.0  # only e1 has an expert length
    assert row["invalid_rate"] == pytest.approx(2 / 15)
    assert row["mean_steps"] == 7.0  # completed episodes only: (4 + 10) / 2


def test_summarize_groups_and_columns() -> None:
    df = records_frame(
        [
            rec("e1", split="seen", success=True, task_type="pick"),
            rec("e2", split="seen", task_type=None),
            rec("e1", split="unseen", variant="cfg_sft", success=True),
        ]
    )
    out = by_split(df)
    assert list(out.columns) == ["variant", "suite", "split", *SUMMARY_COLUMNS]
    assert out[["variant", "split", "episodes", "sr"]].values.tolist() == [
        ["base", "seen", 2, 0.5],
        ["cfg_sft", "unseen", 1, 1.0],
    ]
    assert math.isnan(out["gc"].iloc[0]) and math.isnan(out["plw_sr"].iloc[0])
    types = by_task_type(df)
    assert len(types) == 3
    assert types["task_type"].isna().sum() == 2  # None is its own group, not dropped


def test_summarize_empty_frame() -> None:
    out = summarize(records_frame([]), ["variant", "suite"])
    assert list(out.columns) == ["variant", "suite", *SUMMARY_COLUMNS]
    assert len(out) == 0


def test_summarize_rejects_unknown_column() -> None:
    with pytest.raises(ValueError, match="nope"):
        summarize(records_frame([rec("e1")]), ["nope"])


def test_summarize_accepts_store_style_values() -> None:
    # a store may hand back 0/1 ints and None for missing values
    df = pd.DataFrame(
        [
            {**rec("e1").to_dict(), "success": 1, "expert_length": 2, "steps": 2},
            {**rec("e2").to_dict(), "success": 0, "expert_length": None, "error_kind": None},
        ],
        columns=list(RECORD_COLUMNS),
    )
    row = summarize(df, ["variant"]).iloc[0]
    assert (row["sr"], row["errors"], row["plw_sr"]) == (0.5, 0, 1.0)


def test_plw_weighs_by_the_reported_path_length() -> None:
    """T is ``path_length`` where the env reported it (a suite whose L* counts another unit than
    env steps), else ``steps``. ALFRED askforalfred/alfred f91f4c0c models/eval/eval_task.py:114-120
    (s_spl = success * min(1, L*/t), pc_spl = s/ts * min(1, L*/t), each weighted by L*) and
    :178-193 (the sums over L*): L* 20, 10; t 40 (one step of 3 that walked), 10:
    PLW SR = (0.5 * 20 + 1 * 10) / 30; PLW GC = (1/2 * 0.5 * 20 + 1 * 10) / 30.
    """
    df = records_frame([
        rec("e1", success=True, gc_satisfied=1, gc_total=2, steps=3, expert_length=20, path_length=40),
        rec("e2", success=True, gc_satisfied=2, gc_total=2, steps=10, expert_length=10),  # T = steps
    ])
    row = summarize(df, ["variant"]).iloc[0]
    assert row["plw_sr"] == pytest.approx(20 / 30)
    assert row["plw_gc"] == pytest.approx(15 / 30)
    assert row["mean_steps"] == 6.5 and row["invalid_rate"] == 0  # env steps stay env steps
    # A frame without the column (an older reader's) weighs by steps: e1's factor is then 1.
    old = summarize(df.drop(columns=["path_length"]), ["variant"]).iloc[0]
    assert old["plw_sr"] == 1.0
