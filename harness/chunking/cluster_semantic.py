"""Chroma's ClusterSemanticChunker (Smith & Troynikov, "Evaluating Chunking Strategies for
Retrieval", Chroma 2024, the report's ★ Cluster rows).

The method, as the authors' code runs it (``chunking_evaluation/chunking/cluster_semantic_chunker.py``):

- The document is cut into pieces of at most ``piece_size`` (50) cl100k tokens by the recursive
  splitter (:mod:`harness.chunking.chroma_pieces`), and each piece is embedded on its own.
- ``S`` = the pieces' pairwise similarities (dot products of the embeddings: cosine for the unit
  vectors every embedder here returns), minus the mean of its entries above the diagonal, with
  the diagonal set to 0. Centring is what makes the objective work: raw cosines are mostly
  positive, so their sum would always reward the biggest chunks.
- The reward of a chunk of pieces ``a..b`` is the sum of ``S[a..b, a..b]`` (each pair twice).
  Dynamic programming over the piece sequence: ``dp[i]`` is the best total reward of pieces
  ``0..i``, over the last chunk's length ``1..K`` pieces, ``K = max_size // piece_size`` (the
  code's ``max_cluster``: a cap in pieces, not tokens); ties go to the shorter last chunk. The
  code starts every ``dp[i]`` at 0 and takes a candidate only when it beats that, so while no
  chunk ending at ``i`` scores above 0 (only before the first positive-scoring chunk) piece ``i``
  keeps the start 0: the chunks back-tracked from there run from the document's first piece,
  whatever ``K`` allows. With ``K = 1`` every score is 0 and the whole document stays one chunk,
  so ``reading=code`` refuses ``max_size < 2 * piece_size``.
- A chunk is the span from its first piece's start to its last piece's end (the code joins
  the pieces' texts with spaces).

Where the report and the code differ (``reading``):

- ``code`` (default, what produced the report's numbers): the above exactly.
- ``paper``: the report's text, "globally optimal chunks by maximizing the sum of cosine
  similarities within chunks, up to a user-specified maximum length": a chunk's pieces hold at
  most ``max_size`` tokens together (each piece counted alone, as the authors count), and
  ``dp[i]`` is the true optimum (no floor at 0), so no chunk exceeds ``max_size``. The centred
  similarities are kept (see above).

The full similarity matrix is never built: its mean comes from ``|sum of vectors|^2`` and the
DP reads only blocks of at most ``K`` consecutive pieces, so memory is linear in the pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.chroma_pieces import PieceSplitter
from harness.chunking.embedding import EmbeddingChunker
from harness.chunking.units import require_int
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import Chunk, Document

READINGS = ("code", "paper")
# block(lo, hi): the centred similarities of pieces lo..hi-1 with a zero diagonal
Blocks = Callable[[int, int], np.ndarray]


def vector_blocks(vectors: np.ndarray) -> Blocks:
    """Centred similarity blocks of embedding rows; the mean of the pairwise dot products above
    the diagonal from ``(|sum|^2 - sum of |v|^2) / 2``, without the n x n matrix."""
    v = np.asarray(vectors, dtype=np.float64)
    n = len(v)
    if n < 2:
        mean = 0.0
    else:
        total = v.sum(axis=0)
        mean = (total @ total - np.einsum("ij,ij->", v, v)) / (n * (n - 1))

    def block(lo: int, hi: int) -> np.ndarray:
        b = v[lo:hi] @ v[lo:hi].T - mean
        np.fill_diagonal(b, 0.0)
        return b
    return block


def matrix_blocks(similarity: np.ndarray) -> Blocks:
    """Centred blocks of a full similarity matrix, exactly as the authors centre theirs."""
    m = np.asarray(similarity, dtype=np.float64)
    mean = m[np.triu_indices(len(m), k=1)].mean() if len(m) > 1 else 0.0

    def block(lo: int, hi: int) -> np.ndarray:
        b = m[lo:hi, lo:hi] - mean
        np.fill_diagonal(b, 0.0)
        return b
    return block


def piece_reach(n: int, max_pieces: int) -> list[int]:
    """The code's cap: a chunk ending at piece ``i`` holds at most ``max_pieces`` pieces."""
    return [min(i + 1, max_pieces) for i in range(n)]


def token_reach(tokens: Sequence[int], max_size: int) -> list[int]:
    """The paper's cap: a chunk ending at piece ``i`` holds as many pieces as fit in ``max_size``
    tokens (at least one)."""
    reach, first, total = [], 0, 0
    for i, t in enumerate(tokens):
        total += t
        while total > max_size and first < i:
            total -= tokens[first]
            first += 1
        reach.append(i - first + 1)
    return reach


def optimal_segmentation(n: int, block: Blocks, reach: Sequence[int], floor: bool = True) -> list[tuple[int, int]]:
    """Consecutive ``(first, last)`` piece groups maximising the summed block rewards, the last
    chunk ending at ``i`` holding ``1..reach[i]`` pieces. ``floor``: the authors' recurrence
    (each ``dp[i]`` starts at 0; a piece no candidate lifts above it keeps the start 0)."""
    dp = np.zeros(n + 1)  # dp[i + 1]: best total of pieces 0..i; dp[0] = 0, nothing before
    start = np.zeros(n, dtype=int)
    for i in range(n):
        k = reach[i]
        lo = i - k + 1
        b = block(lo, i + 1)
        # rewards[s]: the block of the last s + 1 pieces (suffix sums of the reversed block)
        rewards = b[::-1, ::-1].cumsum(axis=0).cumsum(axis=1).diagonal()
        values = rewards + dp[lo:i + 1][::-1]
        s = int(np.argmax(values))  # the first maximum: the shortest of equal candidates
        if not floor or values[s] > 0.0:
            dp[i + 1], start[i] = values[s], i - s
    groups = []
    i = n - 1
    while i >= 0:
        groups.append((int(start[i]), i))
        i = int(start[i]) - 1
    return groups[::-1]


class ClusterSemanticChunker(EmbeddingChunker):
    """Pieces of ``piece_size`` tokens grouped into the chunks of highest within-chunk similarity,
    each chunk up to ``max_size`` (``reading``: module docstring)."""

    def __init__(self, embedder: SentenceTransformerEmbedder, max_size: int = 400, piece_size: int = 50,
                 tokenizer: str = "cl100k", reading: str = "code"):
        super().__init__(embedder)
        require(reading in READINGS, f"chunker.reading must be one of {', '.join(READINGS)} (got reading={reading!r})")
        require_int("max_size", max_size, 1)
        self.pieces = PieceSplitter(piece_size, tokenizer)
        require(max_size >= piece_size, "chunker.max_size must be >= chunker.piece_size, or no chunk holds a "
                                         f"piece (got max_size={max_size}, piece_size={piece_size})")
        require(reading != "code" or max_size >= 2 * piece_size,
                "chunker.max_size must be >= 2 * chunker.piece_size for reading=code: with one piece a chunk every "
                "score is 0 and the code's recurrence keeps the whole document one chunk "
                f"(got max_size={max_size}, piece_size={piece_size})")
        self.max_size, self.piece_size, self.reading = max_size, piece_size, reading

    def chunk_document(self, doc: Document) -> list[Chunk]:
        pieces = self.pieces.split(doc)
        if not len(pieces):
            return []
        n = len(pieces)
        if self.reading == "code":
            reach = piece_reach(n, self.max_size // self.piece_size)
        else:
            reach = token_reach(pieces.tokens, self.max_size)
        groups = optimal_segmentation(n, vector_blocks(self.embed(pieces.texts)), reach, floor=self.reading == "code")
        return spans_to_chunks(doc, [pieces.hull(a, b) for a, b in groups])
