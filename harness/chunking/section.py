"""Content-aware chunking (MC-indexing): one chunk per smallest section of the gold structure."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from harness.chunking.base import Chunker, spans_to_chunks
from harness.chunking.sentence import pack_sentences
from harness.chunking.units import Span, UnitIndex, make_tokenizer, require_optional_size
from harness.text import trim_span
from harness.types import Chunk, Document, Section


def section_segments(sections: Sequence[Section], length: int) -> list[tuple[Span, int]]:
    """Cut ``[0, length)`` at every section start and end; give each segment a level.

    A segment belongs to the innermost section covering it (the shortest; the deeper
    level on a tie) and gets that section's level, or 0 outside every section.
    """
    inside = sorted((max(s.start, 0), min(s.end, length), s.level) for s in sections)
    inside = [s for s in inside if s[0] < s[1]]  # clipped defensively; validated data never needs it
    bounds = sorted({0, length, *(b for start, end, _ in inside for b in (start, end))})
    open_: list[tuple[int, int, int]] = []  # heap of (length, -level, end): innermost on top
    nxt, segments = 0, []
    for a, b in zip(bounds, bounds[1:]):
        while nxt < len(inside) and inside[nxt][0] <= a:
            start, end, level = inside[nxt]
            heapq.heappush(open_, (end - start, -level, end))
            nxt += 1
        while open_ and open_[0][2] <= a:  # sections that ended before this segment
            heapq.heappop(open_)
        segments.append(((a, b), -open_[0][1] if open_ else 0))
    return segments


class SectionChunker(Chunker):
    """One chunk per segment of ``section_segments``; ``chunk.level`` is the section's level.

    A document without sections is a single segment. With ``max_size`` set, a segment
    longer than that many units is sub-split into packs of whole sentences, keeping its level.
    """

    def __init__(self, max_size: int | None = None, unit: str = "tokens", tokenizer: str = "bundled"):
        require_optional_size("max_size", max_size)
        self.max_size = max_size
        self.tokenizer = make_tokenizer(unit, tokenizer)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        segments = section_segments(doc.sections, len(doc.text))
        if self.max_size is None:
            return spans_to_chunks(doc, (span for span, _ in segments),
                                   levels=(level for _, level in segments))
        units = UnitIndex(doc.text, self.tokenizer)
        spans: list[Span] = []
        levels: list[int] = []
        for (start, end), level in segments:
            start, end = trim_span(doc.text, start, end)  # measure what the chunk would hold
            parts = ([(start, end)] if units.count(start, end) <= self.max_size
                     else pack_sentences(doc.text, start, end, doc.language, units, self.max_size))
            spans += parts
            levels += [level] * len(parts)
        return spans_to_chunks(doc, spans, levels=levels)
