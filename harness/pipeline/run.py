"""The staged pipeline: load -> chunk -> embed/index + retrieve -> assemble -> evaluate.

Each stage's output is cached under a key made of (stage, version, the config slice it
reads, the keys of its inputs); bump a stage's VERSION when its output changes meaning,
and that stage and everything after it recompute. Chunking is also cached per document
and embeddings per (model, text), so a killed run resumes where it stopped and two
chunkers that emit the same text embed it once.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from harness.data.base import Dataset
from harness.metrics.base import QueryEval, is_document_metric
from harness.metrics.significance import bootstrap_ci
from harness.pipeline.cache import Cache, make_key, text_digest
from harness.pipeline.components import Components, build_components, language_models
from harness.types import Answer, Chunk, Context, Document, Retrieved, to_dict

VERSIONS = {"load": 1, "chunk": 1, "retrieve": 1, "assemble": 1, "respond": 1, "evaluate": 2}


@dataclass
class RunResult:
    metrics: dict[str, float]
    per_query: list[dict[str, Any]]
    dataset_report: dict[str, float]
    stages: dict[str, str] = field(default_factory=dict)  # stage -> "cached" | "computed"
    stage_seconds: dict[str, float] = field(default_factory=dict)
    cache_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    run_level: list[str] = field(default_factory=list)  # metrics that are not means (corpus BLEU, micro F1)


def config_slice(cfg: DictConfig, group: str) -> Any:
    return OmegaConf.to_container(cfg[group], resolve=True)


class Pipeline:
    def __init__(self, cfg: DictConfig, components: Components | None = None, log: Callable = print):
        self.cfg = cfg
        self.c = components or build_components(cfg)
        self.cache = Cache(cfg.cache.dir)
        self.log = log
        self.result = RunResult({}, [], {})
        if self.c.dense:
            self.c.retriever.embedder = self.c.embedder
        self.c.retriever.cache = self.cache
        if hasattr(self.c.chunker, "cache"):  # embedding chunkers share the embedding cache
            self.c.chunker.cache = self.cache
        for llm in language_models(self.c):  # one LLM-call cache for every model call of the run
            llm.cache = self.cache

    def stage(self, name: str, key: str, compute: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        value = self.cache.get(name, key)
        status = "cached"
        if value is None:
            status = "computed"
            value = compute()
            self.cache.put(name, key, value)
        self.result.stages[name] = status
        self.result.stage_seconds[name] = time.perf_counter() - t0
        self.log(f"[{name}] {status} in {self.result.stage_seconds[name]:.1f}s (key {key[:12]})")
        return value

    # --- stages -------------------------------------------------------------------

    def chunk_all(self, docs: list[Document]) -> dict[str, Any]:
        """Chunks and chunking seconds per document. Cached per document only (no
        whole-stage entry): a killed run resumes at the next unchunked document."""
        t_start = time.perf_counter()
        chunker_cfg = config_slice(self.cfg, "chunker")
        out: dict[str, Any] = {}
        keys = {d.doc_id: make_key("chunk_doc", VERSIONS["chunk"], chunker_cfg, doc_digest(d)) for d in docs}
        pending = []
        for d in docs:
            hit = self.cache.get("chunk_doc", keys[d.doc_id])
            if hit is None:
                pending.append(d)
            else:
                out[d.doc_id] = hit
        batch = max(1, int(getattr(self.c.chunker, "batch_size", 1)))
        with tqdm(total=len(pending), desc="chunk", unit="doc", disable=not pending) as bar:
            for i in range(0, len(pending), batch):
                group = pending[i:i + batch]
                t0 = time.perf_counter()
                chunked = self.c.chunker.chunk(group)
                per_doc = (time.perf_counter() - t0) / len(group)
                # LLM chunkers count per document what they had to repair (unparsable output).
                doc_counts = getattr(self.c.chunker, "doc_counts", {})
                for d, chunks in zip(group, chunked):
                    entry = {"chunks": chunks, "seconds": per_doc, "counts": dict(doc_counts.pop(d.doc_id, {}))}
                    self.cache.put("chunk_doc", keys[d.doc_id], entry)
                    out[d.doc_id] = entry
                bar.update(len(group))
        self.result.stages["chunk"] = "computed" if pending else "cached"
        self.result.stage_seconds["chunk"] = time.perf_counter() - t_start
        self.log(f"[chunk] {self.result.stages['chunk']} in {self.result.stage_seconds['chunk']:.1f}s "
                 f"({len(docs) - len(pending)}/{len(docs)} documents from cache)")
        return {d.doc_id: out[d.doc_id] for d in docs}

    def run(self) -> RunResult:
        cfg, c, r = self.cfg, self.c, self.result
        load_key = make_key("load", VERSIONS["load"], config_slice(cfg, "dataset"), c.dataset.fingerprint())
        ds: Dataset = self.stage("load", load_key, lambda: c.dataset.load().validate())
        r.dataset_report = dict(ds.report)

        chunk_key = make_key("chunk", VERSIONS["chunk"], config_slice(cfg, "chunker"), load_key)
        chunked = self.chunk_all(ds.documents)
        chunks_by_doc = {d: e["chunks"] for d, e in chunked.items()}
        all_chunks = [ch for d in ds.documents for ch in chunks_by_doc[d.doc_id]]
        by_id = {ch.chunk_id: ch for ch in all_chunks}
        # Structure nodes (indexed=False) are not searched; assemblers can still return them.
        searchable = [ch for ch in all_chunks if ch.indexed]

        retr_slice = [config_slice(cfg, "retriever"), config_slice(cfg, "embedder") if c.dense else None]
        retrieve_key = make_key("retrieve", VERSIONS["retrieve"], retr_slice, chunk_key, load_key)
        retrieved, index_seconds = self.stage(
            "retrieve", retrieve_key, lambda: c.retriever.retrieve(ds.queries, searchable))

        assemble_key = make_key("assemble", VERSIONS["assemble"], config_slice(cfg, "context"), retrieve_key)
        contexts: list[Context] = self.stage("assemble", assemble_key, lambda: c.assembler.assemble_all(
            tqdm(retrieved, desc="assemble", unit="query"), by_id))

        answers: list[Answer | None] = [None] * len(ds.queries)
        respond_key = assemble_key
        if c.responder is not None:
            respond_key = make_key("respond", VERSIONS["respond"], config_slice(cfg, "responder"), assemble_key,
                                   c.dataset.name)
            answers = self.stage("respond", respond_key, lambda: c.responder.respond(
                ds.queries, contexts, c.dataset.name))
        eval_key = make_key("evaluate", VERSIONS["evaluate"], config_slice(cfg, "metrics"), respond_key)
        docs_by_id = {d.doc_id: d for d in ds.documents}
        query_metrics = [m for m in c.metrics.values() if not is_document_metric(m)]
        doc_metrics = [m for m in c.metrics.values() if is_document_metric(m)]

        def evaluate() -> tuple[list[dict[str, float]], list[dict[str, float]]]:
            items = [QueryEval(q, rt, ctx, ans, chunks_by_doc, by_id, docs_by_id)
                     for q, rt, ctx, ans in zip(ds.queries, retrieved, contexts, answers)]
            per_query: list[dict[str, float]] = [{} for _ in items]
            for m in query_metrics:  # a metric with score_all batches its model calls over queries
                scored = m.score_all(items) if hasattr(m, "score_all") else [
                    m(item) for item in tqdm(items, desc=f"evaluate {type(m).__name__}", unit="query", leave=False)]
                for row, s in zip(per_query, scored):
                    row.update(s)
            per_doc = [{k: v for m in doc_metrics for k, v in m(d, chunks_by_doc[d.doc_id]).items()}
                       for d in ds.documents] if doc_metrics else []
            return per_query, per_doc

        scores, doc_scores = self.stage("evaluate", eval_key, evaluate)

        r.per_query = [per_query_row(q, rt, ctx, a, s)
                       for q, rt, ctx, a, s in zip(ds.queries, retrieved, contexts, answers, scores)]
        r.metrics = aggregate(r.per_query)
        r.metrics.update(aggregate_documents(doc_scores))
        # Run-level numbers that are not means (corpus BLEU, HiChunk's micro F1 and fact-weighted Fact-Cov).
        for m in c.metrics.values():
            if hasattr(m, "aggregate"):
                run_level = m.aggregate(doc_scores if is_document_metric(m) else r.per_query)
                r.metrics.update(run_level)
                r.run_level += list(run_level)
        r.metrics.update(chunk_statistics(ds.documents, chunked, c.assembler.tokenizer.count))
        r.metrics["retrieval_seconds_per_query"] = _mean([rt.seconds for rt in retrieved])
        r.metrics["index_seconds"] = index_seconds
        r.metrics["n_queries"] = len(ds.queries)
        r.metrics["context_merges_total"] = float(sum(ctx.merges for ctx in contexts))
        r.cache_counts = self.cache.counts()
        return r


def doc_digest(doc: Document) -> str:
    """Everything about a document a chunker may read."""
    return make_key(doc.doc_id, text_digest(doc.text), doc.title, doc.language,
                    [to_dict(s) for s in doc.sections])


def per_query_row(q, rt: Retrieved, ctx: Context, answer: Answer | None, scores: dict[str, float]) -> dict[str, Any]:
    row = {"qid": q.qid, "task": q.task, "question": q.question, "doc_ids": list(q.doc_ids),
           "n_evidence_spans": len(q.evidence), "context_chunk_ids": list(ctx.chunk_ids),
           "context_tokens": ctx.n_tokens, "context_merges": ctx.merges, "retrieval_seconds": rt.seconds}
    if answer is not None:
        row.update(answer=answer.text, gold_answers=list(q.answers), answer_prompt_tokens=answer.n_prompt_tokens,
                   answer_seconds=answer.seconds)
    return {**row, **scores}


def _mean(values) -> float:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(vals)) if vals else float("nan")


def aggregate(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean of every score over queries (NaN left out, and the count of scored queries
    kept as ``n/<metric>``), overall and per task as ``<task>/<metric>``; overall means also
    get a seeded bootstrap 95% interval over queries (``<metric>/ci95_low``, ``/ci95_high``)."""
    score_names = [k for k in rows[0] if k not in _ROW_FIELDS] if rows else []
    out: dict[str, float] = {}
    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[row["task"] or "all"].append(row)
    counted = [k for k in ("context_tokens", "context_merges", "answer_prompt_tokens", "answer_seconds") if rows and k in rows[0]]
    for name in score_names + counted:
        out[name] = _mean(r[name] for r in rows)
        if name in score_names:
            out[f"n/{name}"] = sum(1 for r in rows if not math.isnan(r[name]))
            out[f"{name}/ci95_low"], out[f"{name}/ci95_high"] = bootstrap_ci([r[name] for r in rows])
        if len(by_task) > 1:
            for task, members in by_task.items():
                out[f"{task}/{name}"] = _mean(r[name] for r in members)
    return out


def aggregate_documents(rows: list[dict[str, float]]) -> dict[str, float]:
    """Document metrics: the mean over documents, with a bootstrap 95% interval over documents."""
    out: dict[str, float] = {}
    for name in dict.fromkeys(k for row in rows for k in row):
        values = [row.get(name, float("nan")) for row in rows]
        out[name] = _mean(values)
        out[f"n/{name}"] = sum(1 for v in values if not math.isnan(v))
        out[f"{name}/ci95_low"], out[f"{name}/ci95_high"] = bootstrap_ci(values)
    return out


_ROW_FIELDS = {"qid", "task", "question", "doc_ids", "n_evidence_spans", "context_chunk_ids",
               "context_tokens", "context_merges", "retrieval_seconds", "answer", "gold_answers",
               "answer_prompt_tokens", "answer_seconds"}


def chunk_statistics(docs: list[Document], chunked: dict[str, Any], count: Callable[[str], int]) -> dict[str, float]:
    """Chunk count and size (characters and context units) and chunking seconds per document."""
    # Retrievable text chunks only: structure nodes and other views are not what the chunker cut.
    chunks: list[Chunk] = [ch for d in docs for ch in chunked[d.doc_id]["chunks"]
                           if ch.indexed and ch.view == "text"]
    sizes = [count(ch.text) for ch in chunks]
    chars = [len(ch.text) for ch in chunks]
    return {
        "n_docs": len(docs),
        "n_chunks": len(chunks),
        "n_nodes": sum(len(chunked[d.doc_id]["chunks"]) for d in docs),  # with structure nodes and views
        "chunks_per_doc": len(chunks) / len(docs) if docs else float("nan"),
        "chunk_size_mean": _mean(sizes),
        "chunk_size_median": float(np.median(sizes)) if sizes else float("nan"),
        "chunk_size_max": float(max(sizes)) if sizes else float("nan"),
        "chunk_chars_mean": _mean(chars),
        "chunk_seconds_per_doc": _mean([chunked[d.doc_id]["seconds"] for d in docs]),
        **{f"chunker_{k}": float(v) for k, v in sum(
            (Counter(chunked[d.doc_id].get("counts", {})) for d in docs), Counter()).items()},
    }
