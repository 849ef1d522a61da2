"""The order in which a sequential comparison (and a checkpoint sweep's partition) takes a
split's episodes: ranked by ``sha256("<seed>/<episode id>")``, a rule fixed before any outcome
that depends on the episode ids and the seed only.

Why not the split's own order: many splits are task-major (every trial of task 0, then of task
1, ...), so the first pairs a test reads would all come from one task. Two agents whose per-task
differences cancel over the split (+20 points on half the tasks, -20 on the others) then look
different for as long as the test reads one kind of task, and an anytime-valid test, which may
stop at any pair, is exactly the test that stops there. In a seeded random order every prefix is
a random sample of the split, so each pair's expected difference is the split's mean difference
(``benchmarks/sequential.py`` measures both orders).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterator, Mapping, Sequence

#: The ordering rule and its version (both enter the run identity with the seed).
ORDER_RULE = "sha256_rank"
ORDER_VERSION = 1


def rank_key(seed: int, episode_id: str) -> str:
    return hashlib.sha256(f"{seed}/{episode_id}".encode()).hexdigest()


def ranked(episode_ids: Sequence[str], seed: int) -> list[int]:
    """Positions of the split's episodes in the seeded order (ties, i.e. repeated ids, keep the
    split's order)."""
    return sorted(range(len(episode_ids)), key=lambda i: (rank_key(seed, str(episode_ids[i])), i))


def episode_ids(episodes: Any) -> list[str]:
    """The ids of a split's episodes; a lazily generated split names them without building them."""
    id_of = getattr(episodes, "episode_id_of", None)
    if callable(id_of) and getattr(episodes, "episode_id", None) is not None:
        return [str(id_of(i)) for i in range(len(episodes))]
    return [str(e.episode_id) for e in episodes]


def identity(seed: int) -> dict[str, Any]:
    return {"rule": ORDER_RULE, "version": ORDER_VERSION, "seed": int(seed)}


class _Reordered(Sequence):
    """A split's episodes at ``positions`` (a view: an episode is built only when it is read, so a
    lazily generated split builds only what a round takes)."""

    def __init__(self, episodes: Any, positions: Sequence[int]) -> None:
        self._episodes, self._positions = episodes, list(positions)

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._episodes[p] for p in self._positions[i]]
        return self._episodes[self._positions[i]]

    def __iter__(self) -> Iterator[Any]:
        return (self._episodes[p] for p in self._positions)


class OrderedSuite:
    """A suite whose split ``split`` is taken in the seeded order (:func:`ranked`); everything else
    is the suite's own. The runner numbers each record's position in this order
    (``extra.episode_index``), which is the order a comparison reads its pairs in."""

    def __init__(self, suite: Any, split: str, seed: int) -> None:
        self._suite, self._split, self.seed = suite, split, int(seed)
        episodes = suite.episodes(split)
        self._episodes = _Reordered(episodes, ranked(episode_ids(episodes), self.seed))

    @property
    def unwrapped(self) -> Any:
        return self._suite

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    def episodes(self, split: str) -> Any:
        return self._episodes if split == self._split else self._suite.episodes(split)

    def protocol(self, split: str) -> Mapping[str, Any]:
        return self._suite.protocol(split)
