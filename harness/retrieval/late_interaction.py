"""ColBERT late interaction: a query token's best match among a passage's tokens, summed
over the query's tokens (MaxSim; Khattab and Zaharia, 2020).

The encoder is sentence-transformers' :class:`MultiVectorEncoder` (sentence-transformers
6 took over PyLate's ColBERT support; PyLate 1.6 itself pins sentence-transformers 5.3 and
fails to load models under 6.2). It reads Stanford-NLP checkpoints such as
``colbert-ir/colbertv2.0`` with their own settings: the [unused0]/[unused1] query and
document markers, the 128-d projection, queries padded with [MASK] to 32 tokens, and
punctuation left out of the document tokens. ``model=bundled`` stands in with MiniLM's
normalised last-layer token states (no projection, no query expansion: MiniLM was not
trained with either), so the code path runs offline.

The index of a collection is its passages' token matrices, cached per (model, settings,
side, text) in the run's cache, so a passage is encoded once across chunkers and runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from harness.cache import Cache, make_key
from harness.retrieval.base import Retriever, top_k
from harness.embedding.embedder import cached_batches
from harness.revision import check_local, check_revision
from harness.text import resolve_model
from harness.types import Chunk, ConfigError, Query


@lru_cache(maxsize=2)
def _load_encoder(model: str, device: str | None, document_length: int | None, revision: str | None = None):
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask

    if model == "bundled":
        backbone = Transformer(resolve_model(model), document_length=document_length)
        return MultiVectorEncoder(modules=[backbone, MultiVectorMask(),
                                           Normalize(module_input_name="token_embeddings")], device=device)
    encoder = MultiVectorEncoder(model, device=device, **({"revision": revision} if revision else {}))
    if document_length is not None:  # else the checkpoint's own (doc_maxlen 180 for colbertv2.0)
        encoder[0].document_length = document_length
    return encoder


class LateInteractionRetriever(Retriever):
    def __init__(self, model: str = "colbert-ir/colbertv2.0", document_length: int | None = None,
                 batch_size: int = 32, device: str | None = None, cache: Cache | None = None,
                 scope: str = "document", top_k: int = 100, revision: str | None = None):
        super().__init__(scope, top_k)
        self.revision = check_revision(revision, "retriever.revision")
        check_local(model, self.revision, "retriever.revision")
        if batch_size <= 0:
            raise ConfigError(f"retriever.batch_size must be > 0, got {batch_size}")
        if document_length is not None and document_length <= 0:
            raise ConfigError(f"retriever.document_length must be > 0 or null, got {document_length}")
        self.model, self.document_length = model, document_length
        self.batch_size, self.device, self.cache = batch_size, device, cache

    @property
    def identity(self) -> str:
        return f"{self.model}{'@' + self.revision if self.revision else ''}|doc_len={self.document_length}"

    def encode(self, texts: Sequence[str], side: str) -> list[np.ndarray]:
        """One (tokens, dim) matrix per text; ``side`` is ``query`` or ``document``."""
        keys = [make_key("token_embeddings", self.identity, side, t) for t in texts]

        def compute(batch: list[str]) -> list[np.ndarray]:
            encoder = _load_encoder(self.model, self.device, self.document_length, self.revision)
            run = encoder.encode_query if side == "query" else encoder.encode_document
            return [m.float().cpu().numpy() for m in run(batch, batch_size=self.batch_size, show_progress_bar=False)]

        cache = self.cache
        return cached_batches(texts, keys,
                              lambda ks: cache.get_objects("token_embeddings", ks) if cache else [None] * len(ks),
                              lambda vs: cache.put_objects("token_embeddings", vs) if cache else None,
                              compute, self.batch_size * 4, f"embed {side} tokens")

    def build(self, chunks: Sequence[Chunk]):
        return self.encode([c.text for c in chunks], "document")

    def search(self, index, queries: Sequence[Query], k: int):
        import torch
        from sentence_transformers.util import maxsim

        qs = self.encode([q.question for q in queries], "query")
        scores = maxsim([torch.from_numpy(m) for m in qs], [torch.from_numpy(m) for m in index])
        return top_k(scores.float().cpu().numpy(), k)
