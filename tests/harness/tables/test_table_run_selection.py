"""Run selection: of several runs of one (variant, suite, split), a table shows the newest
complete one (never a partial or sequential run over a complete one silently), says in the
table which it shows and how to show another, and rows say how they were run."""

from __future__ import annotations

from pathlib import Path

from harness.tables import selection as results
from harness.cli.entry import main
from harness.store import ResultStore
from harness.types import EpisodeRecord, RunSpec


def _run(store: ResultStore, run_id: str, variant: str, n: int, total: int, identity: dict, ok: int = 0) -> None:
    store.begin_run(run_id, RunSpec(suite="s1", split="a", agent="a", variant=variant),
                    {"variant": variant, "suite": "s1", "split": "a", **identity},
                    {"git": {"commit": "0" * 40, "dirty": False}, "split_episodes": total})
    store.add_many([EpisodeRecord(run_id, variant, "s1", "a", f"e{i}", i, success=i < ok) for i in range(n)])


def _store(path: Path) -> Path:
    """base and cfg run in full (4 of 4); later, a sequential run of cfg stopped after 2 episodes."""
    with ResultStore(path) as store:
        _run(store, "base-full", "base", 4, 4, {}, ok=1)
        _run(store, "cfg-full", "cfg", 4, 4, {}, ok=3)
        _run(store, "cfg-seq", "cfg", 2, 4, {"stopping": {"rule": "test", "baseline": "base"}}, ok=2)
    return path


def _table(capsys, *argv: str) -> tuple[str, str]:
    assert main(["table", *argv]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_newer_sequential_run_does_not_replace_a_complete_one_silently(tmp_path, capsys):
    out = _store(tmp_path / "o")
    selection = results.load([str(out)])
    assert set(selection.frame["run_id"]) == {"base-full", "cfg-full"}
    md, _err = _table(capsys, str(out), "--baseline", "base")
    assert "| cfg | 75.0 | 75.0 | +50.0 |" in md  # the full run's 3 of 4, not the sequential run's 2 of 2
    lines = [line for line in md.splitlines() if line.startswith(("Runs:", "cfg on s1/a:"))]
    assert lines[0].startswith("Runs: of several runs of one variant on one suite/split, a table shows the newest "
                               "that ran its whole split")
    assert lines[1] == ("cfg on s1/a: shows run cfg-full (4/4 episodes) (the newest complete run); not shown: "
                        "run cfg-seq (sequential, stopped after 2/4 episodes), newer: --run cfg-seq shows it.")
    doc = __import__("json").loads(_table(capsys, str(out), "--format", "json")[0])
    assert doc["run_selection"][1].startswith("cfg on s1/a: shows run cfg-full")
    # CSV has no footnotes: the same lines go to stderr with the notes
    _csv, err = _table(capsys, str(out), "--format", "csv")
    assert "note: cfg on s1/a: shows run cfg-full" in err


def test_run_picks_the_sequential_run_and_the_row_says_how_it_ran(tmp_path, capsys):
    out = _store(tmp_path / "o")
    md, _err = _table(capsys, str(out), "--baseline", "base", "--run", "cfg-seq")
    assert "cfg on s1/a: shows run cfg-seq (sequential, stopped after 2/4 episodes) (picked with --run)" in md
    assert "stopping (base: full run, cfg: sequential, stopped after 2 episodes)" in md


def test_a_newer_partial_run_is_not_preferred_and_without_a_complete_run_the_newest_is_shown(tmp_path, capsys):
    out = tmp_path / "o"
    with ResultStore(out) as store:
        _run(store, "base-old", "base", 4, 4, {}, ok=1)
        _run(store, "base-new", "base", 2, 4, {"prompt": 2}, ok=2)  # another identity, half the split so far
        _run(store, "x-old", "x", 1, 4, {}, ok=1)
        _run(store, "x-new", "x", 3, 4, {"prompt": 2}, ok=0)
    selection = results.load([str(out)])
    assert set(selection.frame["run_id"]) == {"base-old", "x-new"}
    text = "\n".join(selection.run_lines)
    assert ("base on s1/a: shows run base-old (4/4 episodes) (the newest complete run); not shown: "
            "run base-new (partial, 2/4 episodes), newer: --run base-new shows it.") in text
    assert ("x on s1/a: shows run x-new (partial, 3/4 episodes) (the newest run; no run of this cell is complete); "
            "not shown: run x-old (partial, 1/4 episodes), older: --run x-old shows it.") in text
    # a filtered view names only its own cells' runs
    assert all(not line.startswith("x on") for line in results.load([str(out)], where=lambda df: df[
        df["variant"] == "base"]).run_lines)


def test_a_setting_the_config_left_unset_is_the_value_run_never_its_placeholder():
    """A checkpoint sweep's config leaves planner.params.model unset ('???'); the settings line
    names the model each run used (its spec), or nothing -- never '???'."""
    from harness.tables.caveats import run_settings

    provenance = {"config": {"planner": {"params": {"model": "???", "max_new_tokens": 64}}}}
    ran = run_settings({"agent": "vlm", "agent_params": {"model": "/ckpt/step-100"}}, {}, provenance)
    assert ran["planner.params.model"] == "/ckpt/step-100" and ran["planner.params.max_new_tokens"] == 64
    unknown = run_settings({"agent": "vlm"}, {}, provenance)
    assert "planner.params.model" not in unknown and "???" not in str(unknown)


def test_the_report_names_the_runs_it_shows(tmp_path):
    out = _store(tmp_path / "o")
    assert main(["report", str(out), "--baseline", "base"]) == 0
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "cfg on s1/a: shows run cfg-full (4/4 episodes) (the newest complete run)" in page
