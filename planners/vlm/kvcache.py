"""A key/value cache that reserves room for the tokens a ``generate`` call may add.

transformers' default ``DynamicCache`` appends each decoding step's keys and
values with ``torch.cat``, which copies the whole cache every step: O(length)
memory traffic per token, per layer. With the EB-ALFRED protocol's ~6k-token
prompts and 8 conversations in one batch that copy cost as much as the
attention itself (measured: 4.6 ms of a batched decoding step, 3.0 ms without
it; benchmarks/planner_batching.py). ``generate`` knows the most tokens it can
add (``max_new_tokens``), so each layer here allocates prompt + that many slots
at the prefill and writes every later step in place; attention reads a view of
the filled part. Values are bit-identical to the default cache's (tested).

Only plain full-attention layers are replaced; sliding-window, quantized or
linear-attention layers keep transformers' own classes. The ``hf`` backend
uses it with its CPU defaults only: on a GPU, room reserved for
``max_new_tokens`` per conversation would hold memory that an early end of
generation never uses.
"""

from __future__ import annotations

from typing import Any

from transformers.cache_utils import DynamicCache, DynamicLayer


class ReservedLayer(DynamicLayer):
    """A full-attention cache layer with ``reserve`` free slots after the prefill."""

    def __init__(self, reserve: int) -> None:
        super().__init__()
        self.reserve = int(reserve)
        self._keys: Any = None
        self._values: Any = None
        self._length = 0

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        new = key_states.shape[-2]
        if self._keys is None:
            self.device = key_states.device
            self.is_initialized = True
            room = new + self.reserve
            self._keys = key_states.new_empty((*key_states.shape[:-2], room, key_states.shape[-1]))
            self._values = value_states.new_empty((*value_states.shape[:-2], room, value_states.shape[-1]))
        end = self._length + new
        if end > self._keys.shape[-2]:  # more tokens than reserved (e.g. a caller that keeps going)
            self._keys = _grow(self._keys, end)
            self._values = _grow(self._values, end)
        self._keys[..., self._length:end, :].copy_(key_states)
        self._values[..., self._length:end, :].copy_(value_states)
        self._length = end
        self.keys = self._keys[..., :end, :]
        self.values = self._values[..., :end, :]
        return self.keys, self.values

    def reset(self) -> None:
        self._keys = self._values = None
        self._length = 0
        super().reset()

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)
        if self.is_initialized:
            self._length = self.keys.shape[-2]

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._rebuild(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: Any) -> None:
        self._rebuild(lambda t: t[indices, ...])

    def _rebuild(self, op: Any) -> None:
        if self._keys is None or self._length == 0:
            return
        self._keys, self._values = op(self._keys), op(self._values)
        self.keys = self._keys[..., :self._length, :]
        self.values = self._values[..., :self._length, :]


def _grow(buffer: Any, needed: int) -> Any:
    import torch

    extra = max(needed, 2 * buffer.shape[-2]) - buffer.shape[-2]
    pad = buffer.new_empty((*buffer.shape[:-2], extra, buffer.shape[-1]))
    return torch.cat([buffer, pad], dim=-2)


def reserved_cache(model: Any, reserve: int) -> DynamicCache | None:
    """A ``DynamicCache`` for ``model`` whose full-attention layers reserve ``reserve`` slots,
    or None where the model's cache layout is not known (then ``generate`` builds its own)."""
    try:
        cache = DynamicCache(config=model.config)
    except Exception:  # noqa: BLE001 - an unusual config: keep transformers' default cache
        return None
    if not cache.layers:
        return None
    cache.layers = [ReservedLayer(reserve) if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache
