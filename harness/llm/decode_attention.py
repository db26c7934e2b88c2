"""Attention for half-precision models on a CPU: SDPA for the prompt, a packed matmul per new token.

torch's CPU SDPA kernel is slow on one query row in bfloat16: after a 7.8k-token context one
decoding step of the bundled model took 196 ms, against 114 ms in float32 (scripts/bench_llm.py
--decode 7800), so HiChunk's long windows decoded slower in bfloat16 than in float32. A decoding
step here does the arithmetic of ``transformers``' eager attention (bfloat16 matmuls, softmax in
float32) with the query heads that share a key head packed into one matrix, so the keys are not
repeated: 70 ms a step. Prompts (many query rows) keep SDPA, which is fast there.
"""

from __future__ import annotations

NAME = "chunkbench_cpu_decode"


def decode_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """``transformers`` attention interface: query (b, heads, q, d), key/value (b, kv_heads, n, d);
    returns (b, q, heads, d) and no weights."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    fast = (query.shape[2] == 1 and query.dtype != torch.float32 and query.device.type == "cpu"
            and not any(kwargs.get(k) is not None for k in ("softcap", "sliding_window", "position_bias")))
    if not fast:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    b, heads, _, d = query.shape
    kv_heads, n = key.shape[1], key.shape[2]
    q = query.reshape(b, kv_heads, heads // kv_heads, d)  # the query heads of each key head, as rows
    scores = torch.matmul(q, key.transpose(2, 3)) * (d ** -0.5 if scaling is None else scaling)
    if attention_mask is not None:  # (b, 1, 1, >= n): bool (True = attend) or additive
        mask = attention_mask[..., -1:, :n]
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(value.dtype)
    return torch.matmul(weights, value).reshape(b, heads, 1, d).transpose(1, 2), None


def register() -> str:
    """Make :data:`NAME` an ``attn_implementation`` (its masks are SDPA's); returns the name."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(NAME, decode_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
