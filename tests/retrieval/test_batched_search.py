"""Batched search (issue 35): queries scored a bounded batch at a time, each row's top k by a
partition. The rankings must be the full stable sort's, ties by position, whatever the batch."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness.retrieval.base as base
import harness.retrieval.lexical as lexical
from harness.retrieval.base import Retriever, best_first, document_order, merged_rankings, top_k
from harness.retrieval.lexical import BM25Retriever, TfidfRetriever
from harness.types import Chunk, Query


def full_sort(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The reference: the first k of a stable descending sort (what top_k was before)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)


@st.composite
def tied_scores(draw):
    """A score matrix of few distinct values (many ties), and a k from 1 past the row length."""
    rows, cols = draw(st.integers(0, 6)), draw(st.integers(1, 40))
    levels = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    scores = np.random.default_rng(seed).integers(0, levels, size=(rows, cols)).astype(np.float64) / 4
    return scores, draw(st.integers(1, cols + 3))


@settings(max_examples=300, deadline=None)
@given(tied_scores())
def test_top_k_is_the_full_stable_sort(case):
    scores, k = case
    got, expected = top_k(scores, k), full_sort(scores, k)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def test_top_k_edges():
    scores = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 3.0, 3.0, 2.0]], dtype=np.float32)
    pos, sc = top_k(scores, 2)
    assert pos.tolist() == [[0, 1], [1, 2]] and sc.dtype == np.float32
    assert top_k(scores, 9)[0].tolist() == [[0, 1, 2, 3], [1, 2, 3, 0]]  # k >= n: every item
    assert top_k(np.zeros((0, 5)), 2)[0].shape == (0, 2)  # no query
    with_nan = np.array([[np.nan, 1.0, 2.0, 0.5]])
    np.testing.assert_array_equal(top_k(with_nan, 2)[0], full_sort(with_nan, 2)[0])


def old_best(part, pos, sc, k):
    """The conversion before issue 35, one row: valid hits, sorted by (-score, pool position), first k."""
    return [(p, -s) for s, p in sorted((-float(s), part[p]) for p, s in zip(pos, sc) if p >= 0)[:k]]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_best_first_takes_the_k_best_of_a_wider_unordered_row(n, k, seed):
    """A search may return ties past k in any order, and -1 pads (dense retrieval's faiss)."""
    rng = np.random.default_rng(seed)
    k = min(k, n)
    part = np.sort(rng.choice(100, size=n, replace=False))
    width = rng.integers(k, n + 3)
    pos = np.stack([rng.permutation(np.r_[np.arange(n), -np.ones(3, dtype=int)])[:width] for _ in range(4)])
    sc = rng.integers(0, 3, size=pos.shape).astype(np.float32)
    got_pos, got_sc = best_first(part, pos, sc, k)
    for row in range(len(pos)):
        expected = old_best(part, pos[row], sc[row], k)
        got = [(p, s) for p, s in zip(got_pos[row].tolist(), got_sc[row].tolist()) if p >= 0]
        assert got == expected
        assert all(p == -1 for p in got_pos[row].tolist()[len(expected):])  # pads only at the end


class RandomScores(Retriever):
    """Scores drawn per (query, chunk text) from few values: ties everywhere, the same for any batch."""

    def __init__(self, seed, **kw):
        super().__init__(**kw)
        self.seed, self.batches = seed, []

    def build(self, chunks):
        return [c.text for c in chunks]

    def scores(self, index, queries):
        return np.array([[hash((self.seed, q.question, t)) % 3 for t in index] for q in queries], dtype=np.float64)

    def search(self, index, queries, k):
        self.batches.append(len(queries))
        return top_k(self.scores(index, queries), k)


def old_retrieve(r: Retriever, search_full, queries, chunks):
    """Retriever.retrieve before issue 35 (every query scored at once, rows sorted in Python)."""
    groups = defaultdict(list)
    for i, q in enumerate(queries):
        groups[tuple(sorted(q.doc_ids)) if r.scope == "document" else ()].append(i)
    by_doc = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    out = [None] * len(queries)
    for doc_ids, members in groups.items():
        pool = document_order(list(chunks) if not doc_ids else [c for d in doc_ids for c in by_doc.get(d, ())])
        group = [queries[i] for i in members]
        hits = [[] for _ in group]
        for part in r._indexes(pool):
            index = r.build([pool[p] for p in part])
            k = min(r.top_k, len(part))
            positions, scores = full_sort(search_full(index, group), k)
            for row, pos, sc in zip(hits, positions, scores):
                row.extend(old_best(part, pos, sc, k))
        for i, row in zip(members, hits):
            row.sort(key=lambda h: (-h[1], h[0]))
            out[i] = tuple((pool[p].chunk_id, s) for p, s in row)
    return out


def synthetic(n_docs=4, per_doc=9, views=("text", "summary")):
    chunks = [Chunk(f"d{d}#{i}#{v}", f"d{d}", f"text {d} {i % 4} {v}", i * 10, i * 10 + 9, view=v)
              for d in range(n_docs) for i in range(per_doc) for v in views]
    queries = [Query(f"q{j}", f"question {j}", doc_ids=(f"d{j % n_docs}", f"d{(j * 7) % n_docs}"))
               for j in range(23)]
    return chunks, queries


@pytest.mark.parametrize("scope", ["document", "corpus"])
@pytest.mark.parametrize("view_index", ["pooled", "per_view"])
@pytest.mark.parametrize("top_k_", [1, 4, 100])
def test_batched_retrieve_equals_the_unbatched_one(monkeypatch, scope, view_index, top_k_):
    chunks, queries = synthetic()
    r = RandomScores(7, scope=scope, top_k=top_k_, view_index=view_index)
    expected = old_retrieve(r, r.scores, queries, chunks)
    monkeypatch.setattr(base, "SCORE_CELLS", 40)  # a few queries per batch
    results, _ = r.retrieve(queries, chunks)
    assert [x.ranked for x in results] == expected
    assert max(r.batches) <= 2  # 40 cells over collections of 18 to 72 chunks


def test_a_collection_without_chunks_ranks_nothing():
    assert list(merged_rankings([], [], 3)) == [(), (), ()]
    (res,), _ = RandomScores(0, scope="document").retrieve([Query("q", "x", doc_ids=("none",))], synthetic()[0])
    assert res.ranked == ()


@pytest.fixture(scope="module")
def bundled():
    from harness.chunking.fixed import FixedSizeChunker
    from harness.data.ohrbench import OHRBench

    ds = OHRBench().load()
    chunks = [c for doc in FixedSizeChunker(size=64).chunk(ds.documents) for c in doc]
    return ds.queries, chunks


def old_lexical_scores(r):
    """The full score matrix each lexical retriever's search sorted before issue 35."""
    if isinstance(r, BM25Retriever):
        return lambda index, qs: np.vstack([index[0].get_scores(r.tokens(q.question)) for q in qs])  # (engine, n)
    return lambda index, qs: (index[0].transform([q.question for q in qs]) @ index[1].T).toarray()


@pytest.mark.parametrize("make", [lambda: BM25Retriever(scope="corpus", top_k=20),
                                  lambda: BM25Retriever(scope="document", top_k=100),
                                  lambda: TfidfRetriever(scope="corpus", top_k=50)], ids=["bm25-corpus", "bm25-doc",
                                                                                         "tfidf-corpus"])
def test_bundled_rankings_are_unchanged(monkeypatch, bundled, make):
    queries, chunks = bundled
    r = make()
    expected = old_retrieve(r, old_lexical_scores(r), queries, chunks)
    monkeypatch.setattr(base, "SCORE_CELLS", 5000)  # several batches even on the small sample
    results, _ = r.retrieve(queries, chunks)
    assert [x.ranked for x in results] == expected
    assert lexical.top_k is top_k


@pytest.mark.slow  # loads the bundled embedder
def test_dense_search_in_batches_ranks_as_one_search(monkeypatch, tmp_path):
    from harness.cache import Cache
    from harness.embedding.embedder import SentenceTransformerEmbedder
    from harness.retrieval import dense

    words = ["lava", "volcano", "bank", "rates", "cat", "sea"]
    chunks = [Chunk(f"d{i % 3}#{i}", f"d{i % 3}", f"{words[i % 6]} {words[(i * 5) % 6]}", i, i + 1)
              for i in range(24)]  # 6 distinct texts: equal vectors, equal scores
    queries = [Query(f"q{j}", f"{words[j % 6]} and {words[(j + 1) % 6]}") for j in range(7)]
    r = dense.DenseRetriever(SentenceTransformerEmbedder(cache=Cache(tmp_path)), scope="corpus", top_k=5)
    whole, _ = r.retrieve(queries, chunks)
    monkeypatch.setattr(dense, "SEARCH_ROWS", 2)
    batched, _ = r.retrieve(queries, chunks)
    assert [x.ranked for x in batched] == [x.ranked for x in whole]
    for x in whole:  # ties by position: of equal scores the earlier chunk first
        keys = [(-s, next(i for i, c in enumerate(document_order(chunks)) if c.chunk_id == cid)) for cid, s in x.ranked]
        assert keys == sorted(keys)


def test_ranked_reads_as_the_tuple_of_pairs_it_replaces():
    import pickle

    from harness.types import Ranked, Retrieved

    pairs = (("a#0", 2.5), ("b#1", 0.0), ("a#2", -1.0))
    r = Ranked.of(pairs)
    assert r == pairs and pairs == r and list(r) == list(pairs) and len(r) == 3
    assert r[0] == ("a#0", 2.5) and r[:2] == pairs[:2] and isinstance(r[1:], Ranked)
    assert [cid for cid, _ in r] == ["a#0", "b#1", "a#2"] and Ranked() == ()
    assert pickle.loads(pickle.dumps(r)) == r and hash(r) == hash(Ranked.of(pairs))
    old = Retrieved("q", pairs)  # a ranking cached before Ranked: assemblers and metrics iterate it alike
    assert pickle.loads(pickle.dumps(old)).ranked == r


def test_an_old_ranking_assembles_as_a_new_one():
    from harness.retrieval.assemblers import TokenBudgetAssembler, TopKAssembler
    from harness.types import Ranked, Retrieved

    chunks = {c.chunk_id: c for c in synthetic(views=("text",))[0]}
    pairs = tuple((cid, float(-i)) for i, cid in enumerate(list(chunks)[::3]))
    for assembler in (TokenBudgetAssembler(budget=20, unit="words"), TopKAssembler(k=2, unit="words")):
        old = assembler.assemble(Retrieved("q", pairs), chunks)
        assert assembler.assemble(Retrieved("q", Ranked.of(pairs)), chunks) == old


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_bm25_built_from_ids_scores_as_from_tokens(bundled, method):
    """The index is built from vocabulary ids (lexical.token_ids) to save memory: its scores are
    bm25s's from the token strings, bit for bit."""
    import bm25s

    queries, chunks = bundled
    r = BM25Retriever(scope="corpus", method=method)
    reference = bm25s.BM25(k1=r.k1, b=r.b, method=method)
    reference.index([r.tokens(c.text) for c in chunks], show_progress=False)
    index, _ = r.build(chunks)
    for q in queries[:60]:
        tokens = r.tokens(q.question)
        np.testing.assert_array_equal(index.get_scores(tokens), reference.get_scores(tokens))
