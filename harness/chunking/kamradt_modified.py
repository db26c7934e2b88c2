"""Chroma's KamradtModifiedChunker (Smith & Troynikov, "Evaluating Chunking Strategies for
Retrieval", Chroma 2024, the report's ★ KamradtMod row): Kamradt's semantic chunking
(:mod:`harness.chunking.semantic_breakpoint`) with the threshold found by binary search.

As the authors' code runs it (``chunking_evaluation/chunking/kamradt_modified_chunker.py``):

- The document is cut into pieces of at most ``piece_size`` (the code's ``min_chunk_size``, 50)
  cl100k tokens by the recursive splitter (:mod:`harness.chunking.chroma_pieces`), not sentences.
- Each piece is embedded with ``buffer_size`` (3: ``split_text`` passes 3, not the method's
  default 1) pieces either side, joined with spaces; distance = 1 - cosine between consecutive
  windows (:func:`~harness.chunking.semantic_breakpoint.window_distances`).
- A chunk ends after piece ``i`` when its distance is strictly above the threshold. The
  threshold is searched in ``[0, 1]``: while ``hi - lo > 1e-6``, ``t = (lo + hi) / 2``; more
  breaks than wanted -> ``lo = t``, else ``hi = t``; the last ``t`` is the threshold (20 halvings,
  so it may end just under the boundary distance and break there too: one cut more).

Where the report and the code differ (``reading``):

- ``code`` (default, what produced the report's numbers): the number of breaks wanted is
  ``total tokens // size`` (the pieces' tokens, each counted alone), so ``size`` is the code's
  ``avg_chunk_size``, a target mean; single chunks may be far longer.
- ``paper``: the report's text, "a binary search over discontinuity thresholds such that the
  largest chunk is shorter than the specified length": the largest threshold at which no chunk
  holds more than ``size`` tokens (its pieces' counts summed), searched the same way from a lower
  bound under every distance (where every piece is a chunk) to ``max(1, largest distance)``.

The report's KamradtMod row uses size 300 and lists a mean of ~397 tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.chroma_pieces import PieceSplitter
from harness.chunking.embedding import EmbeddingChunker
from harness.chunking.semantic_breakpoint import WINDOW_EMBEDDINGS, groups_from_breaks, window_distances
from harness.chunking.units import require_int
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import Chunk, Document

READINGS = ("code", "paper")
TOLERANCE = 1e-6  # the code's stopping rule: hi - lo <= 1e-6


def threshold_for_cuts(distances: np.ndarray, cuts: int) -> float:
    """The code's search: the last midpoint of a bisection of [0, 1] on "more than ``cuts``
    distances above it"."""
    lo, hi, t = 0.0, 1.0, 0.5
    while hi - lo > TOLERANCE:
        t = (lo + hi) / 2.0
        if np.count_nonzero(distances > t) > cuts:
            lo = t
        else:
            hi = t
    return t


def largest_chunk(distances: np.ndarray, tokens: Sequence[int], threshold: float) -> int:
    """Tokens of the largest chunk that breaking above ``threshold`` leaves."""
    ends = np.flatnonzero(distances > threshold) + 1
    sums = np.add.reduceat(np.asarray(tokens, dtype=np.int64), np.concatenate(([0], ends)))
    return int(sums.max())


def threshold_for_largest(distances: np.ndarray, tokens: Sequence[int], size: int) -> float:
    """The paper's search: the largest threshold (to ``TOLERANCE``) whose chunks all hold at most
    ``size`` tokens; below every distance each piece is a chunk of its own, at or above the
    largest one (or 1) the document is one chunk."""
    hi = max(1.0, float(distances.max(initial=0.0)))
    if largest_chunk(distances, tokens, hi) <= size:
        return hi  # no break needed
    lo = min(0.0, float(distances.min()) - TOLERANCE)
    while hi - lo > TOLERANCE:
        t = (lo + hi) / 2.0
        if largest_chunk(distances, tokens, t) > size:
            hi = t
        else:
            lo = t
    return lo


class KamradtModifiedChunker(EmbeddingChunker):
    """Kamradt's breakpoints between ``piece_size``-token pieces, at the threshold that fits
    ``size`` (``reading``: module docstring)."""

    def __init__(self, embedder: SentenceTransformerEmbedder, size: int = 400, piece_size: int = 50,
                 buffer_size: int = 3, tokenizer: str = "cl100k", reading: str = "code",
                 window_embedding: str = "text"):
        super().__init__(embedder)
        require(reading in READINGS, f"chunker.reading must be one of {', '.join(READINGS)} (got reading={reading!r})")
        require(window_embedding in WINDOW_EMBEDDINGS,
                f"chunker.window_embedding must be one of {', '.join(WINDOW_EMBEDDINGS)} "
                f"(got window_embedding={window_embedding!r})")
        require_int("size", size, 1)
        require_int("buffer_size", buffer_size, 0)
        self.pieces = PieceSplitter(piece_size, tokenizer)
        require(size >= piece_size,
                f"chunker.size must be >= chunker.piece_size (got size={size}, piece_size={piece_size})")
        self.size, self.buffer_size, self.reading = size, buffer_size, reading
        self.window_embedding = window_embedding

    def chunk_document(self, doc: Document) -> list[Chunk]:
        pieces = self.pieces.split(doc)
        if not len(pieces):
            return []
        distances = window_distances(self.embed, pieces.texts, self.buffer_size, self.window_embedding)
        threshold = self.threshold(distances, pieces.tokens)
        groups = groups_from_breaks(len(pieces), np.flatnonzero(distances > threshold))
        return spans_to_chunks(doc, [pieces.hull(a, b) for a, b in groups])

    def threshold(self, distances: np.ndarray, tokens: Sequence[int]) -> float:
        """The distance a break must exceed in a document with these pieces."""
        if self.reading == "code":
            return threshold_for_cuts(distances, sum(tokens) // self.size)
        return threshold_for_largest(distances, tokens, self.size)
