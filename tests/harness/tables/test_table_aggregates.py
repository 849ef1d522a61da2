"""Aggregates never average over a subset without saying so, and never depend on the rows
shown: a breakdown's mean row, a mean-over-task-types headline cell and ``avg`` leave no value
where one of their units has none, carry coverage like any cell, and an all-unscored column
stays (with its footnote) in a filtered view."""

from __future__ import annotations

import math

from harness.cli.entry import main
from harness.scoring.summaries import records_frame
from harness.store import ResultStore
from harness.tables.build import breakdown_table, transfer_table
from harness.tables.render import to_markdown
from harness.types import EpisodeRecord, RunSpec


def _rec(variant: str, split: str, task: str, i: int, score: float | None) -> EpisodeRecord:
    values = {} if score is None else {"judge_score": score}  # no score: an answer awaiting the judge
    return EpisodeRecord(f"r-{variant}-{split}", variant, "cfg_bench", split, f"{task}-{i}", 0, task_type=task,
                         values=values)


def _records() -> list[EpisodeRecord]:
    """a: every open answer scored; b: CIA on split p scored (2.0), GI on split q not judged yet."""
    out = []
    for variant in ("a", "b"):
        out += [_rec(variant, "p", "CIA", i, s) for i, s in enumerate((1.0, 3.0))]
        out += [_rec(variant, "q", "GI", i, (6.0 if variant == "a" else None)) for i in range(2)]
    return out


def test_the_mean_row_is_over_every_task_type_the_metric_counts_on_with_coverage():
    df = records_frame([r for r in _records() if r.variant == "b"])
    t = breakdown_table(df, by="task_type", metrics=("cfg_s",), baseline="b")
    assert t.at["CIA", ("b", "cfg_s")] == 2.0 and math.isnan(t.at["GI", ("b", "cfg_s")])
    # GI's answers await a score: the mean over task types is not CIA's alone
    assert math.isnan(t.at["mean over task_type", ("b", "cfg_s")])
    text = to_markdown(t)
    assert "| mean over task_type | – |" in text
    assert "mean over task_type, b: S over 2 of 4 (2 not scored" in text


def test_the_headline_cell_is_the_mean_over_task_types_and_never_over_a_subset():
    df = records_frame([r for r in _records() if r.split == "q"] + [_rec("a", "q", "CIA", i, 4.0) for i in range(6)]
                       + [_rec("b", "q", "CIA", i, 2.0) for i in range(6)])
    t = transfer_table(df, baseline="a", metrics=("cfg_s",))
    assert t.at["a", ("cfg_bench/q", "cfg_s")] == 5.0  # (CIA 4 + GI 6) / 2, each task once (pooled: 4.5)
    assert math.isnan(t.at["b", ("cfg_bench/q", "cfg_s")])  # CIA 2.0 and GI unscored: no mean of CIA alone
    text = to_markdown(t)
    assert "(mean over task_type)" in text.splitlines()[0]
    assert "b, cfg_bench/q: S over 6 of 8 (2 not scored" in text


def _store(tmp_path):
    out = tmp_path / "out"
    with ResultStore(out) as store:
        for variant in ("a", "b"):
            for split in ("p", "q"):
                store.begin_run(f"r-{variant}-{split}", RunSpec(suite="cfg_bench", split=split, agent="vlm",
                                                                variant=variant), {"split": split}, {})
        store.add_many(_records())
    return out


def _row(capsys, argv: list[str], row: str) -> tuple[str, str]:
    assert main(["table", *argv]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    return next(line for line in out.splitlines() if line.startswith(f"| {row} |")), out


def test_avg_is_the_same_whatever_the_filter_and_an_unscored_column_stays(tmp_path, capsys):
    out = str(_store(tmp_path))
    every, _ = _row(capsys, [out, "--metrics", "cfg_s", "--baseline", "a"], "b")
    by_suite, _ = _row(capsys, [out, "--metrics", "cfg_s", "--baseline", "a", "--suite", "cfg_bench"], "b")
    alone, text = _row(capsys, [out, "--metrics", "cfg_s", "--variant", "b"], "b")
    assert every == by_suite
    # b: p 2.0, q not judged yet: its avg is "–" in every view (never 2.0, p's alone)
    assert every.split("|")[1:4] == [" b ", " 2.00 ", " – "] and every.split("|")[4] == " – "
    assert alone.split("|")[1:5] == [" b ", " 2.00 ", " – ", " – "]
    # the all-unscored column and its footnote stay in the filtered view
    assert "cfg_bench/q S" in text.splitlines()[0] and "b, cfg_bench/q: S over 0 of 2 (2 not scored" in text


def test_a_row_that_did_not_run_a_column_has_no_avg_in_any_view(tmp_path, capsys):
    out = tmp_path / "out"
    with ResultStore(out) as store:
        for variant, splits in (("a", ("p", "q")), ("b", ("p",))):
            for split in splits:
                store.begin_run(f"r-{variant}-{split}", RunSpec(suite="cfg_bench", split=split, agent="vlm",
                                                                variant=variant), {"split": split}, {})
        store.add_many([r for r in _records() if r.variant == "a" or r.split == "p"])
    every, _ = _row(capsys, [str(out), "--metrics", "cfg_s", "--baseline", "a"], "b")
    alone, text = _row(capsys, [str(out), "--metrics", "cfg_s", "--variant", "b"], "b")
    assert every.split("|")[1:5] == [" b ", " 2.00 ", " – ", " – "]
    assert alone.split("|")[1:5] == [" b ", " 2.00 ", " – ", " – "]  # not 2.00, p's alone


def test_the_association_reads_the_same_cells_as_the_table():
    """harness.tables.joint's diagnostic values are the table's cells: the mean over task types, not pooled."""
    from harness.tables.joint import JointColumn, association

    recs = []
    for v, (fau, tr, sr) in {"a": (1, 1, 0), "b": (2, 1, 1), "c": (0, 4, 2)}.items():
        recs += [EpisodeRecord(f"r-{v}", v, "cfg_bench", "all", f"FAU-{i}", 0, task_type="FAU",
                               values={"correct": float(i < fau), "unreadable": 0.0}) for i in range(2)]
        recs += [EpisodeRecord(f"r-{v}", v, "cfg_bench", "all", f"TR-{i}", 0, task_type="TR",
                               values={"correct": float(i < tr), "unreadable": 0.0}) for i in range(4)]
        recs += [EpisodeRecord(f"s-{v}", v, "eb_alfred", "base", f"e{i}", 0, success=i < sr) for i in range(2)]
    df = records_frame(recs)
    table = transfer_table(df, baseline="a", metrics=("accuracy",), layout={"CFG": ["cfg_bench/all"]})
    got = association(df, JointColumn("CFG", ("cfg_bench/all",), "accuracy"),
                      JointColumn("ALF", ("eb_alfred/base",), "sr"), "a", resamples=10)
    for p in got["points"]:
        assert p["x"] == table.at[p["variant"], ("CFG", "accuracy")]
    assert [p["x"] for p in got["points"]] == [0.375, 0.625, 0.5]  # pooled would be 2/6, 3/6, 4/6
