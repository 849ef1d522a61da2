"""A bounded group-sequential design for a paired comparison whose maximum is known in advance.

Where the number of pairs a comparison may use is known before it starts (the split's size,
``limit`` or ``stopping.max_episodes``: ``n_max``), a group-sequential design with an
error-spending function spends the error rate ``alpha`` over the looks and, at the same
power, uses fewer pairs on average than an anytime-valid test, which must guard against
looking for ever (``benchmarks/sequential.py`` measures both; docs/sequential.md).

The design (Jennison & Turnbull, *Group Sequential Methods with Applications to Clinical
Trials*, 2000: chapter 7 for error spending, chapter 9 for repeated confidence intervals,
chapter 19 for the numerical computation):

* **Statistic.** At a look after ``n`` pairs with paired differences ``d_i`` (higher is
  better), ``Z = sum d / sqrt(sum d^2)``: the self-normalised sum, which for a binary metric is
  McNemar's statistic ``(b - c) / sqrt(b + c)`` (``b``, ``c``: the two kinds of discordant
  pairs). Under "no difference" (the pair's two values exchangeable) its variance given the
  ``|d_i|`` is exactly ``sum d^2``, whatever the success rate or the correlation within a pair.
* **Error spending.** Two-sided, symmetric: the boundary ``c_k`` of look ``k`` is chosen so
  that the probability, under the null, of a first crossing ``|Z_k| >= c_k`` at or before look
  ``k`` is ``alpha * f(t_k)``, ``t_k = n_k / n_max`` the information fraction of the looks
  actually taken (Lan & DeMets, Biometrika 1983), computed by numerical integration of the
  canonical joint distribution (``Z_k`` normal, ``corr(Z_j, Z_k) = sqrt(n_j / n_k)``). A look
  at ``n_max`` or beyond, or the last look of a comparison that reached its cap (``final``),
  spends all of ``alpha``. The spending functions ``f`` (:func:`check_spending`):
  ``hsd:<gamma>`` (Hwang, Shih & DeCani, Stat Med 1990), ``pocock`` and ``obf`` (the Lan-DeMets
  Pocock- and O'Brien-Fleming-type functions), ``power:<rho>`` (Kim & DeMets 1987).
* **Small samples.** The normal approximation of a sum of few signed terms is too liberal
  (four discordant pairs all one way give ``Z = 2``). Below :data:`MIN_COUNT` nonzero terms
  (the usual rule for McNemar's normal approximation, ``b + c >= 10``) a crossing also needs
  the exact sign-flip tail of its look to be below the look's nominal one-sided level
  ``P(N(0,1) >= c_k)``: for a binary metric the exact binomial tail of McNemar's test,
  ``P(Bin(b + c, 1/2) >= max(b, c))``; for a score, the same with ``b + c`` replaced by the
  effective number of terms ``(sum d^2)^2 / sum d^4``.
* **Interval.** The repeated confidence interval of the look, ``mean +- c_k * s / sqrt(n)``
  (Jennison & Turnbull chapter 9: the intervals of all looks hold simultaneously with
  probability ``1 - alpha``), ``s^2`` the variance of the differences with one
  pseudo-observation of the largest possible variance ``width^2`` (so a run of identical
  pairs does not give an interval of width 0). *equivalent* (with a margin) is decided only
  from it: once it lies inside ``[-margin, margin]``.

The boundaries depend on ``(alpha, n_max, looks, spending)`` only, never on the outcomes; they
are computed look by look and cached by that prefix, so a comparison that gains one look per
round computes one more boundary. Numpy and the standard library only.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Sequence

import numpy as np

from harness.stats.sequential.betting import GROUP_SEQUENTIAL, Decision  # noqa: F401 (the rule's name)

#: The default spending function, chosen by ``benchmarks/sequential.py`` (docs/sequential.md).
DEFAULT_SPENDING = "hsd:-1"
#: The spending functions by name (parameterised ones take ``name:value``).
SPENDING_FAMILIES = ("hsd", "pocock", "obf", "power")
#: Below this (effective) number of nonzero differences a crossing also needs the exact
#: sign-flip tail (the small-sample guard).
MIN_COUNT = 10
#: Grid step of the numerical integration (Z scale); finer where looks are close together.
GRID_STEP = 0.05
#: Boundary cache entries kept (each: one look's state, a few hundred floats).
CACHE_SIZE = 4096

_NORMAL = NormalDist()
_SQRT2 = math.sqrt(2.0)


def _erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function, fractional error < 1.2e-7 everywhere (the Chebyshev
    fit of Press et al., *Numerical Recipes*, 2nd ed., section 6.2, ``erfcc``), vectorised."""
    x = np.asarray(x, dtype=float)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    r = t * np.exp(-z * z + poly)
    return np.where(x >= 0, r, 2.0 - r)


def upper_tail(x: np.ndarray | float) -> np.ndarray:
    """``P(N(0, 1) >= x)``, vectorised."""
    return 0.5 * _erfc(np.asarray(x, dtype=float) / _SQRT2)


# --- spending functions -------------------------------------------------------------------

def check_spending(spec: str) -> str:
    """``spec`` if it names a spending function (``hsd:<gamma>``, ``pocock``, ``obf``,
    ``power:<rho>`` with rho > 0); ValueError (one line) otherwise."""
    if not isinstance(spec, str):
        raise ValueError(f"spending must be a string such as 'pocock' or 'hsd:-2', got {spec!r}")
    name, _, value = spec.partition(":")
    if name in ("pocock", "obf"):
        if value:
            raise ValueError(f"spending {spec!r}: {name} takes no parameter")
        return spec
    if name in ("hsd", "power"):
        try:
            v = float(value)
        except ValueError:
            raise ValueError(f"spending {spec!r}: {name} needs a number ({name}:<value>)") from None
        if not math.isfinite(v) or (name == "power" and v <= 0):
            raise ValueError(f"spending {spec!r}: {name}'s parameter must be "
                             f"{'> 0' if name == 'power' else 'finite'}")
        return spec
    raise ValueError(f"unknown spending function {spec!r} (one of: hsd:<gamma>, pocock, obf, power:<rho>)")


def spent(spec: str, alpha: float, t: float) -> float:
    """The error spent by information fraction ``t`` (two-sided; ``alpha`` at ``t >= 1``)."""
    if t >= 1:
        return alpha
    if t <= 0:
        return 0.0
    name, _, value = spec.partition(":")
    if name == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if name == "obf":  # per side alpha/2 spent as 2 - 2 Phi(z_{1 - alpha/4} / sqrt(t)) (Lan & DeMets 1983)
        return 4 * (1 - _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha / 4) / math.sqrt(t)))
    if name == "power":
        return alpha * t ** float(value)
    gamma = float(value)
    if gamma == 0:
        return alpha * t
    return alpha * (1 - math.exp(-gamma * t)) / (1 - math.exp(-gamma))


# --- boundaries by numerical integration --------------------------------------------------

@dataclass(frozen=True)
class _Look:
    """The state after one look: its boundary and the null sub-density of ``Z`` over the
    continuation region (paths not yet stopped) on a grid, with Simpson weights."""

    c: float
    info: float           # n_k / n_max (not capped)
    spent: float          # cumulative two-sided error spent
    z: np.ndarray | None  # grid (None: nothing left to spend, every later boundary infinite)
    dens: np.ndarray | None  # sub-density times the Simpson weights (a probability mass per point)
    weights: np.ndarray | None = None


def _simpson_grid(c: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    m = max(2, int(math.ceil(2 * c / step)))
    m += m % 2  # an even number of intervals
    z = np.linspace(-c, c, m + 1)
    h = 2 * c / m
    w = np.ones(m + 1)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return z, w * h / 3


_CACHE: OrderedDict = OrderedDict()


def _cached(key: tuple) -> _Look | None:
    state = _CACHE.get(key)
    if state is not None:
        _CACHE.move_to_end(key)
    return state


def _store(key: tuple, state: _Look) -> None:
    _CACHE[key] = state
    if len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)


def _refined(prev: _Look, sd_prev: float) -> tuple[np.ndarray, np.ndarray]:
    """The previous look's grid and masses, refined (linear interpolation of the sub-density)
    where its step does not resolve a transition kernel of width ``sd_prev`` (Z scale)."""
    z, mass = prev.z, prev.dens
    if len(z) > 2 and (z[1] - z[0]) > sd_prev / 2:
        fine_z, fine_w = _simpson_grid(float(z[-1]), sd_prev / 2)
        return fine_z, np.interp(fine_z, z, mass / prev.weights) * fine_w
    return z, mass


def _next_look(prev: _Look | None, info: float, target: float) -> _Look:
    """The boundary of the look at information ``info`` that brings the cumulative crossing
    probability under the null to ``target``, and the continuation sub-density after it."""
    if prev is not None and prev.z is None:
        return _Look(math.inf, info, prev.spent, None, None)
    before = prev.spent if prev is not None else 0.0
    increment = target - before
    if prev is not None:
        # Z_k given Z_{k-1} = z: normal, mean z sqrt(t_{k-1} / t_k), sd sqrt((t_k - t_{k-1}) / t_k)
        sd = math.sqrt((info - prev.info) / info)
        src_z, src_mass = _refined(prev, sd * math.sqrt(info / prev.info))
        shift = src_z * math.sqrt(prev.info / info)
    if increment <= 1e-15:  # nothing to spend here: the look cannot stop
        c = math.inf
    elif prev is None:
        c = float(-_NORMAL.inv_cdf(min(0.5, increment / 2)))
    else:
        def crossing(c: float) -> tuple[float, float]:
            a, b = (c - shift) / sd, (c + shift) / sd
            value = float(np.sum(src_mass * (upper_tail(a) + upper_tail(b))))
            slope = -float(np.sum(src_mass * (np.exp(-0.5 * a * a) + np.exp(-0.5 * b * b)))) / (sd * math.sqrt(2 * math.pi))
            return value, slope

        if crossing(0.0)[0] <= increment:
            c = 0.0
        else:
            # Newton's method on the decreasing crossing probability, started from the one-look
            # boundary of the increment, with bisection as a guard
            lo, hi = 0.0, 40.0
            c = float(-_NORMAL.inv_cdf(min(0.5, increment / 2)))
            for _ in range(100):
                value, slope = crossing(c)
                if value > increment:
                    lo = c
                else:
                    hi = c
                if abs(value - increment) <= 1e-12 * increment + 1e-15 or hi - lo < 1e-10:
                    break
                step_c = c - (value - increment) / slope if slope < 0 else math.nan
                c = step_c if lo < step_c < hi else 0.5 * (lo + hi)
    total = min(target, 1.0) if math.isfinite(c) else before
    if total >= 1.0 - 1e-12 or c == 0.0:
        return _Look(c, info, total, None, None)
    # the continuation sub-density after this look, on [-c, c] (or the whole line if c is infinite)
    reach = c if math.isfinite(c) else 12.0
    if prev is None:
        z, w = _simpson_grid(reach, GRID_STEP)
        return _Look(c, info, total, z, np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * w, w)
    z, w = _simpson_grid(reach, min(GRID_STEP, sd / 2))
    kernel = np.exp(-0.5 * ((z[:, None] - shift[None, :]) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
    return _Look(c, info, total, z, (kernel @ src_mass) * w, w)


def _check_design(alpha: float, n_max: int, looks: Sequence[int]) -> tuple[int, ...]:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(n_max, bool) or not isinstance(n_max, (int, np.integer)) or n_max < 1:
        raise ValueError(f"n_max must be an integer >= 1, got {n_max!r}")
    out = tuple(int(n) for n in looks)
    if any(n < 1 for n in out) or any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"looks must be strictly increasing pair counts >= 1, got {list(out)}")
    return out


def boundaries(alpha: float, n_max: int, looks: Sequence[int], spending: str = DEFAULT_SPENDING,
               final: bool = False) -> np.ndarray:
    """The two-sided boundaries ``c_k`` (on ``|Z|``) of the looks taken after ``looks`` pairs,
    spending ``alpha`` by ``spending`` over ``n_k / n_max``; ``final``: the last look is the
    last one (the cap was reached) and spends what is left. ``inf``: the look cannot stop."""
    looks = _check_design(alpha, n_max, looks)
    check_spending(spending)
    out = np.empty(len(looks))
    state: _Look | None = None
    for k, n in enumerate(looks):
        last_final = final and k == len(looks) - 1
        key = (float(alpha), int(n_max), spending, looks[:k + 1], last_final)
        cached = _cached(key)
        if cached is None:
            t = n / n_max
            target = alpha if (t >= 1 or last_final) else spent(spending, alpha, t)
            cached = _next_look(state, t, max(target, state.spent if state is not None else 0.0))
            _store(key, cached)
        state = cached
        out[k] = state.c
    return out


def crossing_probability(bounds: Sequence[float], info: Sequence[float]) -> float:
    """The null probability that ``|Z_k| >= bounds[k]`` at some look, ``Z`` the canonical
    process at information ``info`` (increasing): the same integration, for given boundaries
    (used to check it against published constants)."""
    state: _Look | None = None
    total = 0.0
    for c, t in zip(bounds, info):
        reach = c if math.isfinite(c) else 12.0
        if state is None:
            p = 2 * float(upper_tail(c))
            z, w = _simpson_grid(reach, GRID_STEP)
            state = _Look(c, t, p, z, np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * w, w)
            total = p
            continue
        sd = math.sqrt((t - state.info) / t)
        src_z, src_mass = _refined(state, sd * math.sqrt(t / state.info))
        shift = src_z * math.sqrt(state.info / t)
        total += float(np.sum(src_mass * (upper_tail((c - shift) / sd) + upper_tail((c + shift) / sd))))
        z, w = _simpson_grid(reach, min(GRID_STEP, sd / 2))
        kernel = np.exp(-0.5 * ((z[:, None] - shift[None, :]) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        state = _Look(c, t, total, z, (kernel @ src_mass) * w, w)
    return total


# --- the small-sample guard: exact sign-flip tails -----------------------------------------

@lru_cache(maxsize=8192)
def _binomial_upper(n: int) -> np.ndarray:
    """``P(Bin(n, 1/2) >= j)`` for ``j = 0 .. n + 1``."""
    j = np.arange(1, n + 1)
    log_pmf = np.concatenate([[0.0], np.cumsum(np.log((n - j + 1) / j))]) - n * math.log(2)
    top = log_pmf.max()
    pmf = np.exp(log_pmf - top)
    tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]]) * math.exp(top)
    tail.flags.writeable = False
    return tail


def sign_flip_tail(count: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The exact one-sided tail ``P(Bin(N, 1/2) >= ceil((N + |z| sqrt(N)) / 2))``, ``N`` the
    (effective) number of nonzero terms rounded down: for a binary metric McNemar's exact
    tail of the larger discordant count."""
    count = np.floor(np.asarray(count, dtype=float) + 1e-9).astype(int)
    z = np.abs(np.asarray(z, dtype=float))
    out = np.ones(count.shape)
    for n in np.unique(count):
        if n < 1:
            continue
        sel = count == n
        k = np.ceil((n + z[sel] * math.sqrt(n)) / 2 - 1e-9).astype(int)
        out[sel] = _binomial_upper(int(n))[np.clip(k, 0, n + 1)]
    return out


def look_decisions(s: np.ndarray, q: np.ndarray, q4: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per look (last axis) the test's verdict from the running sums at the looks: ``s`` = sum d,
    ``q`` = sum d^2, ``q4`` = sum d^4 (any common scale of ``d``); +1 better, -1 worse, 0 go on.
    Vectorised over leading axes (simulations)."""
    s, q, q4 = (np.asarray(a, dtype=float) for a in (s, q, q4))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(q > 0, s / np.sqrt(q), 0.0)
        count = np.where(q4 > 0, q * q / q4, 0.0)
    bounds = np.broadcast_to(np.asarray(bounds, dtype=float), z.shape)
    cross = np.abs(z) >= bounds
    verdict = np.where(cross, np.sign(z), 0).astype(int)
    few = cross & (count < MIN_COUNT - 1e-9)
    if few.any():
        level = upper_tail(bounds[few])
        ok = sign_flip_tail(count[few], z[few]) <= level * (1 + 1e-9)
        verdict[few] = np.where(ok, verdict[few], 0)
    return verdict


def first_decisions(verdicts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first deciding look or -1, its direction) per row of ``verdicts``."""
    v = np.atleast_2d(verdicts)
    hit = v != 0
    any_hit = hit.any(axis=-1)
    first = np.where(any_hit, hit.argmax(axis=-1), -1)
    side = np.where(any_hit, v[np.arange(v.shape[0]), np.clip(first, 0, None)], 0)
    return first, side


# --- the decision -------------------------------------------------------------------------

def decide_bounded(diffs: Sequence[float], alpha: float, *, width: float, n_max: int, looks: Sequence[int],
                   margin: float | None = None, spending: str = DEFAULT_SPENDING,
                   final: bool = False) -> Decision:
    """The group-sequential test of ``mean(diffs) = 0`` (and, with ``margin``, of equivalence)
    at the looks taken so far. ``diffs``: paired differences ``a - b`` (higher is better) in
    test order, in ``[-width, width]``; ``looks``: the pair counts at which the test looked
    (strictly increasing, the last one ``len(diffs)``); ``n_max``: the most pairs the
    comparison may use, fixed in advance; ``final``: the last look is the cap's (spends what
    is left). ``at`` is the pair count of the deciding look; ``lo``/``hi`` the repeated
    confidence interval of the last look; ``path_lo``/``path_hi`` one per look."""
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not width > 0:
        raise ValueError(f"a metric's range must have a positive width, got {width!r}")
    if margin is not None and not 0 < margin < width:
        raise ValueError(f"margin must be in (0, {width:g}), got {margin}")
    check_spending(spending)
    looks = _check_design(alpha, n_max, looks)
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1:
        raise ValueError("diffs must be one sequence of paired differences")
    if np.isnan(d).any():
        raise ValueError("diffs must not contain NaN (leave pairs without a value out)")
    if len(d) and np.max(np.abs(d)) > width * (1 + 1e-9):
        raise ValueError(f"paired differences must lie in [-{width:g}, {width:g}]")
    n = len(d)
    if not n:
        if looks:
            raise ValueError(f"looks {list(looks)} exceed the {n} pairs given")
        return Decision(0, None, None, -width, width, math.nan, alpha, margin, GROUP_SEQUENTIAL,
                        looks=[], interval_kind="repeated_confidence_interval")
    if not looks or looks[-1] != n:
        raise ValueError(f"the last look must be at the {n} pairs given, got looks {list(looks)}")
    bounds = boundaries(alpha, n_max, looks, spending, final)
    x = d / width
    idx = np.asarray(looks) - 1
    s = np.cumsum(x)[idx]
    q = np.cumsum(x * x)[idx]
    q4 = np.cumsum(x ** 4)[idx]
    verdict = look_decisions(s, q, q4, bounds)
    # repeated confidence intervals (metric units)
    counts = np.asarray(looks, dtype=float)
    mean = s / counts
    var = (q - counts * mean * mean + 1.0) / counts  # one pseudo-observation of variance width^2 (1 here)
    half = np.where(np.isfinite(bounds), bounds * np.sqrt(np.maximum(var, 0.0) / counts), np.inf)
    lo = np.clip((mean - half) * width, -width, width)
    hi = np.clip((mean + half) * width, -width, width)
    outcome: str | None = None
    at: int | None = None
    for k in range(len(looks)):
        if verdict[k] > 0:
            outcome = "better"
        elif verdict[k] < 0:
            outcome = "worse"
        elif margin is not None and -margin <= lo[k] and hi[k] <= margin:
            outcome = "equivalent"
        if outcome is not None:
            at = looks[k]
            break
    return Decision(n, outcome, at, float(lo[-1]), float(hi[-1]), float(d.mean()), alpha, margin, GROUP_SEQUENTIAL,
                    path_lo=[float(v) for v in lo], path_hi=[float(v) for v in hi], looks=list(looks),
                    interval_kind="repeated_confidence_interval")
