"""What chunkers that read embeddings share: the embedder and the embedding cache.

An embedding chunker's config carries ``embedder: ${embedder}`` by default, so it
embeds with the run's embedder unless told otherwise (``chunker.embedder.model=...``),
and the embedder's settings are part of the chunk cache key through the resolved
config. The model itself is loaded once per process however many components use it, and
the embedder's cache shares sentence vectors with retrieval and across runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.chunking.base import Chunker, require
from harness.embedding.embedder import SentenceTransformerEmbedder


class EmbeddingChunker(Chunker):
    def __init__(self, embedder: SentenceTransformerEmbedder):
        require(isinstance(embedder, SentenceTransformerEmbedder),
                f"chunker.embedder must build an embedder (e.g. embedder: ${{embedder}}); got {embedder!r}")
        self.embedder = embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors, one row per text (shape (0, 0) for no texts)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prefix = self.embedder.document_prefix
        return self.embedder.encode([prefix + t for t in texts], "embed sentences")
