"""The LLM-call cache key: the weights and the precision they run in (dtype, quantization),
for every backend; not what leaves outputs alone (max_model_len, batch size, device)."""

from harness.cache import Cache
from harness.llm.bundled import BUNDLED_ID
from harness.llm.openai_llm import OpenAILLM
from harness.llm.transformers_llm import TransformersLLM
from harness.llm.vllm_llm import VLLM
from tests.conftest import ScriptedLLM


def test_another_dtype_or_quantization_is_another_cache_entry(tmp_path):
    cache = Cache(tmp_path)

    def model(answer, dtype=None, quantization=None):
        llm = ScriptedLLM(reply=lambda p: answer, model="m")
        llm.cache, llm.dtype, llm.quantization = cache, dtype, quantization
        return llm

    assert model("fp32", "float32").generate(["q"]) == ["fp32"]
    assert model("again", "float32").generate(["q"]) == ["fp32"]  # same weights, same precision: shared
    assert model("bf16", "bfloat16").generate(["q"]) == ["bf16"]
    assert model("int8", "bfloat16", "bitsandbytes").generate(["q"]) == ["int8"]


def test_every_backend_keys_dtype_and_quantization():
    base = TransformersLLM(dtype="float32").identity
    assert base == {"model": BUNDLED_ID, "dtype": "float32", "quantization": None}
    assert TransformersLLM(dtype="float32", max_model_len=1024, batch_size=2, device="cpu").identity == base
    assert TransformersLLM().identity == {**base, "dtype": "bfloat16"}  # the default
    # One model at one precision shares entries across backends; vLLM's aliases are one precision.
    assert VLLM(dtype="float32", max_model_len=2048).identity == base
    assert VLLM(dtype="half").identity == VLLM(dtype="float16").identity == {**base, "dtype": "float16"}
    assert VLLM(quantization="fp8").identity == {**base, "dtype": "auto", "quantization": "fp8"}
    # A server's precision is what the config declares; a foreign local tokenizer changes scoring.
    assert OpenAILLM("bundled", dtype="float32").identity == base
    assert OpenAILLM("bundled").identity == {**base, "dtype": None}
    assert OpenAILLM("gpt-4", tokenizer="Xenova/gpt-4", quantization="awq").identity == {
        "model": "gpt-4", "dtype": None, "quantization": "awq", "tokenizer": "Xenova/gpt-4"}
