"""A table's declared metrics depend on its own records only (harness.scoring.policy.Scoring):
the same call gives the same answer whatever ran before it in the process -- a side-by-side
judge view read earlier never splits a later plain view's metrics, and a suite registered anew
is scored by its new declarations without a cache to clear."""

from __future__ import annotations

import dataclasses

import pandas as pd

from harness.judging import views as judge_views
from harness.registry.catalog import SUITES
from harness.scoring import policy as scoring
from harness.scoring.summaries import records_frame, summarize
from harness.tables.columns import declared_columns, default_metrics
from harness.types import EpisodeRecord

SUITE = "cfg_bench"  # declares judged metrics (S, C) on the value judge_score, correctness


def _records(variant: str = "a") -> pd.DataFrame:
    return records_frame([EpisodeRecord(f"r-{variant}", variant, SUITE, "p", f"e{i}", 0, task_type="CIA",
                                        values={"judge_score": 2.0 * i}) for i in range(3)])


def _three_judge_view(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as ``harness table --judge all`` reads it when three judges scored every answer."""
    rows = []
    for t, (name, model) in enumerate((("a", "ma"), ("b", "mb"), ("c", "mc"))):
        for r in df.itertuples():
            rows.append({"run_id": r.run_id, "suite": r.suite, "split": r.split, "episode_id": r.episode_id,
                         "seed": r.seed, "judge_id": model, "judge": name, "status": "ok", "judged_at": t,
                         "identity": {"backend": "x", "model": model}, "values": {"judge_score": float(t)}})
    out, view = judge_views.apply(df, pd.DataFrame(rows), "all", ["S"])
    assert view.mode == "each" and view.shared_values == {"judge_score"}
    return scoring.on_frame(out, view.scoring)


def _plain_answers() -> tuple:
    plain = _records()
    return (declared_columns(plain), default_metrics(plain), list(summarize(plain, ["variant"]).columns),
            list(scoring.PLAIN.declared([SUITE])), scoring.known_metric("cfg_s"), scoring.known_metric("cfg_s@a"))


def test_a_plain_view_read_after_a_three_judge_view_is_not_split_per_judge():
    before = _plain_answers()
    assert "cfg_s" in before[0] and not any("@" in c for c in before[0] + before[1] + before[2])

    judged = _three_judge_view(_records())
    shown = declared_columns(judged)
    assert {"cfg_s@a", "cfg_s@b", "cfg_s@c"} <= set(shown) and "cfg_s" not in shown
    assert "cfg_s@a" in default_metrics(judged)
    assert {"cfg_s@a", "cfg_s@b", "cfg_s@c"} <= set(summarize(judged, ["variant"]).columns)
    # the view travels with its records through what a table does to them
    assert "cfg_s@b" in declared_columns(judged[judged["variant"] == "a"].sort_values("episode_id"))

    after = _plain_answers()
    assert after == before
    assert after[-1] == scoring.per_judge(after[-2], "a")  # a judge's copy, named alike whatever ran


def test_a_suite_registered_anew_is_scored_by_its_new_declarations(monkeypatch):
    entry = SUITES.entry(SUITE)
    old = scoring.own_declaration(SUITE, scoring.known_metric("cfg_s"))
    assert scoring.own_declaration(SUITE, scoring.Metric("renamed", "R", "judge_score")) is None

    relabelled = tuple(dataclasses.replace(m, label="Renamed S") if m.name == "cfg_s" else m for m in entry.metrics)
    renamed = (*relabelled, scoring.Metric("renamed", "R", "judge_score", range=(0.0, 10.0), unit="score"))
    monkeypatch.setitem(SUITES._entries, (SUITE, None), dataclasses.replace(entry, metrics=renamed))  # noqa: SLF001
    assert scoring.own_declaration(SUITE, scoring.Metric("renamed", "R", "judge_score")).name == "renamed"
    assert scoring.own_declaration(SUITE, old).label == "Renamed S"
    assert "renamed" in declared_columns(_records())

    monkeypatch.undo()
    assert scoring.own_declaration(SUITE, old) == old
    assert "renamed" not in declared_columns(_records())
