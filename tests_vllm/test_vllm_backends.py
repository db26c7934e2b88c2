"""vLLM (offline engine) and the OpenAI-compatible client (against `vllm serve`) on the
bundled model, checked against the transformers backend on the same weights."""

import pytest

from conftest import ENGINE
from harness.llm.base import Sampling
from harness.llm.openai_llm import OpenAILLM
from harness.llm.transformers_llm import TransformersLLM
from harness.llm.vllm_llm import VLLM

QUESTION = [[{"role": "user", "content": "What is the capital of France? Answer in one word."}]]
PROMPTS = ["The cat sat on the mat.", "The cat sat on the"]
TEXT = "Retrieval-augmented generation conditions an answer on passages retrieved from a corpus."


@pytest.fixture(scope="module")
def reference():
    hf = TransformersLLM(dtype=ENGINE["dtype"])
    eos = hf.tokenizer.eos_token
    return dict(chat=hf.chat(QUESTION, Sampling(max_tokens=8)), eos=eos,
                logprobs=hf.logprobs(PROMPTS, [eos, eos]), tokens=hf.token_logprobs([TEXT])[0],
                generate=hf.generate(["One, two, three,"], Sampling(max_tokens=6)))


@pytest.fixture(scope="module")
def engine():
    return VLLM(model="bundled", **ENGINE)


def check_agrees(llm, ref):
    assert llm.chat(QUESTION, Sampling(max_tokens=8)) == ref["chat"]
    assert llm.generate(["One, two, three,"], Sampling(max_tokens=6)) == ref["generate"]
    got = llm.logprobs(PROMPTS, [ref["eos"], ref["eos"]])
    assert [g[0] for g in got] == pytest.approx([r[0] for r in ref["logprobs"]], abs=0.05)
    tokens = llm.token_logprobs([TEXT])[0]
    assert len(tokens) == len(ref["tokens"]) and tokens == pytest.approx(ref["tokens"], abs=0.05)


def test_vllm_engine_agrees_with_transformers(engine, reference):
    check_agrees(engine, reference)
    assert engine.identity == TransformersLLM(dtype=ENGINE["dtype"]).identity  # one cache entry for both backends


def test_vllm_prefix_scores_match_the_one_pass_reading(engine, reference):
    hf = TransformersLLM(dtype=ENGINE["dtype"])
    head = hf.apply_chat_template([{"role": "user", "content": "Write a passage of text."}])
    item = (head, "The fund grew in 2019. Revenue rose by 12 percent.", [22, 50], reference["eos"])
    assert engine.prefix_logprobs([item])[0] == pytest.approx(hf.prefix_logprobs([item])[0], abs=0.05)


def test_openai_backend_against_vllm_serve(server, reference):
    # a CPU server's first requests can take minutes (warm-up): the agreement is tested, not the timeouts
    llm = OpenAILLM(model="bundled", base_url=server, max_concurrency=4, timeout=600, deadline=1800)
    check_agrees(llm, reference)
    assert llm.stats.prompt_tokens > 0 and llm.stats.scored_tokens > 0


def test_logits_guided_chunker_runs_on_vllm(engine):
    from harness.chunking.base import check_chunks
    from harness.chunking.logits_guided import LogitsGuidedChunker
    from harness.types import Document

    doc = Document("d", " ".join(f"Sentence {i} is about the topic of item {i // 3}." for i in range(9)))
    chunks = LogitsGuidedChunker(engine, theta=25).chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    assert all(len(c.text.split()) <= 25 for c in chunks)
