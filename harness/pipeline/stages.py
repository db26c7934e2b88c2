"""The stages of a run, declared as data; :mod:`harness.pipeline.runner` runs them in order.

A stage is a name, a version, the config groups it reads, the upstream stages whose outputs
it consumes, and the function that computes its output from the components and those
outputs. The runner derives everything else from the declaration: the cache key (stage,
version, the config slices, the upstream keys), cache look-up and store, timing, the log
line and the run record's stage tags. Bump a stage's version when its output changes
meaning: that stage and every stage after it recompute.

A per-document stage (chunking) computes a batch of documents at a time and is cached per
document, so a killed run resumes at the next document. An optional stage is skipped when
its component is None (its group set to ``none``); its output is then None.

Adding a stage: its package, its config group (one field of ``Components``), and one
declaration here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


from harness.cache import make_key
from harness.chunking.contract import (BROKE_CONTRACT, ChunkContractError, check_document, check_output,
                                       check_unique_ids)
from harness.code_digest import code_digest
from harness.data.base import only_queried_documents
from harness.metrics.base import DocumentMetric, QueryEval, QueryMetric
from harness.pipeline.components import Components
from harness.pipeline.time_limit import Expired, time_limit
from harness.progress import tqdm
from harness.types import (Answer, Chunk, ChunkerFailed, ConfigError, Context, DataError, DocChunks, Document,
                           Retrieved, ServiceError)

Outputs = Mapping[str, Any]  # stage name -> its output (None for a skipped optional stage)


@dataclass(frozen=True)
class Stage:
    name: str
    version: int
    reads: tuple[str, ...]      # config groups whose resolved slices enter the key
    after: tuple[str, ...]      # upstream stages whose outputs it reads (their keys enter its key)
    compute: Callable[..., Any]  # (components, outputs) -> output; per document: (components, docs) -> [output]
    per_document: bool = False
    optional: bool = False      # skipped (output None) when the component of its group is None
    fingerprint: Callable[[Components], str] | None = None  # what the config cannot name (data files, code)
    check_cached: Callable[[Components, Document, Any], None] | None = None  # per document: a stored entry's check


@dataclass(frozen=True)
class Retrieval:
    results: list[Retrieved]
    index_seconds: float


@dataclass(frozen=True)
class Evaluation:
    per_query: list[dict[str, float]]
    per_document: list[dict[str, Any]]   # scores, and per-chunk series (DocumentMetric.series_keys)


def queried_documents_only(c: Components) -> bool:
    """A question limit under retriever.scope=document: only the kept questions' documents are
    searched, so only they are loaded (scope=corpus searches them all, and keeps them)."""
    return c.dataset.limit_queries is not None and c.retriever.scope == "document"


def load(c: Components, o: Outputs):
    ds = c.dataset.load()
    return only_queried_documents(ds) if queried_documents_only(c) else ds


def load_fingerprint(c: Components) -> str:
    # other runs keep their keys: only a run that drops unqueried documents gets a new one
    fingerprint = c.dataset.fingerprint()
    return make_key(fingerprint, "queried documents only") if queried_documents_only(c) else fingerprint


# What a chunking costs besides its time: the texts it embeds and the LLM calls it makes, cached
# or not (hits + misses of the cache namespaces they go through), kept with the chunks so that a
# cached rerun reports the cost of computing them.
# The calls the cache answered are counted too (and, for the LLM, separately).
COSTS = {"cost_embed_texts": ("embeddings", ("hits", "misses")), "cost_llm_calls": ("llm", ("hits", "misses")),
         "cost_llm_calls_from_cache": ("llm", ("hits",))}


def chunk(c: Components, docs: list[Document]) -> list[DocChunks]:
    """Each document's chunks and cost; its seconds are what computing it costs from scratch:
    the wall time plus the recorded compute time of the LLM calls the cache answered (a row
    that reuses another row's calls, e.g. HiChunk at another maximum level); embeddings the
    cache answered count as free. The chunks are held to the contract before anything is stored
    (:mod:`harness.chunking.contract`), each document within ``chunker_timeout_s``."""
    before, reused = c.cache.counts(), c.cache.reused_seconds
    limit = c.chunker_timeout_s
    t0 = time.perf_counter()
    try:
        with time_limit(limit and limit * len(docs), f"chunker_timeout_s={limit}"):  # a batch: the sum of its limits
            chunked = c.chunker.chunk(docs)
    except (ConfigError, DataError, ServiceError):  # ServiceError: the model's server failed, not the chunker
        raise
    except Expired:
        which = f"document {docs[0].doc_id!r}" if len(docs) == 1 else \
            f"a batch of {len(docs)} documents ({', '.join(repr(d.doc_id) for d in docs)})"
        raise contract_error(c, f"{which}: not chunked within chunker_timeout_s={limit:g} s"
                                + (" per document" if len(docs) > 1 else "")) from None
    except Exception as e:  # a chunker's own bug: name the document, keep the cause
        which = docs[0].doc_id if len(docs) == 1 else f"one of {', '.join(d.doc_id for d in docs)}"
        raise ChunkerFailed(f"{type(c.chunker).__name__} failed on document {which}: {type(e).__name__}: {e}") from e
    seconds = (time.perf_counter() - t0 + c.cache.reused_seconds - reused) / len(docs)
    try:
        chunked = check_output(docs, chunked)
    except ValueError as e:
        raise contract_error(c, str(e)) from None
    used = c.cache.counts(before)
    totals = {name: sum(used.get(ns, {}).get(kind, 0) for kind in kinds) for name, (ns, kinds) in COSTS.items()}
    # a batch's calls are shared out over its documents (the remainder to the first ones)
    shares = [{name: total // len(docs) + (i < total % len(docs)) for name, total in totals.items()}
              for i in range(len(docs))]
    return [DocChunks(chunks, seconds, {**c.chunker.take_counts(d.doc_id), **share})
            for d, chunks, share in zip(docs, chunked, shares)]


def contract_error(c: Components, problem: str) -> ChunkContractError:
    return ChunkContractError(f"{type(c.chunker).__name__} {BROKE_CONTRACT}: {problem}")


def check_cached_chunks(c: Components, doc: Document, entry: DocChunks) -> None:
    """A stored chunking held to the contract as :func:`chunk` holds a computed one. Checked on
    every read rather than by a new stage version: a version bump would recompute every stored
    chunking once (and every stage after it) yet still trust what a process running other code
    stores under the same version in a shared cache; the check costs a small fraction of chunking
    (docs/performance.md)."""
    try:
        check_document(doc, entry.chunks)
    except ValueError as e:
        raise contract_error(c, str(e)) from None


def check_run_chunks(c: Components, o: Outputs) -> None:
    """Chunk ids unique across the run's documents, which a per-document check cannot see."""
    try:
        check_unique_ids({d: entry.chunks for d, entry in o["chunk"].items()})
    except ValueError as e:
        raise contract_error(c, str(e)) from None


def chunker_code(c: Components) -> str:
    """The chunker's code (:mod:`harness.code_digest`): an edited chunker recomputes its chunks."""
    return code_digest(c.chunker)


def all_chunks(o: Outputs) -> list[Chunk]:
    """Every chunk of the run in document order, structure nodes included."""
    return [ch for d in o["load"].documents for ch in o["chunk"][d.doc_id].chunks]


def retrieve(c: Components, o: Outputs) -> Retrieval:
    # Structure nodes (indexed=False) are not searched; assemblers can still return them.
    results, seconds = c.retriever.retrieve(o["load"].queries, [ch for ch in all_chunks(o) if ch.indexed])
    return Retrieval(results, seconds)


def assemble(c: Components, o: Outputs) -> list[Context]:
    by_id = {ch.chunk_id: ch for ch in all_chunks(o)}
    return [c.context.assemble(rt, by_id) for rt in tqdm(o["retrieve"].results, desc="assemble", unit="query")]


def respond(c: Components, o: Outputs) -> list[Answer]:
    return c.responder.respond(o["load"].queries, o["assemble"], c.dataset.name)


def evaluate(c: Components, o: Outputs) -> Evaluation:
    ds, chunked = o["load"], o["chunk"]
    chunks_by_doc = {d: entry.chunks for d, entry in chunked.items()}
    by_id = {ch.chunk_id: ch for ch in all_chunks(o)}
    docs_by_id = {d.doc_id: d for d in ds.documents}
    answers = o["respond"] or [None] * len(ds.queries)
    holds = getattr(c.context, "holds", None)  # a chunk the context cannot hold is no ranking hit
    items = [QueryEval(q, rt, ctx, ans, chunks_by_doc, by_id, docs_by_id, holds)
             for q, rt, ctx, ans in zip(ds.queries, o["retrieve"].results, o["assemble"], answers)]
    per_query: list[dict[str, float]] = [{} for _ in items]
    doc_metrics = [m for m in c.metrics.values() if isinstance(m, DocumentMetric)]
    per_doc: list[dict[str, Any]] = [{} for _ in ds.documents] if doc_metrics else []
    for m in c.metrics.values():
        if isinstance(m, QueryMetric):
            for row, scored in zip(per_query, m.score_all(items)):
                row.update(scored)
    for m in doc_metrics:
        for row, scored in zip(per_doc, m.score_all(ds.documents, chunks_by_doc)):
            row.update(scored)
    return Evaluation(per_query, per_doc)


STAGES: tuple[Stage, ...] = (
    Stage("load", 2, ("dataset",), (), load, fingerprint=load_fingerprint),
    Stage("chunk", 2, ("chunker",), ("load",), chunk, per_document=True, fingerprint=chunker_code,
          check_cached=check_cached_chunks),
    Stage("retrieve", 3, ("retriever",), ("load", "chunk"), retrieve),
    Stage("assemble", 2, ("context",), ("retrieve",), assemble),
    Stage("respond", 2, ("responder",), ("load", "assemble"), respond, optional=True),
    Stage("evaluate", 4, ("metrics",), ("load", "chunk", "retrieve", "assemble", "respond"), evaluate),  # 4: credited()
)
