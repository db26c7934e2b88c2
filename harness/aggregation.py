"""Run aggregation: from per-query and per-document scores to the numbers a run reports.

A ground-floor service (it imports no stage): the runner calls it after the last stage,
and report tools can re-aggregate recorded rows with it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.statistics import bootstrap_ci, population_std
from harness.types import Answer, Chunk, Context, DocChunks, Document, Query, Retrieved


def per_query_row(q: Query, rt: Retrieved, ctx: Context, answer: Answer | None, scores: dict[str, float]) -> dict[str, Any]:
    row = {"qid": q.qid, "task": q.task, "question": q.question, "doc_ids": list(q.doc_ids),
           "n_evidence_spans": len(q.evidence), "context_chunk_ids": list(ctx.chunk_ids),
           "context_tokens": ctx.n_tokens, "context_merges": ctx.merges, "retrieval_seconds": rt.seconds}
    if answer is not None:
        row.update(answer=answer.text, gold_answers=list(q.answers), answer_prompt_tokens=answer.n_prompt_tokens,
                   answer_seconds=answer.seconds)
    return {**row, **scores}


def mean(values) -> float:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(vals)) if vals else float("nan")


def aggregate(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean of every score over queries (NaN left out, and the count of scored queries
    kept as ``n/<metric>``), overall and per task as ``<task>/<metric>``; overall means also
    get a seeded bootstrap 95% interval over queries (``<metric>/ci95_low``, ``/ci95_high``)
    and the population standard deviation over queries (``<metric>/std``)."""
    score_names = [k for k in rows[0] if k not in _ROW_FIELDS] if rows else []
    out: dict[str, float] = {}
    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[row["task"] or "all"].append(row)
    counted = [k for k in ("context_tokens", "context_merges", "answer_prompt_tokens", "answer_seconds") if rows and k in rows[0]]
    for name in score_names + counted:
        out[name] = mean(r[name] for r in rows)
        if name in score_names:
            out[f"n/{name}"] = sum(1 for r in rows if not math.isnan(r[name]))
            out.update(_spread(name, [r[name] for r in rows]))
        if len(by_task) > 1:
            for task, members in by_task.items():
                out[f"{task}/{name}"] = mean(r[name] for r in members)
    return out


def aggregate_documents(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Document metrics: the mean over documents, with a bootstrap 95% interval and the population
    standard deviation over documents. Series (list values: per-chunk numbers) are not scores."""
    out: dict[str, float] = {}
    series = {k for row in rows for k, v in row.items() if isinstance(v, (list, tuple))}
    for name in dict.fromkeys(k for row in rows for k in row if k not in series):
        values = [row.get(name, float("nan")) for row in rows]
        out[name] = mean(values)
        out[f"n/{name}"] = sum(1 for v in values if not math.isnan(v))
        out.update(_spread(name, values))
    return out


def _spread(name: str, values: list[float]) -> dict[str, float]:
    low, high = bootstrap_ci(values)
    return {f"{name}/ci95_low": low, f"{name}/ci95_high": high, f"{name}/std": population_std(values)}


_ROW_FIELDS = {"qid", "task", "question", "doc_ids", "n_evidence_spans", "context_chunk_ids",
               "context_tokens", "context_merges", "retrieval_seconds", "answer", "gold_answers",
               "answer_prompt_tokens", "answer_seconds"}


def summed(counts) -> dict[str, float]:
    """Per-key sums of count dicts, zeros kept (a Counter sum would drop them)."""
    out: dict[str, float] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def text_chunks(docs: list[Document], chunked: Mapping[str, DocChunks]) -> list[Chunk]:
    """What the chunker cut, in document order: retrievable text chunks, without structure
    nodes and other views."""
    return [ch for d in docs for ch in chunked[d.doc_id].chunks if ch.indexed and ch.view == "text"]


def chunk_statistics(docs: list[Document], chunked: Mapping[str, DocChunks],
                     sizes: list[int]) -> dict[str, float]:
    """Chunk count and size (characters, and ``sizes``: each of :func:`text_chunks` in context
    units) and chunking seconds per document."""
    chunks = text_chunks(docs, chunked)
    chars = [len(ch.text) for ch in chunks]
    return {
        "n_docs": len(docs),
        "n_chunks": len(chunks),
        "n_nodes": sum(len(chunked[d.doc_id].chunks) for d in docs),  # with structure nodes and views
        "chunks_per_doc": len(chunks) / len(docs) if docs else float("nan"),
        "chunk_size_mean": mean(sizes),
        "chunk_size_median": float(np.median(sizes)) if sizes else float("nan"),
        "chunk_size_max": float(max(sizes)) if sizes else float("nan"),
        "chunk_chars_mean": mean(chars),
        "chunk_seconds_per_doc": mean([chunked[d.doc_id].seconds for d in docs]),
        **{f"chunker_{k}": float(v) for k, v in summed(chunked[d.doc_id].counts for d in docs).items()},
    }
