"""The bounded group-sequential design (harness/stats/sequential/design.py): its boundaries against
published constants, error spending at the looks actually taken, its error rate under the null
in small samples, the repeated confidence interval's coverage, input checks and determinism."""

import math
import time

import numpy as np
import pytest

from harness.stats.sequential import design as gs
from harness.stats.sequential import decide_bounded

SE3 = lambda rate, n: rate + 3 * math.sqrt(rate * (1 - rate) / n)  # noqa: E731 (Monte-Carlo bound)


def test_classical_pocock_and_obrien_fleming_constants_give_alpha():
    """Jennison & Turnbull (2000), Table 2.1: Pocock's constant C_P(5, 0.05) = 2.413 (the same
    boundary at each of 5 equally spaced looks); Table 2.3: O'Brien & Fleming's C_B(5, 0.05) =
    2.040 (boundary C_B sqrt(5/k) at look k). The integration gives each a two-sided error of 0.05."""
    info = [k / 5 for k in range(1, 6)]
    assert gs.crossing_probability([2.413] * 5, info) == pytest.approx(0.05, abs=2e-4)
    assert gs.crossing_probability([2.040 * math.sqrt(5 / k) for k in range(1, 6)], info) == pytest.approx(0.05, abs=2e-4)
    # a single look at 1.96 spends 0.05; five looks at 1.96 spend far more (the reason for the design)
    assert gs.crossing_probability([1.959964], [1.0]) == pytest.approx(0.05, abs=1e-6)
    assert gs.crossing_probability([1.959964] * 5, info) == pytest.approx(0.142, abs=2e-3)


def test_lan_demets_boundaries_for_five_equal_looks_match_published_values():
    """The Lan-DeMets Pocock- and O'Brien-Fleming-type spending functions, 5 equally spaced looks,
    alpha = 0.05 two-sided: the boundaries published for them (DeMets & Lan, Statistics in
    Medicine 13, 1994; reproduced by every group-sequential package), to 3 decimals."""
    looks = [20, 40, 60, 80, 100]
    np.testing.assert_allclose(gs.boundaries(0.05, 100, looks, "obf"), [4.877, 3.357, 2.680, 2.290, 2.031], atol=1.5e-3)
    np.testing.assert_allclose(gs.boundaries(0.05, 100, looks, "pocock"), [2.438, 2.427, 2.410, 2.397, 2.386],
                               atol=1.5e-3)


@pytest.mark.parametrize("spending", ["pocock", "obf", "hsd:-2", "hsd:0", "hsd:1", "power:2"])
def test_error_is_spent_as_the_function_says_at_irregular_looks(spending):
    """Lan & DeMets: at looks n_k (irregular, as missing values make them) the probability of a
    first crossing by look k is alpha * f(n_k / n_max); a look at or beyond n_max, or the cap's
    final look, spends all of alpha."""
    looks = [7, 19, 23, 48, 71, 90]
    bounds = gs.boundaries(0.05, 100, looks, spending)
    info = [n / 100 for n in looks]
    for k in range(1, len(looks) + 1):
        got = gs.crossing_probability(bounds[:k], info[:k])
        assert got == pytest.approx(gs.spent(spending, 0.05, info[k - 1]), abs=2e-5, rel=1e-3), (k, got)
    final = gs.boundaries(0.05, 100, looks, spending, final=True)
    assert np.array_equal(final[:-1], bounds[:-1]) and final[-1] < bounds[-1]
    assert gs.crossing_probability(final, info) == pytest.approx(0.05, abs=2e-5)
    beyond = gs.boundaries(0.05, 100, looks + [104], spending)
    assert gs.crossing_probability(beyond, info + [1.04]) == pytest.approx(0.05, abs=2e-5)
    # after all of alpha is spent no later look can stop
    assert math.isinf(gs.boundaries(0.05, 100, looks + [104, 110], spending)[-1])


def _null_rate(rng, make, runs, n_max, looks, spending, bounds=None):
    """Share of ``runs`` null comparisons decided (either way), and of those decided at the first look."""
    d = make(rng, (runs, n_max))
    idx = np.asarray(looks) - 1
    s, q, q4 = (np.cumsum(v, axis=1)[:, idx] for v in (d, d * d, d ** 4))
    if bounds is None:
        bounds = gs.boundaries(0.05, n_max, looks, spending)
    first, side = gs.first_decisions(gs.look_decisions(s, q, q4, bounds))
    return float(np.mean(side != 0)), float(np.mean(first == 0))


def _binary(p, rho):
    def make(rng, size):
        p11 = p * p + rho * p * (1 - p)
        u = rng.random(size)
        return np.where(u < p - p11, 1.0, np.where(u < 2 * (p - p11), -1.0, 0.0))
    return make


def _scores(rng, size):
    return rng.uniform(0, 1, size) - rng.uniform(0, 1, size)


def test_false_decisions_stay_within_alpha_in_small_samples():
    """Null comparisons, 4,000 each: binary outcomes with common and rare discordant pairs
    (p 0.5 and 0.1, within-pair correlation 0 and 0.8) and bounded scores, 10 looks of 10
    pairs; the rate of any decision is at most alpha + 3 Monte-Carlo SE. Testing at 1.96 at
    every look instead (no spending) breaks it."""
    rng = np.random.default_rng(11)
    looks = list(range(10, 101, 10))
    for make in (_binary(0.5, 0.0), _binary(0.1, 0.0), _binary(0.3, 0.8), _scores):
        rate, _first = _null_rate(rng, make, 4000, 100, looks, gs.DEFAULT_SPENDING)
        assert rate <= SE3(0.05, 4000), rate
    naive, _first = _null_rate(rng, _binary(0.5, 0.0), 4000, 100, looks, "", bounds=np.full(10, 1.959964))
    assert naive > SE3(0.05, 4000)


def test_the_first_look_spends_only_its_share():
    """Linear spending over two looks at n_max/2 and n_max: at most alpha/2 is spent at the first
    look (20,000 null comparisons of bounded scores; doubling the first look's share fails this)."""
    rng = np.random.default_rng(12)
    rate, first = _null_rate(rng, _scores, 20_000, 100, [50, 100], "hsd:0")
    assert first <= SE3(0.025, 20_000), first
    assert rate <= SE3(0.05, 20_000), rate


def test_few_discordant_pairs_cannot_decide_on_the_normal_approximation():
    """Four discordant pairs all one way give Z = 2 > 1.96, but their exact probability under
    the null is 2/16: the small-sample guard leaves the comparison undecided; ten all one way
    (exact 2/1024) decide."""
    four = decide_bounded([1, 1, 1, 1], 0.05, width=1.0, n_max=4, looks=[4])
    assert four.outcome is None
    ten = decide_bounded([1] * 10, 0.05, width=1.0, n_max=10, looks=[10])
    assert ten.outcome == "better" and ten.at == 10


def test_decisions_better_worse_equivalent_and_undecided():
    rng = np.random.default_rng(13)
    a, b = rng.random(300) < 0.8, rng.random(300) < 0.3
    looks = list(range(10, 301, 10))
    better = decide_bounded(a.astype(float) - b, 0.05, width=1.0, n_max=300, looks=looks)
    assert better.outcome == "better" and better.at <= 60 and better.lo > 0
    assert better.rule == gs.GROUP_SEQUENTIAL and better.interval_kind == "repeated_confidence_interval"
    assert better.looks == looks and len(better.path_lo) == len(looks)
    worse = decide_bounded(b.astype(float) - a, 0.05, width=1.0, n_max=300, looks=looks)
    assert worse.outcome == "worse" and worse.at == better.at and worse.hi < 0
    same = decide_bounded(np.zeros(300), 0.05, width=1.0, n_max=300, looks=looks, margin=0.05)
    assert same.outcome == "equivalent" and -0.05 <= same.lo and same.hi <= 0.05
    assert decide_bounded(np.zeros(300), 0.05, width=1.0, n_max=300, looks=looks).outcome is None
    empty = decide_bounded([], 0.05, width=2.0, n_max=300, looks=[])
    assert empty.outcome is None and (empty.lo, empty.hi) == (-2.0, 2.0)
    # a score on [0, 10]: differences in [-10, 10], interval in metric units
    score = decide_bounded(np.full(40, 3.0) + rng.normal(0, 1, 40), 0.05, width=10.0, n_max=100, looks=[20, 40])
    assert score.outcome == "better" and 0 < score.lo < 3.0 < score.hi < 10.0


@pytest.mark.parametrize("kind", ["binary", "scores"])
def test_repeated_confidence_intervals_cover_the_true_difference_at_every_look(kind):
    """Jennison & Turnbull ch. 9: the intervals of all looks hold simultaneously with probability
    1 - alpha. 2,000 comparisons with a true difference of 0.15 (binary 0.55 vs 0.40; scores),
    20 looks of 10 pairs: the share with any look's interval missing it is at most alpha + 3 SE."""
    rng = np.random.default_rng(14 if kind == "binary" else 15)
    runs, n = 2000, 200
    if kind == "binary":
        d = (rng.random((runs, n)) < 0.55).astype(float) - (rng.random((runs, n)) < 0.40)
    else:
        d = np.clip(rng.beta(3, 2, (runs, n)) - rng.beta(2.25, 2.75, (runs, n)), -1, 1)  # means 0.6 - 0.45
    looks = list(range(10, n + 1, 10))
    missed = 0
    for row in d:
        dec = decide_bounded(row, 0.05, width=1.0, n_max=n, looks=looks)
        lo, hi = np.asarray(dec.path_lo), np.asarray(dec.path_hi)
        missed += bool(np.any((lo > 0.15) | (hi < 0.15)))
    assert missed / runs <= SE3(0.05, runs), missed / runs


@pytest.mark.parametrize("kwargs, message", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha"),
    ({"n_max": 0}, "n_max"), ({"n_max": 2.5}, "n_max"),
    ({"looks": [2, 2, 4]}, "strictly increasing"), ({"looks": [2, 3]}, "last look"),
    ({"width": 0.0}, "positive width"), ({"margin": 1.0}, "margin"),
    ({"spending": "hsd"}, "needs a number"), ({"spending": "pocock:2"}, "takes no parameter"),
    ({"spending": "power:-1"}, "> 0"), ({"spending": "linear"}, "unknown spending function"),
])
def test_bad_settings_are_refused_in_one_line(kwargs, message):
    args = {"alpha": 0.05, "width": 1.0, "n_max": 10, "looks": [2, 4]} | kwargs
    with pytest.raises(ValueError, match=message) as err:
        decide_bounded([1, 0, -1, 1], **args)
    assert "\n" not in str(err.value)


def test_bad_differences_are_refused():
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        decide_bounded([0.5, 1.5], 0.05, width=1.0, n_max=10, looks=[2])
    with pytest.raises(ValueError, match="NaN"):
        decide_bounded([0.5, math.nan], 0.05, width=1.0, n_max=10, looks=[2])
    assert gs.check_spending("hsd:-2.5") == "hsd:-2.5"


def test_deterministic_and_fast_with_its_cache():
    """The same inputs give the same decision whatever was computed before (the cache holds
    only what the design's inputs determine); 500 pairs at 50 looks take under 50 ms once the
    boundaries are cached (the harness recomputes every comparison after each round)."""
    rng = np.random.default_rng(16)
    d = (rng.random(500) < 0.45).astype(float) - (rng.random(500) < 0.4)
    looks = list(range(10, 501, 10))
    gs._CACHE.clear()
    cold = decide_bounded(d, 0.05, width=1.0, n_max=500, looks=looks)
    decide_bounded(d[:230], 0.05, width=1.0, n_max=500, looks=looks[:23], final=True)
    decide_bounded(d, 0.05, width=1.0, n_max=700, looks=looks, spending="obf")
    t0 = time.perf_counter()
    warm = decide_bounded(d, 0.05, width=1.0, n_max=500, looks=looks)
    assert time.perf_counter() - t0 < 0.05
    assert warm == cold
    gs._CACHE.clear()
    assert decide_bounded(d, 0.05, width=1.0, n_max=500, looks=looks) == cold


def test_the_benchmark_runs_its_quick_smoke_run(capsys):
    """benchmarks/sequential.py --quick (few runs, few settings) prints every section."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "sequential.py"
    spec = importlib.util.spec_from_file_location("sequential_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--quick"])
    out = capsys.readouterr().out
    for heading in ("Pairs to a decision at equal power", "False decisions under the null", "Split order",
                    "Flaky errors", "Five null variants", "Paired vs unpaired", "Checkpoint sweep",
                    "The limit of looks every 10 pairs"):
        assert f"## {heading}" in out, heading
    assert f"spending {gs.DEFAULT_SPENDING}" in out


def test_the_benchmarks_limit_is_the_optimal_reject_only_test():
    """benchmarks/sequential.py's section 8 (the limit of looks every step pairs) minimises
    E1[N] - lam P1 + mu P0 over the tests that stop only to reject: checked against an
    independent computation over the enumerated paths of two looks, for several lam, mu."""
    import importlib.util
    import itertools
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "sequential.py"
    spec = importlib.util.spec_from_file_location("sequential_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    alt, null = (0.42, 0.12), (0.27, 0.27)

    def pmf(cells, n):
        return {(i, j): p for i, j, p in module._trinomial(cells, n)}
    stopped_early = 0
    for (n1, n2), lam, mu in itertools.product([(4, 3), (3, 6)], [100.0, 200.0, 400.0], [100.0, 300.0, 1000.0]):
        first = {h: pmf(h, n1) for h in (alt, null)}
        second = {h: pmf(h, n2) for h in (alt, null)}
        best = fixed = 0.0  # in joint probabilities, state by state at look 1
        for (b1, c1) in first[alt]:
            p1, p0 = first[alt][(b1, c1)], first[null][(b1, c1)]
            later = n2 * p1  # n2 more pairs, then reject where that lowers the cost
            for (b2, c2) in second[alt]:
                later += min(0.0, -lam * p1 * second[alt][(b2, c2)] + mu * p0 * second[null][(b2, c2)])
            best += min(-lam * p1 + mu * p0, later)
            fixed += later
        e1, power, error = module._reject_only([n1, n2], alt, null, lam, mu)
        assert n1 <= e1 <= n1 + n2 + 1e-9 and 0 <= error <= power <= 1
        assert e1 - lam * power + mu * error == pytest.approx(n1 + best, abs=1e-12), (n1, n2, lam, mu)
        stopped_early += e1 < n1 + n2 - 1e-3 and best < fixed - 1e-9
    assert stopped_early >= 4  # the cases include tests that stop at the first look
