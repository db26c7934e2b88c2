"""Retrievers (dense, BM25, TF-IDF), retrieval scope, context assemblers."""

import numpy as np
import pytest

from harness.cache import Cache
from harness.retrieval.assemblers import TokenBudgetAssembler, TopKAssembler
from harness.retrieval.dense import DenseRetriever
from harness.retrieval.embedders import SentenceTransformerEmbedder
from harness.retrieval.lexical import BM25Retriever, TfidfRetriever
from harness.types import Chunk, ConfigError, Query, Retrieved

TEXTS = {
    "a": ["The volcano erupted and lava flowed into the sea.", "Quarterly revenue grew by ten percent.",
          "The cat slept on the warm windowsill all afternoon."],
    "b": ["Lava from the volcano reached the coastal village.", "Interest rates were raised by the bank."],
}
CHUNKS = [Chunk(f"{d}#{i}", d, t, 0, len(t)) for d, ts in TEXTS.items() for i, t in enumerate(ts)]


def q(text, *docs):
    return Query(f"q{abs(hash(text)) % 1000}", text, doc_ids=docs)


@pytest.fixture(params=["dense", "bm25", "tfidf"])
def retriever_factory(request, tmp_path):
    def make(**kw):
        if request.param == "dense":
            return DenseRetriever(SentenceTransformerEmbedder(cache=Cache(tmp_path)), **kw)
        return {"bm25": BM25Retriever, "tfidf": TfidfRetriever}[request.param](**kw)

    return make


def test_document_scope_searches_only_the_querys_documents(retriever_factory):
    (res,), _ = retriever_factory(scope="document").retrieve([q("volcano lava", "a")], CHUNKS)
    assert {cid.split("#")[0] for cid, _ in res.ranked} == {"a"}
    assert res.ranked[0][0] == "a#0"
    assert len(res.ranked) == 3


def test_corpus_scope_pools_every_chunk(retriever_factory):
    (res,), _ = retriever_factory(scope="corpus", top_k=2).retrieve([q("volcano lava")], CHUNKS)
    assert {cid for cid, _ in res.ranked} == {"a#0", "b#0"}
    scores = [s for _, s in res.ranked]
    assert scores == sorted(scores, reverse=True)


def test_results_come_back_in_query_order(retriever_factory):
    queries = [q("bank interest rates", "b"), q("sleeping cat", "a"), q("revenue growth", "a")]
    results, _ = retriever_factory().retrieve(queries, CHUNKS)
    assert [r.qid for r in results] == [x.qid for x in queries]
    assert [r.ranked[0][0] for r in results] == ["b#1", "a#2", "a#1"]


def test_query_without_documents_in_document_scope_is_an_error(retriever_factory):
    with pytest.raises(ConfigError, match="scope=corpus"):
        retriever_factory().retrieve([Query("x", "volcano")], CHUNKS)


def test_document_without_chunks_gives_empty_ranking(retriever_factory):
    (res,), _ = retriever_factory().retrieve([q("anything", "empty-doc")], CHUNKS)
    assert res.ranked == ()


def test_bad_retriever_parameters():
    with pytest.raises(ConfigError, match="retriever.top_k"):
        BM25Retriever(top_k=0)
    with pytest.raises(ConfigError, match="retriever.method must be one of"):
        BM25Retriever(method="okapi++")


def test_embeddings_are_normalised_cached_and_shared(tmp_path):
    cache = Cache(tmp_path)
    texts = ["same text", "other text", "same text"]
    v = SentenceTransformerEmbedder(cache=cache).encode(texts)
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert np.array_equal(v[0], v[2])
    assert cache.misses["embeddings"] == 3 and len(list(tmp_path.rglob("*"))) > 0
    again = Cache(tmp_path)
    assert np.array_equal(SentenceTransformerEmbedder(cache=again).encode(texts), v)
    assert again.hits["embeddings"] == 3 and again.misses["embeddings"] == 0
    assert np.allclose(SentenceTransformerEmbedder().encode(texts), v, atol=1e-6)  # no cache: computed directly


def _ranked(*ids):
    return Retrieved("q", tuple((i, 1.0) for i in ids))


WORDS = {f"c{i}": Chunk(f"c{i}", "d", " ".join(["w"] * n), 10 * i, 10 * i + 2 * n - 1)
         for i, n in enumerate([5, 3, 4, 2])}


def test_budget_adds_chunks_in_rank_order_until_the_next_does_not_fit():
    a = TokenBudgetAssembler(budget=9, unit="words")
    ctx = a.assemble(_ranked("c0", "c1", "c2", "c3"), WORDS)
    assert ctx.chunk_ids == ("c0", "c1") and ctx.n_tokens == 8
    assert ctx.text == WORDS["c0"].text + "\n\n" + WORDS["c1"].text


def test_budget_truncate_fills_exactly_and_records_the_cut_span():
    ctx = TokenBudgetAssembler(budget=9, unit="words", overflow="truncate").assemble(
        _ranked("c0", "c1", "c2"), WORDS)
    assert ctx.n_tokens == 9 and ctx.chunk_ids == ("c0", "c1", "c2")
    assert ctx.spans[-1].end - ctx.spans[-1].start == 1  # one word of c2


def test_budget_never_exceeded_with_model_tokens():
    chunks = {c.chunk_id: c for c in CHUNKS}
    for budget in (1, 10, 25, 1000):
        ctx = TokenBudgetAssembler(budget=budget).assemble(_ranked(*chunks), chunks)
        assert ctx.n_tokens <= budget


def test_topk_takes_k_best():
    ctx = TopKAssembler(k=2, unit="words").assemble(_ranked("c3", "c1", "c0"), WORDS)
    assert ctx.chunk_ids == ("c3", "c1") and ctx.n_tokens == 5


def test_bad_assembler_parameters():
    with pytest.raises(ConfigError, match="context.budget"):
        TokenBudgetAssembler(budget=0)
    with pytest.raises(ConfigError, match="stop, truncate"):
        TokenBudgetAssembler(overflow="drop")
    with pytest.raises(ConfigError, match="unit must be one of tokens, words, chars"):
        TopKAssembler(unit="bytes")
