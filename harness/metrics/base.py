"""What a metric receives, and the two kinds of metric.

- A query metric is called once per query with a :class:`QueryEval`: the query, the
  ranking the retriever returned (before assembly; ranking metrics such as Recall@k
  read it), the assembled context, the answer (None on a retrieval-only run) and the
  run's chunks and documents. It returns ``{name: score}``; NaN means "not scorable
  for this query" and is left out of means (and counted).
- A document metric (``scope = "document"``) judges the chunking itself and is called
  once per document with the document and its chunks (chunk-point F1, ChunkScore).

Metrics that need a language model take ``llm: ${llm}`` in their config, as chunkers do,
and may define ``score_all(items) -> list[dict]``: the pipeline then calls it once with
every query, so the model calls of all queries go out as one batch. A metric whose run-level
number is not a mean (corpus BLEU, a micro average) defines ``aggregate(rows) -> dict``: it
gets the per-query rows (with ``answer`` and ``gold_answers``) or the per-document scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.types import Answer, Chunk, Context, Document, Query, Retrieved


@dataclass(frozen=True)
class QueryEval:
    query: Query
    retrieved: Retrieved
    context: Context
    answer: Answer | None
    chunks_by_doc: Mapping[str, Sequence[Chunk]]
    chunks_by_id: Mapping[str, Chunk]
    documents: Mapping[str, Document]

    def ranked_chunks(self, k: int | None = None) -> list[Chunk]:
        """The retrieved chunks in rank order (the first ``k``)."""
        ids = [cid for cid, _ in self.retrieved.ranked]
        return [self.chunks_by_id[c] for c in (ids if k is None else ids[:k])]


class QueryMetric(Protocol):
    def __call__(self, item: QueryEval) -> dict[str, float]: ...


class DocumentMetric(Protocol):
    scope: str  # "document"

    def __call__(self, doc: Document, chunks: Sequence[Chunk]) -> dict[str, float]: ...


def is_document_metric(metric: object) -> bool:
    return getattr(metric, "scope", "query") == "document"
