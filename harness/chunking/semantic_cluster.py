"""Clustering-based semantic chunking (Qu et al., "Is Semantic Chunking Worth the Computational Cost?").

Sentences are clustered on a distance that mixes position and meaning (Qu et al. Eq. 1-3):

    d(a, b) = lambda * |a - b| / n + (1 - lambda) * (1 - max(cos(emb_a, emb_b), 0))

with ``n`` the number of sentences and ``lambda`` = ``position_weight`` (0: meaning only;
1: position only, i.e. fixed-size chunks). Two methods (``method``):

- ``single_linkage`` (App. A): sentence pairs are merged in order of increasing distance
  (Kruskal-style single linkage), skipping any merge that would make a cluster exceed
  the size cap, and stopping once the next distance exceeds ``threshold`` (paper: 0.5).
  The paper's cap is in sentences, derived from the number of chunks and the number of
  sentences; ``n_chunks`` gives exactly that (cap = ceil(n / n_chunks) sentences).
  ``max_size`` caps clusters in ``unit``s instead (the sum of their sentences' units),
  which makes chunk sizes comparable with the other chunkers; give either or both.
  A single sentence over ``max_size`` stays a chunk of its own.
- ``dbscan`` (App. A): scikit-learn's DBSCAN on the precomputed distance matrix with
  ``eps`` and ``min_samples``; no size cap (the paper has none for it). Noise sentences
  become chunks of their own.

A cluster may hold sentences from different places. It becomes ONE chunk whose ``parts``
are its runs of consecutive sentences (a run is one part, from its first sentence's start
to its last one's end, so the parts stay trimmed and disjoint) and whose text is the
parts joined by ``PART_SEPARATOR``. A cluster of consecutive sentences is an ordinary
contiguous chunk. Chunks come in order of their first sentence; together they cover the
text (every sentence is in exactly one chunk).

Cost: the distance matrix is n x n float32, and single linkage keeps each row's nearest
feasible cluster, so a merge costs O(n) and the whole run O(n^2) in practice (3000
sentences: a second or two). To bound memory on very long documents, sentences are
clustered in consecutive ``window``s of at most that many sentences (n is then the
window's count, ``n_chunks`` applies per window, and no cluster spans two windows);
4000 sentences ~ 64 MB per matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.chunking.base import require
from harness.chunking.embedding import EmbeddingChunker
from harness.chunking.semantic_breakpoint import require_number
from harness.chunking.sentence_source import SplitsSentences
from harness.chunking.units import Span, UnitIndex, make_tokenizer, require_int, require_optional_size
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.sentence_splitters import DEFAULT_SENTENCE_SPLITTER
from harness.types import PART_SEPARATOR, Chunk, Document

METHODS = ("single_linkage", "dbscan")


def distance_matrix(vectors: np.ndarray, position_weight: float) -> np.ndarray:
    """Qu et al. Eq. 1-3 for every pair of L2-normalised sentence vectors (float32, zero diagonal)."""
    n = len(vectors)
    cos = np.clip(vectors @ vectors.T, 0.0, 1.0)  # negative similarity counts as unrelated (Eq. 3)
    idx = np.arange(n, dtype=np.float32)
    d_pos = np.abs(idx[:, None] - idx[None, :]) / max(n, 1)
    d = (position_weight * d_pos + (1.0 - position_weight) * (1.0 - cos)).astype(np.float32)
    np.fill_diagonal(d, 0.0)
    return d


def constrained_single_linkage(dist: np.ndarray, threshold: float,
                               limits: Sequence[tuple[np.ndarray, float]] = ()) -> np.ndarray:
    """Cluster labels from single linkage that never lets a cluster outgrow ``limits``.

    Equivalent to taking sentence pairs in order of increasing distance and merging their
    clusters unless the merged cluster's total of some ``weights`` would exceed its ``cap``
    (``limits`` = [(weights, cap), ...]), stopping at the first distance > ``threshold``.
    Since clusters only grow, a pair that does not fit never will, so each step merges the
    closest pair of clusters that fits. Each row keeps its nearest fitting cluster: under
    single linkage a merge never brings a cluster closer to anyone than before, so only
    rows that pointed at the two merged clusters need a second look.
    """
    n = len(dist)
    d = np.array(dist, dtype=np.float32, copy=True)
    np.fill_diagonal(d, np.inf)
    sizes = [np.asarray(w, dtype=np.float64).copy() for w, _ in limits]
    for (_, cap), s in zip(limits, sizes):
        d[s[:, None] + s[None, :] > cap] = np.inf
    labels = np.arange(n)
    nearest = d.argmin(axis=1) if n else np.zeros(0, dtype=int)
    nearest_d = d[np.arange(n), nearest]
    while n > 1:
        i = int(nearest_d.argmin())
        if not nearest_d[i] <= threshold:  # also stops when nothing fits (inf)
            break
        j = int(nearest[i])
        labels[labels == j] = i
        row = np.minimum(d[i], d[j])  # single linkage: the closer of the two
        for (_, cap), s in zip(limits, sizes):
            s[i] += s[j]
            row[s + s[i] > cap] = np.inf
        row[[i, j]] = np.inf
        d[j, :] = np.inf
        d[:, j] = np.inf
        d[i, :] = row
        d[:, i] = row
        nearest_d[j] = np.inf
        # Rows that pointed at i or j: their distance to the merged cluster equals their old
        # nearest distance unless the merge no longer fits them; only those need a rescan.
        stale = np.flatnonzero(((nearest == i) | (nearest == j)) & np.isfinite(nearest_d))
        fits = np.isfinite(row[stale])
        nearest[stale[fits]] = i
        rescan = np.append(stale[~fits], i)
        nearest[rescan] = d[rescan].argmin(axis=1)
        nearest_d[rescan] = d[rescan, nearest[rescan]]
    return labels


def dbscan_labels(dist: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """DBSCAN cluster labels on a precomputed distance matrix; each noise point gets its own."""
    from sklearn.cluster import DBSCAN

    labels = DBSCAN(eps=eps, min_samples=min_samples, metric="precomputed").fit_predict(dist)
    noise = labels < 0
    labels[noise] = labels.max(initial=-1) + 1 + np.arange(int(noise.sum()))
    return labels


def sentence_runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Maximal runs ``(first, last)`` of consecutive integers in sorted ``indices``."""
    runs: list[tuple[int, int]] = []
    for k in indices:
        if runs and k == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], k)
        else:
            runs.append((k, k))
    return runs


def clusters_to_chunks(doc: Document, sentences: Sequence[Span], labels: Sequence[int]) -> list[Chunk]:
    """One chunk per cluster label, in order of first sentence; scattered clusters get ``parts``."""
    members: dict[int, list[int]] = {}
    for k, label in enumerate(labels):
        members.setdefault(int(label), []).append(k)
    chunks = []
    for group in sorted(members.values(), key=lambda g: g[0]):
        parts = [(sentences[a][0], sentences[b][1]) for a, b in sentence_runs(group)]
        text = PART_SEPARATOR.join(doc.text[s:e] for s, e in parts)
        chunks.append(Chunk(f"{doc.doc_id}#{len(chunks)}", doc.doc_id, text, parts[0][0], parts[-1][1],
                            parts=tuple(parts) if len(parts) > 1 else ()))
    return chunks


class SemanticClusterChunker(SplitsSentences, EmbeddingChunker):
    """Groups sentences, possibly far apart, into chunks by position-aware semantic clustering."""

    def __init__(self, embedder: SentenceTransformerEmbedder, method: str = "single_linkage",
                 position_weight: float = 0.5, threshold: float = 0.5, n_chunks: int | None = None,
                 max_size: int | None = 200, eps: float = 0.3, min_samples: int = 3,
                 window: int | None = 4000, unit: str = "tokens", tokenizer: str = "bundled",
                 sentence_splitter: str = DEFAULT_SENTENCE_SPLITTER):
        super().__init__(embedder)
        require(method in METHODS, f"chunker.method must be one of {', '.join(METHODS)} (got method={method!r})")
        require_number("position_weight", position_weight, 0, 1)
        require_number("threshold", threshold, 0)
        require_optional_size("n_chunks", n_chunks)
        require_optional_size("max_size", max_size)
        require(method != "single_linkage" or n_chunks is not None or max_size is not None,
                "chunker.max_size or chunker.n_chunks must be set for method=single_linkage: without a "
                "size cap one cluster swallows the document (Qu et al. App. A) (got both null)")
        require_number("eps", eps, 0)
        require(eps > 0, f"chunker.eps must be > 0 (got eps={eps!r})")
        require_int("min_samples", min_samples, 1)
        require_optional_size("window", window)
        require(window is None or window >= 2, f"chunker.window must be null or >= 2 (got window={window!r})")
        self.method, self.position_weight, self.threshold = method, position_weight, threshold
        self.n_chunks, self.max_size, self.eps, self.min_samples = n_chunks, max_size, eps, min_samples
        self.window = window
        self.tokenizer = make_tokenizer(unit, tokenizer)
        self.use_sentence_splitter(sentence_splitter)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        sentences = self.document_sentences(doc)
        if not sentences:
            return []
        vectors = self.embed([doc.text[s:e] for s, e in sentences])
        sizes = self._unit_counts(doc.text, sentences)
        n, step = len(sentences), self.window or len(sentences)
        labels = np.zeros(n, dtype=int)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            local = self.cluster(vectors[lo:hi], None if sizes is None else sizes[lo:hi])
            labels[lo:hi] = local + lo  # local labels are < hi - lo, so windows never share one
        return clusters_to_chunks(doc, sentences, labels)

    def cluster(self, vectors: np.ndarray, unit_sizes: np.ndarray | None = None) -> np.ndarray:
        """Cluster labels (in ``[0, n)``) for one window of sentence vectors."""
        n = len(vectors)
        dist = distance_matrix(vectors, self.position_weight)
        if self.method == "dbscan":
            return dbscan_labels(dist, self.eps, self.min_samples)
        limits = []
        if self.n_chunks is not None:  # the paper's cap: sentences per chunk from the number of chunks
            limits.append((np.ones(n), math.ceil(n / self.n_chunks)))
        if self.max_size is not None and unit_sizes is not None:
            limits.append((unit_sizes, self.max_size))
        return constrained_single_linkage(dist, self.threshold, limits)

    def _unit_counts(self, text: str, sentences: Sequence[Span]) -> np.ndarray | None:
        """Units per sentence, needed only for a ``max_size`` cap."""
        if self.method != "single_linkage" or self.max_size is None:
            return None
        units = UnitIndex(text, self.tokenizer)
        return np.array([units.count(s, e) for s, e in sentences], dtype=np.float64)
