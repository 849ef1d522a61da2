"""Rules of the sequential comparison that a mutation once left unnoticed, through the public
``harness.stats.sequential.compare`` and ``decide`` only (each rule was broken by hand and its test
watched fail): a lower-is-better metric's differences are turned before the test and turned back
after it, and an equivalence decision needs the whole interval inside the margin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.scoring.policy import Metric
from harness.stats.sequential import ORDER_KEY, compare, decide

STOPPING = {"alpha": 0.05}


def _rows(values: list[float], name: str) -> list[dict]:
    return [{"episode_id": f"e{i}", "seed": 0, "extra": {ORDER_KEY: i}, "values": {name: v}}
            for i, v in enumerate(values)]


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_lower_values_are_better_exactly_where_lower_is_better(higher_is_better):
    """The variant's values are always lower than the baseline's. Where higher is better that is
    ``worse``, where lower is better ``better``; either way the reported difference and interval
    are variant - baseline in the metric's own units (negative here). Mutations caught: the sign
    not turned for a lower-is-better metric (``worse``), or not turned back (a positive delta)."""
    metric = Metric("cost", "Cost", "cost", range=(0.0, 1.0), unit="score", higher_is_better=higher_is_better)
    n = 60
    d, pairs, left_out = compare(_rows([0.2] * n, "cost"), _rows([0.8] * n, "cost"), metric, STOPPING)
    assert (pairs, left_out) == (n, 0)
    assert d.outcome == ("worse" if higher_is_better else "better"), d
    assert d.mean == pytest.approx(-0.6)
    assert d.lo <= d.mean <= d.hi < 0, (d.lo, d.hi)  # the interval, in the metric's direction
    at = d.at - 1
    assert d.path_lo[at] <= d.path_hi[at] < 0


def test_the_same_comparison_seen_from_either_side_mirrors():
    """Swapping variant and baseline of a lower-is-better metric turns the outcome and negates
    the difference and interval, bound for bound."""
    metric = Metric("cost", "Cost", "cost", range=(0.0, 1.0), unit="score", higher_is_better=False)
    rng = np.random.default_rng(0)
    a, b = list(rng.uniform(0.0, 0.5, 80)), list(rng.uniform(0.4, 1.0, 80))
    ab, _, _ = compare(_rows(a, "cost"), _rows(b, "cost"), metric, STOPPING)
    ba, _, _ = compare(_rows(b, "cost"), _rows(a, "cost"), metric, STOPPING)
    assert (ab.outcome, ba.outcome) == ("better", "worse")
    assert ab.mean == pytest.approx(-ba.mean) and ab.lo == pytest.approx(-ba.hi) and ab.hi == pytest.approx(-ba.lo)


def test_equivalence_needs_the_whole_interval_inside_the_margin():
    """A difference of +0.1 against a margin of 0.05: at some point the interval's lower bound is
    inside the margin while its upper bound is not yet -- not equivalent (it ends ``better``). An
    equivalence decision is always taken on an interval inside [-margin, margin]. Mutation caught:
    the decision's ``and`` turned into ``or``."""
    margin = 0.05
    d = decide([0.1] * 400, 0.05, width=1.0, margin=margin)
    assert d.outcome == "better", d
    inside_low = [t for t in range(len(d.path_lo)) if not math.isnan(d.path_lo[t]) and -margin <= d.path_lo[t]
                  and d.path_hi[t] > margin and d.path_lo[t] < 0]
    assert inside_low, "the sequence never had the lower bound alone inside the margin"
    # The mirror: the upper bound inside the margin before the lower one is.
    d = decide([-0.1] * 400, 0.05, width=1.0, margin=margin)
    assert d.outcome == "worse", d
    # A difference of 0: equivalent, on an interval inside the margin.
    zero = decide([0.02, -0.02] * 2000, 0.05, width=1.0, margin=0.1)
    assert zero.outcome == "equivalent", zero
    at = zero.at - 1
    assert -0.1 <= zero.path_lo[at] and zero.path_hi[at] <= 0.1
    # Without a margin there is no equivalence decision.
    assert decide([0.02, -0.02] * 2000, 0.05, width=1.0).outcome is None
