"""Lexical retrieval over one chunk collection: BM25 (bm25s) and TF-IDF (scikit-learn).

Statistics (IDF, average length) are those of the searched collection: with
``scope=document`` that is the query's own document, as in per-document retrieval.
Tokens: lower-cased words, jieba words for Chinese (see ``harness.text.lexical_tokens``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.retrieval.base import Retriever, top_k
from harness.text import lexical_tokens
from harness.types import Chunk, ConfigError, Query


class BM25Retriever(Retriever):
    def __init__(self, scope: str = "document", top_k: int = 100, k1: float = 1.5, b: float = 0.75,
                 method: str = "lucene"):
        super().__init__(scope, top_k)
        methods = ("robertson", "atire", "bm25l", "bm25+", "lucene")
        if method not in methods:
            raise ConfigError(f"retriever.method must be one of {', '.join(methods)}; got {method!r}")
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"retriever.k1 must be >= 0 and retriever.b in [0, 1]; got k1={k1}, b={b}")
        self.k1, self.b, self.method = k1, b, method

    def build(self, chunks: Sequence[Chunk]):
        import bm25s

        index = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        index.index([lexical_tokens(c.text) for c in chunks], show_progress=False)
        return index

    def search(self, index, queries: Sequence[Query], k: int):
        # Score every chunk (collections are small per document) so ties rank by position.
        scores = np.vstack([index.get_scores(lexical_tokens(q.question)) for q in queries])
        return top_k(scores, k)


class TfidfRetriever(Retriever):
    def __init__(self, scope: str = "document", top_k: int = 100, sublinear_tf: bool = True,
                 ngram_max: int = 1):
        super().__init__(scope, top_k)
        if ngram_max < 1:
            raise ConfigError(f"retriever.ngram_max must be >= 1, got {ngram_max}")
        self.sublinear_tf, self.ngram_max = sublinear_tf, ngram_max

    def build(self, chunks: Sequence[Chunk]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(tokenizer=lexical_tokens, lowercase=False, token_pattern=None,
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
        return top_k(scores, k)
