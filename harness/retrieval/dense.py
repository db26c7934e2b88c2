"""Dense retrieval: cosine similarity of normalised embeddings in a faiss flat index.

faiss-cpu by default; when the `gpu` extra (faiss-gpu) is installed and a GPU is
visible, the index moves to the GPUs. Flat inner-product search is exact, so CPU and
GPU rank the same chunks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from harness.retrieval.base import Retriever
from harness.retrieval.embedders import SentenceTransformerEmbedder
from harness.types import Chunk, ConfigError, Query

# faiss logs at INFO which instruction set it loaded (and a failed AVX2 probe); not a user's concern.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)


class DenseRetriever(Retriever):
    def __init__(self, embedder: SentenceTransformerEmbedder, scope: str = "document", top_k: int = 100,
                 use_gpu: bool = True):
        super().__init__(scope, top_k)
        if not isinstance(embedder, SentenceTransformerEmbedder):
            raise ConfigError(f"retriever.embedder must build an embedder (embedder: ${{embedder}}); got {embedder!r}")
        self.embedder, self.use_gpu = embedder, use_gpu

    def build(self, chunks: Sequence[Chunk]):
        import faiss

        prefix = self.embedder.document_prefix
        vecs = self.embedder.encode([prefix + c.text for c in chunks], "embed chunks")
        index = faiss.IndexFlatIP(vecs.shape[1])
        if self.use_gpu and hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
            index = faiss.index_cpu_to_all_gpus(index)
        index.add(vecs)
        return index

    def search(self, index, queries: Sequence[Query], k: int):
        prefix = self.embedder.query_prefix
        qv = self.embedder.encode([prefix + q.question for q in queries], "embed queries")
        # faiss orders equal scores arbitrarily: widen the search until no row's k-th score
        # is tied with its last, so the caller can break ties by document position.
        n = index.ntotal
        fetch = min(n, k + 1)
        while True:
            scores, positions = index.search(qv, fetch)
            if fetch == n or not np.any(scores[:, k - 1] == scores[:, -1]):
                return positions, scores
            fetch = min(n, 2 * fetch)
