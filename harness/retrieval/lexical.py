"""Lexical retrieval over one chunk collection: BM25 (bm25s; Okapi as rank_bm25 scores it, harness/retrieval/okapi.py) and TF-IDF (scikit-learn).

Statistics (IDF, average length) are those of the searched collection: with
``scope=document`` that is the query's own document, as in per-document retrieval, and
with ``view_index=per_view`` (the default) those of one view's chunks.
Tokens: lower-cased words, jieba words for Chinese (see ``harness.text.lexical_tokens``): a text
is Chinese when CJK characters are at least ``zh_min_share`` of its word characters (default 0.1:
English chunks of the bundled OHR-Bench sample with stray CJK OCR characters reach 0.012, the
bundled Chinese samples' at least 0.37; 0: any CJK character, the rule before, which loaded
jieba's dictionary for English text).

BM25 ``method``: bm25s's variants (``lucene`` by default: idf = ln(1 + (N - df + 0.5)/(df + 0.5)),
tf part tf/(tf + k1(1 - b + b dl/avgdl))), or ``okapi``, rank_bm25's ``BM25Okapi``, which
MC-indexing used (Appendix D.2): idf = ln((N - df + 0.5)/(df + 0.5)), a negative idf
replaced by 0.25 x the mean idf of the collection's terms, tf part multiplied by (k1 + 1).
No bm25s variant equals it: ``robertson`` floors a negative idf at 0, ``atire`` takes ln(N/df).

A question without a term (``??? !!!``, emoji only) retrieves nothing: scored against nothing,
every chunk would tie at 0 and the first ones in the document would be retrieved for no reason.
The run counts such questions (``queries_without_terms``, :meth:`Retriever.unsearchable`). A chunk
without a term is indexed with none; a collection without any scores every question 0.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from functools import partial

import numpy as np

from harness.retrieval.base import Retriever, top_k
from harness.retrieval.okapi import OkapiIndex
from harness.text import lexical_tokens
from harness.types import Chunk, ConfigError, Query


BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+", "okapi")


def tokenizer(zh_min_share: float):
    """``lexical_tokens`` with the share of CJK characters that makes a text Chinese."""
    if isinstance(zh_min_share, bool) or not isinstance(zh_min_share, (int, float)) or not 0 <= zh_min_share <= 1:
        raise ConfigError(f"retriever.zh_min_share must be a number in [0, 1], got {zh_min_share!r}")
    return partial(lexical_tokens, zh_min_share=float(zh_min_share))


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class BM25Retriever(Retriever):
    def __init__(self, scope: str = "document", top_k: int = 100, k1: float = 1.5, b: float = 0.75,
                 method: str = "lucene", view_index: str = "per_view", zh_min_share: float = 0.1):
        super().__init__(scope, top_k, view_index)
        self.tokens = tokenizer(zh_min_share)
        if method not in BM25_METHODS:
            raise ConfigError(f"retriever.method must be one of {', '.join(BM25_METHODS)}; got {method!r}")
        if not (_number(k1) and k1 >= 0 and _number(b) and 0 <= b <= 1):  # NaN fails every comparison
            raise ConfigError(f"retriever.k1 must be a finite number >= 0 and retriever.b one in [0, 1]; got "
                              f"k1={k1!r}, b={b!r}")
        self.k1, self.b, self.method = k1, b, method

    def build(self, chunks: Sequence[Chunk]):
        """(the engine, or None for a collection without a term, and the number of chunks)."""
        if self.method == "okapi":
            docs = [self.tokens(c.text) for c in chunks]
            # rank_bm25's idf floor needs a mean over terms: a collection without any has no index.
            return (OkapiIndex(docs, self.k1, self.b) if any(docs) else None), len(chunks)
        import bm25s

        ids, vocab = token_ids(self.tokens(c.text) for c in chunks)
        if not vocab:  # bm25s takes the largest id of an empty vocabulary
            return None, len(chunks)
        index = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        index.index((ids, vocab), show_progress=False)
        return index, len(chunks)

    def search(self, index, queries: Sequence[Query], k: int):
        engine, n = index
        terms = [self.tokens(q.question) for q in queries]
        # Every chunk of the collection scored, so ties rank by position; ``queries`` is a batch
        # (Retriever.search_rows), so the matrix is bounded. bm25s cannot score an empty query.
        if isinstance(engine, OkapiIndex):
            scores = engine.scores(terms)
        else:
            scores = np.zeros((len(queries), n))
            for row, t in zip(scores, terms):
                if t and engine is not None:
                    row[:] = engine.get_scores(t)
        return nothing_without_terms(top_k(scores, k), terms)

    def unsearchable(self, queries: Sequence[Query]) -> list[str]:
        return without_terms(self.tokens, queries)


def without_terms(tokens: Callable[[str], list[str]], queries: Sequence[Query]) -> list[str]:
    """The qids of ``queries`` whose question has no term (``??? !!!``, emoji only)."""
    return [q.qid for q in queries if not tokens(q.question)]


def nothing_without_terms(found: tuple[np.ndarray, np.ndarray], terms: Sequence[list[str]]):
    """A search's rows with those of questions without a term emptied: scored against nothing,
    every chunk ties at 0, and the first ones in the document would be retrieved for no reason."""
    positions, scores = found
    empty = np.array([not t for t in terms], dtype=bool)
    positions[empty], scores[empty] = -1, -np.inf
    return positions, scores


def token_ids(docs: Iterable[list[str]]) -> tuple[list[array], dict[str, int]]:
    """Each document's tokens as vocabulary ids (4 bytes each), and the vocabulary, one document
    at a time: a token list is dropped as soon as it is read, so a collection never holds a
    string per token occurrence (bm25s given the strings holds them all while it indexes: 85 MB
    for 10 MB of text). bm25s's own vocabulary is a set's order, so its scores do not depend on
    which id a token gets."""
    vocab: dict[str, int] = {}
    ids = [array("i", [vocab.setdefault(t, len(vocab)) for t in doc]) for doc in docs]
    return ids, vocab


class TfidfRetriever(Retriever):
    def __init__(self, scope: str = "document", top_k: int = 100, sublinear_tf: bool = True,
                 ngram_max: int = 1, view_index: str = "per_view", zh_min_share: float = 0.1):
        super().__init__(scope, top_k, view_index)
        self.tokens = tokenizer(zh_min_share)
        if ngram_max < 1:
            raise ConfigError(f"retriever.ngram_max must be >= 1, got {ngram_max}")
        self.sublinear_tf, self.ngram_max = sublinear_tf, ngram_max

    def build(self, chunks: Sequence[Chunk]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(tokenizer=self.tokens, lowercase=False, token_pattern=None,
                              sublinear_tf=self.sublinear_tf, ngram_range=(1, self.ngram_max))
        try:
            matrix = vec.fit_transform([c.text for c in chunks])
        except ValueError:  # no token at all in the collection (e.g. only punctuation)
            return None, len(chunks)
        return vec, matrix

    def search(self, index, queries: Sequence[Query], k: int):
        vec, matrix = index
        if vec is None:
            scores = np.zeros((len(queries), matrix))
        else:
            scores = (vec.transform([q.question for q in queries]) @ matrix.T).toarray()
        return nothing_without_terms(top_k(scores, k), [self.tokens(q.question) for q in queries])

    def unsearchable(self, queries: Sequence[Query]) -> list[str]:
        return without_terms(self.tokens, queries)
