"""Sentence packing (HiChunk's FC200): whole sentences merged up to a unit budget.

``pack_sentences`` is also how the paragraph and section chunkers sub-split long blocks.
"""

from __future__ import annotations

from harness.chunking.base import Chunker, spans_to_chunks
from harness.chunking.units import Span, UnitIndex, make_tokenizer, pack, require_int
from harness.text import sentence_spans, trim_span
from harness.types import Chunk, Document


def sentence_pieces(text: str, start: int, end: int, language: str) -> list[Span]:
    """Sentences of ``text[start:end]`` as trimmed, non-empty spans into ``text``.

    Each sentence runs up to the next one's start, so any text the splitter skipped
    stays attached to a sentence instead of falling out of every chunk.
    """
    found = sentence_spans(text[start:end], language)
    bounds = sorted({start, *(start + s for s, _ in found)}) + [end]
    pieces = (trim_span(text, a, b) for a, b in zip(bounds, bounds[1:]))
    return [(a, b) for a, b in pieces if a < b]


def pack_sentences(text: str, start: int, end: int, language: str, units: UnitIndex,
                   size: int, overlap_sentences: int = 0) -> list[Span]:
    """Spans of whole consecutive sentences holding at most ``size`` units each.

    A sentence longer than ``size`` is never cut: it becomes a span of its own.
    """
    return pack(sentence_pieces(text, start, end, language), units, size,
                overlap_pieces=overlap_sentences)


class SentenceChunker(Chunker):
    """Merges consecutive sentences while the chunk stays within ``size`` units.

    ``overlap_sentences`` trailing sentences of a chunk are repeated at the start of
    the next one, as far as they fit alongside at least one new sentence.
    """

    def __init__(self, size: int = 200, overlap_sentences: int = 0, unit: str = "tokens",
                 tokenizer: str = "bundled"):
        require_int("size", size, 1)
        require_int("overlap_sentences", overlap_sentences, 0)
        self.size, self.overlap_sentences = size, overlap_sentences
        self.tokenizer = make_tokenizer(unit, tokenizer)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        units = UnitIndex(doc.text, self.tokenizer)
        spans = pack_sentences(doc.text, 0, len(doc.text), doc.language, units,
                               self.size, self.overlap_sentences)
        return spans_to_chunks(doc, spans)
