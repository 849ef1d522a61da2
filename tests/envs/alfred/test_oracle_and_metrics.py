"""The ALFRED oracle through the shared runner, and ALFRED's metric quirks on records of this suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pytest

from envs.alfred.agents import AlfredOraclePlanner
from envs.alfred.suite import AlfredSuite
from harness.interfaces import AgentRequest
from harness.scoring.summaries import records_frame, summarize, summarize_group
from harness.run.runner import Runner
from harness.types import EpisodeRecord, EpisodeSpec, RunSpec


def run(suite: AlfredSuite, split: str, agent, limit: int | None = None) -> list[EpisodeRecord]:
    spec = RunSpec(suite=suite.name, split=split, agent=agent.name, variant=agent.name, limit=limit)
    return Runner(spec, suite, agent, None).run().records


class StopAtOnce:
    """Returns an empty plan at its first call (ALFRED's STOP at step 0)."""

    name = "stop_at_once"
    privileged = False

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[list[str]]:
        return [[] for _ in requests]


class Detour(AlfredOraclePlanner):
    """The oracle, after ``extra`` wasted GotoLocation steps at the start (longer than L*)."""

    name = "detour"

    def __init__(self, extra: int, truncate: int | None = None) -> None:
        super().__init__()
        self.extra, self.truncate = extra, truncate
        self._first: set = set()

    def act(self, requests: Sequence[AgentRequest]) -> list[list[str]]:
        out = []
        for r in requests:
            if r.episode.key in self._first:
                out.append([])  # one plan only, then stop (a FLARE planner that does not replan)
                continue
            self._first.add(r.episode.key)
            plan = self._plan(r)
            if self.truncate is not None:
                plan = plan[: self.truncate]
            goto = next(a for a in r.observation["actions"] if a.startswith("GotoLocation"))
            out.append([goto] * self.extra + plan)
        return out


def test_oracle_solves_generated_sample() -> None:
    suite = AlfredSuite(render=False, generated_per_split=20)
    for split in ("seen", "unseen"):
        records = run(suite, split, AlfredOraclePlanner())
        assert len(records) == 20
        for r in records:
            assert r.success and r.gc_satisfied == r.gc_total and r.error_kind is None, r.episode_id
            assert r.steps == r.expert_length and r.termination == "empty_plan"


@pytest.mark.slow
@pytest.mark.ci
def test_oracle_on_the_130_real_valid_seen_trials(data_dir: Path) -> None:
    """All 213 (trial, annotation) episodes of EmbodiedBench's 130 valid_seen trials, restored scenes."""
    suite = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    records = run(suite, "eb_valid_seen", AlfredOraclePlanner())
    assert len(records) == 213
    assert [r.episode_id for r in records if not r.success] == []
    frame = summarize_group(records_frame(records))
    assert frame["sr"] == 1.0 and frame["gc"] == 1.0
    print(f"PLW SR {frame['plw_sr']:.3f} (oracle steps vs the trajectories' L*)")
    assert 0.8 < frame["plw_sr"] <= 1.0


@pytest.mark.slow
@pytest.mark.ci
def test_oracle_scores_100_on_generated_unseen() -> None:
    suite = AlfredSuite(render=False, generated_per_split=500)
    records = run(suite, "unseen", AlfredOraclePlanner())
    assert len(records) == 500 and all(r.success and r.gc_satisfied == r.gc_total for r in records)


@pytest.mark.slow
def test_oracle_scores_100_on_generated_seen() -> None:
    suite = AlfredSuite(render=False, generated_per_split=500)
    records = run(suite, "seen", AlfredOraclePlanner())
    assert len(records) == 500 and all(r.success for r in records)


def test_agent_stopping_at_step_zero_is_recorded_not_dropped() -> None:
    suite = AlfredSuite(render=False, generated_per_split=10)
    records = run(suite, "unseen", StopAtOnce())
    assert len(records) == 10
    assert all(r.steps == 0 and not r.success and r.error_kind is None and r.termination == "empty_plan"
               for r in records)
    s = summarize_group(records_frame(records))
    assert s["episodes"] == 10 and s["sr"] == 0.0 and s["plw_sr"] == 0.0
    assert not np.isnan(s["plw_gc"])  # T = 0: no ZeroDivisionError, no dropped episode
    assert s["gc"] == sum(r.gc_satisfied for r in records) / sum(r.gc_total for r in records)


def test_pooled_gc_and_plw_on_suite_records() -> None:
    suite = AlfredSuite(render=False, generated_per_split=12)
    full = run(suite, "unseen", Detour(extra=3))
    partial = run(suite, "unseen", Detour(extra=0, truncate=4))
    for r in full:
        assert r.success and r.steps == r.expert_length + 3
    records = full + partial
    df = records_frame(records)
    s = summarize_group(df)
    sat = np.array([r.gc_satisfied for r in records], float)
    tot = np.array([r.gc_total for r in records], float)
    assert s["gc"] == pytest.approx(sat.sum() / tot.sum())  # pooled, ALFRED's GC
    assert s["gc"] != pytest.approx(np.mean(sat / tot)) or len(set(tot)) == 1
    L = np.array([r.expert_length for r in records], float)
    T = np.array([r.steps for r in records], float)
    succ = np.array([r.success for r in records], float)
    factor = np.minimum(1.0, L / np.maximum(T, 1))
    assert s["plw_sr"] == pytest.approx((succ * factor * L).sum() / L.sum())
    assert s["plw_gc"] == pytest.approx((sat / tot * factor * L).sum() / L.sum())
    assert s["plw_sr"] < s["sr"]
    by_type = summarize(df, ["task_type"])
    assert set(by_type["task_type"]) == {r.task_type for r in records}


def test_cli_planner_oracle_runs_the_alfred_oracle(tmp_path: Path) -> None:
    """`harness run suite=alfred split=unseen planner=oracle` (the suite's own oracle)."""
    import sqlite3

    from harness.cli.entry import main

    out = tmp_path / "out"
    rc = main(["run", "suite=alfred", "split=unseen", "planner=oracle", "limit=6",
               "suite.params.generated_per_split=6", "suite.params.render=false", f"out={out}", "progress=false"])
    assert rc in (0, None)
    con = sqlite3.connect(out / "results.sqlite")
    rows = con.execute("SELECT success, gc_satisfied, gc_total FROM episodes").fetchall()
    assert len(rows) == 6 and all(s and a == b for s, a, b in rows)
