"""Breakpoint-based semantic chunking (Kamradt's "semantic chunking", LangChain's SemanticChunker).

Sentences are embedded, each with ``buffer_size`` neighbours either side so that one
short sentence does not decide a break on its own; a chunk ends after sentence ``i``
when the cosine distance between windows ``i`` and ``i+1`` exceeds a threshold. This is
the "Breakpoint-based Semantic Chunker" of Qu et al. ("Is Semantic Chunking Worth the
Computational Cost?", Sec. 2 and App. B), the SC baseline of HiChunk and the "Similarity
Chunking" baseline of QChunker (LlamaIndex's SemanticSplitterNodeParser, same method).

Threshold types, as Qu et al. App. B names them (four relative ones from LangChain, two
absolute ones of their own):

- ``percentile``: the ``amount``-th percentile (linear interpolation) of the distances.
- ``standard_deviation``: mean + ``amount`` x standard deviation of the distances.
- ``interquartile``: mean + ``amount`` x interquartile range of the distances.
- ``gradient``: the ``amount``-th percentile of the distances' gradient (``np.gradient``:
  second-order central differences); a break where the gradient exceeds it.
- ``distance``: a break where the distance exceeds ``amount`` itself.
- ``gradient_absolute``: a break where the gradient exceeds ``amount`` itself.

Optional ``min_size``/``max_size`` (units) bound chunk sizes, which the method alone
cannot (Qu et al. App. B: "the number of chunks or chunk size is not tunable").

How a window is embedded (``window_embedding``):

- ``text`` (default, what the published method and LangChain do): the window's sentences
  joined and embedded as one text, so each sentence is encoded ``2 * buffer_size + 1`` times.
- ``mean``: each sentence embedded once; a window's vector is the normalised mean of its
  sentences' vectors. About ``2 * buffer_size + 1`` times fewer tokens encoded, and the
  sentence vectors are shared with any other run over the same sentences; the breakpoints
  move a little (``scripts/bench_speed.py`` reports how much on the bundled documents).

With ``buffer_size=0`` (Qu et al.'s setting) both are the same computation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.embedding import EmbeddingChunker
from harness.chunking.sentence_source import SplitsSentences
from harness.chunking.units import Span, UnitIndex, make_tokenizer, pack, require_int, require_optional_size
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.sentence_splitters import DEFAULT_SENTENCE_SPLITTER
from harness.types import Chunk, Document

# Default amount per type. The four relative ones are LangChain's defaults (the values
# Kamradt's tutorial uses; LlamaIndex's splitter also defaults to the 95th percentile).
# Qu et al. give no default for the absolute ones, only grids (App. B: distance
# 0.1..0.5, gradient 0.01..0.2); we take the middle of each grid.
THRESHOLD_DEFAULTS: dict[str, float] = {
    "percentile": 95,
    "standard_deviation": 3,
    "interquartile": 1.5,
    "gradient": 95,
    "distance": 0.3,
    "gradient_absolute": 0.1,
}
_PERCENTILE_TYPES = ("percentile", "gradient")
WINDOW_EMBEDDINGS = ("text", "mean")


def require_number(name: str, value: Any, low: float | None = None, high: float | None = None) -> None:
    """Check that ``chunker.<name>`` is a finite real number in ``[low, high]``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (low is None or value >= low) and (high is None or value <= high)
    bounds = f" in [{'-inf' if low is None else low}, {'inf' if high is None else high}]"
    require(ok, f"chunker.{name} must be a finite number{bounds} (got {name}={value!r})")


def window_texts(texts: Sequence[str], buffer_size: int) -> list[str]:
    """Each text joined with up to ``buffer_size`` neighbours on either side (Kamradt's buffer)."""
    n = len(texts)
    return [" ".join(texts[max(0, i - buffer_size):min(n, i + buffer_size + 1)]) for i in range(n)]


def window_means(vectors: np.ndarray, buffer_size: int) -> np.ndarray:
    """Row ``i``: the L2-normalised mean of rows ``i - buffer_size .. i + buffer_size``
    (clipped at the ends), from a running sum so that it costs O(n) whatever the buffer."""
    n = len(vectors)
    sums = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64), np.cumsum(vectors, axis=0, dtype=np.float64)])
    idx = np.arange(n)
    lo, hi = np.maximum(0, idx - buffer_size), np.minimum(n, idx + buffer_size + 1)
    means = sums[hi] - sums[lo]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    return (means / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def consecutive_distances(vectors: np.ndarray) -> np.ndarray:
    """Cosine distance between each L2-normalised row and the next (length n-1)."""
    if len(vectors) < 2:
        return np.zeros(0)
    return 1.0 - np.einsum("ij,ij->i", vectors[:-1], vectors[1:]).astype(np.float64)


def window_distances(embed: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str], buffer_size: int,
                     window_embedding: str = "text") -> np.ndarray:
    """Cosine distance between each text's window (``buffer_size`` neighbours either side, embedded
    as ``window_embedding`` says: module docstring) and the next one's (length n-1)."""
    if len(texts) < 2:
        return np.zeros(0)
    if buffer_size and window_embedding == "text":
        vectors = embed(window_texts(texts, buffer_size))
    else:
        vectors = embed(texts)
        if buffer_size:
            vectors = window_means(vectors, buffer_size)
    return consecutive_distances(vectors)


def breakpoints(distances: np.ndarray, threshold_type: str, amount: float) -> np.ndarray:
    """Indices ``i`` such that a chunk ends after sentence ``i`` (``distances[i]`` is i to i+1).

    A break needs a score strictly above the threshold, as in LangChain, so a document
    whose distances are all equal gets no break under the relative thresholds.
    """
    if len(distances) == 0:
        return np.zeros(0, dtype=int)
    scores = distances
    if threshold_type in ("gradient", "gradient_absolute"):
        # np.gradient needs two points; one distance has no slope to speak of.
        scores = np.gradient(distances) if len(distances) > 1 else np.zeros_like(distances)
    if threshold_type in _PERCENTILE_TYPES:
        threshold = np.percentile(scores, amount)
    elif threshold_type == "standard_deviation":
        threshold = scores.mean() + amount * scores.std()
    elif threshold_type == "interquartile":
        q1, q3 = np.percentile(scores, [25, 75])
        threshold = scores.mean() + amount * (q3 - q1)
    else:  # distance, gradient_absolute
        threshold = amount
    return np.flatnonzero(scores > threshold)


def groups_from_breaks(n: int, breaks: Sequence[int]) -> list[tuple[int, int]]:
    """Inclusive sentence-index ranges ``(first, last)`` between the breaks."""
    ends = [*sorted(int(b) for b in breaks), n - 1]
    groups, first = [], 0
    for last in ends:
        if last >= first:
            groups.append((first, last))
            first = last + 1
    return groups


def merge_small(groups: list[tuple[int, int]], size_of, min_size: int) -> list[tuple[int, int]]:
    """Merge each group under ``min_size`` units into the next; a short last one joins the previous.

    Afterwards every group holds at least ``min_size`` units unless there is only one.
    """
    out: list[tuple[int, int]] = []
    first = None
    for a, b in groups:
        first = a if first is None else first
        if size_of(first, b) >= min_size:
            out.append((first, b))
            first = None
    if first is not None:  # the tail never reached min_size
        if out:
            out[-1] = (out[-1][0], groups[-1][1])
        else:
            out.append((first, groups[-1][1]))
    return out


class SemanticBreakpointChunker(SplitsSentences, EmbeddingChunker):
    """Ends a chunk wherever consecutive sentence windows are further apart than a threshold.

    Chunks are runs of whole consecutive sentences that together cover the text. With
    ``min_size``, a chunk under it merges into the next (the last into the previous);
    with ``max_size``, a chunk over it is re-packed into whole sentences of at most
    ``max_size`` units (a single longer sentence stays whole). ``max_size`` wins: its
    pieces may fall under ``min_size``.
    """

    def __init__(self, embedder: SentenceTransformerEmbedder, threshold_type: str = "percentile",
                 threshold_amount: float | None = None, buffer_size: int = 1,
                 min_size: int | None = None, max_size: int | None = None,
                 unit: str = "tokens", tokenizer: str = "bundled", window_embedding: str = "text",
                 sentence_splitter: str = DEFAULT_SENTENCE_SPLITTER):
        super().__init__(embedder)
        require(window_embedding in WINDOW_EMBEDDINGS,
                f"chunker.window_embedding must be one of {', '.join(WINDOW_EMBEDDINGS)} "
                f"(got window_embedding={window_embedding!r})")
        require(threshold_type in THRESHOLD_DEFAULTS,
                f"chunker.threshold_type must be one of {', '.join(THRESHOLD_DEFAULTS)} "
                f"(got threshold_type={threshold_type!r})")
        if threshold_amount is None:
            threshold_amount = THRESHOLD_DEFAULTS[threshold_type]
        elif threshold_type in _PERCENTILE_TYPES:
            require_number("threshold_amount", threshold_amount, 0, 100)
        else:
            require_number("threshold_amount", threshold_amount)
        require_int("buffer_size", buffer_size, 0)
        require_optional_size("min_size", min_size)
        require_optional_size("max_size", max_size)
        require(min_size is None or max_size is None or min_size <= max_size,
                f"chunker.min_size must be <= chunker.max_size (got min_size={min_size}, max_size={max_size})")
        self.threshold_type, self.threshold_amount = threshold_type, threshold_amount
        self.buffer_size, self.min_size, self.max_size = buffer_size, min_size, max_size
        self.window_embedding = window_embedding
        self.tokenizer = make_tokenizer(unit, tokenizer)
        self.use_sentence_splitter(sentence_splitter)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        sentences = self.document_sentences(doc)
        if not sentences:
            return []
        groups = groups_from_breaks(len(sentences), self.breaks(doc.text, sentences))
        return spans_to_chunks(doc, self._sized_spans(doc.text, sentences, groups))

    def breaks(self, text: str, sentences: Sequence[Span]) -> np.ndarray:
        """Sentence indices after which a chunk ends (before any size adjustment)."""
        if len(sentences) < 2:
            return np.zeros(0, dtype=int)
        distances = window_distances(self.embed, [text[s:e] for s, e in sentences], self.buffer_size,
                                     self.window_embedding)
        return breakpoints(distances, self.threshold_type, self.threshold_amount)

    def _sized_spans(self, text: str, sentences: Sequence[Span], groups: list[tuple[int, int]]) -> list[Span]:
        if self.min_size is None and self.max_size is None:
            return [(sentences[a][0], sentences[b][1]) for a, b in groups]
        units = UnitIndex(text, self.tokenizer)

        def size_of(a: int, b: int) -> int:
            return units.count(sentences[a][0], sentences[b][1])

        if self.min_size is not None:
            groups = merge_small(groups, size_of, self.min_size)
        spans: list[Span] = []
        for a, b in groups:
            if self.max_size is not None and size_of(a, b) > self.max_size:
                spans.extend(pack(sentences[a:b + 1], units, self.max_size))
            else:
                spans.append((sentences[a][0], sentences[b][1]))
        return spans
