"""The run-level names a run of given metrics records in MLflow, from the keys each metric
declares: a table file naming an unknown key is rejected before any of its runs starts.

A run records (:mod:`harness.aggregation`, :meth:`harness.pipeline.runner.Pipeline.summarize`,
:func:`harness.pipeline.record.log_run`):

- for each per-row key ``k`` (query or document metric): the mean ``k``, the scored count
  ``n/k``, the bootstrap interval ``k/ci95_low``, ``k/ci95_high`` and the population standard
  deviation ``k/std`` (:data:`SPREAD_SUFFIXES`); query keys also as ``<task>/k`` when the data
  set has several tasks;
- each key of the metrics' ``aggregate`` (corpus BLEU, micro F1), as it is;
- :data:`RUN_STATISTICS`, whatever the metrics, besides the data set's load report and the
  chunker's counts (``chunker_<count>``), which depend on the data and the chunker.

A NaN value is not logged, so a declared name may still be missing from one run (a metric
no query could score, an answer metric on a retrieval-only run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.metrics.base import DocumentMetric, QueryMetric
from harness.types import ConfigError

Metric = QueryMetric | DocumentMetric
Metrics = Mapping[str, Metric] | Iterable[Metric]
SPREAD_SUFFIXES = ("/ci95_low", "/ci95_high", "/std")
# Means over queries recorded like query keys (overall and per task) but with no n/ or interval.
QUERY_MEANS = frozenset({"context_tokens", "context_merges", "answer_prompt_tokens", "answer_seconds"})
RUN_STATISTICS = QUERY_MEANS | frozenset({
    "n_docs", "n_chunks", "n_nodes", "chunks_per_doc", "chunk_size_mean", "chunk_size_median", "chunk_size_max",
    "chunk_chars_mean", "chunk_seconds_per_doc", "retrieval_seconds_per_query", "index_seconds", "n_queries",
    "context_merges_total",
    # harness.pipeline.chunk_checks: chunkings a score would flatter
    "chunks_over_context_budget", "chunks_over_embedder_input", "embedder_input_limit", "docs_single_chunk",
    "docs_single_chunk_over_limit", "contexts_whole_documents"})
STAGE_SECONDS = "stage_seconds/"  # + a stage's name (harness.pipeline.stages declares them)


def _named(metrics: Metrics) -> dict[str, Metric]:
    if isinstance(metrics, Mapping):
        return {f"metrics.{name}": m for name, m in metrics.items()}
    return {f"metric #{i} ({type(m).__name__})": m for i, m in enumerate(metrics)}


def _writers(named: Mapping[str, Metric]) -> dict[str, Metric]:
    out: dict[str, tuple[str, Metric]] = {}
    for name, m in named.items():
        for key in sorted(m.keys()):
            if key in out:
                raise ConfigError(f"{name} and {out[key][0]} both write the score {key!r}")
            out[key] = (name, m)
    return {key: m for key, (_, m) in out.items()}


def row_keys(metrics: Metrics) -> set[str]:
    """Every per-row key of ``metrics`` (name -> metric, as ``Components.metrics``, or a list);
    two metrics writing one key are a ConfigError (the run would keep one of the scores)."""
    return set(_writers(_named(metrics)))


def recorded_keys(metrics: Metrics) -> set[str]:
    """The run-level names ``metrics`` record: the mean of each per-row key and each aggregate
    key. Derived names (``n/``, ``/ci95_*``, ``/std``, ``<task>/``) and :data:`RUN_STATISTICS` are not
    included; :func:`is_recorded` accepts them."""
    named = _named(metrics)
    return set(_writers(named)) | {k for m in named.values() for k in m.aggregate_keys()}


def recorded_series(metrics: Metrics) -> set[str]:
    """The per-chunk series ``metrics`` record in the run's ``per_document.jsonl`` (document
    metrics' ``series_keys``), which a figure may plot."""
    return {k for m in _named(metrics).values() if isinstance(m, DocumentMetric) for k in m.series_keys()}


def is_recorded(name: str, metrics: Metrics, tasks: Iterable[str] | None = None) -> bool:
    """Whether a run of ``metrics`` records ``name``: a name of :func:`recorded_keys`, a per-row
    key with ``n/`` or a suffix of :data:`SPREAD_SUFFIXES`, a query key or a query mean of
    :data:`QUERY_MEANS` under a task (``<task>/<key>``; any task unless ``tasks`` names them),
    or a run statistic."""
    named = _named(metrics)
    rows = _writers(named)
    if name in RUN_STATISTICS or name.startswith(STAGE_SECONDS) or name in rows \
            or any(name in m.aggregate_keys() for m in named.values()):
        return True
    if name.startswith("n/") and name[2:] in rows:
        return True
    if name.endswith(SPREAD_SUFFIXES) and name.rsplit("/", 1)[0] in rows:
        return True
    task, _, key = name.partition("/")
    per_task = {k for k, m in rows.items() if isinstance(m, QueryMetric)} | QUERY_MEANS
    return key in per_task and (tasks is None or task in set(tasks))
