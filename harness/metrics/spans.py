"""Character-span retrieval metrics, as Chroma's chunking evaluation defines them.

Evidence E is the union of a query's evidence spans; the retrieved set R is the
context's spans (a list: two overlapping chunks are both paid for).

- recall    = |E ∩ ∪R| / |E|
- precision = |E ∩ ∪R| / Σ|r|
- IoU       = |E ∩ ∪R| / (Σ|r| + |E \\ ∪R|)
- Precision-Omega: IoU's ratio over every retrievable chunk of the evidence documents
  that touches E (independent of the retriever), the chunk set measured by its union:
  the best precision this chunking allows. A non-contiguous chunk counts the parts
  that touch E (each part is text the chunk would bring). Which parts touch E is
  ``omega_intervals`` (see :func:`precision_omega`): ``closed`` (default, Chroma's code)
  also counts a part that only borders E, ``open`` only a part that shares a character
  with E.

Spans of different documents never overlap. Queries without aligned evidence score NaN
(left out of means, and counted).

Where a chunk lies (``chunk_spans``): ``carried`` (default) reads the offsets the chunker carried
through its splitting; ``found`` reads the first occurrence of the chunk's text in its document,
as Chroma's code places each chunk (``rigorous_document_search``: ``str.find`` first). They differ
only where a chunk's text recurs earlier in its document (tables, boilerplate, JSON chat logs):
there ``found`` credits or blames text the chunk never held. A sensitivity reading of Chroma's
tables; a non-contiguous chunk keeps its parts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from harness.metrics.base import QueryEval, QueryMetric
from harness.types import Chunk, ConfigError, Span

Interval = tuple[int, int]
OMEGA_INTERVALS = ("closed", "open")
CHUNK_SPANS = ("carried", "found")


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint, merged intervals."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if s >= e:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(intervals: Iterable[Interval]) -> int:
    return sum(e - s for s, e in intervals)


def intersection_length(a: Sequence[Interval], b: Sequence[Interval]) -> int:
    """Overlap of two sorted, disjoint interval lists."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _by_doc(spans: Iterable[Span]) -> dict[str, list[Interval]]:
    out: dict[str, list[Interval]] = defaultdict(list)
    for s in spans:
        out[s.doc_id].append((s.start, s.end))
    return out


def covered(evidence: Iterable[Span], retrieved: Iterable[Span]) -> tuple[int, int]:
    """(|E ∩ ∪R|, |E|) summed over documents."""
    ev, rv = _by_doc(evidence), _by_doc(retrieved)
    hit = total = 0
    for doc, spans in ev.items():
        e = union(spans)
        total += length(e)
        hit += intersection_length(e, union(rv.get(doc, ())))
    return hit, total


def span_scores(evidence: Sequence[Span], retrieved: Sequence[Span]) -> dict[str, float]:
    nan = float("nan")
    hit, ev_len = covered(evidence, retrieved)
    if ev_len == 0:
        return {"span_recall": nan, "span_precision": nan, "span_iou": nan}
    retrieved_len = sum(s.end - s.start for s in retrieved)
    return {
        "span_recall": hit / ev_len,
        "span_precision": hit / retrieved_len if retrieved_len else 0.0,
        "span_iou": hit / (retrieved_len + ev_len - hit),
    }


def touches(evidence: Sequence[Interval], start: int, end: int, closed: bool = True) -> bool:
    """Whether the chunk part ``[start, end)`` touches one of the sorted, disjoint, non-empty
    evidence intervals ``[a, b)``: all offsets are half-open character offsets.

    open:   they share a character, ``start < b and a < end`` (a positive overlap).
    closed: ``start <= b and a <= end``: they share a character or border each other, the part
            ending where the evidence starts (``end == a``) or starting where it ends
            (``start == b``), with no character between them.

    Chroma's offsets are half-open too (``end_index = start_index + len(text)``, lengths
    ``end - start``), but its ``intersect_two_ranges`` keeps an intersection while
    ``max(starts) <= min(ends)``, i.e. it intersects the closed intervals ``[start, end]``: a
    chunk bordering a reference gets the empty intersection ``(end, end)``, is counted as
    highlighted and adds its whole length to Precision-Omega's denominator. ``closed`` is that
    rule on our half-open spans, not a one-character extension: a part ending one character
    before the evidence (``end == a - 1``) touches under neither rule.
    """
    if closed:
        return any(start <= b and a <= end for a, b in evidence)
    return any(start < b and a < end for a, b in evidence)


def precision_omega(evidence: Sequence[Span], chunks_by_doc: Mapping[str, Sequence[Chunk]],
                    intervals: str = "closed") -> float:
    """|E ∩ ∪C| / (|∪C| + |E| - |E ∩ ∪C|), C the parts of the evidence documents' indexed text
    chunks that touch E (:func:`touches`): ``intervals="closed"`` (default) as Chroma's
    ``_full_precision_score`` counts them (Smith & Troynikov 2024; their code intersects closed
    intervals, so a chunk bordering the evidence counts), ``"open"`` only chunks sharing a
    character with it. A bordering part adds no evidence, only its length to the denominator:
    closed is never above open. NaN without evidence."""
    if intervals not in OMEGA_INTERVALS:
        raise ConfigError(f"omega_intervals must be one of {', '.join(OMEGA_INTERVALS)}; got {intervals!r}")
    closed = intervals == "closed"
    ev = _by_doc(evidence)
    hit = ev_len = union_len = 0
    for doc, spans in ev.items():
        e = union(spans)
        ev_len += length(e)
        touching = union((s.start, s.end) for c in chunks_by_doc.get(doc, ()) if c.indexed and c.view == "text"
                         for s in c.spans if s.start < s.end and touches(e, s.start, s.end, closed))
        union_len += length(touching)
        hit += intersection_length(e, touching)
    if ev_len == 0:
        return float("nan")
    return hit / (union_len + ev_len - hit)


class SpanOverlap(QueryMetric):
    """Span recall / precision / IoU of the context, and the chunking's Precision-Omega.

    ``omega_intervals``: which chunks Precision-Omega counts, ``closed`` (default): those
    sharing a character with the evidence or bordering it (a chunk ending where the evidence
    starts, or starting where it ends), as Chroma's code does (its interval intersection is
    closed), so that numbers compare with Chroma's Table 1; ``open``: only those sharing a
    character (a positive overlap), the rule before. ``chunk_spans``: where a chunk lies,
    ``carried`` (default) or ``found`` (the first occurrence of its text; module docstring).
    """

    def __init__(self, omega_intervals: str = "closed", chunk_spans: str = "carried"):
        if omega_intervals not in OMEGA_INTERVALS:
            raise ConfigError(f"omega_intervals must be one of {', '.join(OMEGA_INTERVALS)}; "
                              f"got {omega_intervals!r}")
        if chunk_spans not in CHUNK_SPANS:
            raise ConfigError(f"chunk_spans must be one of {', '.join(CHUNK_SPANS)}; got {chunk_spans!r}")
        self.omega_intervals, self.chunk_spans = omega_intervals, chunk_spans
        # (chunk id, start, end) -> the chunk placed at its text's first occurrence (ids recur across chunkings)
        self._found: dict[tuple[str, int, int], Chunk] = {}

    def keys(self) -> set[str]:
        return {"span_recall", "span_precision", "span_iou", "span_precision_omega"}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        context, chunks_by_doc = item.context.spans, item.chunks_by_doc
        if self.chunk_spans == "found":
            context = tuple(s for c in item.context.chunk_ids for s in self._place(item.chunks_by_id[c], item).spans)
            evidence_docs = {e.doc_id for e in item.query.evidence}   # Precision-Omega reads only these
            chunks_by_doc = {doc: [self._place(c, item) for c in chunks_by_doc.get(doc, ())] for doc in evidence_docs}
        scores = span_scores(item.query.evidence, context)
        scores["span_precision_omega"] = precision_omega(item.query.evidence, chunks_by_doc, self.omega_intervals)
        return scores

    def _place(self, chunk: Chunk, item: QueryEval) -> Chunk:
        """``chunk`` at the first occurrence of its text in its document (kept where it is when
        it has parts, or its text is not the document's: a rewritten chunk)."""
        key = (chunk.chunk_id, chunk.start, chunk.end)
        placed = self._found.get(key)
        if placed is None:
            placed = chunk
            if not chunk.parts:
                at = item.documents[chunk.doc_id].text.find(chunk.text)
                if at >= 0:
                    placed = replace(chunk, start=at, end=at + len(chunk.text))
            self._found[key] = placed
        return placed
