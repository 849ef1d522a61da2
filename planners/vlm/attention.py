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
run batched with a mask of one query row. Outputs are those of the one-by-one
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
        from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask

        AttentionInterface.register(NAME, varlen_sdpa)
        AttentionMaskInterface.register(NAME, flash_attention_mask)  # the 2-D padding mask, or None
        _registered = True
    return NAME


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
