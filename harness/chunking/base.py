"""The chunker interface and the one helper every chunker uses to turn spans into chunks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from itertools import repeat

from harness.text import trim_span
from harness.types import Chunk, ConfigError, Document


class Chunker(ABC):
    """Splits documents into chunks whose ``start/end`` point into ``doc.text``.

    ``chunk`` takes a batch so that LLM chunkers can batch their prompts; simple
    chunkers only implement ``chunk_document``. Constructors validate their
    parameters and raise :class:`ConfigError` naming the bad one, so a bad config
    fails before any work starts.
    """

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        return [self.chunk_document(d) for d in docs]

    @abstractmethod
    def chunk_document(self, doc: Document) -> list[Chunk]: ...


def spans_to_chunks(doc: Document, spans: Iterable[tuple[int, int]], level: int = 0, *,
                    levels: Iterable[int] | None = None) -> list[Chunk]:
    """Chunks for ``spans`` (in order), whitespace trimmed; whitespace-only spans are dropped.

    ``levels`` (one per span) replaces ``level`` when the chunks sit at different depths.
    """
    pairs = zip(spans, repeat(level)) if levels is None else zip(spans, levels, strict=True)
    chunks = []
    for (start, end), lvl in pairs:
        s, e = trim_span(doc.text, start, end)
        if s < e:
            chunks.append(Chunk(f"{doc.doc_id}#{len(chunks)}", doc.doc_id, doc.text[s:e], s, e, lvl))
    return chunks


def require(condition: bool, message: str) -> None:
    """Raise a ConfigError with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(message)


def check_chunks(doc: Document, chunks: Sequence[Chunk], *, covering: bool = False) -> None:
    """Raise ValueError naming the first chunk that breaks the span contract.

    Every chunk must be a non-blank, whitespace-trimmed span of ``doc.text`` whose text is
    that span, in document order. With ``covering`` (non-overlapping chunkers) the chunks
    must also be disjoint and leave out nothing but whitespace.
    """
    text, prev = doc.text, None
    for i, c in enumerate(chunks):
        where = f"document {doc.doc_id!r}, chunk {i} ({c.chunk_id!r}, span [{c.start}, {c.end}))"
        if c.doc_id != doc.doc_id:
            raise ValueError(f"{where}: doc_id is {c.doc_id!r}")
        if not 0 <= c.start < c.end <= len(text):
            raise ValueError(f"{where}: span not inside the text (length {len(text)})")
        if text[c.start:c.end] != c.text:
            raise ValueError(f"{where}: text differs from the span's text")
        if trim_span(text, c.start, c.end) != (c.start, c.end):
            raise ValueError(f"{where}: starts or ends with whitespace")
        if prev is not None and (c.start < prev.start or c.end < prev.end):
            raise ValueError(f"{where}: out of document order")
        if covering:
            gap_start = prev.end if prev is not None else 0
            if c.start < gap_start:
                raise ValueError(f"{where}: overlaps the previous chunk")
            if text[gap_start:c.start].strip():
                raise ValueError(f"{where}: non-whitespace text before it is in no chunk")
        prev = c
    if covering and text[prev.end if prev else 0:].strip():
        raise ValueError(f"document {doc.doc_id!r}: non-whitespace text after the last chunk is in no chunk")
