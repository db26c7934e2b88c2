"""Recursive separator splitting in two styles, done on spans so repeated text keeps its true offsets.

``style: langchain`` is LangChain's ``RecursiveCharacterTextSplitter`` (``langchain_text_splitters``,
``character.py`` ``_split_text`` and ``base.py`` ``TextSplitter._merge_splits``, defaults
``keep_separator=True``, ``strip_whitespace=True``, literal separators), the "Recursive Chunker"
baseline of the papers (LGMGC ref. [8], Kamradt's LevelsOfTextSplitting tutorial, which runs it):

- the first separator found in the text (or ``""``) splits it; the separator starts the piece after it;
- ``""`` splits into characters, and pieces split by it, or by the last separator, are not split again;
- a piece is small when its length is ``< size``; other pieces are split with the later separators,
  or kept whole when none is left;
- runs of small pieces are merged greedily while the sum of their lengths stays ``<= size``; after a
  chunk, pieces are dropped from its front while their sum exceeds ``overlap`` (or leaves no room for
  the next piece), and the rest starts the next chunk;
- the length function (``unit``) counts each piece on its own, as LangChain's ``length_function``.

LangChain returns text; here a chunk is the span from its first piece to its last, whitespace
trimmed (LangChain strips merged chunks too; a piece kept whole is trimmed here, not there). One
departure: with ``overlap`` 0 the next chunk starts after the last piece of the one before, where
LangChain starts it at the pieces of length 0 that end it (a combining mark or variation selector
the tokenizer drops, whitespace): its chunks would share those characters, and these never do.

``style: chunkbench`` is ChunkBench's earlier splitter: a separator ends the piece before it, a
piece fits at ``<= size`` units counted on the document's tokenization, ``""`` splits into units,
and ``overlap`` repeats whole pieces (:func:`harness.chunking.units.pack`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate

from harness.chunking.base import Chunker, require, spans_to_chunks
from harness.chunking.units import Span, UnitIndex, make_tokenizer, pack, require_int
from harness.types import Chunk, Document

STYLES = ("langchain", "chunkbench")
# LangChain's default separators; ChunkBench's add Chinese and English sentence ends.
DEFAULT_SEPARATORS = {"langchain": ("\n\n", "\n", " ", ""),
                      "chunkbench": ("\n\n", "\n", "。", ". ", " ", "")}


class RecursiveChunker(Chunker):
    """Split on the first separator present, merge pieces up to ``size`` units, recurse into
    pieces still too long with the remaining separators (rules of ``style``: module docstring).

    ``separators`` null takes the style's default (:data:`DEFAULT_SEPARATORS`).
    """

    def __init__(self, size: int = 200, overlap: int = 0, unit: str = "tokens",
                 tokenizer: str = "bundled", separators: Sequence[str] | None = None,
                 style: str = "langchain"):
        require(style in STYLES, f"chunker.style must be one of {', '.join(STYLES)} (got style={style!r})")
        require_int("size", size, 1)
        require_int("overlap", overlap, 0)
        require(overlap < size,
                f"chunker.overlap must be < chunker.size (got overlap={overlap}, size={size})")
        separators = DEFAULT_SEPARATORS[style] if separators is None else separators
        # YAML lists arrive as ListConfig: accept any non-string sequence of strings.
        require(not isinstance(separators, str) and len(separators) > 0
                and all(isinstance(s, str) for s in separators),
                f"chunker.separators must be a non-empty list of strings (got separators={separators!r})")
        self.size, self.overlap, self.style = size, overlap, style
        self.separators = tuple(separators)
        self.tokenizer = make_tokenizer(unit, tokenizer)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        text, end = doc.text, len(doc.text)
        if self.style == "chunkbench":
            return spans_to_chunks(doc, self._split(text, UnitIndex(text, self.tokenizer), 0, end, self.separators))
        # Counts are a function of the piece's text: words and characters recur, so count each once.
        # A piece at or over `size` is only ever compared with it, so a lower bound that reaches
        # `size` settles it without counting (long pieces are split again and counted piece by piece).
        counts: dict[str, int] = {}
        size, at_least = self.size, self.tokenizer.at_least

        def lengths(pieces: list[str]) -> list[int]:
            new = set(pieces).difference(counts)
            over = [p for p in new if len(p) >= 6 * size and at_least(p, size) >= size]  # shorter: rarely settled
            counts.update(dict.fromkeys(over, size))
            new = list(new.difference(over))
            counts.update(zip(new, self.tokenizer.count_many(new)))
            return list(map(counts.__getitem__, pieces))
        return spans_to_chunks(doc, self._split_langchain(text, lengths, 0, end, self.separators))

    # --- style: langchain ---------------------------------------------------------------

    def _split_langchain(self, text: str, lengths: Callable[[list[str]], list[int]], start: int, end: int,
                         separators: tuple[str, ...]) -> list[Span]:
        """``RecursiveCharacterTextSplitter._split_text`` on ``text[start:end]``."""
        separator, rest = separators[-1], ()
        for i, sep in enumerate(separators):
            if sep == "" or text.find(sep, start, end) >= 0:
                separator, rest = sep, (separators[i + 1:] if sep else ())
                break
        spans: list[Span] = []
        pieces, texts = _pieces_led_by(text, start, end, separator)
        ns = lengths(texts)
        run = 0  # the pieces since the last large one, merged when the next large one (or the end) comes
        for i, n in enumerate(ns):
            if n < self.size:
                continue
            spans += self._merge_langchain(pieces, ns, run, i)
            run = i + 1
            spans += self._split_langchain(text, lengths, *pieces[i], rest) if rest else [pieces[i]]
        return spans + self._merge_langchain(pieces, ns, run, len(ns))

    def _merge_langchain(self, pieces: list[Span], ns: list[int], first: int, stop: int) -> list[Span]:
        """``TextSplitter._merge_splits`` of ``pieces[first:stop]`` (with lengths ``ns``), with the
        empty join separator that ``keep_separator`` uses; the current chunk is ``pieces[first:i]``."""
        spans: list[Span] = []
        size, overlap, total = self.size, self.overlap, 0
        for i in range(first, stop):
            n = ns[i]
            if total + n > size and i > first:
                spans.append((pieces[first][0], pieces[i - 1][1]))
                while total > overlap or (total + n > size and total > 0):
                    total -= ns[first]
                    first += 1
                if overlap == 0:  # pieces of length 0 (a combining mark the tokenizer drops) are
                    first = i     # this chunk's, not the next one's: LangChain would repeat them
            total += n
        if first < stop:
            spans.append((pieces[first][0], pieces[stop - 1][1]))
        return spans

    # --- style: chunkbench --------------------------------------------------------------

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


def _pieces_led_by(text: str, start: int, end: int, separator: str) -> tuple[list[Span], list[str]]:
    """Non-empty contiguous pieces of ``[start, end)``, each but the first starting with an occurrence
    of ``separator`` (non-overlapping, leftmost first, as ``str.split``), and their texts;
    ``""``: single characters."""
    segment = text[start:end]
    if separator == "":
        return [(i, i + 1) for i in range(start, end)], list(segment)
    first, *rest = segment.split(separator)
    texts = [first] * bool(first) + [separator + part for part in rest]
    bounds = list(accumulate(map(len, texts), initial=start))
    return list(zip(bounds, bounds[1:])), texts


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
