"""The CPU decoding attention for half-precision models: transformers' eager arithmetic, packed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.models.llama.modeling_llama import eager_attention_forward

from harness.llm.decode_attention import NAME, decode_attention

HEADS, KV_HEADS, D = 9, 3, 64  # SmolLM2-135M's grouped-query shape


def tensors(q_len, n, dtype=torch.bfloat16, b=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, length, D, generator=g).to(dtype)
               for h, length in ((HEADS, q_len), (KV_HEADS, n), (KV_HEADS, n)))
    return SimpleNamespace(num_key_value_groups=HEADS // KV_HEADS, training=False), q, k, v


@pytest.mark.parametrize("padded", [False, True])
def test_a_decoding_step_is_eager_attention(padded):
    module, q, k, v = tensors(1, 300)
    attend = torch.ones(2, 1, 1, 300, dtype=torch.bool)
    if padded:
        attend[1, ..., :40] = False  # the second row is left-padded
    additive = torch.zeros(attend.shape, dtype=q.dtype).masked_fill(~attend, torch.finfo(q.dtype).min)
    ours, _ = decode_attention(module, q, k, v, attend if padded else None, scaling=D ** -0.5)
    eager, _ = eager_attention_forward(module, q, k, v, additive if padded else None, scaling=D ** -0.5)
    assert ours.shape == eager.shape == (2, 1, HEADS, D) and ours.dtype == torch.bfloat16
    assert torch.equal(ours, eager)


@pytest.mark.parametrize("q_len,dtype", [(5, torch.bfloat16), (1, torch.float32)])
def test_prompts_and_float32_keep_sdpa(q_len, dtype):
    module, q, k, v = tensors(q_len, 40, dtype)
    mask = torch.ones(2, 1, q_len, 40, dtype=torch.bool).tril(40 - q_len)
    ours, _ = decode_attention(module, q, k, v, mask, scaling=D ** -0.5)
    sdpa, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=D ** -0.5)
    assert torch.equal(ours, sdpa)


def _native_bf16() -> bool:
    from harness.llm.transformers_llm import _cpu_has_bf16

    return _cpu_has_bf16()


@pytest.mark.slow
@pytest.mark.skipif(not _native_bf16(), reason="bfloat16 is emulated on this CPU (no AVX512-BF16 or AMX): eager's "
                                               "emulated matmuls round otherwise, so the decodes may differ")
def test_the_bundled_model_decodes_as_with_eager_attention():
    # Only a bfloat16 model on a CPU takes it; a batch of prompts of unequal length (left padding).
    from harness.llm.base import Sampling
    from harness.llm.transformers_llm import TransformersLLM

    llm = TransformersLLM(device="cpu")
    assert llm._model.config._attn_implementation == NAME
    assert TransformersLLM(dtype="float32", device="cpu")._model.config._attn_implementation == "sdpa"
    prompts = [[{"role": "user", "content": c}] for c in
               ("Name a colour.", "Summarise: the fund grew in 2019 and revenue rose by 12 percent, "
                                  "while costs fell and the outlook stayed uncertain.")]
    ours = llm.chat(prompts, Sampling(max_tokens=16))
    llm._model.set_attn_implementation("eager")
    try:
        assert llm._chat(prompts, Sampling(max_tokens=16)) == ours and all(ours)
    finally:
        llm._model.set_attn_implementation(NAME)
