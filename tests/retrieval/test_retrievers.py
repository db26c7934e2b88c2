"""Retrievers (dense, BM25, TF-IDF), retrieval scope, context assemblers."""

import math

import numpy as np
import pytest

from harness.cache import Cache
from harness.retrieval.assemblers import TokenBudgetAssembler, TopKAssembler
from harness.retrieval.dense import DenseRetriever
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.retrieval.lexical import BM25Retriever, TfidfRetriever
from harness.retrieval.multi_view import MultiViewAssembler
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


def test_one_by_one_vectors_do_not_depend_on_their_batch_mates():
    from harness.data.ohrbench import OHRBench

    text = OHRBench().load().documents[0].text
    texts = [text[i:i + n] for i, n in zip(range(0, 6000, 150), [40, 300, 90, 700] * 10)]
    solo = SentenceTransformerEmbedder(batch_size=1)
    alone = np.vstack([solo.encode([t]) for t in texts[:4]])
    assert np.array_equal(solo.encode(texts)[:4], alone)  # bit for bit, whatever else is encoded
    assert np.array_equal(solo.encode(texts[2:] + texts[:2])[-2:], alone[:2])
    assert solo.identity.endswith("|solo|threads=1") and "|solo" not in SentenceTransformerEmbedder(batch_size=64).identity


def test_passes_group_texts_of_one_token_length():
    from harness.embedding.embedder import MAX_PASS_TOKENS, MIN_SHARED_TOKENS, passes

    lengths = [10, 3, 10, 200, 3, 10, MAX_PASS_TOKENS // 2] + [MAX_PASS_TOKENS // 2] * 2
    groups = passes(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))  # each text once
    assert all(len({lengths[i] for i in g}) == 1 for g in groups)  # no padding inside a pass
    assert [1] in groups and [4] in groups and MIN_SHARED_TOKENS > 3  # too short to share: alone
    assert [0, 2, 5] in groups and all(len(g) * lengths[g[0]] <= MAX_PASS_TOKENS for g in groups)
    costs = [len(g) * lengths[g[0]] for g in groups]
    assert costs == sorted(costs, reverse=True) and passes([]) == []


def test_a_rows_bits_do_not_depend_on_how_many_rows_share_its_pass():
    """What sharing a pass rests on: with no padding, a text's vector from a pass of k texts of
    its length equals its vector alone, bit for bit, from MIN_SHARED_TOKENS tokens on (ids drawn
    at random, one torch thread)."""
    import torch

    from harness.embedding.embedder import MIN_SHARED_TOKENS, _load_model

    model, before = _load_model(SentenceTransformerEmbedder().path, None, None), torch.get_num_threads()
    gen = torch.Generator().manual_seed(0)

    def vectors(ids):
        features = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
        with torch.inference_mode():
            return model(features)["sentence_embedding"]

    torch.set_num_threads(1)
    try:
        for n in [*range(MIN_SHARED_TOKENS, 40, 3), 77, 128, 256]:
            ids = torch.randint(1000, 29000, (5, n), generator=gen)
            alone = torch.cat([vectors(ids[i:i + 1]) for i in range(5)])
            for k in (2, 5):
                assert torch.equal(vectors(ids[:k]), alone[:k]), (n, k)
    finally:
        torch.set_num_threads(before)


def test_one_by_one_vectors_equal_a_loop_when_texts_share_passes():
    """Texts of repeated token lengths (GutenQA sentences), some too short to share: the
    embedder's vectors are those of a one-thread loop over the texts one at a time."""
    import json
    import re

    import torch

    from harness.data.base import SAMPLES_DIR
    from harness.embedding.embedder import _load_model, passes, token_counts

    with open(SAMPLES_DIR / "gutenqa" / "GutenQA_paragraphs.jsonl", encoding="utf-8") as f:
        paragraphs = [json.loads(line)["Chunk"] for _, line in zip(range(40), f)]
    texts = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s][:150] + ["I", "Yes!", "No, no."]
    solo, before = SentenceTransformerEmbedder(batch_size=1), torch.get_num_threads()
    model = _load_model(solo.path, None, None)
    assert len(passes(token_counts(model, texts))) < len(texts) / 2  # many texts do share a pass
    got = solo._encode(texts)
    torch.set_num_threads(1)
    try:
        loop = np.vstack([solo._model_encode(model, [t], 1, True) for t in texts])
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(got, loop)


def test_one_by_one_vectors_are_the_same_on_any_core_count():
    """Several torch threads: the texts go to the cores side by side, each pass on one thread,
    so the vectors are a one-thread loop's, in order; the thread count is given back."""
    import torch

    from harness.data.ohrbench import OHRBench

    text = OHRBench().load().documents[0].text
    texts = [text[i:i + n] for i, n in zip(range(0, 6000, 100), [40, 60, 90, 120, 700] * 12)]
    solo, before = SentenceTransformerEmbedder(batch_size=1), torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one_thread = solo.encode(texts)
        torch.set_num_threads(2)
        assert np.array_equal(solo.encode(texts), one_thread)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_an_embedders_input_limit_does_not_leak_into_the_next_one():
    """Embedders share one model object; a 512-token limit set by one (the paper retrievers')
    must not stay on it for the next, whose vectors are cached under the model's own limit."""
    from harness.data.ohrbench import OHRBench

    long_text = OHRBench().load().documents[0].text[:4000]  # well over 256 word pieces
    default = SentenceTransformerEmbedder(batch_size=1)
    before = default.encode([long_text])
    SentenceTransformerEmbedder(batch_size=1, max_seq_length=512).encode([long_text])
    assert np.array_equal(default.encode([long_text]), before)


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


# --- ties by document position (issue 13) -----------------------------------------------------

LAVA = "The volcano erupted and lava flowed into the sea."
# The later copy of a repeated passage comes first in the collection, as chunkers that emit
# structure or views before content can leave it.
REPEATED = [Chunk("t#2", "t", LAVA, 100, 100 + len(LAVA)), Chunk("t#1", "t", "Rates rose again.", 60, 77),
            Chunk("t#0", "t", LAVA, 0, len(LAVA))]


def test_equal_scores_rank_the_earlier_copy_first(retriever_factory):
    (res,), _ = retriever_factory().retrieve([q("volcano lava", "t")], REPEATED)
    assert [cid for cid, _ in res.ranked[:2]] == ["t#0", "t#2"] and res.ranked[0][1] == res.ranked[1][1]
    (top,), _ = retriever_factory(top_k=1).retrieve([q("volcano lava", "t")], REPEATED)
    assert [cid for cid, _ in top.ranked] == ["t#0"]


def test_multi_view_ties_take_the_earlier_copy_in_every_view(retriever_factory):
    chunks = []
    for i, start in ((2, 40), (1, 20), (0, 0)):
        text = LAVA if i != 1 else "Rates rose again."
        chunks += [Chunk(f"c{i}", "d", text, start, start + len(text)),
                   Chunk(f"c{i}@keywords", "d", " ".join(text.split()[1:4]), start, start + len(text),
                         parent_id=f"c{i}", view="keywords")]
    (res,), _ = retriever_factory().retrieve([q("volcano lava", "d")], chunks)
    by_id = {c.chunk_id: c for c in chunks}
    ctx = MultiViewAssembler(k=1, k_per_view=1, unit="words").assemble(res, by_id)
    assert ctx.ranking.by_view["text"][:2] == ("c0", "c2") and ctx.ranking.by_view["keywords"][:2] == ("c0", "c2")
    assert ctx.chunk_ids == ("c0",)


# --- BM25 variants and per-view statistics (issue 13) -----------------------------------------

PIES = [Chunk(f"p#{i}", "p", t, 20 * i, 20 * i + len(t))
        for i, t in enumerate(["apple pie", "apple tart", "apple cake", "banana bread"])]


def test_bm25_okapi_is_rank_bm25s_formula_and_differs_from_lucene():
    query = [q("apple banana", "p")]
    scores = {m: dict(BM25Retriever(method=m).retrieve(query, PIES)[0][0].ranked) for m in ("okapi", "lucene")}
    # N = 4, every dl = avgdl = 2. Okapi: idf(banana) = ln(3.5/1.5) = ln(7/3); idf(apple) =
    # ln(1.5/3.5) < 0 is replaced by 0.25 x mean idf over the 6 terms = 0.25 x (5 - 1) ln(7/3) / 6;
    # tf part 1 x 2.5 / (1 + 1.5) = 1.
    assert scores["okapi"]["p#3"] == pytest.approx(math.log(7 / 3))
    assert scores["okapi"]["p#0"] == pytest.approx(math.log(7 / 3) / 6)
    # Lucene: idf = ln(1 + (N - df + 0.5)/(df + 0.5)), tf part 1 / (1 + 1.5) = 0.4.
    assert scores["lucene"]["p#3"] == pytest.approx(0.4 * math.log(10 / 3), rel=1e-6)
    assert scores["lucene"]["p#0"] == pytest.approx(0.4 * math.log(10 / 7), rel=1e-6)


def test_okapi_on_a_collection_without_words_scores_zero():
    (res,), _ = BM25Retriever(method="okapi").retrieve([q("apple", "x")], [Chunk("x#0", "x", "...", 0, 3)])
    assert res.ranked == (("x#0", 0.0),)


def test_per_view_indexes_take_idf_and_length_per_view():
    chunks = [Chunk("c0", "d", "apple pie", 0, 9), Chunk("c1", "d", "apple bread", 10, 21),
              Chunk("k0", "d", "apple", 0, 9, parent_id="c0", view="keywords"),
              Chunk("k1", "d", "bread", 10, 21, parent_id="c1", view="keywords")]
    query = [q("apple", "d")]
    per_view = dict(BM25Retriever(view_index="per_view").retrieve(query, chunks)[0][0].ranked)
    pooled = dict(BM25Retriever(view_index="pooled").retrieve(query, chunks)[0][0].ranked)
    # Lucene BM25. Per view (N = 2 each): text idf(apple) = ln(1 + 0.5/2.5), keywords ln(1 + 1.5/1.5);
    # dl = avgdl, so tf part 1/(1 + 1.5) = 0.4.
    assert per_view["c0"] == pytest.approx(0.4 * math.log(1.2), rel=1e-6)
    assert per_view["k0"] == pytest.approx(0.4 * math.log(2), rel=1e-6)
    # Pooled (N = 4, df = 3, avgdl = 1.5): idf ln(10/7); tf part 1/(1 + 1.5 (0.25 + 0.75 dl/1.5)).
    assert pooled["c0"] == pytest.approx(math.log(10 / 7) / 2.875, rel=1e-6)
    assert pooled["k0"] == pytest.approx(math.log(10 / 7) / 2.125, rel=1e-6)


def test_bad_variant_names():
    with pytest.raises(ConfigError, match="retriever.method must be one of lucene, .*okapi"):
        BM25Retriever(method="okapi++")
    with pytest.raises(ConfigError, match="retriever.view_index must be one of per_view, pooled"):
        TfidfRetriever(view_index="views")


def test_evidence_outside_the_searched_documents_is_counted():
    from harness.retrieval.base import unsearched_evidence
    from harness.types import Span

    inside = Query("q1", "lava", doc_ids=("a",), evidence=(Span("a", 0, 5),))
    outside = Query("q2", "tax", doc_ids=("a",), evidence=(Span("b", 0, 5), Span("b", 6, 9), Span("a", 0, 2)))
    no_docs = Query("q3", "tax", evidence=(Span("b", 0, 5),))  # scope=document refuses it in retrieve
    assert unsearched_evidence([inside, no_docs]) is None
    assert unsearched_evidence([inside, outside, no_docs]) == (
        "retriever.scope=document: 1 of 3 queries have evidence in a document they do not search (2 spans): "
        "it is never retrieved and counts as missed; use retriever.scope=corpus or check the dataset's doc_ids")
