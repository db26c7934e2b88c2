"""BM25 as rank_bm25's ``BM25Okapi`` scores it (MC-indexing's, Appendix D.2), over sparse arrays.

rank_bm25 loops in Python over every chunk for each query term (46x the default method's CPU at
corpus scope on 10 MB); here each chunk's term weights are one sparse matrix, built once per
collection, and a batch of questions is one sparse product. The numbers are rank_bm25's:

    idf(t)   = ln(N - df + 0.5) - ln(df + 0.5); an idf below 0 becomes epsilon x the mean idf
               of the collection's terms (epsilon 0.25)
    w(t, d)  = idf(t) x tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))
    score(q, d) = sum of w(t, d) over the question's tokens, a repeated token counted each time;
                  a token the collection lacks adds nothing

(``tests/retrieval/test_okapi.py`` holds them to rank_bm25's own scores.) One difference: where
the tf part is 0/0 (a chunk without the term at k1 = 0, or an empty chunk at b = 1) rank_bm25
scores NaN; here the term adds nothing, as for any chunk without it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

EPSILON = 0.25  # rank_bm25's default: the floor of a negative idf, as a share of the mean idf


class OkapiIndex:
    def __init__(self, docs: Sequence[Sequence[str]], k1: float, b: float):
        """``docs``: each chunk's tokens. A collection with no token at all cannot be scored
        (rank_bm25 divides by its number of distinct terms): the caller checks ``any(docs)``."""
        self.vocab: dict[str, int] = {}
        rows, cols = [], []
        for i, doc in enumerate(docs):
            cols.extend(self.vocab.setdefault(t, len(self.vocab)) for t in doc)
            rows.extend([i] * len(doc))
        n = len(docs)
        # duplicate (chunk, term) entries are summed: the term frequencies
        tf = sparse.coo_matrix((np.ones(len(cols)), (rows, cols)), shape=(n, len(self.vocab))).tocsr()
        tf.sum_duplicates()
        lengths = np.fromiter((len(d) for d in docs), dtype=float, count=n)
        df = np.diff(tf.tocsc().indptr).astype(float)
        idf = np.log(n - df + 0.5) - np.log(df + 0.5)
        idf[idf < 0] = EPSILON * idf.mean()  # the mean before flooring, as rank_bm25 takes it
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        t = tf.tocoo()
        weights = idf[t.col] * t.data * (k1 + 1) / (t.data + norm[t.row])
        self.weights = sparse.csr_matrix((weights, (t.row, t.col)), shape=tf.shape)

    def scores(self, questions: Sequence[Sequence[str]]) -> np.ndarray:
        """(questions x chunks) scores; each question given as its tokens."""
        rows, cols = [], []
        for j, q in enumerate(questions):
            ids = [self.vocab[t] for t in q if t in self.vocab]
            cols.extend(ids)
            rows.extend([j] * len(ids))
        counts = sparse.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(questions), len(self.vocab)))
        return np.asarray((counts @ self.weights.T).todense())
