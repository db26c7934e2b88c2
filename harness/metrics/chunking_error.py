"""Chunking error (MC-indexing, Appendix A and Table 6): the share of answer scopes that the
chunking splits, i.e. that no single chunk holds whole ("over 70% of long answers/supporting
evidence being truncated" at 100-token chunks, Sec. 1).

A query metric, because answer scopes belong to questions: Table 6 is a share over the
data set's answer scopes, one per question in MC-indexing's data, so the mean over queries
the pipeline reports is that share. The retrieval is not read.

- Answer scopes: a query's evidence spans, per document, merged where they overlap or are
  separated by whitespace only (``merge_adjacent``), so consecutive evidence sentences form
  one scope as MC-indexing's contiguous scopes do. With ``merge_adjacent=false`` each span
  is a scope. A query with several scopes scores the share of its scopes that are split.
- Chunks: the document's retrievable text chunks (``indexed``, ``view == "text"``). A scope
  is held whole by a chunk when every non-whitespace character of the scope lies in the
  chunk's spans (chunkers trim whitespace at chunk edges; a non-contiguous chunk holds a
  scope when its parts cover it). With overlapping chunks (sliding windows, several
  granularities) a scope split by one chunk but held by another is not an error.
- NaN for a query without aligned evidence.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from harness.metrics.base import QueryEval, QueryMetric
from harness.metrics.spans import union
from harness.types import Chunk, Document, Span


def answer_scopes(evidence: Sequence[Span], documents: Mapping[str, Document],
                  merge_adjacent: bool = True) -> list[Span]:
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for s in evidence:
        by_doc[s.doc_id].append((s.start, s.end))
    out = []
    for doc_id, spans in by_doc.items():
        if not merge_adjacent:
            out += [Span(doc_id, s, e) for s, e in dict.fromkeys(spans) if s < e]
            continue
        text = documents[doc_id].text if doc_id in documents else None
        merged: list[list[int]] = []
        for s, e in union(spans):
            if merged and text is not None and not text[merged[-1][1]:s].strip():
                merged[-1][1] = e
            else:
                merged.append([s, e])
        out += [Span(doc_id, s, e) for s, e in merged]
    return out


def holds(chunk: Chunk, scope: Span, text: str | None) -> bool:
    """Whether ``chunk`` holds every non-whitespace character of ``scope`` (every character
    when the document text is unknown)."""
    pos = scope.start
    for s, e in union((p.start, p.end) for p in chunk.spans):
        if e <= pos:
            continue
        if s > pos and (text is None or text[pos:min(s, scope.end)].strip()):
            return False
        pos = max(pos, e)
        if pos >= scope.end:
            return True
    return pos >= scope.end or (text is not None and not text[pos:scope.end].strip())


def is_split(scope: Span, chunks: Sequence[Chunk], text: str | None) -> bool:
    return not any(c.start < scope.end and scope.start < c.end and holds(c, scope, text) for c in chunks)


class ChunkingError(QueryMetric):
    """Query metric ``chunking_error``: share of the query's answer scopes no chunk holds whole."""

    def __init__(self, merge_adjacent: bool = True):
        self.merge_adjacent = bool(merge_adjacent)

    def keys(self) -> set[str]:
        return {"chunking_error"}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        scopes = answer_scopes(item.query.evidence, item.documents, self.merge_adjacent)
        if not scopes:
            return {"chunking_error": math.nan}
        split = 0
        for sc in scopes:
            chunks = [c for c in item.chunks_by_doc.get(sc.doc_id, ()) if c.indexed and c.view == "text"]
            doc = item.documents.get(sc.doc_id)
            split += is_split(sc, chunks, doc.text if doc is not None else None)
        return {"chunking_error": split / len(scopes)}
