"""The betting confidence sequence (harness/stats/sequential/): its guarantee, the properties the
paper proves or shows, and agreement with the authors' own implementation (reference values it
computed, tests/data/confseq_reference.json)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.stats import sequential as sq


@pytest.mark.parametrize("rule", sq.BETTING_RULES)
def test_time_uniform_coverage_holds_at_the_true_mean(rule):
    """Ville's inequality: the capital at the true mean reaches 1/alpha on at most an alpha
    fraction of paths, over the whole horizon (not at one time). 4,000 paths of 300 steps
    for each of three Bernoulli means; the Monte-Carlo standard error at alpha = 0.05 is
    about 0.0035, so 0.05 + 3 SE bounds the rate."""
    rng = np.random.default_rng(1)
    for p in (0.1, 0.5, 0.8):
        x = rng.binomial(1, p, size=(4000, 300)).astype(float)
        when, _side = sq.first_crossing(x, 0.05, m=p, rule=rule)
        rate = float(np.mean(when > 0))
        assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000), (p, rate)
    # bounded scores, paired: differences of two Beta(2, 3) scores, null m = 1/2 after rescaling
    d = rng.beta(2, 3, size=(4000, 300)) - rng.beta(2, 3, size=(4000, 300))
    when, _side = sq.first_crossing(sq.rescale(d, 1.0), 0.05, rule=rule)
    assert float(np.mean(when > 0)) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)


@pytest.mark.parametrize("rule", sq.BETTING_RULES)
def test_a_real_difference_is_found_and_its_direction_is_right(rule):
    rng = np.random.default_rng(2)
    a = rng.binomial(1, 0.8, size=(500, 400))
    b = rng.binomial(1, 0.4, size=(500, 400))
    when, side = sq.first_crossing(sq.rescale(a - b, 1.0), 0.05, rule=rule)
    assert np.mean(when > 0) > 0.99 and set(side[when > 0]) == {1}
    when, side = sq.first_crossing(sq.rescale(b - a, 1.0), 0.05, rule=rule)
    assert np.mean(when > 0) > 0.99 and set(side[when > 0]) == {-1}


def test_agrapa_bets_decide_sooner_than_the_hedged_interval():
    """Why aGRAPA is the default for decisions: at a 10-point gap it reaches a decision in
    fewer pairs on average than the hedged PrPl process (whose bets shrink like
    1/sqrt(t log t) to keep the interval tight at every t, not to test one value)."""
    rng = np.random.default_rng(7)
    x = sq.rescale(rng.binomial(1, 0.5, size=(2000, 1200)) - rng.binomial(1, 0.4, size=(2000, 1200)), 1.0)
    used = {}
    for rule in sq.BETTING_RULES:
        when, _side = sq.first_crossing(x, 0.05, rule=rule)
        used[rule] = np.where(when > 0, when, 1200).mean()
    assert used["betting_agrapa"] < 0.9 * used["betting_hedged"], used


@pytest.mark.parametrize("rule", sq.BETTING_RULES)
def test_the_confidence_set_is_an_interval(rule):
    """The paper shows the hedged capital's confidence set is an interval (so testing m = 1/2
    alone decides better / worse); the aGRAPA one is checked here on the same sequences: on a
    fine grid the accepted means are contiguous."""
    rng = np.random.default_rng(3)
    ms = np.arange(1, sq.GRID) / sq.GRID
    for i in range(16):
        x = (rng.uniform(size=120) ** rng.uniform(0.2, 3.0) if i % 2 else
             sq.rescale(rng.binomial(1, rng.uniform(0.2, 0.8), 120) - rng.binomial(1, rng.uniform(0.2, 0.8), 120), 1.0))
        accept = sq.log_capital(x[None, :], ms[:, None], 0.05, rule) < math.log(20)
        for t in range(x.size):
            idx = np.flatnonzero(accept[:, t])
            assert len(idx) == 0 or idx[-1] - idx[0] + 1 == len(idx)


def _hoeffding_pm(x: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The paper's predictable-mixture Hoeffding CS (PM-H): bets
    min(sqrt(8 log(2/alpha) / (t log(1+t))), 1), centre the bet-weighted mean, half-width
    (log(2/alpha) + sum lambda^2/8) / sum lambda."""
    t = np.arange(1, x.size + 1)
    lam = np.minimum(np.sqrt(8 * math.log(2 / alpha) / (t * np.log1p(t))), 1.0)
    centre = np.cumsum(lam * x) / np.cumsum(lam)
    half = (math.log(2 / alpha) + np.cumsum(lam ** 2 / 8)) / np.cumsum(lam)
    return centre - half, centre + half


def test_variance_adaptive_tighter_than_hoeffding_on_low_variance_data():
    """The paper's comparisons: for low-variance data (Beta(10, 30), variance ~0.0046) the
    betting CS is far narrower than the Hoeffding-type CS, and at the maximal variance
    (Bernoulli(1/2)) it is not wider than it by more than a few per cent."""
    rng = np.random.default_rng(4)
    x = rng.beta(10, 30, size=1000)
    lo, hi = sq.confidence_sequence(x, 0.05, rule="betting_hedged")
    hlo, hhi = _hoeffding_pm(x, 0.05)
    assert lo[-1] <= 0.25 <= hi[-1]
    assert (hi[-1] - lo[-1]) < 0.5 * (hhi[-1] - hlo[-1])
    x = rng.binomial(1, 0.5, size=1000).astype(float)
    lo, hi = sq.confidence_sequence(x, 0.05, rule="betting_hedged")
    hlo, hhi = _hoeffding_pm(x, 0.05)
    assert (hi[-1] - lo[-1]) < 1.1 * (hhi[-1] - hlo[-1])


@pytest.mark.parametrize("rule", sq.BETTING_RULES)
def test_decide_agrees_with_the_fast_crossing_test(rule):
    """decide() (the interval on a grid, running intersection) and first_crossing() (the
    capital at m = 1/2 only, used by the benchmark) make the same decision at the same pair."""
    rng = np.random.default_rng(5)
    for gap in (0.0, 0.1, 0.3):
        a = rng.binomial(1, 0.5 + gap / 2, size=(30, 200))
        b = rng.binomial(1, 0.5 - gap / 2, size=(30, 200))
        when, side = sq.first_crossing(sq.rescale(a - b, 1.0), 0.05, rule=rule)
        for i in range(30):
            d = sq.decide(a[i] - b[i], 0.05, rule=rule)
            expected = {1: "better", -1: "worse", 0: None}[int(side[i])]
            assert (d.outcome, d.at or 0) == (expected, int(when[i]))


def test_decide_reports_worse_equivalent_and_undecided():
    worse = sq.decide([-1] * 12 + [0] * 3, 0.05)
    assert worse.outcome == "worse" and worse.hi <= 0 and worse.at <= 12
    # identical agents: every pair concordant; the interval closes in on 0
    same = sq.decide([0] * 200, 0.05, margin=0.1)
    assert same.outcome == "equivalent" and -0.1 <= same.lo and same.hi <= 0.1
    assert sq.decide([0] * 200, 0.05).outcome is None  # without a margin nothing is decided
    few = sq.decide([1, 0, -1, 1], 0.05)
    assert few.outcome is None and few.at is None and few.lo < 0 < few.hi and few.n == 4
    assert len(few.path_lo) == 4
    # a bounded score on [0, 10]: differences in [-10, 10], interval in metric units
    score = sq.decide([3.0] * 40, 0.05, width=10.0)
    assert score.outcome == "better" and 0 <= score.lo <= 3.0 <= score.hi <= 10.0


@pytest.mark.parametrize("kwargs, message", [({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha"),
                                             ({"alpha": 0.05, "margin": 0.0}, "margin"),
                                             ({"alpha": 0.05, "margin": 1.0}, "margin"),
                                             ({"alpha": 0.05, "rule": "sprt"}, "unknown sequential rule")])
def test_decide_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sq.decide([1, 0], **kwargs)


def test_observations_outside_the_unit_interval_are_refused():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sq.confidence_sequence([0.2, 1.3], 0.05)


#: Reference values computed once by the authors' implementation (confseq, the commit named in
#: the file; scripts/gen_confseq_reference.py regenerates them from a confseq checkout).
CONFSEQ = Path(__file__).resolve().parents[2] / "data" / "confseq_reference.json"


def _confseq() -> dict:
    return json.loads(CONFSEQ.read_text())


def test_agrees_with_confseq_hedged_cs():
    """confseq's hedged_cs (same bets, hedge and truncation, grid of 1000, running
    intersection) on four sequences at three alphas: the same bounds, to rounding."""
    ref = _confseq()
    assert ref["source"] == "github.com/gostevehoward/confseq" and len(ref["commit"]) == 40
    assert len(ref["hedged_cs"]) == 12
    for case in ref["hedged_cs"]:
        x = np.asarray(ref["sequences"][case["sequence"]])
        lo, hi = sq.confidence_sequence(x, case["alpha"], rule="betting_hedged", grid=1000)
        np.testing.assert_allclose(lo, case["lower"], rtol=0, atol=1e-12, err_msg=str(case["sequence"]))
        np.testing.assert_allclose(hi, case["upper"], rtol=0, atol=1e-12, err_msg=str(case["sequence"]))


def test_agrapa_capital_agrees_with_confseq():
    """confseq's betting martingale with its aGRAPA bets (lambda_aKelly), one-sided capital
    (theta = 1) and truncation 1/2 is the betting_agrapa capital, to rounding."""
    ref = _confseq()
    assert len(ref["betting_mart_aKelly"]) == 12
    for case in ref["betting_mart_aKelly"]:
        x = np.asarray(ref["sequences"][case["sequence"]])
        ours = np.exp(sq.log_capital(x, case["m"], 0.05, "betting_agrapa"))
        np.testing.assert_allclose(ours, case["capital"], rtol=1e-12, atol=0, err_msg=str(case))


def test_race_drops_clearly_worse_variants_early_and_keeps_the_best():
    rng = np.random.default_rng(9)
    p = np.array([0.1, 0.3, 0.9])
    x = (rng.random((200, 3, 300)) < p[None, :, None]).astype(float)
    used, chosen = sq.race(x, 0.05)
    assert np.mean(chosen == 2) > 0.99
    assert np.median(used[:, 0]) <= 30 and np.median(used[:, 1]) <= 60  # dropped within a few rounds
    assert (used[:, 2] == 300).mean() > 0.99  # the best runs to the end of selection
    one_used, one_chosen = sq.race(x[:1], 0.05)
    assert one_used.shape == (1, 3) and one_chosen.tolist() == chosen[:1].tolist()


def test_race_keeps_a_best_variant_with_probability_at_least_1_minus_alpha():
    """Five equally good variants: each is a best one, and dropping it is a wrong decision,
    made only when one of its four tests (each at alpha / 4) decides wrongly; over 2,000
    races of 300 episodes a given variant is dropped in at most alpha of them (+ 3 SE)."""
    rng = np.random.default_rng(10)
    x = (rng.random((2000, 5, 300)) < 0.5).astype(float)
    used, _chosen = sq.race(x, 0.05)
    for arm in range(5):
        dropped = float(np.mean(used[:, arm] < 300))
        assert dropped <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000), (arm, dropped)


def _race_by_hand(x: np.ndarray, alpha: float, step: int) -> tuple[list[int], int]:
    """The race's definition, one round at a time, on the data each round has seen: every
    pair of surviving variants tested on their pairs so far; a variant beaten by a survivor
    is dropped."""
    k, n = x.shape
    alive, used = set(range(k)), [n] * k
    for end in range(step, n + 1, step):
        beaten = set()
        for i in alive:
            for j in alive - {i}:
                when, side = sq.first_crossing(sq.rescale(x[j, :end] - x[i, :end], 1.0), alpha / (k - 1))
                if when[0] and side[0] > 0:
                    beaten.add(i)
        for i in beaten:
            used[i] = end
        alive -= beaten
    means = [x[i, :used[i]].mean() if i in alive else -np.inf for i in range(k)]
    return used, int(np.argmax(means))


def test_race_matches_its_definition_round_by_round():
    rng = np.random.default_rng(11)
    for _ in range(60):
        p = rng.uniform(0.1, 0.9, size=6)
        x = (rng.random((6, 200)) < p[:, None]).astype(float)
        used, chosen = sq.race(x[None], 0.05, step=10)
        assert (used[0].tolist(), int(chosen[0])) == _race_by_hand(x, 0.05, 10)


def test_the_race_rule_drops_by_round_breaks_a_cycle_and_ends_where_asked():
    """:func:`harness.stats.sequential.eliminate` (the rule both the simulated race and the
    sweep's replay use) on decisions given by hand, in rounds of 5: 0 beats 1 at episode 3 and
    3 at 4 (as 2 does), 2 beats 0 at 9 (and 1, out by then, 2 at 9: no cycle)."""
    first = np.zeros((1, 4, 4), dtype=int)
    first[0, 1, 0] = 3   # 0 better than 1
    first[0, 0, 2] = 9  # 2 better than 0
    first[0, 2, 1] = 9  # 1 better than 2 (1 is out by then: no cycle)
    first[0, 3, 0] = first[0, 3, 2] = 4
    score = np.array([[0.6, 0.1, 0.5, 0.2]])
    out = sq.eliminate(first, lambda ends: score, step=5, upto=20)
    assert out.used.tolist() == [[10, 5, 20, 5]] and out.dropped.tolist() == [[True, True, False, True]]
    assert out.by.tolist() == [[2, 0, -1, 0]] and out.decided_at.tolist() == [[9, 3, 0, 4]]  # ties: lowest index
    assert out.ended.tolist() == [20] and out.chosen.tolist() == [2]
    alone = sq.eliminate(first, lambda ends: score, step=5, upto=20, to_the_end=False)
    assert alone.used.tolist() == [[10, 5, 10, 5]] and alone.ended.tolist() == [10]  # a lone survivor stops
    later = sq.eliminate(first, lambda ends: score, step=5, upto=20, order=np.array([3, 0, 1, 2]))
    assert later.by[0, 3] == 2  # the tie at episode 4 goes to the lower order

    first[0, 2, 1] = 0
    first[0, 2, 0] = 7   # 0 and 2 beat each other in round 2: a cycle, the best score stays
    out = sq.eliminate(first, lambda ends: score, step=5, upto=20)
    assert out.dropped.tolist() == [[False, True, True, True]] and out.used[0, 2] == 10 and out.chosen.tolist() == [0]
