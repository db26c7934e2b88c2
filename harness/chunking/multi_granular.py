"""LGMGC's Multi-Granular chunker, "MG" (Liu et al., "Logits-Guided Multi-Granular Chunker",
Sec. 3.2): parents of ``theta`` words by recursive splitting (LangChain's by default, the
paper's ref. [8]), each re-split into children
of ``theta/2`` and ``theta/4`` words that never cut a sentence.

Every granularity is searched, and a parent scores as the best of itself and its
children, which ``context.expand=root`` (``context=parent_max``) gives at assembly time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from harness.chunking.base import Chunker, require
from harness.chunking.recursive import RecursiveChunker
from harness.chunking.sentence import pack_sentences
from harness.chunking.units import Span, UnitIndex, require_int
from harness.types import Chunk, Document


class MultiGranularChunker(Chunker):
    """Level-1 parents of at most ``theta`` units (:class:`RecursiveChunker` of ``style``), each followed by
    its children: packs of whole sentences of at most ``theta // d`` units for each of
    ``divisors``, at levels 2, 3, ... in that order. A sentence longer than a child size
    stays whole, a child of its own over that size.

    Every child's ``parent_id`` is its level-1 parent, even at level 3: sentence packs of
    ``theta/4`` may straddle two ``theta/2`` packs, so only the parent surely contains
    them, and LGMGC scores parents only. Each level alone covers the text, so a child may
    repeat its parent's span (a short parent); the assembler never adds a chunk twice.

    ``theta`` is 200 as in the smallest of LGMGC's settings (200, 300, 500 words, Sec. 4
    "Baselines"), counted in ``words`` as the paper does; use ``chars`` or ``tokens`` for
    unspaced text such as Chinese, where a whitespace word is a whole sentence.
    """

    def __init__(self, theta: int = 200, divisors: Sequence[int] = (2, 4), unit: str = "words",
                 tokenizer: str = "bundled", style: str = "langchain"):
        require_int("theta", theta, 1)
        _require_divisors(divisors, theta)
        self._parents = RecursiveChunker(size=theta, unit=unit, tokenizer=tokenizer, style=style)
        self.theta, self.divisors = theta, tuple(divisors)
        self.tokenizer = self._parents.tokenizer

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.with_children(doc, self._parents.chunk_document(doc))

    def with_children(self, doc: Document, parents: Sequence[Chunk]) -> list[Chunk]:
        """``parents`` as level-1 chunks, each followed by its children (LGMGC passes the
        logits-guided chunks here)."""
        units = UnitIndex(doc.text, self.tokenizer)
        out: list[Chunk] = []
        for parent in parents:
            parent = replace(parent, chunk_id=f"{doc.doc_id}#{len(out)}", level=1)
            out.append(parent)
            for (start, end), level in self._children(doc, units, parent):
                out.append(Chunk(f"{doc.doc_id}#{len(out)}", doc.doc_id, doc.text[start:end],
                                 start, end, level, parent.chunk_id))
        return out

    def _children(self, doc: Document, units: UnitIndex, parent: Chunk) -> list[tuple[Span, int]]:
        """``(span, level)`` of the parent's children, ordered by start, coarser first on ties."""
        children = [(span, level)
                    for level, divisor in enumerate(self.divisors, start=2)
                    for span in pack_sentences(doc.text, parent.start, parent.end, doc.language,
                                               units, self.theta // divisor)]
        return sorted(children, key=lambda c: (c[0][0], c[1]))


def _require_divisors(divisors: Any, theta: int) -> None:
    """Divisors make the child sizes: increasing (each level finer), at most ``theta`` (size >= 1)."""
    ok = (not isinstance(divisors, (str, bytes)) and isinstance(divisors, Sequence)
          and all(isinstance(d, int) and not isinstance(d, bool) and 2 <= d <= theta for d in divisors)
          and all(a < b for a, b in zip(divisors, divisors[1:])))
    require(ok, f"chunker.divisors must be a list of increasing integers in [2, theta={theta}] "
                f"(got divisors={divisors!r})")
