"""ALFRED's path-length-weighted metrics on records of the ``thor`` backend, against ALFRED's own
formula: models/eval/eval_task.py (askforalfred/alfred f91f4c0c96c7a29f33d0557f86b0a21035379b3b)
read from $ALFRED_DIR, its per-episode statements (:111-136) and ``get_metrics`` (:170-206) run
on the numbers of our records (skipped without a checkout). The episodes run on a FAKE
controller replaying the real trajectory files (tests/envs/alfred/walking_fake.py), not AI2-THOR.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from envs.alfred.agents import AlfredOraclePlanner
from envs.alfred.suite import AlfredSuite
from harness.scoring.summaries import records_frame, summarize_group
from harness.types import EpisodeRecord
from tests.envs.alfred.alfred_source import EvalTaskMetrics, checkout_or_skip
from tests.envs.alfred.test_thor_walk import run_thor, thor_suite, trajectories


def oracle_records(data_dir: Path, stride: int) -> list[EpisodeRecord]:
    suite = thor_suite(data_dir)
    episodes = {e.metadata["trajectory"]: e for e in AlfredSuite(eb_data_dir=str(data_dir)).episodes("eb_valid_seen")}
    return [run_thor(suite, episodes[path.relative_to(data_dir).as_posix()], traj, AlfredOraclePlanner())
            for path, traj in trajectories(data_dir)[::stride]]


def alfreds_metrics(records: list[EpisodeRecord]) -> dict:
    """ALFRED's log entries and get_metrics on the records' numbers (t: path_length)."""
    code = EvalTaskMetrics(checkout_or_skip())
    assert code.episode_lines == [111, 114, 115, 116, 119, 120, 124]  # the statements run
    entries = [code.log_entry(expert_low_actions=r.expert_length, goal_satisfied=r.success, s=r.gc_satisfied,
                              ts=r.gc_total, t=r.path_length) for r in records]
    for r, e in zip(records, entries):
        assert e["path_len_weight"] == r.expert_length
    return code.get_metrics(entries, [r.success for r in records])


def check_against_alfred(records: list[EpisodeRecord]) -> dict:
    ours = summarize_group(records_frame(records))
    theirs = alfreds_metrics(records)
    assert ours["sr"] == pytest.approx(theirs["success"]["success_rate"])
    assert ours["gc"] == pytest.approx(theirs["goal_condition_success"]["goal_condition_success_rate"])
    assert ours["plw_sr"] == pytest.approx(theirs["path_length_weighted_success_rate"], rel=1e-12)
    assert ours["plw_gc"] == pytest.approx(theirs["path_length_weighted_goal_condition_success_rate"], rel=1e-12)
    return ours


def test_oracle_records_score_as_alfreds_formula_scores_them(data_dir: Path) -> None:
    """A third of the episodes (every one in the slow test below): T = the primitives walked
    and the interactions; L* = len(plan.low_actions). Some walk more than the expert, some
    less, so the weights differ from 1 both ways: PLW below SR."""
    records = oracle_records(data_dir, 3)
    assert len(records) == 71 and all(r.success and r.error_kind is None for r in records)
    assert any(r.path_length > r.expert_length for r in records)
    assert any(r.path_length < r.expert_length for r in records)
    assert all(r.path_length > r.steps for r in records)  # a GotoLocation is one step, many primitives
    ours = check_against_alfred(records)
    assert ours["sr"] == 1.0 and 0.5 < ours["plw_sr"] < 1.0


@pytest.mark.slow
def test_oracle_records_of_all_213_episodes_score_as_alfreds_formula_scores_them(data_dir: Path) -> None:
    records = oracle_records(data_dir, 1)
    ours = check_against_alfred(records)
    longer = sum(r.path_length > r.expert_length for r in records)
    print(f"alfred_oracle on thor (fake controller): SR {ours['sr']:.3f}, PLW SR {ours['plw_sr']:.4f}, "
          f"PLW GC {ours['plw_gc']:.4f}; T > L* in {longer}, T < L* in "
          f"{sum(r.path_length < r.expert_length for r in records)}; "
          f"sum T {sum(r.path_length for r in records)}, sum L* {sum(r.expert_length for r in records)}")
    assert len(records) == 213 and ours["sr"] == 1.0


def test_plw_from_env_steps_would_not_be_alfreds(data_dir: Path) -> None:
    """The comparison can fail: with T the runner's env steps (a GotoLocation one step) our PLW
    is not ALFRED's on the same episodes."""
    records = oracle_records(data_dir, 30)
    theirs = alfreds_metrics(records)
    stepped = summarize_group(records_frame([dataclasses.replace(r, path_length=None) for r in records]))
    assert stepped["plw_sr"] != pytest.approx(theirs["path_length_weighted_success_rate"], rel=1e-3)
