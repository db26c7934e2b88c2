"""The chunker interface and the one helper every chunker uses to turn spans into chunks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from itertools import repeat

from harness.text import trim_span
from harness.types import PART_SEPARATOR, Chunk, ConfigError, Document


class Chunker(ABC):
    """Splits documents into chunks whose ``start/end`` point into ``doc.text``.

    ``chunk`` takes a batch so that LLM chunkers can batch their prompts; simple
    chunkers only implement ``chunk_document``. Constructors validate their
    parameters and raise :class:`ConfigError` naming the bad one, so a bad config
    fails before any work starts.
    """

    batch_size: int = 1  # documents per ``chunk`` call (LLM chunkers step several together)

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        return [self.chunk_document(d) for d in docs]

    @abstractmethod
    def chunk_document(self, doc: Document) -> list[Chunk]: ...

    def take_counts(self, doc_id: str) -> dict[str, int]:
        """What the chunker had to repair in ``doc_id`` since the last call (LLM chunkers count
        the fallbacks they take on unparsable output); stored with the document's chunks."""
        return {}


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

    Every text-view chunk must hold non-blank, whitespace-trimmed document text: its
    span's text, or for a non-contiguous chunk its disjoint, ordered parts joined by
    ``PART_SEPARATOR`` inside its hull; a ``rewritten`` chunk (QChunker's completion) holds
    non-blank text of its own over a trimmed source span. Chunks come in document order of their starts
    (a parent before the children that start with it). A ``parent_id`` must name an
    earlier or later chunk of the same list whose span contains the child's (for other
    views: the content chunk they describe). With ``covering``, the leaves (searchable
    text-view chunks no other chunk names as parent) must be disjoint and leave out nothing but
    whitespace. A tree summary (another view with ``children``, no parent: RAPTOR) has non-blank
    text and ordered, disjoint parts inside the text whose union is exactly its children's.
    """
    text, prev = doc.text, None
    by_id = {c.chunk_id: c for c in chunks}
    if len(by_id) != len(chunks):
        raise ValueError(f"document {doc.doc_id!r}: chunk ids are not unique")
    for i, c in enumerate(chunks):
        where = f"document {doc.doc_id!r}, chunk {i} ({c.chunk_id!r}, span [{c.start}, {c.end}))"
        if c.doc_id != doc.doc_id:
            raise ValueError(f"{where}: doc_id is {c.doc_id!r}")
        if not 0 <= c.start < c.end <= len(text):
            raise ValueError(f"{where}: span not inside the text (length {len(text)})")
        parent = by_id.get(c.parent_id) if c.parent_id is not None else None
        if c.parent_id is not None and (parent is None or not parent.start <= c.start < c.end <= parent.end):
            raise ValueError(f"{where}: parent {c.parent_id!r} is not a chunk containing it")
        if c.view != "text" and c.children:
            _check_tree_summary(text, c, by_id, where)
            continue
        if c.view != "text":
            if parent is None or (parent.start, parent.end) != (c.start, c.end):
                raise ValueError(f"{where}: a {c.view!r} view must carry its content chunk's span")
            continue
        if c.children:
            raise ValueError(f"{where}: only a summary node of another view has children")
        parts = c.parts or ((c.start, c.end),)
        if c.parts and (parts[0][0], parts[-1][1]) != (c.start, c.end):
            raise ValueError(f"{where}: parts {list(c.parts)} do not span [start, end)")
        for (s, e), nxt in zip(parts, [*parts[1:], None]):
            if not s < e or trim_span(text, s, e) != (s, e):
                raise ValueError(f"{where}: part [{s}, {e}) is empty or starts or ends with whitespace")
            if nxt is not None and nxt[0] < e:
                raise ValueError(f"{where}: parts overlap or are out of order")
        if c.rewritten:
            if c.parts or not c.text.strip():
                raise ValueError(f"{where}: a rewritten chunk needs one span and non-blank text")
        elif PART_SEPARATOR.join(text[s:e] for s, e in parts) != c.text:
            raise ValueError(f"{where}: text differs from the span's text")
        if prev is not None and c.start < prev.start:
            raise ValueError(f"{where}: out of document order")
        prev = c
    if covering:
        _check_covering(doc, chunks)


def _check_tree_summary(text: str, c: Chunk, by_id: dict[str, Chunk], where: str) -> None:
    if c.parent_id is not None or not c.text.strip():
        raise ValueError(f"{where}: a tree summary has text and no parent_id")
    parts = c.parts or ((c.start, c.end),)
    if (parts[0][0], parts[-1][1]) != (c.start, c.end) or \
            any(not s < e or nxt[0] < e for (s, e), nxt in zip(parts, [*parts[1:], (len(text), 0)])):
        raise ValueError(f"{where}: parts {list(c.parts)} are not ordered, disjoint spans of [start, end)")
    missing = [k for k in c.children if k not in by_id]
    if missing:
        raise ValueError(f"{where}: children {missing} are not chunks of the document")
    union = _merged((s.start, s.end) for k in c.children for s in by_id[k].spans)
    if union != _merged(parts):
        raise ValueError(f"{where}: its spans are not the union of its children's spans")


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _check_covering(doc: Document, chunks: Sequence[Chunk]) -> None:
    parents = {c.parent_id for c in chunks if c.view == "text"}
    leaves = sorted((s.start, s.end, c.chunk_id) for c in chunks
                    if c.view == "text" and c.indexed and c.chunk_id not in parents for s in c.spans)
    end = 0
    for s, e, cid in leaves:
        if s < end:
            raise ValueError(f"document {doc.doc_id!r}, chunk {cid!r}: [{s}, {e}) overlaps another leaf")
        if doc.text[end:s].strip():
            raise ValueError(f"document {doc.doc_id!r}, chunk {cid!r}: non-whitespace text before it is in no chunk")
        end = e
    if doc.text[end:].strip():
        raise ValueError(f"document {doc.doc_id!r}: non-whitespace text after the last chunk is in no chunk")
