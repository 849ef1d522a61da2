"""Racing several variants on the same episodes: successive elimination (checkpoint selection).

One rule, :func:`eliminate`, for both of its users: :func:`race` (many simulated races at once,
``benchmarks/sequential.py``) and the checkpoint sweep's replay of its rounds over stored
records (:func:`harness.run.sweep.replay`). Each gives, per pair of variants, the episode at
which the two-sided betting test (:func:`harness.stats.sequential.betting.first_crossing`, at
``alpha / (K - 1)``) first decided one better than the other; the rule then looks at the pairs
after each round of ``step`` episodes:

* a variant is dropped at the end of the round in which a variant still in the race at the
  round's start is decided better than it (the best variant is dropped only if one of its
  ``K - 1`` tests decides wrongly, so with probability at least ``1 - alpha`` it survives;
  anytime validity makes the data-dependent stopping safe);
* where every survivor is beaten in the same round (a cycle of decisions), the one with the best
  score over the round's episodes stays;
* the chosen variant is the survivor with the best score over the episodes the race looked at
  (ties: the first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from harness.stats.sequential.betting import DEFAULT_RULE, first_crossing, rescale

#: ``scores(ends)``: per race (``ends[r]``: the episodes looked at) each variant's score over
#: its first ``ends[r]`` episodes, higher better; shape (runs, K).
Scores = Callable[[np.ndarray], np.ndarray]


@dataclass
class Elimination:
    """The outcome of :func:`eliminate` for each of ``runs`` races of ``K`` variants."""

    #: (runs, K): the episodes each variant ran (its elimination round's end, else the race's end:
    #: the end of the last round looked at).
    used: np.ndarray
    #: (runs, K): whether it was dropped.
    dropped: np.ndarray
    #: (runs, K): the variant decided better than it that dropped it (-1: not dropped), the
    #: earliest such decision (ties: the lowest ``order``), and the episode of that decision (0).
    by: np.ndarray
    decided_at: np.ndarray
    #: (runs,): the end of the last round looked at.
    ended: np.ndarray
    #: (runs,): the chosen variant (-1 where the race looked at no episode).
    chosen: np.ndarray


def _best(alive: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Per race, the first surviving variant with the highest score."""
    s = np.where(alive, score, -np.inf)
    return (alive & (s == s.max(axis=1, keepdims=True))).argmax(axis=1)


def eliminate(first: np.ndarray, scores: Scores, *, step: int, upto: int, to_the_end: bool = True,
              order: np.ndarray | None = None) -> Elimination:
    """The race's rule (the module doc) over rounds of ``step`` episodes up to ``upto``.

    ``first[r, i, j]``: the episode at which variant ``j`` was first decided better than ``i``
    in race ``r`` (0: never). ``to_the_end``: a lone survivor runs on to ``upto`` (as a
    simulation counts episodes); else a race ends when one variant is left (as a sweep runs
    them). ``order``: the rank that breaks ties between two variants that beat a third at the
    same episode (default: their index)."""
    first = np.asarray(first, dtype=int)
    runs, k, _ = first.shape
    rank = np.arange(k) if order is None else np.asarray(order, dtype=int)
    alive = np.ones((runs, k), dtype=bool)
    used = np.zeros((runs, k), dtype=int)
    by = np.full((runs, k), -1, dtype=int)
    decided_at = np.zeros((runs, k), dtype=int)
    ended = np.zeros(runs, dtype=int)
    running = np.ones(runs, dtype=bool)
    never = np.iinfo(np.int64).max // (k + 1) - 1
    rows = np.arange(runs)[:, None]
    cols = np.arange(k)[None, :]
    end = 0
    while end < upto:
        if not to_the_end:
            running &= alive.sum(axis=1) > 1
        if not running.any():
            break
        end = min(end + step, upto)
        decided = (first > 0) & (first <= end) & alive[:, None, :]  # [r, i, j]: j shown better than i
        beaten = decided.any(axis=2) & alive & running[:, None]
        cycle = running & (beaten.sum(axis=1) == alive.sum(axis=1)) & alive.any(axis=1)
        if cycle.any():  # every survivor beaten at once: the best score stays
            best = _best(alive, scores(np.full(runs, end)))
            beaten[cycle, best[cycle]] = False
        when = np.where(decided, first, never)
        winner = (when * (k + 1) + rank[None, None, :]).argmin(axis=2)  # earliest, then lowest rank
        by[beaten] = winner[beaten]
        decided_at[beaten] = first[rows, cols, winner][beaten]
        used[beaten] = end
        alive &= ~beaten
        ended[running] = end
    used = np.where(alive, ended[:, None], used)  # a survivor ran every round the race looked at
    chosen = np.full(runs, -1, dtype=int)
    looked = ended > 0
    if looked.any():
        chosen[looked] = _best(alive, scores(np.maximum(ended, 1)))[looked]
    return Elimination(used, ~alive, by, decided_at, ended, chosen)


def race(outcomes: np.ndarray, alpha: float, *, step: int = 10, width: float = 1.0,
         rule: str = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray]:
    """Successive elimination of ``K`` variants on the same episodes, in rounds of ``step``.

    ``outcomes``: shape (runs, K, N), each variant's per-episode value in ``[0, width]`` in
    episode order (for many simulated races at once; a single race is ``outcomes[None]``).
    After each round every pair of surviving variants is tested on their paired differences
    so far (:func:`first_crossing` of the two-sided test at ``alpha / (K - 1)``), and a variant
    is dropped once a surviving one is decided better than it (:func:`eliminate`; a lone
    survivor runs on to N). Returns, per race, the episodes each variant ran (its elimination
    round's end, or N) and the chosen variant (the survivor with the highest mean over the
    episodes it ran).
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
    sums = np.cumsum(x, axis=2)

    def means(ends: np.ndarray) -> np.ndarray:
        return sums[np.arange(runs), :, ends - 1] / ends[:, None]

    out = eliminate(first, means, step=step, upto=n)
    return out.used, out.chosen
