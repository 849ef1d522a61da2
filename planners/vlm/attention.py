"""Padding-aware attention for batched generation on the CPU (``harness_varlen``).

Batching episodes into one ``generate`` needs left padding, and with padding
transformers' ``sdpa`` path hands PyTorch a materialised 4-D mask, which on
the CPU leaves the fast causal kernel for a masked one: measured here, a
left-padded prefill of 8 prompts of ~6.8k tokens took 2.9 s against 0.75 s
for the 8 prompts one by one, so batching made planning *slower*
(benchmarks/planner_batching.py). This implementation takes the 2-D padding
mask instead (the one flash-attention kernels get) and runs the prefill of
each row on its own real tokens with the causal kernel, so a batched prefill
costs what the unbatched ones do, and decoding steps, where batching pays,
run batched with a mask of one query row. With transformers' ``StaticCache``
(``cache_implementation="static"``, which the backend uses on the CPU: each
step's keys and values written in place instead of the default cache's copy of
the whole cache per token), the slots not yet filled are left out. Outputs are those of the one-by-one
calls (tested: batched and one-by-one greedy outputs are identical).

The backend uses it by default on the CPU (``attn_implementation`` unset and
no ``device_map``); GPU users keep transformers' choice or pick
``flash_attention_2``. Models with sliding windows or logit soft-capping are
refused here with a one-line hint to choose another implementation.
"""

from __future__ import annotations

from typing import Any

NAME = "harness_varlen"
_registered = False


def register() -> str:
    """Register the attention and mask functions with transformers (once); returns the name."""
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface

        AttentionInterface.register(NAME, varlen_sdpa)
        AttentionMaskInterface.register(NAME, varlen_mask)
        _registered = True
    return NAME


def varlen_mask(batch_size: int, q_length: int, kv_length: int, q_offset: Any = 0, kv_offset: int = 0,
                attention_mask: Any = None, **kwargs: Any) -> Any:
    """The 2-D padding mask over the filled cache slots [B, filled] (flash-attention's), or None
    when nothing is masked. With a preallocated cache (``kv_length`` past the filled slots) and no
    padding, an all-True mask of the filled length still says where the unfilled tail begins."""
    import torch
    from transformers.masking_utils import flash_attention_mask

    mask = flash_attention_mask(batch_size, q_length, kv_length, q_offset, kv_offset,
                                attention_mask=attention_mask, **kwargs)
    filled = int(q_offset) + q_length
    if mask is None and filled < kv_length:
        device = attention_mask.device if attention_mask is not None else kwargs.get("device")
        mask = torch.ones(batch_size, filled, dtype=torch.bool, device=device)
    return mask


def varlen_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
                scaling: float | None = None, is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """``query`` [B, H, Q, D], ``key``/``value`` [B, Hkv, K, D]; ``attention_mask`` the 2-D
    boolean padding mask [B, K] (True = a real token), or None. Returns [B, Q, H, D]."""
    import torch
    import torch.nn.functional as F

    if kwargs.get("sliding_window") or kwargs.get("softcap"):
        raise NotImplementedError(
            f"attention '{NAME}' does not do sliding windows or soft-capping: "
            "set planner.params.attn_implementation=sdpa (or eager)")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    gqa = query.shape[1] != key.shape[1]
    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    if attention_mask is not None and attention_mask.dim() == 2 and attention_mask.shape[1] < kv_len:
        # A preallocated cache (StaticCache): its keys/values span every slot it holds, the mask
        # only the filled ones (positions 0 .. filled-1). The unfilled tail is left out of the
        # attention altogether -- a view, no copy -- so a step costs what the filled part does;
        # with no padding left, the mask is dropped as transformers drops it for a default cache.
        kv_len = attention_mask.shape[1]
        key, value = key[:, :, :kv_len], value[:, :, :kv_len]
        if bool(attention_mask.all()):
            attention_mask = None
    if attention_mask is None or attention_mask.dim() != 2:
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask, scale=scaling, enable_gqa=gqa,
            is_causal=bool(causal and q_len > 1 and attention_mask is None))
        return out.transpose(1, 2).contiguous(), None
    mask = attention_mask.to(torch.bool)
    if causal and q_len == kv_len and q_len > 1:
        starts = (~mask).sum(dim=1)
        left_padded = bool((torch.arange(kv_len, device=mask.device)[None, :] >= starts[:, None]).eq(mask).all())
    else:
        left_padded = False
    if left_padded:
        # Prefill: each row's real tokens are a suffix; causal attention over that suffix alone.
        out = torch.zeros_like(query)
        for row, start in enumerate(starts.tolist()):
            out[row:row + 1, :, start:] = F.scaled_dot_product_attention(
                query[row:row + 1, :, start:], key[row:row + 1, :, start:], value[row:row + 1, :, start:],
                is_causal=True, scale=scaling, enable_gqa=gqa)
        return out.transpose(1, 2).contiguous(), None
    # Decoding (one query row) or anything else: an explicit mask, small when q_len is 1.
    full = mask[:, None, None, :].expand(batch, 1, q_len, kv_len)
    if causal and q_len > 1:
        full = full & torch.ones(q_len, kv_len, dtype=torch.bool, device=mask.device).tril(kv_len - q_len)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=full, scale=scaling, enable_gqa=gqa)
    return out.transpose(1, 2).contiguous(), None
