"""Fixed-size windows of units, the baseline every chunking paper compares against."""

from __future__ import annotations

from harness.chunking.base import Chunker, require, spans_to_chunks
from harness.chunking.units import UnitIndex, make_tokenizer, require_int
from harness.types import Chunk, Document


class FixedSizeChunker(Chunker):
    """Windows of ``size`` units; consecutive windows share ``overlap`` units.

    A window runs from its first unit to the start of the unit after its last one
    (then whitespace trimmed), so non-overlapping windows cover the whole text.
    """

    def __init__(self, size: int = 200, overlap: int = 0, unit: str = "tokens",
                 tokenizer: str = "bundled"):
        require_int("size", size, 1)
        require_int("overlap", overlap, 0)
        require(overlap < size,
                f"chunker.overlap must be < chunker.size (got overlap={overlap}, size={size})")
        self.size, self.overlap = size, overlap
        self.tokenizer = make_tokenizer(unit, tokenizer)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        units = UnitIndex(doc.text, self.tokenizer)
        return spans_to_chunks(doc, self._windows(units))

    def _windows(self, units: UnitIndex):
        n, first = len(units), 0
        if n == 0:  # no unit: blank, or only characters the tokenizer drops (U+200F, U+00AD), still text
            yield 0, units.length
            return
        while first < n:
            last = min(first + self.size, n)  # exclusive
            yield units.boundary(first), units.boundary(last)
            if last == n:  # the next window would only repeat this one's tail
                return
            first += self.size - self.overlap
