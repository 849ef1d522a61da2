"""Table selection and layout (filters, order, labels, undefined metrics, averages), several
stores read as one, repeats, JSON and export: against expectations computed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from harness.tables import selection as results
from harness.cli.entry import main
from harness.scoring.summaries import records_frame
from harness.store import ResultStore
from harness.tables.json_table import to_json
from harness.types import EpisodeRecord, RunSpec
from tests import golden
from tests.harness.tables.test_tables import golden_records
from harness.tables.build import select, transfer_table
from harness.tables.render import to_markdown

TESTDATA = Path(__file__).parent / "testdata"


@pytest.fixture
def df() -> pd.DataFrame:
    return records_frame(golden_records())


# --- layout on the library level ------------------------------------------------------


def test_undefined_metric_is_left_out_and_average_and_delta_share_cells(df):
    """libero has no goal conditions: no 'libero/spatial GC' column, and avg GC (= alfred's GC)
    has its Δ, plain and paired: favor_sft 75 - 50 = +25 on the same four alfred episodes."""
    for stats in (False, True):
        table = transfer_table(df, stats=stats, drop_undefined=True)
        assert ("libero/spatial", "gc") not in table.columns and ("libero/spatial", "Δgc") not in table.columns
        assert table.at["favor_sft", ("avg", "gc")] == pytest.approx(0.75)
        assert table.at["favor_sft", ("avg", "Δgc")] == pytest.approx(0.25), stats
        assert table.at["favor_sft", ("avg", "Δsr")] == pytest.approx((0.5 + 0.2) / 2 - (0.5 + 0.4) / 2)


def test_a_row_missing_a_column_has_no_average_and_no_delta(df):
    only_alfred = records_frame([EpisodeRecord("run-x", "x", "alfred", "valid_unseen", f"e{i}", 0, success=True,
                                               gc_satisfied=2, gc_total=2) for i in range(1, 5)])
    table = transfer_table(pd.concat([df, only_alfred]), stats=True, drop_undefined=True)
    assert math.isnan(table.at["x", ("avg", "sr")])
    assert math.isnan(table.at["x", ("avg", "Δsr")]) and math.isnan(table.at["x", ("avg", "Δsr:p")])
    assert table.at["x", ("alfred/valid_unseen", "Δsr")] == pytest.approx(0.5)


def test_layout_average_and_labels(df):
    table = transfer_table(df, metrics=("sr",), layout={"Long": ["libero/spatial"], "ALF": ["alfred/valid_unseen"]},
                           average=False, per_column_delta=True, labels={"cfg_sft": "CFG-SFT"},
                           variants_order=["cfg_sft", "favor_sft"])
    assert list(table.index) == ["base", "CFG-SFT", "favor_sft"]
    assert [g for g, _ in table.columns] == ["Long", "Long", "ALF", "ALF"]
    assert table.at["CFG-SFT", ("Long", "Δsr")] == pytest.approx(0.2)
    md = to_markdown(table)
    assert "† CFG-SFT, ALF: 1 of 4 episodes ended in errors" in md and "avg" not in md


def test_the_error_footnote_names_goal_conditions_only_where_episodes_have_them(df):
    md = to_markdown(transfer_table(df, metrics=("sr",)))
    assert "1 of 4 episodes ended in errors (1 agent), counted as failures (no goal condition met)." in md
    # one-step episodes (no goal conditions): the same error is not said to have met none
    one_step = records_frame([EpisodeRecord("run-q", "base", "qa", "test", f"q{i}", 0, success=i == 0,
                                            error_kind="env" if i == 1 else None) for i in range(3)])
    md = to_markdown(transfer_table(one_step, metrics=("sr",)))
    assert "1 of 3 episodes ended in errors (1 env), counted as failures." in md
    assert "no goal condition" not in md


def test_select_globs(df):
    assert set(select(df, suites=["lib*"])["suite"]) == {"libero"}
    assert set(select(df, variants=["*_sft"])["variant"]) == {"favor_sft", "cfg_sft"}
    assert len(select(df, suites=["alfred"], splits=["valid_*"], variants=["base"])) == 4
    with pytest.raises(ValueError, match="--suite 'eb_\\*' matches nothing; present: alfred, libero"):
        select(df, suites=["eb_*"])


def test_json_golden(df):
    table = transfer_table(df, stats=True, drop_undefined=True, variants_order=["favor_sft", "cfg_sft"])
    selection = results.Selection(df.assign(repeat=0), pd.DataFrame(), [], [])
    text = to_json(table, selection)
    golden.check_golden(TESTDATA / "transfer.json", text)
    doc = json.loads(text)
    cfg = next(r for r in doc["rows"] if r["variant"] == "cfg_sft")["cells"]
    assert cfg["alfred/valid_unseen"]["sr"]["value"] == 0.75 and cfg["alfred/valid_unseen"]["sr"]["n"] == 4
    assert cfg["libero/spatial"]["sr"]["delta"] == pytest.approx(0.2) and "gc" not in cfg["libero/spatial"]


# --- stores on the command line ---------------------------------------------------------


def write_store(path: Path, records: list[EpisodeRecord], identity: dict | None = None) -> None:
    with ResultStore(path) as store:
        for run_id in dict.fromkeys(r.run_id for r in records):
            first = next(r for r in records if r.run_id == run_id)
            ident = {"variant": first.variant, "suite": first.suite, "split": first.split, **(identity or {})}
            store.begin_run(run_id, RunSpec(suite=first.suite, split=first.split, agent="a", variant=first.variant),
                            ident, {"git": {"commit": "0" * 40, "dirty": False}})
            store.add_many([r for r in records if r.run_id == run_id])


def two_suites() -> list[EpisodeRecord]:
    """base / cfg_sft on s1 (with goal conditions) and s2 (without), four episodes each."""
    out = []
    for variant, ok1, ok2 in (("base", 1, 2), ("cfg_sft", 3, 2), ("favor_sft", 2, 0)):
        out += [EpisodeRecord(f"{variant}-s1", variant, "s1", "a", f"e{i}", 0, success=i < ok1,
                              gc_satisfied=1 if i < ok1 else 0, gc_total=1) for i in range(4)]
        out += [EpisodeRecord(f"{variant}-s2", variant, "s2", "b", f"e{i}", 0, success=i < ok2) for i in range(4)]
    return out


def table_lines(capsys, *argv: str) -> list[str]:
    assert main(["table", *argv]) == 0, capsys.readouterr().err
    return capsys.readouterr().out.splitlines()


def test_cli_filters_order_labels_and_average(tmp_path, capsys):
    write_store(tmp_path / "o", two_suites())
    out = str(tmp_path / "o")
    lines = table_lines(capsys, out)
    # two suites: no avg column (a Δ beside each column instead); s2 defines no GC: no s2 GC column
    assert lines[0] == "| variant | s1/a SR | s1/a GC | s1/a ΔSR | s1/a ΔGC | s2/b SR | s2/b ΔSR |"
    assert lines[2:5] == ["| base | 25.0 | 25.0 | – | – | 50.0 | – |",
                          "| cfg_sft | 75.0 | 75.0 | +50.0 | +50.0 | 50.0 | +0.0 |",
                          "| favor_sft | 50.0 | 50.0 | +25.0 | +25.0 | 0.0 | -50.0 |"]
    lines = table_lines(capsys, out, "--average", "--metrics", "sr")
    assert lines[0] == "| variant | s1/a SR | s2/b SR | avg SR | avg ΔSR |"
    assert lines[3] == "| cfg_sft | 75.0 | 50.0 | 62.5 | +25.0 |"  # (75 + 50) / 2 - (25 + 50) / 2
    lines = table_lines(capsys, out, "--suite", "s2", "--order", "favor_sft,cfg_sft", "--label", "base=Base",
                        "--label", "cfg_sft=CFG-SFT")
    assert lines[0] == "| variant | s2/b SR | avg SR | avg ΔSR |"  # one suite: its avg
    assert [line.split(" | ")[0] for line in lines[2:5]] == ["| Base", "| favor_sft", "| CFG-SFT"]
    lines = table_lines(capsys, out, "--variant", "base,cfg*", "--split", "a")
    assert [line.split(" | ")[0] for line in lines[2:4]] == ["| base", "| cfg_sft"] and lines[4] == ""
    assert main(["table", out, "--variant", "nope*"]) == 2
    assert "--variant 'nope*' matches nothing" in capsys.readouterr().err


def test_several_stores_read_as_one(tmp_path, capsys):
    recs = two_suites()
    write_store(tmp_path / "a", [r for r in recs if r.variant == "base"])
    write_store(tmp_path / "b", [r for r in recs if r.variant != "base"])
    # the same base run copied into b too: counted once
    write_store(tmp_path / "b", [r for r in recs if r.variant == "base" and r.suite == "s1"])
    lines = table_lines(capsys, str(tmp_path / "a"), str(tmp_path / "b"), "--suite", "s1", "--format", "csv")
    assert lines[0].startswith("variant,s1/a:sr,s1/a:gc,avg:sr")
    assert lines[1].startswith("base,25.0,25.0") and lines[2].startswith("cfg_sft,75.0")
    assert main(["table", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json", "--suite", "s1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    base = next(r for r in doc["rows"] if r["variant"] == "base")
    assert base["cells"]["s1/a"]["sr"]["n"] == 4  # not 8
    assert next(r for r in doc["runs"] if r["run_id"] == "base-s1")["stores"] == [str(tmp_path / "a"), str(tmp_path / "b")]
    # a different identity for base on s1 in a third store: refused, unless one is picked
    other = [EpisodeRecord("base-s1-new", "base", "s1", "a", f"e{i}", 0, success=True, gc_satisfied=1, gc_total=1)
             for i in range(4)]
    write_store(tmp_path / "c", other, identity={"checkpoint": "new"})
    assert main(["table", str(tmp_path / "a"), str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "base on s1/a was run with different identities" in err and "--run base-s1" in err
    lines = table_lines(capsys, str(tmp_path / "a"), str(tmp_path / "c"), "--run", "base-s1-n", "--suite", "s1")
    assert lines[2] == "| base | 100.0 | 100.0 | 100.0 | 100.0 | – | – |"  # the picked run's 4 of 4


def test_repeats_are_one_cell_and_a_new_identity_supersedes(tmp_path, capsys):
    out = tmp_path / "o"
    recs = []
    for seed, ok in ((0, 1), (1, 3), (2, 2)):  # base: 1, 3, 2 of 4 solved in three repeats
        ident = {"seed_offset": seed} if seed else {}
        recs = [EpisodeRecord(f"base-r{seed}", "base", "s1", "a", f"e{i}", i + seed, success=i < ok) for i in range(4)]
        write_store(out, recs, identity=ident)
    with ResultStore(out, readonly=True) as store:
        df, notes = results.latest_frame(store)
    assert sorted(set(df["run_id"])) == ["base-r0", "base-r1", "base-r2"] and notes == []
    selection = results.load([str(out)])
    assert sorted(selection.frame.groupby("run_id")["repeat"].first().tolist()) == [0, 1, 2]
    # a newer run with another identity supersedes all three repeats
    write_store(out, [EpisodeRecord("base-v2", "base", "s1", "a", f"e{i}", i, success=True) for i in range(4)],
                identity={"prompt": 2})
    selection = results.load([str(out)])
    assert set(selection.frame["run_id"]) == {"base-v2"}
    assert selection.run_lines[0].startswith("Runs: of several runs") and len(selection.run_lines) == 2
    assert all(f"run base-r{i} (4 episodes)" in selection.run_lines[1] for i in range(3))


def test_export_jsonl_and_parquet_message(tmp_path, capsys, branches):
    write_store(tmp_path / "o", two_suites())
    assert main(["export", str(tmp_path / "o"), "--variant", "base"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 8 and {r["suite"] for r in rows} == {"s1", "s2"} and rows[0]["repeat"] == 0
    assert sum(r["success"] for r in rows) == 3 and "extra" in rows[0]
    assert main(["export", str(tmp_path / "o"), "-o", str(tmp_path / "e.jsonl")]) == 0
    assert len(pd.read_json(tmp_path / "e.jsonl", lines=True)) == 24
    capsys.readouterr()
    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError:
        assert main(["export", str(tmp_path / "o"), "--format", "parquet", "-o", str(tmp_path / "e.parquet")]) == 2
        err = capsys.readouterr().err.strip()
        assert "needs pyarrow" in err and "\n" not in err and not (tmp_path / "e.parquet").exists()
        branches.skip("parquet export", "pyarrow (the export extra) is not installed")
    else:
        assert main(["export", str(tmp_path / "o"), "--format", "parquet", "-o", str(tmp_path / "e.parquet")]) == 0
        assert len(pd.read_parquet(tmp_path / "e.parquet")) == 24
