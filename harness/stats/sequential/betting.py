"""Anytime-valid paired comparisons: betting confidence sequences for a bounded mean.

The method is Waudby-Smith & Ramdas, "Estimating means of bounded random variables by
betting" (JRSS-B 2024; arXiv 2010.09686). For observations ``x_t`` in [0, 1] and a candidate
mean ``m`` the capital ``K_t(m) = prod_{i<=t} (1 + lambda_i(m) (x_i - m))``, with each bet
``lambda_i`` chosen from ``x_1 .. x_{i-1}`` only, is a nonnegative martingale when the mean is
``m``; by Ville's inequality it ever reaches ``1/alpha`` with probability at most ``alpha``, so
``{m : K_t(m) < 1/alpha}`` is a confidence sequence (valid at every t at once). Two bet rules
of the paper are implemented:

* ``betting_agrapa`` (the default for decisions): the *aGRAPA* bets of the paper's section on
  betting strategies (an approximation of the growth-rate-optimal bet against ``m``), which
  grow the capital fastest when there is a difference: ``benchmarks/sequential.py`` measures
  fewer episodes to a decision than a fixed-sample design of equal power.
* ``betting_hedged``: the hedged capital process with predictable plug-in (PrPl) bets, the
  paper's recommended confidence sequence (its Section 4, with the PrPl bets of Section 3).

The authors' reference implementation is ``confseq`` (github.com/gostevehoward/confseq,
release 0.0.11: ``src/confseq/betting.py`` ``betting_mart`` / ``hedged_cs`` and
``src/confseq/betting_strategies.py`` ``lambda_predmix_eb``, ``lambda_aKelly``); this module
computes the same processes with the same defaults (hedge weight ``theta = 1/2``, truncation
``c = 1/2``, prior mean 1/2, prior variance 1/4, one pseudo-observation) in log space,
vectorised over candidate means or simulated runs, without that package's compiled part
(it needs Boost and a C++ compiler to install).

For a *paired* comparison of a metric bounded in ``[lo, hi]`` the per-pair difference
``d = a - b`` lies in ``[-(hi - lo), hi - lo]`` and is rescaled to ``x = (d / (hi - lo) + 1) / 2``
in ``[0, 1]``; "no difference" is ``m = 1/2``. For a binary metric a concordant pair is
``x = 1/2`` exactly: its factor at ``m = 1/2`` is 1, so only discordant pairs move the
test of "no difference" (the sequential counterpart of McNemar's test), while concordant
pairs still narrow the interval through the variance estimate.

Decisions (:func:`decide`): *better* once the running intersection of the confidence
sequence lies above 0 (0 rejected, every value still accepted above it), *worse* once below
0, *equivalent* (with a margin ``delta > 0``) once it lies inside ``[-delta, delta]``. The
sequence is valid at every sample size at once, so looking after every pair, stopping at a
decision and resuming after a crash keep the stated error rate ``alpha``. The race of several
variants (checkpoint selection) is :mod:`harness.stats.sequential.racing`. The core names no
suite: callers pass per-episode values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

#: The rules (the bets) and their version (both enter the run identity of a sequential comparison).
#: ``betting_agrapa`` (default): aGRAPA bets, the most powerful for a test (see the module doc);
#: ``betting_hedged``: the hedged capital process with predictable plug-in bets, confseq's
#: ``hedged_cs``, the tighter interval when the difference is near 0.
#: ``group_sequential``: the bounded design of :mod:`harness.stats.sequential.design` (a known maximum).
GROUP_SEQUENTIAL = "group_sequential"
#: The betting rules (open-ended: valid at every number of pairs, no maximum needed).
BETTING_RULES = ("betting_agrapa", "betting_hedged")
RULES = (*BETTING_RULES, GROUP_SEQUENTIAL)
DEFAULT_RULE = "betting_agrapa"
#: 2: pairs in a seeded order of the episode ids, every stored record final, alpha shared by the
#: group's comparisons (1: the split's order, errored episodes run again, alpha per comparison).
RULE_VERSION = 2
#: confseq's defaults: the weight of the upward capital in the hedge and the truncation of
#: each bet at ``c / m`` (``c / (1 - m)`` for a downward one), so every factor is >= 1 - c.
THETA = 0.5
TRUNCATION = 0.5
#: Grid of candidate means for the interval (step 1/GRID on [0, 1]; even, so m = 1/2 is on it).
GRID = 2000


def _previous(running: np.ndarray, first: float) -> np.ndarray:
    """``running`` shifted one step later along the last axis (``first`` at t = 1): what a bet
    at time t may use."""
    return np.concatenate([np.full(running.shape[:-1] + (1,), first), running[..., :-1]], axis=-1)


def _running_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Regularised running mean and variance *before* each observation (one pseudo-observation
    with mean 1/2 and variance 1/4), as both bet rules of the paper use them."""
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    s2 = (0.25 + np.cumsum((x - np.minimum(mu, 1.0)) ** 2, axis=-1)) / (t + 1)
    return _previous(mu, 0.5), _previous(s2, 0.25)


def plugin_bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in bets ``lambda_t`` for observations ``x`` in [0, 1] (last axis: time):
    ``sqrt(2 log(1/a) / (t log(1 + t) s2_{t-1}))``, ``a`` the level of one side of the hedge
    (``alpha * theta``), as confseq's ``lambda_predmix_eb``."""
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    _mu, s2 = _running_moments(x)
    return np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * s2))


def agrapa_bets(x: np.ndarray, m: np.ndarray | float, truncation: float = TRUNCATION) -> np.ndarray:
    """aGRAPA bets for candidate mean ``m``: ``(mu_{t-1} - m) / (s2_{t-1} + (mu_{t-1} - m)^2)``,
    the first-order approximation of the growth-rate-optimal (Kelly) bet against ``m`` given
    the data so far, truncated to ``[-c/(1-m), c/m]`` (confseq ``lambda_aKelly``)."""
    mu, s2 = _running_moments(np.asarray(x, dtype=float))
    gap = mu - m
    with np.errstate(divide="ignore"):
        return np.clip(gap / (s2 + gap ** 2), -truncation / (1 - m), truncation / m)


def log_capital(x: np.ndarray, m: np.ndarray | float, alpha: float, rule: str = DEFAULT_RULE) -> np.ndarray:
    """log of the capital ``K_t(m)`` after each observation (last axis: time).

    ``x``: shape (..., T); ``m``: a scalar, or an array broadcast against ``x[..., :1]``
    (``m[:, None]`` with ``x[None, :]`` gives one row per candidate mean).
    ``betting_agrapa``: ``prod (1 + lambda_t(m) (x_t - m))`` with aGRAPA bets.
    ``betting_hedged``: ``max(theta K+, (1 - theta) K-)`` where ``K+`` bets
    ``min(lambda_t, c/m)`` up and ``K-`` bets ``min(lambda_t, c/(1-m))`` down, ``lambda_t``
    the predictable plug-in bets. Every factor is >= 1 - c > 0, so the logs are finite.
    """
    x = np.asarray(x, dtype=float)
    m = np.asarray(m, dtype=float)
    if rule == "betting_agrapa":
        return np.cumsum(np.log1p(agrapa_bets(x, m) * (x - m)), axis=-1)
    if rule != "betting_hedged":
        raise ValueError(f"unknown sequential rule {rule!r} (one of: {', '.join(BETTING_RULES)})")
    lam = plugin_bets(x, alpha * THETA)
    with np.errstate(divide="ignore"):
        up = np.minimum(lam, TRUNCATION / m)
        down = np.minimum(lam, TRUNCATION / (1 - m))
    log_up = np.cumsum(np.log1p(up * (x - m)), axis=-1)
    log_down = np.cumsum(np.log1p(-down * (x - m)), axis=-1)
    return np.maximum(math.log(THETA) + log_up, math.log(1 - THETA) + log_down)


def first_crossing(x: np.ndarray, alpha: float, m: float = 0.5,
                   rule: str = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray]:
    """Simulation path: for each row of ``x`` (runs x time), the first time (1-based) the
    capital at ``m`` reaches ``1/alpha`` (0: never) and the direction of the data then (+1:
    the running mean is above ``m``, -1: below; 0: never).

    Both rules' confidence sets are intervals (the hedged one provably; the aGRAPA one on
    every sequence the tests try), so ``m`` leaves the set exactly when this capital
    crosses, on the side of the data: :func:`decide` makes the same decision from the
    interval (the tests check that they agree), this one needs no grid.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    hit = log_capital(x, m, alpha, rule) >= math.log(1 / alpha)
    any_hit = hit.any(axis=-1)
    when = np.where(any_hit, hit.argmax(axis=-1), -1)
    t = np.clip(when, 0, None)
    mean = np.cumsum(x, axis=-1)[np.arange(x.shape[0]), t] / (t + 1)
    side = np.where(mean > m, 1, -1)
    return np.where(any_hit, when + 1, 0), np.where(any_hit, side, 0)


def confidence_sequence(x: Sequence[float], alpha: float, *, rule: str = DEFAULT_RULE, grid: int = GRID,
                        running_intersection: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of the confidence sequence ``{m : K_t(m) < 1/alpha}`` for the
    mean of ``x`` in [0, 1], after each observation.

    Candidate means on a grid of step ``1/grid``; the bounds are the outermost *rejected*
    grid points around the accepted ones (conservative by at most one step), so the true
    endpoints lie inside. With ``running_intersection`` (default) each bound is the
    intersection over all earlier times, as the paper allows (a CS stays one after
    intersecting); an empty intersection gives NaN bounds.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError("confidence_sequence takes one sequence of observations")
    if len(x) and (np.nanmin(x) < 0 or np.nanmax(x) > 1 or np.isnan(x).any()):
        raise ValueError("observations must lie in [0, 1] (rescale first)")
    ms = np.arange(grid + 1) / grid
    inner = ms[1:-1]  # m = 0 and m = 1 are rejected by any observation away from them; kept out
    level = math.log(1 / alpha)
    # (G-1, T) accepted candidates, a block of candidates at a time (memory: a block x T floats)
    accept = np.empty((len(inner), len(x)), dtype=bool)
    block = max(1, 2_000_000 // max(1, len(x)))
    for start in range(0, len(inner), block):
        part = inner[start:start + block]
        accept[start:start + block] = log_capital(x[None, :], part[:, None], alpha, rule) < level
    some = accept.any(axis=0)
    first = accept.argmax(axis=0)
    last = len(inner) - 1 - accept[::-1].argmax(axis=0)
    # the rejected neighbours of the outermost accepted candidates (inner[i] = ms[i + 1])
    lo = np.where(some, ms[first], math.nan)
    hi = np.where(some, ms[np.minimum(last + 2, grid)], math.nan)
    if running_intersection and len(x):
        lo = np.fmax.accumulate(lo)
        hi = np.fmin.accumulate(hi)
        empty = np.isnan(lo) | np.isnan(hi) | (lo >= hi)  # no accepted point strictly between
        empty = np.logical_or.accumulate(empty)
        lo[empty] = hi[empty] = math.nan
    return lo, hi


def rescale(diffs: Sequence[float], width: float) -> np.ndarray:
    """Paired differences in ``[-width, width]`` as observations in [0, 1] (0 -> 1/2)."""
    d = np.asarray(diffs, dtype=float)
    if width <= 0:
        raise ValueError(f"a metric's range must have a positive width, got {width}")
    return np.clip((d / width + 1) / 2, 0.0, 1.0)


@dataclass
class Decision:
    """The state of one sequential comparison after ``n`` pairs (recomputed from stored
    episodes: nothing else is kept, so a resumed comparison stands where it stood)."""

    #: Pairs with a value on both sides, in episode order.
    n: int
    #: 'better', 'worse', 'equivalent' or None (undecided).
    outcome: str | None
    #: The pair (1-based) at which the outcome was first reached; None when undecided.
    at: int | None
    #: The anytime-valid interval on the difference (metric units) after ``n`` pairs.
    lo: float
    hi: float
    #: The difference's mean over the ``n`` pairs (metric units).
    mean: float
    alpha: float
    margin: float | None
    rule: str = DEFAULT_RULE
    #: Per pair: the interval's bounds (metric units), for plots of the interval against pairs.
    path_lo: list[float] = field(default_factory=list)
    path_hi: list[float] = field(default_factory=list)
    #: The pair counts of the looks ``path_lo``/``path_hi`` belong to (empty: one per pair).
    looks: list[int] = field(default_factory=list)
    #: ``anytime_valid`` (a confidence sequence) or ``repeated_confidence_interval`` (valid with
    #: the group-sequential design's looks, harness/stats/sequential/design.py).
    interval_kind: str = "anytime_valid"


def decide(diffs: Sequence[float], alpha: float, *, width: float = 1.0, margin: float | None = None,
           rule: str = DEFAULT_RULE) -> Decision:
    """The sequential test of ``mean(diffs) = 0`` (and, with ``margin``, of equivalence)
    after the pairs so far; ``diffs`` are ``a - b`` per pair, in episode order, in
    ``[-width, width]`` (``width``: the metric range's width)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if rule not in BETTING_RULES:
        raise ValueError(f"unknown sequential rule {rule!r} (one of: {', '.join(BETTING_RULES)})")
    if margin is not None and not 0 < margin < width:
        raise ValueError(f"margin must be in (0, {width:g}), got {margin}")
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    if not n:
        return Decision(0, None, None, -width, width, math.nan, alpha, margin, rule)
    lo01, hi01 = confidence_sequence(rescale(d, width), alpha, rule=rule)
    lo, hi = (2 * lo01 - 1) * width, (2 * hi01 - 1) * width
    outcome: str | None = None
    at: int | None = None
    for t in range(n):
        if math.isnan(lo[t]):
            break  # an empty intersection (a rare event under any hypothesis): no new decision
        # The bounds are rejected values with every accepted one strictly between them.
        if lo[t] >= 0:
            outcome = "better"
        elif hi[t] <= 0:
            outcome = "worse"
        elif margin is not None and -margin <= lo[t] and hi[t] <= margin:
            outcome = "equivalent"
        if outcome is not None:
            at = t + 1
            break
    last = n - 1
    while last > 0 and math.isnan(lo[last]):
        last -= 1
    return Decision(n, outcome, at, float(lo[last]), float(hi[last]), float(d.mean()), alpha, margin, rule,
                    path_lo=[float(v) for v in lo], path_hi=[float(v) for v in hi])
