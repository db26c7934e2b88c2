"""The ``openai`` embedder: vectors from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI's
API, ``vllm serve <embedding model>``, Hugging Face TEI...), with the per-(model, text) embedding
cache in front of it.

Why it exists: MC-indexing (Dong et al., App. C.2) embeds RAPTOR's tree for its TF-IDF, BM25 and
ColBERT rows with OpenAI's ``text-embedding-ada-002``, the encoder of the RAPTOR code
(github.com/parthsarthi03/raptor); no local checkpoint of it exists.

How it starts: ``embedder=openai embedder.model=text-embedding-ada-002
embedder.base_url=https://api.openai.com/v1``, or as a role of its own
(``embedder@roles.chunker.embedder=openai roles.chunker.embedder.model=...``). The key is
``embedder.api_key`` or the ``OPENAI_API_KEY`` environment variable; it is no part of a cache
key, never logged, and masked in the errors a server's answer is quoted in.

It is a :class:`~harness.embedding.embedder.SentenceTransformerEmbedder` to every component that
takes an embedder (RAPTOR's tree, dense retrieval, embedding chunkers): the same public surface
(``encode(texts, desc, normalize)``, ``query_prefix``/``document_prefix``, ``identity``) and the
same cache path (:func:`~harness.embedding.embedder.encode_cached`), which asks the server only
for the texts it holds no vector of. Those go out ``batch_size`` texts a request, at most
``max_concurrency`` requests in flight; 429, 5xx, connection errors and timeouts are retried with
exponential backoff (``max_retries``), each try under ``timeout`` seconds and all of a request's
tries under ``deadline`` (:mod:`harness.llm.server`, shared with ``llm=openai``).

What identifies a vector: the served model's name (and ``dimensions`` when set), with
``api=openai`` so that a sentence-transformers model of the same name keeps its own vectors;
the server's address is no part of it (as for ``llm=openai``). Vectors are L2-normalised unless
``normalize`` is False (OpenAI's are unit length already). The API refuses an empty input: an
empty text is sent as one space.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from harness.cache import Cache
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.llm.server import BadAnswer, Server, map_on_server, one_line
from harness.types import ConfigError, ServiceError


class EmbeddingError(ServiceError):
    """The embeddings server did not answer, or answered with an error: one line."""


class OpenAIEmbedder(SentenceTransformerEmbedder):
    """Embeddings from an OpenAI-compatible server. Nothing is loaded or asked until a text has
    no cached vector, so a fully cached run needs no server and no key."""

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", api_key: str | None = None,
                 served_model: str | None = None, dimensions: int | None = None, batch_size: int = 64,
                 max_concurrency: int = 4, max_retries: int = 5, timeout: float = 60.0, deadline: float = 300.0,
                 query_prefix: str = "", document_prefix: str = "", cache: Cache | None = None):
        # SentenceTransformerEmbedder.__init__ resolves a local model: nothing of it applies here.
        if not model or str(model) in ("???", "bundled"):
            raise ConfigError(f"embedder.model: the served embedding model's name (e.g. text-embedding-ada-002); "
                              f"got {model!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ConfigError(f"embedder.batch_size must be an integer > 0, got {batch_size!r}")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)
                                       or dimensions <= 0):
            raise ConfigError(f"embedder.dimensions must be an integer > 0 or null, got {dimensions!r}")
        self.model, self.path = str(model), str(model)
        self.served_model = served_model or self.model
        self.base_url, self.dimensions = base_url, dimensions
        self.batch_size, self.max_concurrency = batch_size, max_concurrency
        self.max_retries, self.timeout, self.deadline = max_retries, timeout, deadline
        self.device = self.max_seq_length = self.pooling = None   # the server's business
        self.trust_remote_code = False
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.cache = cache
        # Local servers take any key. Not in `identity`, nor in the object's repr.
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.prompt_tokens = 0   # as the server counts them (usage), for cost
        _ = self.server  # a bad setting is refused now, not at the first request

    @property
    def server(self) -> Server:
        return Server("embedder=openai", "embedder", self.base_url, self.served_model, self._api_key,
                      self.max_retries, self.timeout, self.deadline, self.max_concurrency, error=EmbeddingError)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def identity(self) -> str:
        dims = f"|dimensions={self.dimensions}" if self.dimensions else ""
        return f"{self.model}|api=openai{dims}"

    @cached_property
    def client(self):
        from openai import OpenAI

        # retries and timeouts are map_on_server's (with a deadline); the client tries once
        return OpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0, timeout=self.timeout)

    def input_lengths(self, texts: Sequence[str]) -> None:
        """Not known here: the server tokenizes (and refuses an over-long input itself)."""
        return None

    def _encode(self, texts: Sequence[str], normalize: bool = True) -> np.ndarray:
        """The server's vectors for ``texts``, in order (no cache: :meth:`encode` puts it in front)."""
        batches = [list(texts[b:b + self.batch_size]) for b in range(0, len(texts), self.batch_size)]
        parts = map_on_server(self.server, self._request, batches)
        vecs = np.vstack(parts).astype(np.float32) if parts else np.zeros((0, 0), dtype=np.float32)
        if normalize and len(vecs):
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = vecs / np.where(norms > 0, norms, 1.0)
        return vecs

    def _request(self, batch: list[str], timeout: float) -> np.ndarray:
        extra = {"dimensions": self.dimensions} if self.dimensions else {}
        resp = self.client.embeddings.create(model=self.served_model, input=[t or " " for t in batch],
                                             encoding_format="float", timeout=timeout, **extra)
        if not isinstance(getattr(resp, "data", None), list):
            raise BadAnswer(f"a body that is no embeddings answer: {one_line(resp)}")
        if resp.usage is not None:
            self.prompt_tokens += resp.usage.prompt_tokens or 0
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise EmbeddingError(f"embedder=openai: {self.base_url} returned {len(data)} vectors for "
                                 f"{len(batch)} texts (model {self.served_model!r})")
        return np.asarray([d.embedding for d in data], dtype=np.float32)
