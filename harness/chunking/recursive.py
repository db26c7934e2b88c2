"""LangChain-style recursive splitting, done on spans so repeated text keeps its true offsets."""

from __future__ import annotations

from collections.abc import Sequence

from harness.chunking.base import Chunker, require, spans_to_chunks
from harness.chunking.units import Span, UnitIndex, make_tokenizer, pack, require_int
from harness.types import Chunk, Document

DEFAULT_SEPARATORS = ("\n\n", "\n", "。", ". ", " ", "")


class RecursiveChunker(Chunker):
    """Split on the first separator present, pack pieces up to ``size`` units, recurse into
    pieces still too long with the remaining separators.

    A separator stays attached to the piece before it. ``""`` splits into single units.
    A piece still too long when the separators run out is kept whole, as in LangChain.
    ``overlap`` units of whole pieces are repeated between consecutive packed chunks.
    """

    def __init__(self, size: int = 200, overlap: int = 0, unit: str = "tokens",
                 tokenizer: str = "bundled", separators: Sequence[str] = DEFAULT_SEPARATORS):
        require_int("size", size, 1)
        require_int("overlap", overlap, 0)
        require(overlap < size,
                f"chunker.overlap must be < chunker.size (got overlap={overlap}, size={size})")
        # YAML lists arrive as ListConfig: accept any non-string sequence of strings.
        require(not isinstance(separators, str) and len(separators) > 0
                and all(isinstance(s, str) for s in separators),
                f"chunker.separators must be a non-empty list of strings (got separators={separators!r})")
        self.size, self.overlap = size, overlap
        self.separators = tuple(separators)
        self.tokenizer = make_tokenizer(unit, tokenizer)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        units = UnitIndex(doc.text, self.tokenizer)
        return spans_to_chunks(doc, self._split(doc.text, units, 0, len(doc.text), self.separators))

    def _split(self, text: str, units: UnitIndex, start: int, end: int,
               separators: tuple[str, ...]) -> list[Span]:
        found = next((i for i, sep in enumerate(separators)
                      if sep == "" or text.find(sep, start, end) >= 0), None)
        if found is None:
            return [(start, end)]
        separator, rest = separators[found], separators[found + 1:]
        spans: list[Span] = []
        small: list[Span] = []  # consecutive pieces that fit, waiting to be packed
        for piece in _pieces(text, units, start, end, separator):
            if units.count(*piece) <= self.size:
                small.append(piece)
                continue
            spans += pack(small, units, self.size, overlap_units=self.overlap)
            small = []
            spans += self._split(text, units, *piece, rest)
        return spans + pack(small, units, self.size, overlap_units=self.overlap)


def _pieces(text: str, units: UnitIndex, start: int, end: int, separator: str) -> list[Span]:
    """Contiguous pieces of ``[start, end)``, each ending just after an occurrence of ``separator``."""
    if separator == "":
        cuts = units.cuts(start, end)
    else:
        # Separator positions come from searching inside [start, end), so they are true offsets.
        cuts = []
        at = text.find(separator, start, end)
        while at >= 0:
            cut = at + len(separator)
            if cut < end:
                cuts.append(cut)
            at = text.find(separator, cut, end)
    bounds = [start, *cuts, end]
    return list(zip(bounds, bounds[1:]))
