"""The runner: one loop over the declared stages (:mod:`harness.pipeline.stages`).

For each stage it derives the cache key from the declaration, returns the cached output or
computes and stores it, times it, and logs one line. Keys chain: a stage's key holds the
keys of the stages it reads, so a changed config slice recomputes that stage and everything
after it, and nothing before. Fine-grained work inside a stage (embeddings per text, LLM
calls per prompt) is cached by the embedder and the LLM themselves. ``refresh`` names stages to
compute again although stored (a chunker edited outside what its key holds, a suspect entry):
they and every stage that reads them are recomputed and stored over the old entries. A stage
during which a model gave no usable answer (:class:`harness.llm.base.Unanswered`) is not stored,
nor is any stage that reads it: a rerun asks the model again.

A stage that must be computed is computed under its key's cache lock, so the jobs of a sweep
that share it (on one machine or on a cluster's shared cache) compute it once: the others
wait, then read it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.aggregation import aggregate, aggregate_documents, chunk_statistics, mean, per_query_row, text_chunks
from harness.cache import Cache, make_key, text_digest, without_services
from harness.data.base import NOT_QUERIED
from harness.data.evidence_checks import report_warnings
from harness.llm.base import unanswered_calls
from harness.metrics.base import DocumentMetric
from harness.pipeline.chunk_checks import (check_contexts, chunk_checks, encoder_lengths, warning,
                                           whole_document_contexts)
from harness.pipeline.components import Components, build_components, resolve_reader
from harness.pipeline.stages import STAGES, Stage, check_run_chunks
from harness.progress import tqdm
from harness.retrieval.base import unsearchable_warning, unsearched_evidence
from harness.types import ConfigError, Document, to_dict


logger = logging.getLogger(__name__)


@dataclass
class RunResult:
    metrics: dict[str, float]
    per_query: list[dict[str, Any]]
    dataset_report: dict[str, float]
    stages: dict[str, str] = field(default_factory=dict)  # stage -> "cached" | "computed"
    stage_seconds: dict[str, float] = field(default_factory=dict)
    cache_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    run_level: list[str] = field(default_factory=list)  # metrics that are not means (corpus BLEU, micro F1)
    per_document: list[dict[str, Any]] = field(default_factory=list)  # document metrics' rows, with doc_id


# What summarize() fills in, cached with the evaluation; the version changes with summarize().
SUMMARY_FIELDS = ("metrics", "per_query", "dataset_report", "per_document", "run_level")
SUMMARY_VERSION = 3  # 2: the chunk checks (harness.pipeline.chunk_checks); 3: contexts_whole_documents


def config_slice(cfg: DictConfig, group: str) -> Any:
    """The resolved config a stage reads from ``group``, as it enters the stage's key."""
    return without_services(OmegaConf.to_container(cfg[group], resolve=True))


def doc_digest(doc: Document) -> str:
    """Everything about a document a chunker may read."""
    return make_key(doc.doc_id, text_digest(doc.text), doc.title, doc.language,
                    [to_dict(s) for s in doc.sections])


def document_key(stage: Stage, slices: list, doc: Document, code: str | None) -> str:
    """A per-document stage's entry for ``doc``: the stage, its config ``slices``, the document and
    the ``code`` that computes it (the stage's fingerprint, :func:`harness.pipeline.stages.chunker_code`)."""
    return make_key(f"{stage.name}_doc", stage.version, slices, doc_digest(doc), *([code] if code else []))


def forced_stages(refresh) -> set[str]:
    """The stages ``refresh`` names and every stage that reads one of them, directly or not."""
    names = [s.name for s in STAGES]
    asked = [refresh] if isinstance(refresh, str) else list(refresh)
    if unknown := [r for r in asked if r not in names]:
        raise ConfigError(f"refresh: no stage {', '.join(map(repr, unknown))} (stages: {' '.join(names)})")
    forced = set(asked)
    for stage in STAGES:  # declared in order: a stage comes after everything it reads
        if forced.intersection(stage.after):
            forced.add(stage.name)
    return forced


class Pipeline:
    def __init__(self, cfg: DictConfig, components: Components | None = None, log: Callable = print):
        self.cfg = resolve_reader(cfg)  # `tokenizer: reader` named as the llm's, in the components and the keys
        self.c = components or build_components(self.cfg)  # every component built (and checked) before any work
        self.cache: Cache = self.c.cache
        self.log = log
        self.keys: dict[str, str | None] = {}
        self.outputs: dict[str, Any] = {}
        self.forced = forced_stages(self.cfg.get("refresh") or [])
        self.waited: dict[str, float] = {}  # stage -> seconds spent waiting for another process's lock
        self.unsearchable: list[str] | None = None  # the qids the retriever had nothing to search with
        self.unstored: set[str] = set()  # stages computed with a model's non-answer (Unanswered), and those after

    def storable(self, stage: Stage, unanswered_before: int) -> bool:
        """Whether what ``stage`` just computed may be cached: not when a model call gave no usable
        answer while it was computed, or a stage it reads was left unstored for that (a rerun then
        computes it again)."""
        if unanswered_calls() == unanswered_before and not self.unstored.intersection(stage.after):
            return True
        if stage.name not in self.unstored:
            self.unstored.add(stage.name)
            self.log(f"[{stage.name}] not stored: a model gave no usable answer (warned above); a rerun "
                     f"computes it again")
        return False

    def key(self, stage: Stage) -> str:
        parts = [config_slice(self.cfg, g) for g in stage.reads]
        extra = stage.fingerprint(self.c) if stage.fingerprint else None
        return make_key(stage.name, stage.version, parts, [self.keys[a] for a in stage.after], extra)

    def run(self) -> RunResult:
        since, unanswered = self.cache.counts(), unanswered_calls()
        result = RunResult({}, [], {})
        for stage in STAGES:
            if stage.optional and getattr(self.c, stage.reads[0]) is None:
                self.keys[stage.name], self.outputs[stage.name] = None, None
                continue
            t0 = time.perf_counter()
            self.keys[stage.name] = self.key(stage)
            run = self.run_per_document if stage.per_document else self.run_whole
            self.outputs[stage.name], status = run(stage)
            result.stages[stage.name] = status
            waited = self.waited.pop(stage.name, 0.0)  # another process's work, not this stage's cost
            result.stage_seconds[stage.name] = time.perf_counter() - t0 - waited
            self.log(f"[{stage.name}] {status} in {result.stage_seconds[stage.name]:.1f}s "
                     f"(key {self.keys[stage.name][:12]})"
                     + (f" after waiting {waited:.1f}s for another process computing it" if waited >= 0.5 else ""))
            self.check(stage.name)
        self.summarize_cached(result)
        if self.unsearchable is not None:  # not cached with the summary: the runs summarized before it keep their key
            result.metrics["queries_without_terms"] = len(self.unsearchable)
        if unanswered_calls() > unanswered:  # recorded only then: other runs' metrics are as they were
            result.metrics["llm_unanswered"] = float(unanswered_calls() - unanswered)
        if line := warning(result.metrics, self.budget(), result.metrics.get("embedder_input_limit")):
            logger.warning(line)
        result.cache_counts = self.cache.counts(since)
        return result

    def check(self, stage: str) -> None:
        """What a stage's output says about the run: the documents a query limit kept, evidence no
        query searches (a warning), chunk ids repeated across documents and contexts that are all
        empty (the run fails)."""
        if stage == "load":
            ds = self.outputs["load"]
            if ds.report.get(NOT_QUERIED):
                self.log(f"[load] dataset.limit_queries={self.c.dataset.limit_queries} under "
                         f"retriever.scope=document: {len(ds.documents)} documents kept, the ones the "
                         f"{len(ds.queries)} questions search; {ds.report[NOT_QUERIED]} left out")
            if getattr(self.c.retriever, "scope", None) == "document" and (line := unsearched_evidence(ds.queries)):
                logger.warning(line)
            for line in report_warnings(ds.name, ds.report, ds.queries, ds.documents):
                logger.warning(line)
        if stage == "chunk":
            check_run_chunks(self.c, self.outputs)
        if stage == "retrieve":
            queries = self.outputs["load"].queries
            self.unsearchable = self.c.retriever.unsearchable(queries)
            if line := unsearchable_warning(self.unsearchable or (), len(queries)):
                logger.warning(line)
        if stage == "assemble":
            check_contexts(self.outputs["assemble"], self.budget(), self.cfg.context.get("unit", "tokens"),
                           self.chunk_sizes)

    def budget(self) -> int | None:
        """The context budget in context units, where the assembler has one."""
        return getattr(self.c.context, "budget", None)

    def computing(self, stage: Stage, namespace: str, keys: Iterable[str], lock_key: str):
        """The lock under which a stage computes what the cache lacks: jobs of a sweep that share
        the stage wait for the first one instead of computing it again (none when all is stored
        and the stage is not refreshed)."""
        if stage.name not in self.forced and self.cache.stored_all(namespace, keys):
            return nullcontext()
        return self._timed(stage.name, self.cache.lock(namespace, lock_key))

    @contextmanager
    def _timed(self, stage: str, lock):
        """``lock``, the seconds spent acquiring it kept for the stage's log line (a stage another
        process was computing is read from the cache once it is done: that wait is not its cost)."""
        t0 = time.perf_counter()
        with lock:
            self.waited[stage] = time.perf_counter() - t0
            yield

    def run_whole(self, stage: Stage) -> tuple[Any, str]:
        key = self.keys[stage.name]
        with self.computing(stage, stage.name, [key], key):
            fresh = stage.name in self.forced or self.unstored.intersection(stage.after)
            value = None if fresh else self.cache.get(stage.name, key)
            if value is not None:
                return value, "cached"
            before = unanswered_calls()
            value = stage.compute(self.c, self.outputs)
            if self.storable(stage, before):
                self.cache.put(stage.name, key, value)
            return value, "computed"

    def run_per_document(self, stage: Stage) -> tuple[dict[str, Any], str]:
        """Per-document entries (doc id -> output), cached in packs as the batches return
        (:meth:`Cache.writing_packs`)."""
        docs: list[Document] = self.outputs["load"].documents
        namespace, slices = f"{stage.name}_doc", [config_slice(self.cfg, g) for g in stage.reads]
        code = stage.fingerprint(self.c) if stage.fingerprint else None
        keys = {d.doc_id: document_key(stage, slices, d, code) for d in docs}
        with self.computing(stage, namespace, keys.values(), self.keys[stage.name]):
            hits = [None] * len(docs) if stage.name in self.forced else \
                self.cache.get_objects(namespace, [keys[d.doc_id] for d in docs])
            out = {d.doc_id: hit for d, hit in zip(docs, hits) if hit is not None}
            if stage.check_cached:  # what compute checks before storing, checked again on what is read
                for d in docs:
                    if d.doc_id in out:
                        stage.check_cached(self.c, d, out[d.doc_id])
            pending = [d for d in docs if d.doc_id not in out]
            batch = max(1, int(getattr(self.c, stage.reads[0]).batch_size))
            with tqdm(total=len(pending), desc=stage.name, unit="doc", disable=not pending) as bar, \
                    self.cache.writing_packs(namespace) as put:
                for i in range(0, len(pending), batch):
                    group, before = pending[i:i + batch], unanswered_calls()
                    entries = stage.compute(self.c, group)
                    keep = self.storable(stage, before)
                    for d, entry in zip(group, entries):
                        if keep:
                            put(keys[d.doc_id], entry)
                        out[d.doc_id] = entry
                    bar.update(len(group))
        if docs:
            self.log(f"[{stage.name}] {len(docs) - len(pending)}/{len(docs)} documents from cache")
        return {d.doc_id: out[d.doc_id] for d in docs}, "computed" if pending else "cached"

    def chunk_sizes(self) -> list[int]:
        """Each text chunk's size in context units, cached beside the chunks: a warm rerun
        does not tokenize every chunk again."""
        tokenizer = self.c.context.tokenizer
        key = make_key("chunk_sizes", self.keys["chunk"], repr(tokenizer))
        sizes = None if "chunk" in self.forced else self.cache.get("chunk_sizes", key)
        if sizes is None:
            chunks = text_chunks(self.outputs["load"].documents, self.outputs["chunk"])
            sizes = [tokenizer.count(ch.text) for ch in chunks]
            self.cache.put("chunk_sizes", key, sizes)
        return sizes

    def document_sizes(self) -> dict[str, int]:
        """Each document's size in context units, cached per data set and tokenizer: every
        chunker's run on the data reads the same sizes."""
        tokenizer = self.c.context.tokenizer
        key = make_key("document_sizes", self.keys["load"], repr(tokenizer))
        sizes = self.cache.get("document_sizes", key)
        if sizes is None:
            sizes = {d.doc_id: tokenizer.count(d.text) for d in self.outputs["load"].documents}
            self.cache.put("document_sizes", key, sizes)
        return sizes

    def summarize_cached(self, r: RunResult) -> None:
        """:meth:`summarize`, cached under the evaluation's key: a warm rerun neither
        aggregates nor bootstraps again (nor imports scipy to do so)."""
        key = make_key("summary", SUMMARY_VERSION, self.keys["evaluate"], repr(self.c.context.tokenizer))
        fields = None if "evaluate" in self.forced else self.cache.get("summary", key)
        if fields is None:
            self.summarize(r)
            fields = {f: getattr(r, f) for f in SUMMARY_FIELDS}
            if "evaluate" not in self.unstored:
                self.cache.put("summary", key, fields)
        for name, value in fields.items():
            setattr(r, name, value)

    def summarize(self, r: RunResult) -> None:
        """The run's numbers from the stage outputs (aggregation lives in harness.aggregation)."""
        o, c = self.outputs, self.c
        ds, retrieved, contexts = o["load"], o["retrieve"].results, o["assemble"]
        answers = o["respond"] or [None] * len(ds.queries)
        evaluation = o["evaluate"]
        r.dataset_report = dict(ds.report)
        r.per_query = [per_query_row(q, rt, ctx, a, s) for q, rt, ctx, a, s
                       in zip(ds.queries, retrieved, contexts, answers, evaluation.per_query)]
        r.metrics = aggregate(r.per_query)
        r.metrics.update(aggregate_documents(evaluation.per_document))
        r.per_document = [{"doc_id": d.doc_id, **row} for d, row in zip(ds.documents, evaluation.per_document)]
        # Run-level numbers that are not means (corpus BLEU, HiChunk's micro F1, fact-weighted Fact-Cov).
        for m in c.metrics.values():
            rows = evaluation.per_document if isinstance(m, DocumentMetric) else r.per_query
            run_level = m.aggregate(rows)
            r.metrics.update(run_level)
            r.run_level += list(run_level)
        sizes = self.chunk_sizes()
        r.metrics.update(chunk_statistics(ds.documents, o["chunk"], sizes))
        encoder = encoder_lengths(c.retriever, ds.documents, o["chunk"])
        r.metrics.update(chunk_checks(ds.documents, o["chunk"], sizes, self.budget(), encoder))
        if encoder is not None:
            r.metrics["embedder_input_limit"] = float(encoder[0])
        if self.budget() is not None:
            r.metrics["contexts_whole_documents"] = whole_document_contexts(
                ds.queries, contexts, ds.documents, self.document_sizes(), self.budget(),
                getattr(c.retriever, "scope", "corpus"))
        r.metrics["retrieval_seconds_per_query"] = mean([rt.seconds for rt in retrieved])
        r.metrics["index_seconds"] = o["retrieve"].index_seconds
        r.metrics["n_queries"] = len(ds.queries)
        r.metrics["context_merges_total"] = float(sum(ctx.merges for ctx in contexts))
