"""What a metric receives, and the two kinds of metric.

- A :class:`QueryMetric` is called once per query with a :class:`QueryEval`: the query, the
  retriever's raw ranking, the assembled context (with the resolved ranking the assembler
  recorded: ``item.ranked(k)``, where a chunk the context cannot hold whole is a miss), the
  answer (None on a retrieval-only run) and the run's chunks and documents. It returns ``{name: score}``; NaN means "not scorable for this
  query" and is left out of means (and counted).
- A :class:`DocumentMetric` judges the chunking itself and is called once per document
  with the document and its chunks (chunk-point F1, ChunkScore). Besides its scores, its row
  may hold per-item series under ``series_keys()`` (lists, e.g. one value per chunk): they are
  not averaged, the run records them in its ``per_document.jsonl`` for plots.

Both have a batched ``score_all`` (a metric that calls a model overrides it, so the calls
of all queries go out as one batch) and an ``aggregate(rows)`` for a run-level number that
is not a mean (corpus BLEU, a micro average); the default is none. Metrics that need a
language model or an embedder take ``llm: ${llm}`` / ``embedder: ${embedder}`` in their
config, as chunkers do.

Each metric declares the keys it returns, ``keys()``, and those of its ``aggregate``,
``aggregate_keys()``: a table file is checked against them before its runs start
(:mod:`harness.metrics.keys`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.progress import tqdm
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
    holds: Callable[[Chunk], bool] | None = None  # whether the context can hold a chunk whole; None: any

    def ranked(self, k: int | None = None, credit: str = "held") -> list[Chunk]:
        """The resolved ranking the context was built from (content chunks, the context's
        ``expand`` applied, contained chunks skipped), the first ``k``, :meth:`credited`."""
        ids = self.context.ranking.chunk_ids if self.context.ranking is not None else ()
        return self.credited([self.chunks_by_id[c] for c in (ids if k is None else ids[:k])], credit)

    def credited(self, chunks: Sequence[Chunk], credit: str = "held") -> list[Chunk]:
        """``chunks`` as a ranking metric may credit them. ``held`` (ChunkBench): each chunk the
        context cannot hold whole (longer than its budget) becomes :func:`uncredited`, since
        the reader never sees it (one chunk per book would otherwise score every ranking metric
        1.0); ``any``: every chunk as ranked (the papers' metrics, computed without a reader)."""
        if credit == "any" or self.holds is None:
            return list(chunks)
        return [c if self.holds(c) else uncredited(c) for c in chunks]

    @property
    def evidence_texts(self) -> list[str]:
        """The query's evidence as strings: its spans' text, then what could not be aligned."""
        return self.query.evidence_texts(self.documents)


def uncredited(chunk: Chunk) -> Chunk:
    """The stand-in for ``chunk`` in a ranking: its own id, no document and no text, so every
    ranking metric scores it as a miss at its rank (a retrieved slot that holds nothing)."""
    return Chunk(f"{chunk.chunk_id}#over-budget", "", "", 0, 0)


class QueryMetric(ABC):
    @abstractmethod
    def __call__(self, item: QueryEval) -> dict[str, float]: ...

    def score_all(self, items: Sequence[QueryEval]) -> list[dict[str, float]]:
        return [self(item) for item in tqdm(items, desc=f"evaluate {type(self).__name__}", unit="query",
                                            leave=False)]

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Run-level numbers that are not means, from the per-query rows (with ``answer``
        and ``gold_answers``); none by default."""
        return {}

    def keys(self) -> set[str]:
        """The keys of every row ``__call__`` returns (the same for every query)."""
        raise NotImplementedError(f"{type(self).__name__} does not declare its keys")

    def aggregate_keys(self) -> set[str]:
        """The keys ``aggregate`` returns."""
        return set()


class DocumentMetric(ABC):
    @abstractmethod
    def __call__(self, doc: Document, chunks: Sequence[Chunk]) -> dict[str, Any]: ...

    def score_all(self, docs: Sequence[Document], chunks_by_doc: Mapping[str, Sequence[Chunk]]
                  ) -> list[dict[str, Any]]:
        return [self(d, chunks_by_doc[d.doc_id]) for d in docs]

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Run-level numbers that are not means, from the per-document scores; none by default."""
        return {}

    def keys(self) -> set[str]:
        """The score keys of every row ``__call__`` returns (the same for every document)."""
        raise NotImplementedError(f"{type(self).__name__} does not declare its keys")

    def series_keys(self) -> set[str]:
        """The keys of every row whose value is a list (per chunk), recorded but not averaged."""
        return set()

    def aggregate_keys(self) -> set[str]:
        """The keys ``aggregate`` returns."""
        return set()
