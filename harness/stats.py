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
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

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

    @property
    def n(self) -> int:
        return int(self.success_v.size)


#: Bootstrap resamples drawn (and summed) per block: bounds the memory to a block of
#: index rows, whatever the number of pairs; the draws are those of one
#: ``rng.integers(0, n, size=(resamples, n))`` (the generator's stream is sequential).
_BLOCK_ROWS = 500
#: Columns of a cell's pair matrix: success (variant, baseline), goal conditions (s, ts) of each.
_SV, _SB, _S_V, _TS_V, _S_B, _TS_B = range(6)


def _pair_matrix(c: PairedCell) -> np.ndarray:
    return np.column_stack([c.success_v, c.success_b, c.s_v, c.ts_v, c.s_b, c.ts_b]).astype(float)


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


#: metric name -> Δ (variant - baseline) from column sums (rows x 6) over n pairs; the
#: same arithmetic as the mean of the gathered successes, so results are bit for bit.
_DELTAS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "sr": lambda t, n: t[:, _SV] / n - t[:, _SB] / n,
    "gc": lambda t, n: _ratio(t[:, _S_V], t[:, _TS_V]) - _ratio(t[:, _S_B], t[:, _TS_B]),
}
PAIRED_METRICS = tuple(_DELTAS)


@dataclass(frozen=True)
class PairedResult:
    delta: float
    lo: float
    hi: float
    p: float  # McNemar (sr only; NaN for other metrics)
    pairs: int


def paired_delta(cells: Sequence[PairedCell], metric: str, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> PairedResult:
    """Δ (variant − baseline) of ``metric`` over weighted cells, its paired
    bootstrap 95 % interval and, for SR, the exact McNemar p-value on the
    pooled discordant pairs. NaN where no pairs exist or the metric is undefined."""
    if metric not in _DELTAS:
        raise ValueError(f"paired statistics exist for {', '.join(PAIRED_METRICS)}, not {metric!r}")
    cells = [c for c in cells if c.n > 0]
    pairs = sum(c.n for c in cells)
    if not cells:
        return PairedResult(math.nan, math.nan, math.nan, math.nan, 0)
    fn = _DELTAS[metric]
    weights = np.array([c.weight for c in cells], dtype=float)
    weights = weights / weights.sum()
    matrices = [_pair_matrix(c) for c in cells]
    point = float(sum(w * fn(m.sum(axis=0)[None, :], c.n)[0] for w, c, m in zip(weights, cells, matrices)))
    boot = np.zeros(resamples)
    for w, c, sums in zip(weights, cells, _bootstrap_sums(matrices, resamples, seed)):
        boot += w * fn(sums, c.n)
    if math.isnan(point) or np.isnan(boot).all():
        lo = hi = math.nan
    else:
        lo, hi = (float(x) for x in np.nanpercentile(boot, [2.5, 97.5]))
    p = math.nan
    if metric == "sr":
        b = int(sum(np.sum(c.success_v & ~c.success_b) for c in cells))
        cc = int(sum(np.sum(~c.success_v & c.success_b) for c in cells))
        p = mcnemar_exact(b, cc)
    return PairedResult(point, lo, hi, p, pairs)
