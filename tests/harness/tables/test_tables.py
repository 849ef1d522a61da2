"""Transfer/breakdown tables: behaviour tests and golden files for the formats.

Golden files live in tests/harness/tables/testdata/. After an intended format change,
rewrite them with ``UPDATE_GOLDEN=1 pytest tests/harness/tables/test_tables.py`` (that
run writes the files and fails on purpose), review the diff figure by figure,
and rerun without UPDATE_GOLDEN.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests import golden

from harness.scoring.summaries import records_frame
from harness.tables.build import breakdown_table, transfer_table
from harness.tables.columns import UNITS_DIFFER, add_cost_columns
from harness.tables.render import format_value, latex_escape, to_csv, to_latex, to_markdown
from harness.types import EpisodeRecord

TESTDATA = Path(__file__).parent / "testdata"
PICK = "pick_and_place_simple"
HEAT = "pick_heat_then_place_in_recep"


def rec(variant: str, suite: str, split: str, episode: str, **kw) -> EpisodeRecord:
    return EpisodeRecord(
        run_id=f"run-{variant}", variant=variant, suite=suite, split=split,
        episode_id=episode, seed=0, **kw,
    )


def alfred(variant: str, episode: str, task_type: str, ok: bool, s: int, ts: int, **kw) -> EpisodeRecord:
    return rec(variant, "alfred", "valid_unseen", episode, task_type=task_type,
               success=ok, gc_satisfied=s, gc_total=ts, steps=10, expert_length=8, **kw)


def libero(variant: str, successes: int) -> list[EpisodeRecord]:
    return [rec(variant, "libero", "spatial", f"l{i}", success=i < successes, steps=50)
            for i in range(5)]


def golden_records() -> list[EpisodeRecord]:
    """Three variants, two suite/splits (libero has no goal conditions), one error.

    Expected by hand (percent):
      alfred/valid_unseen SR / GC: base 2/4=50.0 / 4/8=50.0; favor_sft 50.0 / 6/8=75.0;
        cfg_sft 3/4=75.0 / 7/8=87.5 (e4 is an agent error with 0 of 1 conditions).
      libero/spatial SR: base 40.0, favor_sft 20.0, cfg_sft 60.0; GC undefined.
      avg SR: base 45.0, favor_sft 35.0 (-10.0), cfg_sft 67.5 (+22.5);
      avg GC (alfred only): 50.0, 75.0 (+25.0), 87.5 (+37.5).
    """
    return [
        alfred("base", "e1", PICK, True, 2, 2),
        alfred("base", "e2", PICK, False, 1, 3),
        alfred("base", "e3", HEAT, False, 0, 2),
        alfred("base", "e4", HEAT, True, 1, 1),
        alfred("favor_sft", "e1", PICK, True, 2, 2),
        alfred("favor_sft", "e2", PICK, True, 3, 3),
        alfred("favor_sft", "e3", HEAT, False, 1, 2),
        alfred("favor_sft", "e4", HEAT, False, 0, 1),
        alfred("cfg_sft", "e1", PICK, True, 2, 2),
        alfred("cfg_sft", "e2", PICK, True, 3, 3),
        alfred("cfg_sft", "e3", HEAT, True, 2, 2),
        alfred("cfg_sft", "e4", HEAT, False, 0, 1, error_kind="agent", error_message="bad JSON"),
        *libero("base", 2),
        *libero("favor_sft", 1),
        *libero("cfg_sft", 3),
    ]


@pytest.fixture
def df() -> pd.DataFrame:
    return records_frame(golden_records())


def check_golden(name: str, text: str) -> None:
    """Compare text to testdata/name (tests/golden.py: ``UPDATE_GOLDEN=1`` rewrites, then fails)."""
    golden.check_golden(TESTDATA / name, text)


def test_golden_update_mode_writes_then_fails(tmp_path: Path, monkeypatch) -> None:
    """Mutation caught: an update mode that rewrites the file and then compares it with
    itself (so ``UPDATE_GOLDEN=1`` would pass whatever the tables print)."""
    monkeypatch.setattr(sys.modules[__name__], "TESTDATA", tmp_path)
    (tmp_path / "t.md").write_text("old\n", encoding="utf-8")
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    with pytest.raises(pytest.fail.Exception, match="golden files updated .*rerun without UPDATE_GOLDEN"):
        check_golden("t.md", "new\n")
    assert (tmp_path / "t.md").read_text(encoding="utf-8") == "new\n"
    monkeypatch.delenv("UPDATE_GOLDEN")
    check_golden("t.md", "new\n")
    with pytest.raises(AssertionError):
        check_golden("t.md", "other\n")
    with pytest.raises(AssertionError, match="missing golden file"):
        check_golden("absent.md", "x")


# --- table values -------------------------------------------------------------


def test_transfer_table_values(df: pd.DataFrame) -> None:
    t = transfer_table(df, variants_order=["favor_sft", "cfg_sft"])
    assert list(t.index) == ["base", "favor_sft", "cfg_sft"]
    assert list(t.columns) == [
        ("alfred/valid_unseen", "sr"), ("alfred/valid_unseen", "gc"),
        ("libero/spatial", "sr"), ("libero/spatial", "gc"),
        ("avg", "sr"), ("avg", "gc"), ("avg", "Δsr"), ("avg", "Δgc"),
    ]
    assert t[("alfred/valid_unseen", "gc")].tolist() == [0.5, 0.75, 0.875]
    assert t[("libero/spatial", "gc")].isna().all()
    assert t[("avg", "sr")].tolist() == pytest.approx([0.45, 0.35, 0.675])
    assert t[("avg", "gc")].tolist() == pytest.approx([0.5, 0.75, 0.875])
    assert math.isnan(t.at["base", ("avg", "Δsr")])
    assert t.at["cfg_sft", ("avg", "Δsr")] == pytest.approx(0.225)
    assert t.attrs["errors"] == [
        {"row": "cfg_sft", "group": "alfred/valid_unseen", "errors": 1, "episodes": 4, "kinds": "1 agent",
         "goals": True}
    ]


def test_transfer_table_default_order_is_alphabetical_after_baseline(df: pd.DataFrame) -> None:
    assert list(transfer_table(df).index) == ["base", "cfg_sft", "favor_sft"]


def test_variants_order_selects(df: pd.DataFrame) -> None:
    assert list(transfer_table(df, variants_order=["cfg_sft"]).index) == ["base", "cfg_sft"]
    with pytest.raises(ValueError, match="variants present: base, cfg_sft, favor_sft"):
        transfer_table(df, variants_order=["nope"])


def test_missing_baseline_names_variants_present(df: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match=r"'gpt4'.*variants present: base, cfg_sft, favor_sft"):
        transfer_table(df, baseline="gpt4")


def test_unknown_metric_rejected(df: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="mean_steps"):
        transfer_table(df, metrics=["mean_steps"])


def test_variant_missing_a_group_has_no_average(df: pd.DataFrame) -> None:
    partial = df[~((df["variant"] == "favor_sft") & (df["suite"] == "libero"))]
    t = transfer_table(partial)
    assert math.isnan(t.at["favor_sft", ("libero/spatial", "sr")])
    assert math.isnan(t.at["favor_sft", ("avg", "sr")])  # not a mean over fewer columns
    assert t.at["favor_sft", ("avg", "gc")] == 0.75  # gc only exists on alfred
    assert "– | 75.0 | – | +25.0" in to_markdown(t)


def test_per_column_delta(df: pd.DataFrame) -> None:
    t = transfer_table(df, per_column_delta=True)
    assert t.at["favor_sft", ("libero/spatial", "Δsr")] == pytest.approx(-0.2)
    assert t.at["cfg_sft", ("alfred/valid_unseen", "Δgc")] == pytest.approx(0.375)


def test_format_value() -> None:
    assert format_value(0.5625) == "56.2"  # 56.25 is exact in binary; round-half-even
    assert format_value(0.563) == "56.3"
    assert format_value(0.05, delta=True) == "+5.0"
    assert format_value(-0.004, delta=True) == "-0.4"
    assert format_value(float("nan")) == ""


def test_latex_escape() -> None:
    assert latex_escape("cfg_sft 50%") == r"cfg\_sft 50\%"
    assert latex_escape("ΔSR †") == r"$\Delta$SR $^\dagger$"


def test_breakdown_values(df: pd.DataFrame) -> None:
    t = breakdown_table(df[df["suite"] == "alfred"])
    assert list(t.index) == [PICK, HEAT, "all"]
    assert t[("base", "gc")].tolist() == pytest.approx([3 / 5, 1 / 3, 0.5])
    assert t[("cfg_sft", "sr")].tolist() == pytest.approx([1.0, 0.5, 0.75])


def test_breakdown_prefixes_suite_when_several(df: pd.DataFrame) -> None:
    t = breakdown_table(df, by="split")
    assert list(t.index) == ["alfred/valid_unseen", "libero/spatial", "all"]


# --- golden files -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "render"),
    [("transfer.md", to_markdown), ("transfer.tex", to_latex), ("transfer.csv", to_csv)],
)
def test_transfer_golden(df: pd.DataFrame, name: str, render) -> None:
    check_golden(name, render(transfer_table(df, variants_order=["favor_sft", "cfg_sft"])))


def test_transfer_per_column_delta_golden(df: pd.DataFrame) -> None:
    table = transfer_table(df, variants_order=["favor_sft", "cfg_sft"], per_column_delta=True)
    check_golden("transfer_per_column_delta.md", to_markdown(table))


@pytest.mark.parametrize(
    ("name", "render"),
    [("breakdown.md", to_markdown), ("breakdown.tex", to_latex), ("breakdown.csv", to_csv)],
)
def test_breakdown_golden(df: pd.DataFrame, name: str, render) -> None:
    table = breakdown_table(df[df["suite"] == "alfred"], variants_order=["favor_sft", "cfg_sft"])
    check_golden(name, render(table))


def test_table_by_refuses_flags_it_cannot_honour(tmp_path, capsys):
    """--by task_type honours --metrics and refuses --stats/--columns;
    --by failure refuses all three (exit 2, one line), rather than ignoring them."""
    from harness.cli.entry import main

    out = str(tmp_path / "o")
    assert main(["run", "-m", "planner=oracle,random", "split=seen", "limit=4", f"out={out}", "progress=false"]) == 0
    capsys.readouterr()
    for by, flags in (("failure", ["--metrics", "sr"]), ("failure", ["--stats"]), ("failure", ["--columns", "suite"]),
                      ("task_type", ["--stats"]), ("task_type", ["--columns", "split"])):
        assert main(["table", out, "--by", by, *flags]) == 2, (by, flags)
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and f"--by {by} does not take {flags[0]}" in err
    assert main(["table", out, "--by", "task_type", "--metrics", "progress", "--format", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "oracle:progress" in header and "oracle:sr" not in header


def test_cost_metrics_from_the_transcripts(tmp_path):
    """Mean seconds and tokens per episode, from records and transcripts."""
    recs = [EpisodeRecord("r1", "base", "s", "a", f"e{i}", 0, success=True, wall_time_s=2.0 + i) for i in range(2)]
    recs += [EpisodeRecord("r2", "v", "s", "a", f"e{i}", 0, wall_time_s=1.0) for i in range(2)]
    calls = [{"run_id": "r1", "suite": "s", "split": "a", "episode_id": "e0", "seed": 0, "prompt_tokens": 100,
              "output_tokens": 10}, {"run_id": "r1", "suite": "s", "split": "a", "episode_id": "e0", "seed": 0,
                                     "prompt_tokens": 300, "output_tokens": 30},
             {"run_id": "r1", "suite": "s", "split": "a", "episode_id": "e1", "seed": 0, "prompt_tokens": 200,
              "output_tokens": 20},
             {"run_id": "r2", "suite": "s", "split": "a", "episode_id": "e0", "seed": 0, "raw_output": "x"}]
    df = add_cost_columns(records_frame(recs), calls)
    table = transfer_table(df, baseline="base", metrics=("sr", "seconds", "prompt_tokens", "output_tokens"))
    assert table.at["base", ("s/a", "seconds")] == pytest.approx(2.5)
    assert table.at["base", ("s/a", "prompt_tokens")] == pytest.approx((400 + 200) / 2)
    assert table.at["base", ("s/a", "output_tokens")] == pytest.approx(30)
    assert math.isnan(table.at["v", ("s/a", "prompt_tokens")])  # no counted call
    assert table.at["v", ("avg", "Δseconds")] == pytest.approx(-1.5)
    md = to_markdown(table)
    assert "| base | 100.0 | 2.5 | 300 | 30 |" in md and "-1.5" in md and "s/ep: mean wall time" in md
    with pytest.raises(ValueError, match="cost columns"):
        transfer_table(records_frame(recs), baseline="base", metrics=("seconds",))


def test_table_metrics_seconds_and_tokens_on_the_command_line(tmp_path, capsys):
    from harness.cli.entry import main

    out = str(tmp_path / "o")
    assert main(["run", "-m", "planner=oracle,random", "split=seen", "limit=3", f"out={out}", "progress=false"]) == 0
    capsys.readouterr()
    assert main(["table", out, "--baseline", "oracle", "--metrics", "sr,seconds,prompt_tokens", "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    col = rows[0].index("avg:seconds")
    assert all(float(r[col]) > 0 for r in rows[1:])  # wall time per episode
    assert rows[1][rows[0].index("avg:prompt_tokens")] == ""  # scripted planners count no tokens


# --- the unit of path-length-weighted columns ------------------------------------------

#: The alfred suite's two units (its protocol's expert_length_unit per backend).
SUBGOALS, LOW_LEVEL = "interactions + GotoLocation subgoals", "ALFRED low-level actions"


def plw_frame() -> pd.DataFrame:
    """Two variants on two alfred splits; ``thor`` counts in ALFRED's low-level actions on both,
    ``base`` in subgoal steps on eb_valid_seen. Expected by hand (percent), PLW SR =
    sum(success * min(1, L*/T) * L*) / sum(L*) with T = path_length, else steps:
      base eb_valid_seen: L* 4, 6; T 8 (success), 6 (failure): (0.5 * 4) / 10 = 20.0
      base valid_seen:    L* 40, 60; T 40, 120 (both success): (40 + 0.5 * 60) / 100 = 70.0
      thor eb_valid_seen: L* 40, 60; T 80, 60 (both success): (0.5 * 40 + 60) / 100 = 80.0
      thor valid_seen:    L* 40, 60; T 20 (steps 3), 60: (40 + 60) / 100 = 100.0
    """
    def r(variant, split, episode, ok, length, t, unit, steps=10):
        return {**EpisodeRecord(f"run-{variant}-{split}", variant, "alfred", split, episode, 0, success=ok,
                                gc_satisfied=int(ok), gc_total=1, steps=steps, expert_length=length,
                                path_length=t).to_dict(), "expert_length_unit": unit}
    return pd.DataFrame([
        r("base", "eb_valid_seen", "e1", True, 4, None, SUBGOALS, steps=8),
        r("base", "eb_valid_seen", "e2", False, 6, 6, SUBGOALS),
        r("base", "valid_seen", "v1", True, 40, 40, LOW_LEVEL),
        r("base", "valid_seen", "v2", True, 60, 120, LOW_LEVEL),
        r("thor", "eb_valid_seen", "e1", True, 40, 80, LOW_LEVEL),
        r("thor", "eb_valid_seen", "e2", True, 60, 60, LOW_LEVEL),
        r("thor", "valid_seen", "v1", True, 40, 20, LOW_LEVEL, steps=3),
        r("thor", "valid_seen", "v2", True, 60, 60, LOW_LEVEL),
    ])


def test_plw_columns_name_the_unit_of_their_records() -> None:
    table = transfer_table(plw_frame(), metrics=("sr", "plw_sr"))
    assert table[("alfred/eb_valid_seen", "plw_sr")].tolist() == pytest.approx([0.2, 0.8])
    assert table[("alfred/valid_seen", "plw_sr")].tolist() == pytest.approx([0.7, 1.0])
    assert table.attrs["units"] == {"alfred/eb_valid_seen": UNITS_DIFFER, "alfred/valid_seen": LOW_LEVEL,
                                    "avg": UNITS_DIFFER}
    md = to_markdown(table)
    assert f"| alfred/valid_seen PLW SR [{LOW_LEVEL}] |" in md and "| alfred/valid_seen SR |" in md
    assert f"alfred/eb_valid_seen PLW SR [{UNITS_DIFFER}]" in md
    assert (f"PLW [units differ] in alfred/eb_valid_seen: L* and T are counted in base: {SUBGOALS}; "
            f"thor: {LOW_LEVEL}.") in md
    assert f"alfred/valid_seen:plw_sr [{LOW_LEVEL}]" in to_csv(table).splitlines()[0]
    # Breakdown columns are variants: each has its own unit (base: both, so they differ).
    breakdown = breakdown_table(plw_frame(), by="split", metrics=("plw_sr",))
    assert breakdown.attrs["units"] == {"base": UNITS_DIFFER, "thor": LOW_LEVEL}


@pytest.mark.parametrize(("name", "render"), [("transfer_plw_units.md", to_markdown),
                                              ("transfer_plw_units.tex", to_latex),
                                              ("transfer_plw_units.csv", to_csv)])
def test_plw_units_golden(name: str, render) -> None:
    check_golden(name, render(transfer_table(plw_frame(), metrics=("sr", "plw_sr", "plw_gc"), per_column_delta=True)))


def test_plw_without_a_stated_unit_names_none(df: pd.DataFrame) -> None:
    """Records of older stores (no expert_length_unit) keep the plain header."""
    md = to_markdown(transfer_table(df, metrics=("plw_sr",)))
    assert "PLW SR |" in md and "[" not in md.splitlines()[0]
    same = plw_frame().assign(expert_length_unit=None)
    assert "[" not in to_markdown(transfer_table(same, metrics=("plw_sr",))).splitlines()[0]


def test_plw_cells_of_the_json_name_their_unit() -> None:
    import json

    from harness.tables.selection import Selection
    from harness.tables.json_table import to_json

    frame = plw_frame()
    doc = json.loads(to_json(transfer_table(frame, metrics=("sr", "plw_sr")),
                             Selection(frame.assign(repeat=0), pd.DataFrame(), [], [])))
    thor = next(r for r in doc["rows"] if r["variant"] == "thor")["cells"]
    assert thor["alfred/valid_seen"]["plw_sr"]["length_unit"] == LOW_LEVEL
    assert thor["alfred/eb_valid_seen"]["plw_sr"]["length_unit"] == UNITS_DIFFER
    assert "length_unit" not in thor["alfred/valid_seen"]["sr"]
