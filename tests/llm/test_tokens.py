"""``tokenizer: reader`` (the run's llm's tokenizer, HiChunk's context budget) and ``llm:<model>``."""

import pytest

from harness.llm.tokens import tokenizer_for
from harness.pipeline.components import build_components, resolve_reader
from harness.text import Tokenizer, bundled_embedder_path
from harness.types import ConfigError

MIXED = "Retrieval-augmented generation. 你好，世界！😀 naïve café"


def test_reader_names_the_runs_llm_in_sizes_budgets_and_keys(make_cfg):
    cfg = make_cfg("context.tokenizer=reader", "chunker=multi_view", "chunker.base.tokenizer=reader")
    resolved = resolve_reader(cfg)
    assert resolved.context.tokenizer == "llm:bundled" and resolved.chunker.base.tokenizer == "llm:bundled"
    assert cfg.context.tokenizer == "reader"  # the composed config (the record) keeps the user's word
    # Another model is another tokenizer, so the context's config slice (its cache key) changes.
    other = resolve_reader(make_cfg("context.tokenizer=reader", "llm.model=/models/qwen3-4b"))
    assert other.context.tokenizer == "llm:/models/qwen3-4b"
    served = resolve_reader(make_cfg("chunker.tokenizer=reader", "llm=openai", "llm.tokenizer=Xenova/gpt-4"))
    assert served.chunker.tokenizer == "llm:Xenova/gpt-4"
    plain = make_cfg()
    assert resolve_reader(plain) is plain  # nothing to resolve: the very same config
    with pytest.raises(ConfigError, match="tokenizer=reader"):
        build_components(make_cfg("context.tokenizer=reader", "llm=none"))


def test_llm_prefix_loads_that_models_own_tokenizer():
    folder = tokenizer_for("tokens", f"llm:{bundled_embedder_path()}")  # a model folder as llm.model names it
    assert folder.count(MIXED) == Tokenizer("tokens", "bundled").count(MIXED)
    assert tokenizer_for("words", "llm:bundled").count(MIXED) == 5  # words need no model
    with pytest.raises(ConfigError, match="names no model"):
        tokenizer_for("tokens", "llm:")


@pytest.mark.slow
def test_reader_counts_what_the_responder_counts(make_cfg):
    from harness.llm.transformers_llm import TransformersLLM

    context = build_components(make_cfg("context.tokenizer=reader")).context
    smollm = TransformersLLM()
    for text in (MIXED, "The fund grew in 2019.", "👍🏽" * 5):
        assert context.tokenizer.count(text) == smollm.count_tokens(text)
        cut = context.tokenizer.cut(text, 4)
        assert smollm.count_tokens(text[:cut]) <= 4
    assert context.tokenizer.count(MIXED) != Tokenizer("tokens", "bundled").count(MIXED)
