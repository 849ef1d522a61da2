"""Paired statistics for the Δ of two variants run on the same episodes.

Every variant runs the same episode keys, so a difference between two
variants is a *paired* comparison: the right tests look at each episode under
both variants rather than at two independent proportions.

* :func:`mcnemar_exact` — the exact (binomial) McNemar test on the discordant
  pairs of per-episode success (Q. McNemar, Psychometrika 12, 1947; the exact
  form: the conditional binomial test of b vs c with p = 1/2). Two-sided.
* :func:`paired_bootstrap` — a percentile bootstrap over episode pairs
  (B. Efron & R. Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13):
  pairs are resampled with replacement *within each cell* (suite/split), the
  statistic recomputed, and the 2.5 / 97.5 percentiles reported. A fixed
  generator seed makes a table reproducible byte for byte.

A column of a table can average several cells (a suite's subsets); its
statistic is then the weighted mean of the cells' statistics, and the
bootstrap resamples every cell independently, as the design is stratified.

* :func:`two_stage_bootstrap` / :func:`repeat_interval` — when a cell was run
  several times (repeats), intervals resample the repeats first and the
  episodes within each drawn repeat second, so they account for both; a paired
  Δ over several repeats uses it too (repeats paired by their trial seed and
  repeat index). The McNemar test pools every repeat's pairs.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from harness.scoring.policy import Metric, columns, known_metric, suite_scoring

#: Bootstrap resamples and generator seed used by tables.
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` pairs that only the variant
    solved and ``c`` that only the baseline solved. 1.0 when b + c == 0."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    # P(X <= k) for X ~ Binomial(n, 1/2), summed exactly in log space.
    log_half_n = -n * math.log(2.0)
    tail = sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
               for i in range(k + 1))
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True)
class PairedCell:
    """One cell's episode pairs: arrays aligned by episode key (variant, baseline)."""

    success_v: np.ndarray
    success_b: np.ndarray
    s_v: np.ndarray
    ts_v: np.ndarray
    s_b: np.ndarray
    ts_b: np.ndarray
    weight: float = 1.0
    #: Each pair's repeat (a label; the same on both sides, as pairs share episode, seed and
    #: repeat index); None: one repeat.
    repeat: np.ndarray | None = None
    #: The metric's per-pair numerator and denominator on each side (:func:`harness.scoring.policy.columns`;
    #: a pair side without a value has 0 and 0); None: derived from the record fields above.
    num_v: np.ndarray | None = None
    den_v: np.ndarray | None = None
    num_b: np.ndarray | None = None
    den_b: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.success_v.size)


#: Bootstrap resamples drawn (and summed) per block: bounds the memory to a block of
#: index rows, whatever the number of pairs; the draws are those of one
#: ``rng.integers(0, n, size=(resamples, n))`` (the generator's stream is sequential).
_BLOCK_ROWS = 500
#: Columns of a cell's pair matrix: success (variant, baseline), goal conditions (s, ts) of each.
_SV, _SB, _S_V, _TS_V, _S_B, _TS_B = range(6)


#: Columns of the metric's ratio of sums, after the six record columns: [num_v, den_v, num_b, den_b].
_NV, _DV, _NB, _DB = range(6, 10)


def _metric(metric: Any) -> Any:
    """A declared metric (:class:`harness.scoring.policy.Metric`) from itself or its name."""
    found = metric if isinstance(metric, Metric) else known_metric(str(metric))
    if found is None:
        raise ValueError(f"no suite declares a metric {metric!r}")
    return found


def _num_den(metric: Any, success: np.ndarray, s: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode numerator and denominator of ``metric`` from the record columns (the
    fallback scoring's values of success and goal conditions); 0 and 0 where no value."""
    derive = suite_scoring("")[1]
    values = [derive({"success": bool(a), "gc_satisfied": b, "gc_total": c}) if derive else {}
              for a, b, c in zip(np.asarray(success).tolist(), np.asarray(s).tolist(), np.asarray(ts).tolist())]
    return _filled(*columns(metric, values))


def _filled(num: Sequence[float], den: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    num_a, den_a = np.asarray(num, dtype=float).reshape(-1), np.asarray(den, dtype=float).reshape(-1)
    missing = np.isnan(num_a) | np.isnan(den_a)
    return np.where(missing, 0.0, num_a), np.where(missing, 0.0, den_a)


def _pair_matrix(c: PairedCell, metric: Any = None) -> np.ndarray:
    """The six record columns (they fix the two-stage bootstrap's strata and order), then the
    metric's [num_v, den_v, num_b, den_b]."""
    cols = [c.success_v, c.success_b, c.s_v, c.ts_v, c.s_b, c.ts_b]
    if metric is not None:
        if c.num_v is not None:
            nv, dv, nb, db = c.num_v, c.den_v, c.num_b, c.den_b
        else:
            nv, dv = _num_den(metric, c.success_v, c.s_v, c.ts_v)
            nb, db = _num_den(metric, c.success_b, c.s_b, c.ts_b)
        cols += [nv, dv, nb, db]
    return np.column_stack(cols).astype(float).reshape(-1, len(cols))


def _resample_sums(rng: np.random.Generator, matrix: np.ndarray, resamples: int) -> np.ndarray:
    """Column sums of ``matrix`` (n pairs x k) over each bootstrap resample of its rows: (resamples x k).

    Each resample is n indices drawn with replacement; its sums are the index
    multiplicities times the matrix (exact: the columns hold integers).
    """
    n = matrix.shape[0]
    out = np.empty((resamples, matrix.shape[1]))
    for start in range(0, resamples, _BLOCK_ROWS):
        rows = min(_BLOCK_ROWS, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        counts = np.bincount((idx + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n).reshape(rows, n)
        out[start:start + rows] = counts @ matrix
    return out


#: The last few cells' resample sums: a table asks for SR and GC of the same cells
#: (and a one-split column equals its average), which share one set of draws.
_SUMS_CACHE: dict[bytes, list[np.ndarray]] = {}


def _bootstrap_sums(matrices: list[np.ndarray], resamples: int, seed: int) -> list[np.ndarray]:
    """Each cell's resample sums, the cells drawn in order from one generator seeded ``seed``."""
    h = hashlib.sha256(f"{resamples}/{seed}".encode())
    for m in matrices:
        h.update(f"{m.shape}".encode() + m.tobytes())
    key = h.digest()
    if key not in _SUMS_CACHE:
        rng = np.random.default_rng(seed)
        while len(_SUMS_CACHE) >= 4:
            _SUMS_CACHE.pop(next(iter(_SUMS_CACHE)))
        _SUMS_CACHE[key] = [_resample_sums(rng, m, resamples) for m in matrices]
    return _SUMS_CACHE[key]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _delta_of_ratios(t: np.ndarray, n: int) -> np.ndarray:
    """Δ (variant - baseline) of a ratio of sums from column sums (rows x 10). For a mean the
    denominator sums to n: the same arithmetic as the mean of the gathered values, bit for bit."""
    return _ratio(t[:, _NV], t[:, _DV]) - _ratio(t[:, _NB], t[:, _DB])


@dataclass(frozen=True)
class PairedResult:
    delta: float
    lo: float
    hi: float
    p: float  # McNemar (binary metrics only; NaN for other metrics)
    pairs: int
    #: Repeats the interval resamples (two-stage bootstrap when more than one).
    repeats: int = 1


def paired_delta(cells: Sequence[PairedCell], metric: Any, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> PairedResult:
    """Δ (variant − baseline) of a declared ``metric`` (a :class:`harness.scoring.policy.Metric` or its
    name) over weighted cells, its paired bootstrap 95 % interval and, for a binary metric, the
    exact McNemar p-value on the pooled discordant pairs. NaN where no pairs exist or the metric
    is undefined."""
    metric = _metric(metric)
    cells = [c for c in cells if c.n > 0]
    pairs = sum(c.n for c in cells)
    if not cells:
        return PairedResult(math.nan, math.nan, math.nan, math.nan, 0)
    fn = _delta_of_ratios
    weights = np.array([c.weight for c in cells], dtype=float)
    weights = weights / weights.sum()
    matrices = [_pair_matrix(c, metric) for c in cells]
    point = float(sum(w * fn(m.sum(axis=0)[None, :], c.n)[0] for w, c, m in zip(weights, cells, matrices)))
    groups = _repeat_groups(cells, matrices)
    if len(groups) > 1:
        boot = two_stage_bootstrap(groups, weights, fn, resamples, seed)
    else:
        boot = np.zeros(resamples)
        for w, c, sums in zip(weights, cells, _bootstrap_sums(matrices, resamples, seed)):
            boot += w * fn(sums, c.n)
    if math.isnan(point) or np.isnan(boot).all():
        lo = hi = math.nan
    else:
        lo, hi = (float(x) for x in np.nanpercentile(boot, [2.5, 97.5]))
    if metric.aggregation == "mean":  # the pairs where both sides have a value (a judged score of some questions only)
        pairs = int(sum(np.sum((m[:, _DV] > 0) & (m[:, _DB] > 0)) for m in matrices))
    p = math.nan
    if metric.binary:  # discordant pairs where both sides have a value
        both = [(m[:, _DV] > 0) & (m[:, _DB] > 0) for m in matrices]
        b = int(sum(np.sum(k & (m[:, _NV] > 0) & (m[:, _NB] <= 0)) for k, m in zip(both, matrices)))
        cc = int(sum(np.sum(k & (m[:, _NV] <= 0) & (m[:, _NB] > 0)) for k, m in zip(both, matrices)))
        p = mcnemar_exact(b, cc)
    return PairedResult(point, lo, hi, p, pairs, max(1, len(groups)))


def _repeat_groups(cells: Sequence[PairedCell], matrices: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Per repeat found in every cell, its pairs' matrix in each cell (in cell order); [] for
    one repeat. A repeat missing from some cell of the column is left out of the interval
    (its pairs still count in Δ and p)."""
    labels = [np.asarray(c.repeat, dtype=object) if c.repeat is not None else np.zeros(c.n, dtype=object)
              for c in cells]
    common = set.intersection(*(set(lab.tolist()) for lab in labels)) if labels else set()
    if len(common) <= 1:
        return []
    return [[m[lab == key] for m, lab in zip(matrices, labels)] for key in sorted(common, key=str)]


# --- Repeats: a two-stage bootstrap ---------------------------------------------------
#
# A cell run several times (repeats: runs that differ only in the trial seed or in a
# declared repeat index) has two sources of variation: which episodes were drawn, and
# the run-to-run spread of the agent or the simulator. Resampling the pooled episodes
# as if they were independent ignores the second. The two-stage (hierarchical)
# bootstrap resamples both levels (A. C. Davison & D. V. Hinkley, "Bootstrap Methods
# and their Application", 1997, sec. 3.8, resampling in both stages): in each resample,
# draw K repeats with replacement from the K observed, then, for every drawn copy
# independently, resample that repeat's episodes with replacement within each cell,
# recompute the statistic of each copy and average over the K copies. With one repeat
# it is the ordinary (stratified) episode bootstrap.

#: Columns of a repeat's value matrix: success, goal conditions satisfied, goal conditions total
#: (they fix the bootstrap's strata and order), then the metric's numerator and denominator.
_OK, _S, _TS, _NUM, _DEN = range(5)


def _value_of_ratio(t: np.ndarray, n: int) -> np.ndarray:
    """A cell's value (ratio of sums) from column sums (rows x 5)."""
    return _ratio(t[:, _NUM], t[:, _DEN])


@dataclass(frozen=True)
class RepeatResult:
    """A value over repeats: the mean of the per-repeat values, their sd (ddof 1; NaN for
    one repeat), the two-stage bootstrap 95 % interval and the number of repeats."""

    mean: float
    sd: float
    lo: float
    hi: float
    repeats: int


def value_matrix(success: np.ndarray, s: np.ndarray, ts: np.ndarray, num: Any = None, den: Any = None) -> np.ndarray:
    """The matrix :func:`repeat_interval` takes, for one repeat in one cell: (episodes x 3), or
    (episodes x 5) with a metric's per-episode numerator and denominator (NaN: no value)."""
    cols = [np.asarray(success, dtype=float), np.asarray(s, dtype=float), np.asarray(ts, dtype=float)]
    if num is not None:
        cols += list(_filled(num, den))
    return np.column_stack(cols).reshape(-1, len(cols))


def two_stage_bootstrap(repeats: Sequence[Sequence[np.ndarray]], weights: Sequence[float],
                        fn: Callable[[np.ndarray, int], np.ndarray], resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """``resamples`` draws of the weighted statistic ``fn`` (cell value from column sums)
    averaged over repeats, each draw resampling repeats, then episodes within each drawn
    copy and cell. ``repeats[j][c]`` is repeat j's matrix in cell c; every repeat must
    have every cell. Deterministic for a seed: the repeat draws come first, then each
    (repeat, cell)'s episode draws in order, from one generator."""
    k = len(repeats)
    if k == 0:
        return np.full(resamples, np.nan)
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, k, size=(resamples, k))  # stage 1: which repeat fills each copy
    out = np.zeros(resamples)
    for j, cells in enumerate(repeats):
        mask = drawn == j
        for weight, matrix in zip(w, cells):
            n = matrix.shape[0]
            if n == 0:
                raise ValueError("two_stage_bootstrap: a repeat has no episodes in one of the cells")
            # stage 2: an independent episode resample for every (resample, copy) slot
            stat = fn(_multinomial_sums(rng, matrix, resamples * k), n).reshape(resamples, k)
            out += weight * np.where(mask, stat, 0.0).sum(axis=1) / k
    return out


def _multinomial_sums(rng: np.random.Generator, matrix: np.ndarray, resamples: int) -> np.ndarray:
    """Column sums of ``resamples`` bootstrap resamples of ``matrix``'s rows, drawn as multinomial
    counts over its distinct rows: n draws with replacement hit each distinct row a
    Multinomial(n, frequency / n) number of times, so this has the law of index draws at the
    cost of the few distinct rows (success, goal conditions) rather than n per resample."""
    n = matrix.shape[0]
    rows, counts = np.unique(matrix, axis=0, return_counts=True)
    return rng.multinomial(n, counts / n, size=resamples) @ rows


def repeat_interval(repeats: Sequence[Sequence[np.ndarray]], weights: Sequence[float], metric: Any,
                    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> RepeatResult:
    """Mean, sd and two-stage bootstrap 95 % interval of ``metric`` over repeats.

    ``repeats[j][c]``: repeat j's :func:`value_matrix` in cell c (a column's cells,
    weighted by ``weights``); a repeat's value is the weighted mean of its cells' values.
    """
    metric = _metric(metric)
    fn = _value_of_ratio
    repeats = [[m if m.shape[1] == 5 else np.column_stack([m, *_num_den(metric, m[:, _OK], m[:, _S], m[:, _TS])])
                for m in cells] for cells in repeats]
    if not repeats:
        return RepeatResult(math.nan, math.nan, math.nan, math.nan, 0)
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    per_repeat = np.array([sum(wc * fn(m.sum(axis=0)[None, :], m.shape[0])[0] for wc, m in zip(w, cells))
                           for cells in repeats], dtype=float)
    mean = float(np.mean(per_repeat))
    sd = float(np.std(per_repeat, ddof=1)) if len(repeats) > 1 else math.nan
    boot = two_stage_bootstrap(repeats, w, fn, resamples, seed)
    if math.isnan(mean) or np.isnan(boot).all():
        lo = hi = math.nan
    else:
        lo, hi = (float(x) for x in np.nanpercentile(boot, [2.5, 97.5]))
    return RepeatResult(mean, sd, lo, hi, len(repeats))
