"""retriever.method=okapi scores as rank_bm25's BM25Okapi does, on sparse arrays (harness/retrieval/okapi.py)."""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from rank_bm25 import BM25Okapi

from harness.retrieval.base import top_k
from harness.retrieval.lexical import BM25Retriever
from harness.retrieval.okapi import OkapiIndex
from harness.types import Chunk, Query

WORDS = st.sampled_from(["apple", "pear", "fig", "plum", "kiwi", "lime", "date"])


def reference(docs, questions, k1=1.5, b=0.75):
    index = BM25Okapi(docs, k1=k1, b=b)
    return np.vstack([index.get_scores(q) for q in questions])


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(st.lists(WORDS, max_size=12), min_size=1, max_size=15).filter(any),
       questions=st.lists(st.lists(st.one_of(WORDS, st.just("absent")), max_size=6), min_size=1, max_size=4),
       k1=st.sampled_from([0.0, 0.9, 1.2, 1.5, 2.0]), b=st.sampled_from([0.0, 0.4, 0.75, 1.0]))
def test_scores_equal_rank_bm25s(docs, questions, k1, b):
    """Repeated question tokens, tokens the collection lacks, empty chunks and questions, terms in
    most chunks (a negative idf, floored at 0.25 x the mean idf): rank_bm25's numbers, to float
    rounding (the sums run in another order). Where rank_bm25 computes 0/0 for a chunk without the
    term (k1 = 0, or an empty chunk at b = 1) it scores NaN; here the term adds nothing there."""
    got, want = OkapiIndex(docs, k1, b).scores(questions), reference(docs, questions, k1, b)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, np.where(np.isnan(want), got, want), rtol=1e-12, atol=1e-12)
    if k1 > 0 and b < 1:
        assert not np.isnan(want).any()


def test_a_corpus_scale_collection_scores_and_ranks_as_rank_bm25():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(3000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like: common terms get negative idf
    docs = [rng.choices(vocab, weights, k=rng.randint(5, 120)) for _ in range(800)]
    questions = [rng.choices(vocab, weights, k=6) for _ in range(50)]
    got, want = OkapiIndex(docs, 1.5, 0.75).scores(questions), reference(docs, questions)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # the top 10 of every question as the retriever ranks them (equal scores by position)
    assert (top_k(got, 10)[0] == top_k(want, 10)[0]).all()


def test_the_retriever_ranks_with_it():
    chunks = [Chunk(f"d#{i}", "d", t, 0, len(t)) for i, t in enumerate(
        ["the apple pie", "a pear tart", "apple apple crumble", "plain bread"])]
    (res,), _ = BM25Retriever(method="okapi").retrieve([Query("q", "apple crumble", doc_ids=["d"])], chunks)
    tokens = [c.text.split() for c in chunks]
    want = reference(tokens, [["apple", "crumble"]])[0]
    assert [cid for cid, _ in res.ranked][:2] == ["d#2", "d#0"]
    assert dict(res.ranked) == pytest.approx({f"d#{i}": s for i, s in enumerate(want)})
