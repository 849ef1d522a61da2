"""Repeats of a cell (runs that differ only in the trial seed or in a declared repeat index):
the table's repeat count, sd over repeats and two-stage bootstrap interval, and paired
statistics over every repeat -- against expectations computed by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from harness.tables import selection as results
from harness.cli.entry import main
from harness.stats.paired import PairedCell, paired_delta, repeat_interval, value_matrix
from harness.store import ResultStore
from harness.types import EpisodeRecord
from tests.harness.tables.test_table_selection import write_store
from harness.tables.build import transfer_table


def _gc_repeat(satisfied: int, n: int = 4, total: int = 4) -> np.ndarray:
    """A repeat whose episodes all met ``satisfied`` of ``total`` goal conditions (no episode spread)."""
    return value_matrix(np.zeros(n, bool), np.full(n, satisfied), np.full(n, total))


def test_interval_over_repeats_without_episode_spread():
    """Three repeats with GC 25, 50, 75 % and identical episodes within each: only the repeats
    vary. Their mean is 50, sd 25; a resample is the mean of three repeats drawn with replacement,
    whose lowest value 25 (all three the first) has probability 1/27 > 2.5 %: the interval is
    exactly [25, 75]. Mutation caught: resampling the pooled episodes, not repeats (an interval
    of about [33, 67] instead)."""
    result = repeat_interval([[_gc_repeat(1)], [_gc_repeat(2)], [_gc_repeat(3)]], [1.0], "gc")
    assert result.repeats == 3
    assert result.mean == pytest.approx(0.5) and result.sd == pytest.approx(0.25)
    assert (result.lo, result.hi) == (pytest.approx(0.25), pytest.approx(0.75))


def test_one_repeat_is_the_episode_bootstrap():
    """One repeat, 1 of 4 episodes solved: a resample is the mean of 4 draws from {1, 0, 0, 0};
    P(0) = (3/4)^4 = 0.32 and P(>= 3/4) = 13/256 = 0.051 > 2.5 % > P(1) = 1/256: [0, 75].
    Mutation caught: skipping the episode stage (a zero-width interval)."""
    one = value_matrix(np.array([1, 0, 0, 0], bool), np.zeros(4), np.zeros(4))
    result = repeat_interval([[one]], [1.0], "sr")
    assert result.repeats == 1 and math.isnan(result.sd) and result.mean == pytest.approx(0.25)
    assert (result.lo, result.hi) == (pytest.approx(0.0), pytest.approx(0.75))


def test_paired_delta_over_repeats_resamples_repeats():
    """Repeat A: the variant solves all 4 episodes, the baseline none (Δ 1); repeat B: both solve
    all (Δ 0). Pooled Δ 0.5; a two-stage resample is the mean of two repeats drawn from {1, 0}
    (0 with probability 1/4): [0, 100]. The pooled-pairs bootstrap (no repeats) gives a lower
    end above 0. McNemar pools the pairs: b = 4, c = 0, p = 2/16."""
    ok, no = np.ones(4, bool), np.zeros(4, bool)
    z = np.zeros(8)
    cell = PairedCell(np.r_[ok, ok], np.r_[no, ok], z, z, z, z, 1.0, np.array(["A"] * 4 + ["B"] * 4, dtype=object))
    result = paired_delta([cell], "sr")
    assert result.delta == pytest.approx(0.5) and result.pairs == 8 and result.repeats == 2
    assert (result.lo, result.hi) == (pytest.approx(0.0), pytest.approx(1.0))
    assert result.p == pytest.approx(0.125)
    pooled = paired_delta([replace(cell, repeat=None)], "sr")
    assert pooled.repeats == 1 and pooled.lo > 0.0 and pooled.delta == result.delta


def _seed_repeats(out, variant: str, solved: list[int], start: int = 0) -> None:
    """One run per trial seed offset of ``variant`` on s1/a (4 episodes; repeat j solves solved[j])."""
    for seed, ok in enumerate(solved):
        recs = [EpisodeRecord(f"{variant}-r{seed}", variant, "s1", "a", f"e{i}", i + seed, success=i < ok,
                              gc_satisfied=1 if i < ok else 0, gc_total=1) for i in range(4)]
        write_store(out, recs, identity={"seed_offset": seed} if seed else {})


def test_table_shows_repeats_sd_and_interval(tmp_path, capsys):
    """base: 1, 3, 2 of 4 in three seeds -> 50.0, sd of (25, 75, 50) = 25.0, r=3; cfg_sft: one run
    with 3 of 4 -> 75.0 (r=1), no sd. Paired ΔSR over the one shared seed (seed 0): 75 - 25 = +50."""
    out = tmp_path / "o"
    _seed_repeats(out, "base", [1, 3, 2])
    _seed_repeats(out, "cfg_sft", [3])
    assert main(["table", str(out), "--metrics", "sr"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| variant | s1/a SR | avg SR | avg ΔSR |"
    assert lines[2] == "| base | 50.0 ±25.0 (r=3) | 50.0 ±25.0 (r=3) | – |"
    assert lines[3].startswith("| cfg_sft | 75.0 (r=1) | 75.0 (r=1) | +25.0")
    assert any(line.startswith("r: repeats of the cell") for line in lines)
    assert main(["table", str(out), "--metrics", "sr", "--stats"]) == 0
    text = capsys.readouterr().out
    assert "| cfg_sft | 75.0 (r=1) | +50.0‡ [" in text  # paired: seed 0 only (75 - 25), ‡: base ran more
    assert "base, s1/a: SR 50.0 ±25.0 (r=3) [" in text
    assert main(["table", str(out), "--metrics", "sr", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    base = next(r for r in doc["rows"] if r["variant"] == "base")["cells"]["s1/a"]["sr"]
    assert base["value"] == 0.5 and base["n"] == 12 and base["repeats"] == 3
    assert base["sd"] == pytest.approx(0.25) and base["interval_kind"] == "two_stage_bootstrap95"
    lo, hi = base["interval"]
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    assert sorted(r["repeat"] for r in doc["runs"] if r["variant"] == "base") == [0, 1, 2]
    assert main(["table", str(out), "--metrics", "sr", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.startswith("variant,s1/a:sr,s1/a:sr:sd,s1/a:sr:k,s1/a:sr:lo,s1/a:sr:hi")
    assert row.startswith("base,50.0,25.0,3,")


def test_one_run_per_cell_keeps_the_table_as_it_was(tmp_path, capsys):
    """No cell with repeats: no r=, no extra columns (the goldens' tables are unchanged)."""
    out = tmp_path / "o"
    _seed_repeats(out, "base", [1])
    _seed_repeats(out, "cfg_sft", [3])
    assert main(["table", str(out), "--metrics", "sr"]) == 0
    text = capsys.readouterr().out
    assert "r=" not in text and "| base | 25.0 | 25.0 | – |" in text


def test_declared_repeat_index_pairs_repeat_with_repeat(tmp_path, capsys):
    """Two repeats (repeat index 0 and 1) of base and cfg_sft on the same 4 episodes and seeds.
    base solves 1 then 3, cfg_sft 2 then 4: one cell each (SR 50 and 75, sd 35.4 = sd(25, 75)),
    and the paired Δ is over 8 pairs (repeat with repeat), not 16 (every repeat with every other).
    Mutation caught: pairing on episode and seed alone."""
    out = tmp_path / "o"
    for variant, solved in (("base", [1, 3]), ("cfg_sft", [2, 4])):
        for k, ok in enumerate(solved):
            recs = [EpisodeRecord(f"{variant}-k{k}", variant, "s1", "a", f"e{i}", i, success=i < ok,
                                  gc_satisfied=0, gc_total=0) for i in range(4)]
            write_store(out, recs, identity={"repeat": k} if k else {})
    selection = results.load([str(out)])
    assert selection.notes == [] and sorted(set(selection.frame["repeat_index"])) == [0, 1]
    table = transfer_table(selection.frame, metrics=("sr",), stats=True)
    assert table.at["base", ("avg", "sr")] == pytest.approx(0.5)
    assert table.at["base", ("avg", "sr:k")] == 2 and table.at["base", ("avg", "sr:sd")] == pytest.approx(
        np.std([0.25, 0.75], ddof=1))
    assert table.at["cfg_sft", ("avg", "Δsr:n")] == 8
    assert table.at["cfg_sft", ("avg", "Δsr")] == pytest.approx(0.25)
    assert table.attrs["mismatch"] == []


def test_run_with_repeat_index_is_a_new_run_shown_as_a_repeat(tmp_path, capsys):
    """`harness run ... repeat=1` with the same seeds: another run id (not resumed into repeat 0),
    the table's cell counts both (r=2), and the identity's other ingredients are unchanged."""
    from tests.helpers import require_example_plugin

    require_example_plugin()
    out = tmp_path / "o"
    common = ["suite=example", "split=test", "planner=random", "limit=3", f"out={out}", "progress=false"]
    assert main(["run", *common]) == 0
    assert main(["run", *common, "repeat=1"]) == 0
    capsys.readouterr()
    with ResultStore(out, readonly=True) as store:
        runs = store.runs()
    assert len(runs) == 2
    ids = [json.loads(i) for i in runs["identity"]]
    assert sorted(i.get("repeat", 0) for i in ids) == [0, 1]
    assert {k: v for k, v in ids[0].items() if k != "repeat"} == {k: v for k, v in ids[1].items() if k != "repeat"}
    assert main(["table", str(out), "--metrics", "sr"]) == 0
    assert "(r=2)" in capsys.readouterr().out
    assert main(["run", *common, "repeat=-1"]) == 2
    assert "repeat must be between 0 and" in capsys.readouterr().err


def test_multinomial_episode_stage_has_the_law_of_index_draws():
    """The episode stage draws multinomial counts over distinct rows: the resampled sum of
    successes (3 of 10 solved) has mean n p = 3 and variance n p (1 - p) = 2.1, as index draws.
    Mutation caught: the counts applied to the distinct rows in another order."""
    from harness.stats.paired import _multinomial_sums

    ok = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0], bool)
    m = value_matrix(ok, ok * 2, np.full(10, 9))  # two distinct rows, 3 and 7 times
    sums = _multinomial_sums(np.random.default_rng(0), m, 40_000)
    assert sums[:, 0].mean() == pytest.approx(3.0, abs=0.03) and sums[:, 0].var() == pytest.approx(2.1, rel=0.03)
    assert sums[:, 2].min() == sums[:, 2].max() == 90  # each resample has n = 10 episodes
    assert np.array_equal(sums[:, 1], 2 * sums[:, 0])  # the rows' columns stay together
