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
sequence is valid at every sample size at once, so looking after every pair, stopping at a decision and resuming after a crash keep the stated
error rate ``alpha``. The core names no suite: callers pass per-episode values.
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
RULES = ("betting_agrapa", "betting_hedged")
DEFAULT_RULE = "betting_agrapa"
RULE_VERSION = 1
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
        raise ValueError(f"unknown sequential rule {rule!r} (one of: {', '.join(RULES)})")
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


def decide(diffs: Sequence[float], alpha: float, *, width: float = 1.0, margin: float | None = None,
           rule: str = DEFAULT_RULE) -> Decision:
    """The sequential test of ``mean(diffs) = 0`` (and, with ``margin``, of equivalence)
    after the pairs so far; ``diffs`` are ``a - b`` per pair, in episode order, in
    ``[-width, width]`` (``width``: the metric range's width)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if rule not in RULES:
        raise ValueError(f"unknown sequential rule {rule!r} (one of: {', '.join(RULES)})")
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


# --- Sequential stopping of a run: the settings and the test state from stored episodes ----

#: The record's ``extra`` key holding the episode's position in its split (suite order): the
#: order in which a sequential comparison reads its pairs, fixed before any outcome.
ORDER_KEY = "episode_index"
#: The settings of ``stopping=sequential`` that enter the run identity (what the decision and
#: hence the episodes run depend on); ``max_episodes`` and ``round`` are limits, left out like
#: ``limit`` (a longer rerun resumes the same runs).
IDENTITY_KEYS = ("rule", "version", "alpha", "margin", "metric", "baseline")


@dataclass(frozen=True)
class SequentialStopping:
    """``stopping=sequential`` (configs/stopping/sequential.yaml): each non-baseline run of a
    sweep is compared, pair by pair, with the baseline run on the same episodes and seeds."""

    baseline: str
    rule: str = DEFAULT_RULE
    #: A declared per-episode metric of the suite (aggregation ``mean``); None: its first
    #: default binary metric (the success rate), else its first default metric.
    metric: str | None = None
    alpha: float = 0.05
    #: Equivalence margin in the metric's units; None: no equivalence decision.
    margin: float | None = None
    #: Stop undecided after this many paired episodes (None: the split's end or ``limit``).
    max_episodes: int | None = None
    #: Episodes each run takes per round; the test is updated after every round.
    round: int = 10
    version: int = RULE_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.baseline, str) or not self.baseline:
            raise ValueError("stopping.baseline must name the run to compare against (a variant of the sweep)")
        if self.rule not in RULES:
            raise ValueError(f"stopping.rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha < 1:
            raise ValueError(f"stopping.alpha must be in (0, 1), got {self.alpha!r}")
        if self.margin is not None and (isinstance(self.margin, bool) or not isinstance(self.margin, (int, float))
                                        or self.margin <= 0):
            raise ValueError(f"stopping.margin must be > 0 or null, got {self.margin!r}")
        for key in ("max_episodes", "round"):
            value = getattr(self, key)
            if value is None and key == "max_episodes":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"stopping.{key} must be an integer >= 1{' or null' if key != 'round' else ''}, "
                                 f"got {value!r}")
        if self.version != RULE_VERSION:
            raise ValueError(f"stopping.version {self.version!r} is not this harness's rule version ({RULE_VERSION})")

    def identity(self) -> dict[str, object]:
        return {key: getattr(self, key) for key in IDENTITY_KEYS}


def stopping_of(identity: object) -> dict[str, object] | None:
    """The ``stopping`` entry of a stored run identity (a dict or its JSON), None without one."""
    import json

    if isinstance(identity, str):
        try:
            identity = json.loads(identity)
        except ValueError:
            return None
    value = identity.get("stopping") if isinstance(identity, dict) else None
    return value if isinstance(value, dict) else None


def tested_metric(metrics: Sequence[object], name: str | None) -> object:
    """The metric a comparison tests: ``name`` among a suite's declarations, else the first
    default binary one, else the first default one. ValueError (one line) when ``name`` is
    not declared or the metric is not a per-episode mean."""
    by_name = {m.name: m for m in metrics}  # type: ignore[attr-defined]
    if name is not None:
        if name not in by_name:
            raise ValueError(f"stopping.metric {name!r} is not a metric of the suite "
                             f"(declared: {', '.join(by_name)})")
        metric = by_name[name]
    else:
        candidates = ([m for m in metrics if m.default and m.binary] or  # type: ignore[attr-defined]
                      [m for m in metrics if m.default] or list(metrics))  # type: ignore[attr-defined]
        if not candidates:
            raise ValueError("the suite declares no metric to test")
        metric = candidates[0]
    if metric.aggregation != "mean":  # type: ignore[attr-defined]
        raise ValueError(f"stopping.metric {metric.name!r} aggregates as a "  # type: ignore[attr-defined]
                         f"{metric.aggregation} (a pooled ratio has no per-episode difference): "  # type: ignore[attr-defined]
                         "choose a per-episode metric")
    return metric


@dataclass
class Comparison:
    """A stored sequential comparison: the variant against the baseline on one suite/split."""

    variant: str
    baseline: str
    suite: str
    split: str
    metric: str
    decision: Decision
    #: Episodes both runs have stored (pairs), those left out for want of a value on a side.
    paired: int
    without_value: int
    #: The episodes the comparison could have used (the split, or its limit).
    available: int | None = None

    def to_json(self) -> dict[str, object]:
        """The comparison as ``harness table --format json`` prints it (metric units)."""
        d = self.decision

        def num(v: float) -> float | None:
            return None if v is None or math.isnan(v) else float(v)

        return {"variant": self.variant, "baseline": self.baseline, "suite": self.suite, "split": self.split,
                "metric": self.metric, "rule": d.rule, "version": RULE_VERSION, "alpha": d.alpha,
                "margin": d.margin, "outcome": d.outcome, "decided_at_pair": d.at, "pairs": self.paired,
                "pairs_without_value": self.without_value, "split_episodes": self.available,
                "delta": num(d.mean), "interval": [num(d.lo), num(d.hi)], "interval_kind": "anytime_valid",
                "fixed_sample_delta_interval_valid": False,
                "path": {"lo": [num(v) for v in d.path_lo], "hi": [num(v) for v in d.path_hi]}}


def paired_differences(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object,
                       values_fn: object = None, upto: int | None = None) -> tuple[np.ndarray, int, int]:
    """The per-pair differences ``variant - baseline`` of ``metric`` in split order (the
    records' :data:`ORDER_KEY`), over episodes both runs stored; (diffs, pairs, left out).

    Values come from :func:`harness.scoring.columns`, so an episode counts as the error
    policy says (an errored episode's success is a failure, a score without a value counts as
    the metric's ``missing`` value); a pair where either side does not count (NaN: unscored,
    not applicable, or left out by ``missing=None``) is left out of the test and counted. The pairs are
    the longest prefix of the split order both runs completed: a gap (an episode one run has
    not stored yet) ends the sequence, so the order never depends on which finished first.
    ``upto``: only the first ``upto`` episodes of the split (the look after a round).
    """
    from harness.scoring import columns, episode_values

    def by_key(rows: Sequence[dict]) -> dict[tuple, tuple[int, float]]:
        out = {}
        vals = [episode_values(r, values_fn) for r in rows]  # type: ignore[arg-type]
        nums, _den = columns(metric, vals)  # type: ignore[arg-type]
        for r, x in zip(rows, nums):
            extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
            index = extra.get(ORDER_KEY)
            if isinstance(index, int):
                out[(r["episode_id"], int(r["seed"]))] = (index, x)
        return out

    a, b = by_key(variant_rows), by_key(baseline_rows)
    common = sorted((a[k][0], k) for k in a.keys() & b.keys() if a[k][0] == b[k][0])
    diffs: list[float] = []
    pairs = left_out = 0
    for expected, (index, key) in enumerate(common):
        if index != expected or (upto is not None and index >= upto):
            break
        pairs += 1
        xa, xb = a[key][1], b[key][1]
        if math.isnan(xa) or math.isnan(xb):
            left_out += 1
            continue
        diffs.append(xa - xb)
    return np.asarray(diffs, dtype=float), pairs, left_out


def compare(variant_rows: Sequence[dict], baseline_rows: Sequence[dict], metric: object, stopping: dict,
            values_fn: object = None, upto: int | None = None) -> tuple[Decision, int, int]:
    """The test state of one comparison from its stored episodes: (decision, pairs, left out).
    ``stopping``: the run identity's ``stopping`` entry (rule, alpha, margin)."""
    diffs, pairs, left_out = paired_differences(variant_rows, baseline_rows, metric, values_fn, upto)
    lo, hi = (float(v) for v in metric.range)  # type: ignore[attr-defined]
    width = hi - lo
    sign = 1.0 if metric.higher_is_better else -1.0  # type: ignore[attr-defined]
    margin = stopping.get("margin")
    d = decide(sign * diffs, float(stopping.get("alpha", 0.05)), width=width,
               margin=float(margin) if margin is not None else None,
               rule=str(stopping.get("rule", DEFAULT_RULE)))
    if sign < 0:  # back to variant - baseline in the metric's own direction
        d.lo, d.hi, d.mean = -d.hi, -d.lo, -d.mean
        d.path_lo, d.path_hi = [-v for v in d.path_hi], [-v for v in d.path_lo]
    return d, pairs, left_out


def stored_comparisons(frame: object, runs: object) -> list[Comparison]:
    """Every sequential comparison among the shown runs of a store (``harness table``): each
    run whose identity has a ``stopping`` entry, against the run of its baseline on the same
    suite, split, seed and repeat with the same stopping settings; its test recomputed from
    the records (nothing else is stored). ``frame``: the records; ``runs``: the shown runs
    (``harness.results.Selection``)."""
    from harness.scoring import suite_scoring

    by_run: dict[str, list[dict]] = {}
    for row in frame.to_dict("records"):  # type: ignore[attr-defined]
        by_run.setdefault(row["run_id"], []).append(row)
    entries = []
    for r in runs.to_dict("records"):  # type: ignore[attr-defined]
        stopping = stopping_of(r.get("identity"))
        if stopping is None or r["run_id"] not in by_run:
            continue
        import json

        identity = json.loads(r["identity"]) if isinstance(r["identity"], str) else r["identity"]
        cell = (r["suite"], r["split"], identity.get("seed_offset", 0), identity.get("repeat", 0),
                json.dumps(stopping, sort_keys=True))
        provenance = r.get("provenance") if isinstance(r.get("provenance"), dict) else {}
        entries.append((cell, r, stopping, provenance.get("split_episodes")))
    out = []
    for cell, r, stopping, size in entries:
        if r["variant"] == stopping.get("baseline"):
            continue
        base = [b for c, b, _s, _n in entries if c == cell and b["variant"] == stopping.get("baseline")]
        if len(base) != 1:
            continue
        metrics, values_fn = suite_scoring(str(r["suite"]))
        try:
            metric = tested_metric(metrics, stopping.get("metric"))
        except ValueError:
            continue
        d, pairs, left_out = compare(by_run[r["run_id"]], by_run[base[0]["run_id"]], metric, stopping, values_fn)
        out.append(Comparison(str(r["variant"]), str(base[0]["variant"]), str(r["suite"]), str(r["split"]),
                              metric.name, d, pairs, left_out, int(size) if size is not None else None))
    return sorted(out, key=lambda c: (c.suite, c.split, c.variant))


def describe(c: Comparison, percent: bool) -> str:
    """One line for a table's notes: where and why the comparison stopped, with its interval."""
    d = c.decision
    scale, unit = (100.0, " points") if percent else (1.0, "")
    of = f" of {c.available}" if c.available is not None else ""
    if d.outcome is None:
        how = f"undecided after {c.paired}{of} paired episodes"
    else:
        how = f"{d.outcome}: decided after {c.paired}{of} paired episodes (the interval left 0 at pair {d.at})"
        if d.outcome == "equivalent":
            how = (f"equivalent within ±{scale * (d.margin or 0):.1f}{unit}: decided after {c.paired}{of} paired "
                   f"episodes (at pair {d.at})")
    left = f"; {c.without_value} pair(s) without a value left out" if c.without_value else ""
    return (f"{c.variant} vs {c.baseline} on {c.suite}/{c.split} ({c.metric}): {how}{left}; "
            f"Δ {scale * d.mean:+.1f}{unit}, anytime-valid {1 - d.alpha:.0%} interval "
            f"[{scale * d.lo:+.1f}, {scale * d.hi:+.1f}] ({d.rule} v{RULE_VERSION}, α = {d.alpha:g})")


# --- Racing several variants (checkpoint selection) -------------------------------------

def race(outcomes: np.ndarray, alpha: float, *, step: int = 10, width: float = 1.0,
         rule: str = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray]:
    """Successive elimination of ``K`` variants on the same episodes, in rounds of ``step``.

    ``outcomes``: shape (runs, K, N), each variant's per-episode value in ``[0, width]`` in
    episode order (for many simulated races at once; a single race is ``outcomes[None]``).
    After each round every pair of surviving variants is tested on their paired differences
    so far (:func:`first_crossing` of the two-sided test at ``alpha / (K - 1)``), and a variant
    is dropped once a surviving one is decided better than it. The best variant is dropped
    only if one of its ``K - 1`` tests decides wrongly, so with probability at least
    ``1 - alpha`` it survives (anytime validity makes the data-dependent stopping safe).
    Returns, per race, the episodes each variant ran (its elimination round's end, or N) and
    the chosen variant (the survivor with the highest mean over the episodes it ran).
    """
    x = np.asarray(outcomes, dtype=float)
    runs, k, n = x.shape
    level = alpha / max(1, k - 1)
    # first[r, i, j]: the episode at which "j better than i" was first decided (0: never)
    first = np.zeros((runs, k, k), dtype=int)
    for i in range(k):
        for j in range(i + 1, k):
            when, side = first_crossing(rescale(x[:, j] - x[:, i], width), level, rule=rule)
            first[:, i, j] = np.where(side > 0, when, 0)  # j better than i
            first[:, j, i] = np.where(side < 0, when, 0)  # i better than j
    alive = np.ones((runs, k), dtype=bool)
    used = np.full((runs, k), n, dtype=int)
    for end in range(step, n + step, step):
        end = min(end, n)
        decided = (first > 0) & (first <= end)  # [r, i, j]: j shown better than i by this round
        beaten = (decided & alive[:, None, :]).any(axis=2) & alive
        used[beaten] = end
        alive &= ~beaten
        if end >= n:
            break
    means = np.cumsum(x, axis=2)
    per_arm = means[np.arange(runs)[:, None], np.arange(k)[None, :], used - 1] / used
    chosen = np.where(alive, per_arm, -np.inf).argmax(axis=1)
    return used, chosen
