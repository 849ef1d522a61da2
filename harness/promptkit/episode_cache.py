"""Per-episode agent state, bounded.

Batched agents serve many episodes at once and keep a little state per
episode (an RNG, a vocabulary). The Agent protocol has no end-of-episode
call, so the state of finished episodes is evicted least-recently-used once
more than ``capacity`` episodes have been seen; ``capacity`` is far above
any number of episodes in flight. Thread-safe: the pipelined runner may reset
one episode while another episode's call runs (``max_concurrent_calls`` > 1).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class EpisodeCache(Generic[V]):
    def __init__(self, capacity: int = 4096):
        self.capacity = capacity
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value for ``key``, made (and the oldest evicted) if absent."""
        with self._lock:
            items = self._items
            if key in items:
                items.move_to_end(key)
                return items[key]
            value = items[key] = make()
            if len(items) > self.capacity:
                items.popitem(last=False)
            return value

    def pop(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)
