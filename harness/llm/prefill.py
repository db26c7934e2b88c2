"""Reading a batch of prompts on a CPU: each prompt in a pass of its own, the replies decoded together.

A batch of prompts of unequal lengths read in one left-padded pass pays for its padding and for a
masked attention (torch's unmasked causal kernel skips the future; a mask makes it score every
pair): 8 prompts of 850-1400 tokens took 16.2 s in one pass, 9.8 s one by one (bundled
SmolLM2-135M, bfloat16, 2 cores, ``scripts/bench_llm.py --unequal``). :func:`batch_cache` reads
each prompt alone up to its last token and lays the keys and values out as the padded batch's
cache; ``generate`` then reads the last column and decodes the rows together (a decoding step
reads the weights once for every row). The tokens are those of each prompt generated alone (a
test compares them in float32, where no rounding tie flips one).
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=4)  # asked once a forward pass; the answer is the model class's
def keeps_logits(model: Any) -> bool:
    """Whether ``model``'s forward takes ``logits_to_keep`` (the last positions' logits only)."""
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def batch_cache(model: Any, ids: list[list[int]]):
    """The KV cache of the left-padded batch of ``ids`` up to its last column, each prompt read
    alone; None where one padded pass costs nothing more (prompts of one length), where a prompt
    has no token before its last, or for a model whose cache is not plain per-layer keys and values."""
    import torch
    import torch.nn.functional as F
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    width = max(len(p) for p in ids)
    layers = DynamicCache(config=model.config).layers
    if min(len(p) for p in ids) in (1, width) or not layers or any(type(x) is not DynamicLayer for x in layers):
        return None
    reads = []
    for p in ids:
        alone = DynamicCache(config=model.config)
        model(input_ids=torch.tensor([p[:-1]], device=model.device), past_key_values=alone, use_cache=True,
              **({"logits_to_keep": 1} if keeps_logits(model) else {}))
        reads.append(alone.layers)
    # zeros in the padding columns (the attention mask hides them)
    padded = [tuple(torch.cat([F.pad(getattr(r[n], kv), (0, 0, width - len(p), 0)) for r, p in zip(reads, ids)])
                    for kv in ("keys", "values")) for n in range(len(layers))]
    return DynamicCache(ddp_cache_data=padded, config=model.config)
