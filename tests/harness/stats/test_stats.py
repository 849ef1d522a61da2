"""Paired statistics (harness/stats/paired.py) against hand-computed cases, and their place in tables."""

import math

import numpy as np
import pandas as pd
import pytest

from harness.scoring.summaries import records_frame
from harness.stats.paired import PairedCell, mcnemar_exact, paired_delta
from harness.types import EpisodeRecord
from harness.tables.build import transfer_table
from harness.tables.render import format_p, to_csv, to_latex, to_markdown


def test_mcnemar_exact_hand_computed():
    # b=0, c=0: no discordant pair, no evidence.
    assert mcnemar_exact(0, 0) == 1.0
    # b=5, c=0: two-sided 2 * (1/2)^5 = 0.0625.
    assert mcnemar_exact(5, 0) == pytest.approx(0.0625)
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    # b=1, c=4 (n=5): 2 * (C(5,0)+C(5,1)) / 32 = 2 * 6/32 = 0.375.
    assert mcnemar_exact(1, 4) == pytest.approx(0.375)
    # b=3, c=3: the two tails overlap; capped at 1.
    assert mcnemar_exact(3, 3) == 1.0
    # b=10, c=2 (n=12): 2 * (1 + 12 + 66) / 4096 = 158/4096.
    assert mcnemar_exact(10, 2) == pytest.approx(158 / 4096)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def cell(sv, sb, weight=1.0, s_v=None, s_b=None, ts=None):
    sv, sb = np.array(sv, bool), np.array(sb, bool)
    ts = np.ones(sv.size) if ts is None else np.array(ts, float)
    s_v = sv.astype(float) if s_v is None else np.array(s_v, float)
    s_b = sb.astype(float) if s_b is None else np.array(s_b, float)
    return PairedCell(sv, sb, s_v, ts, s_b, ts, weight)


def test_paired_delta_point_p_and_interval():
    # 10 pairs: the variant solves 4 the baseline failed, the baseline 1 the variant failed.
    c = cell([1, 1, 1, 1, 0, 1, 1, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 0, 0, 0])
    r = paired_delta([c], "sr")
    assert r.delta == pytest.approx(0.6 - 0.3)
    assert r.p == pytest.approx(mcnemar_exact(4, 1))
    assert r.pairs == 10
    assert r.lo < r.delta < r.hi and -1 <= r.lo and r.hi <= 1
    # Deterministic (fixed seed): the same table twice.
    assert paired_delta([c], "sr") == r


def test_identical_variants_have_a_degenerate_interval_at_zero():
    c = cell([1, 0, 1, 0], [1, 0, 1, 0])
    r = paired_delta([c], "sr")
    assert (r.delta, r.lo, r.hi, r.p) == (0.0, 0.0, 0.0, 1.0)


def test_paired_bootstrap_interval_matches_the_analytic_one_for_a_large_sample():
    """With n=400 pairs and discordance b=60, c=20 the bootstrap 95 % interval of the
    paired difference must sit near the normal approximation d ± 1.96·sqrt((b+c)/n² − d²/n)."""
    n, b, c = 400, 60, 20
    sv = np.array([1] * b + [0] * c + [1] * 100 + [0] * (n - b - c - 100), bool)
    sb = np.array([0] * b + [1] * c + [1] * 100 + [0] * (n - b - c - 100), bool)
    r = paired_delta([cell(sv, sb)], "sr")
    d = (b - c) / n
    half = 1.96 * math.sqrt((b + c) / n**2 - d**2 / n)
    assert r.delta == pytest.approx(d)
    assert r.lo == pytest.approx(d - half, abs=0.01) and r.hi == pytest.approx(d + half, abs=0.01)


def test_weighted_cells_average_their_deltas_and_pool_discordant_pairs():
    a = cell([1, 1, 0, 0], [0, 0, 0, 0], weight=0.5)  # Δ = 0.5
    b = cell([0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1], weight=0.5)  # Δ = 1/6
    r = paired_delta([a, b], "sr")
    assert r.delta == pytest.approx(0.5 * 0.5 + 0.5 / 6)
    assert r.p == pytest.approx(mcnemar_exact(3, 0))
    assert r.pairs == 10


def test_gc_delta_is_pooled_per_cell():
    c = cell([0, 0], [0, 0], s_v=[1, 2], s_b=[0, 1], ts=[2, 3])
    r = paired_delta([c], "gc")
    assert r.delta == pytest.approx(3 / 5 - 1 / 5)
    assert math.isnan(r.p)  # McNemar is for success only


def test_no_pairs_gives_nan():
    r = paired_delta([cell([], [])], "sr")
    assert math.isnan(r.delta) and r.pairs == 0


def test_pairs_of_a_score_count_only_episodes_both_sides_scored():
    # A judged score exists for some questions only (cfg_bench's S: the open-ended ones): four
    # episodes, the variant scored on 0, 1, 3, the baseline on 0, 1, 2; pairs with both: 2.
    from harness.scoring.policy import Metric

    score = Metric("s", "S", "s", range=(0.0, 10.0), unit="score")
    z = np.zeros(4, dtype=bool)
    nv, dv = np.array([6.0, 8.0, 0.0, 4.0]), np.array([1.0, 1.0, 0.0, 1.0])
    nb, db = np.array([2.0, 4.0, 5.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0])
    c = PairedCell(z, z, z.astype(float), z.astype(float), z.astype(float), z.astype(float), 1.0, None, nv, dv, nb, db)
    r = paired_delta([c], score)
    assert r.pairs == 2
    assert r.delta == pytest.approx(18 / 3 - 11 / 3)  # each side's mean over its own scored episodes


def _records():
    recs = []
    for i in range(20):
        recs.append(EpisodeRecord("r0", "base", "eb_alfred", "base", f"e{i}", 0, success=i < 5,
                                  gc_satisfied=int(i < 5), gc_total=1))
        recs.append(EpisodeRecord("r1", "cfg_sft", "eb_alfred", "base", f"e{i}", 0, success=i < 9,
                                  gc_satisfied=int(i < 9), gc_total=1))
    # an episode only the variant ran is not paired
    recs.append(EpisodeRecord("r1", "cfg_sft", "eb_alfred", "base", "extra", 0, success=True, gc_satisfied=1, gc_total=1))
    return records_frame(recs)


def test_table_stats_columns_and_rendering():
    table = transfer_table(_records(), baseline="base", stats=True)
    group = "eb_alfred/base"
    lo, hi = table.at["cfg_sft", (group, "Δsr:lo")], table.at["cfg_sft", (group, "Δsr:hi")]
    assert table.at["cfg_sft", (group, "Δsr:p")] == pytest.approx(mcnemar_exact(4, 0))
    # the interval comes from the 20 paired episodes only (Δ there = 0.2)
    assert lo <= 0.2 <= hi
    md = to_markdown(table)
    assert f"p={format_p(mcnemar_exact(4, 0))}" in md and "paired bootstrap 95 % interval" in md
    csv = to_csv(table)
    header = csv.splitlines()[0].split(",")
    assert f"{group}:Δsr:p" in header and f"{group}:Δsr:lo" in header
    assert "[" not in csv  # CSV keeps one number per field


def test_table_without_baseline_has_no_delta_and_stats_need_one():
    df = _records()
    table = transfer_table(df, baseline=None)
    assert not any(m.startswith("Δ") for _, m in table.columns)
    with pytest.raises(ValueError, match="baseline"):
        transfer_table(df, baseline=None, stats=True)


def test_suite_columns_average_the_suite_splits():
    recs = []
    for split, wins in (("a", 2), ("b", 4)):
        for i in range(4):
            recs.append(EpisodeRecord("r", "base", "s1", split, f"e{i}", 0, success=i < wins, gc_total=1,
                                      gc_satisfied=int(i < wins)))
    table = transfer_table(records_frame(recs), baseline="base", columns="suite")
    assert list(dict.fromkeys(g for g, _ in table.columns)) == ["s1", "avg"]
    assert table.at["base", ("s1", "sr")] == pytest.approx((0.5 + 1.0) / 2)


def test_error_records_count_as_no_goal_condition_met():
    """Mutation guarded: using an error record's recorded gc_satisfied in GC."""
    recs = records_frame([
        EpisodeRecord("r", "base", "s", "a", "e0", 0, success=True, gc_satisfied=2, gc_total=2),
        EpisodeRecord("r", "base", "s", "a", "e1", 0, success=True, gc_satisfied=2, gc_total=2,
                      error_kind="timeout"),
        # failed at reset: the total came from the task, nothing satisfied
        EpisodeRecord("r", "base", "s", "a", "e2", 0, gc_satisfied=0, gc_total=2, error_kind="env"),
    ])
    table = transfer_table(pd.DataFrame(recs), baseline=None)
    assert table.at["base", ("s/a", "sr")] == pytest.approx(1 / 3)
    assert table.at["base", ("s/a", "gc")] == pytest.approx(2 / 6)


def test_stats_delta_is_paired_on_the_shared_episodes_and_inside_its_interval():
    """The variant ran 20 shared episodes + 20 extra successes.
    Unpaired, its SR is 29/40 vs 5/20 (Δ +47.5) while the shared episodes give
    9/20 vs 5/20 (Δ +20): the Δ printed must be the paired one, inside its interval."""
    recs = []
    for i in range(20):
        recs.append(EpisodeRecord("r0", "base", "s", "a", f"e{i}", 0, success=i < 5, gc_satisfied=int(i < 5), gc_total=1))
        recs.append(EpisodeRecord("r1", "v", "s", "a", f"e{i}", 0, success=i < 9, gc_satisfied=int(i < 9), gc_total=1))
    for i in range(20):
        recs.append(EpisodeRecord("r1", "v", "s", "a", f"x{i}", 0, success=True, gc_satisfied=1, gc_total=1))
    df = records_frame(recs)
    table = transfer_table(df, baseline="base", stats=True)
    for col in ("s/a", "avg"):
        for m in ("sr", "gc"):
            d, lo, hi = (table.at["v", (col, f"Δ{m}{x}")] for x in ("", ":lo", ":hi"))
            assert d == pytest.approx(0.20) and lo <= d <= hi, (col, m)
        assert table.at["v", (col, "Δsr:n")] == 20
    assert table.at["v", ("s/a", "sr")] == pytest.approx(29 / 40)  # the value column keeps every episode
    assert table.attrs["mismatch"] == [
        {"row": "v", "group": "s/a", "episodes": 40, "baseline_episodes": 20, "shared": 20},
        {"row": "v", "group": "avg", "episodes": 40, "baseline_episodes": 20, "shared": 20}]
    md = to_markdown(table)
    assert "| v | 72.5 | 72.5 | +20.0‡ [" in md
    assert "‡ v, s/a: ran 40 episodes, base 20, 20 shared; the Δ and its interval are over the 20 shared" in md
    assert r"$^\ddagger$" in to_latex(table)
    csv = to_csv(table).splitlines()
    assert "s/a:Δsr:n" in csv[0].split(",") and "‡" not in "\n".join(csv)
    # Without --stats the Δ is the difference of the shown values, flagged as comparing different sets.
    plain = transfer_table(df, baseline="base")
    assert plain.at["v", ("avg", "Δsr")] == pytest.approx(29 / 40 - 5 / 20)
    assert "compares different episode sets" in to_markdown(plain)
    # Same episode sets: no mark, no note.
    same = transfer_table(df[~df["episode_id"].str.startswith("x")], baseline="base", stats=True)
    assert same.attrs["mismatch"] == [] and "‡" not in to_markdown(same)


def test_blocked_bootstrap_equals_the_plain_gather_bit_for_bit():
    """The bootstrap sums resamples block by block (bounded memory); its draws and
    results must be those of one plain ``rng.integers(0, n, size=(B, n))`` gather."""
    from harness.stats import paired as stats

    rng = np.random.default_rng(3)
    n, resamples = 137, 1234  # not a multiple of the block size
    sv, sb = rng.random(n) < 0.4, rng.random(n) < 0.3
    ts = rng.integers(0, 4, n).astype(float)
    s_v, s_b = np.minimum(ts, rng.integers(0, 4, n)), np.minimum(ts, rng.integers(0, 4, n))
    c = PairedCell(sv, sb, s_v, ts, s_b, ts)
    idx = np.random.default_rng(0).integers(0, n, size=(resamples, n))
    with np.errstate(invalid="ignore", divide="ignore"):
        plain = {"sr": sv[idx].mean(axis=-1) - sb[idx].mean(axis=-1),
                 "gc": s_v[idx].sum(-1) / ts[idx].sum(-1) - s_b[idx].sum(-1) / ts[idx].sum(-1)}
    for metric, boot in plain.items():
        r = paired_delta([c], metric, resamples=resamples, seed=0)
        lo, hi = np.nanpercentile(boot, [2.5, 97.5])
        assert (r.lo, r.hi) == (lo, hi), metric
    assert stats._BLOCK_ROWS < resamples
    # Every resample's sums, not only the percentiles.
    sums = stats._resample_sums(np.random.default_rng(0), stats._pair_matrix(c), resamples)
    assert np.array_equal(sums, np.stack([sv[idx].sum(-1), sb[idx].sum(-1), s_v[idx].sum(-1), ts[idx].sum(-1),
                                          s_b[idx].sum(-1), ts[idx].sum(-1)], axis=1))
