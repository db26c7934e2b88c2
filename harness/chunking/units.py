"""What the size-bounded chunkers share: parameter checks, unit counting by offset, greedy packing.

Spans are half-open ``(start, end)`` character offsets into the document text.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from harness.chunking.base import require
from harness.llm.tokens import tokenizer_for
from harness.text import TOKEN_UNITS, Tokenizer
from harness.types import ConfigError

Span = tuple[int, int]


def require_int(name: str, value: Any, minimum: int) -> None:
    """Check that ``chunker.<name>`` is an integer >= ``minimum`` (bools are not sizes)."""
    require(isinstance(value, int) and not isinstance(value, bool) and value >= minimum,
            f"chunker.{name} must be an integer >= {minimum} (got {name}={value!r})")


def require_optional_size(name: str, value: Any) -> None:
    """Check that ``chunker.<name>`` is null (no limit) or a positive integer."""
    if value is not None:
        require(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                f"chunker.{name} must be null or an integer >= 1 (got {name}={value!r})")


def make_tokenizer(unit: str, name: str) -> Tokenizer:
    """The tokenizer for ``chunker.unit``/``chunker.tokenizer``, failing at config time, not mid-run."""
    require(unit in TOKEN_UNITS,
            f"chunker.unit must be one of {', '.join(TOKEN_UNITS)} (got unit={unit!r})")
    require(isinstance(name, str) and bool(name),
            f"chunker.tokenizer must be a non-empty string (got tokenizer={name!r})")
    try:
        return tokenizer_for(unit, name)
    except ConfigError as e:  # a missing or broken model: the message starts with `tokenizer=...`
        raise type(e)(f"chunker.{e}") from e  # Unavailable (not downloaded) stays a status


class UnitIndex:
    """Where each unit of one text starts, so counting the units of any span is two bisections.

    The text is tokenized once; chunkers then size candidate chunks by offset instead of
    re-tokenizing every candidate. A unit belongs to the span its first character is in.
    The starts stay an array until something bisects them: windows by unit number (the
    fixed-size chunker) read a few entries and never build the list.
    """

    def __init__(self, text: str, tokenizer: Tokenizer):
        self.length = len(text)
        self._array: np.ndarray | range
        if tokenizer.unit == "chars":
            self._array = range(len(text))  # no per-character list for long documents
        else:
            starts = tokenizer.starts(text)
            # Model offsets are non-decreasing in practice; bisection relies on it, so make sure.
            self._array = starts if (starts[1:] >= starts[:-1]).all() else np.sort(starts)

    @cached_property
    def starts(self) -> Sequence[int]:
        return self._array if isinstance(self._array, range) else self._array.tolist()

    def __len__(self) -> int:
        return len(self._array)

    def count(self, start: int, end: int) -> int:
        """Number of units starting in ``[start, end)``."""
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def boundary(self, i: int) -> int:
        """Cut point before unit ``i``: 0 for the first unit, the text end past the last.

        Cutting at consecutive boundaries partitions the text, so characters that belong
        to no unit (whitespace, characters a model tokenizer drops) are never lost.
        """
        if i <= 0:
            return 0
        return int(self._array[i]) if i < len(self._array) else self.length

    def cuts(self, start: int, end: int) -> list[int]:
        """Unit starts strictly inside ``(start, end)``: cutting there leaves one unit per piece."""
        return list(self.starts[bisect_right(self.starts, start):bisect_left(self.starts, end)])


def pack(pieces: Sequence[Span], units: UnitIndex, size: int, *,
         overlap_pieces: int = 0, overlap_units: int = 0) -> list[Span]:
    """Greedily merge consecutive pieces into spans of at most ``size`` units.

    Pieces are never cut, so a piece larger than ``size`` becomes a span of its own.
    Each span may repeat the tail of the previous one: up to ``overlap_pieces`` whole
    pieces, or whole pieces holding up to ``overlap_units`` units (give one of the two).
    Overlap is dropped where it would leave no room for the next new piece, so every
    span adds new text and the loop always advances.
    """
    def may_repeat(piece: int, nxt: int) -> bool:
        """Whether the overlap may reach back to ``piece`` (it ends just before ``nxt``)."""
        if overlap_pieces:
            return nxt - piece <= overlap_pieces
        return overlap_units > 0 and units.count(pieces[piece][0], pieces[nxt - 1][1]) <= overlap_units

    spans: list[Span] = []
    prev_first, nxt = 0, 0  # first piece of the previous span; first piece not yet emitted
    while nxt < len(pieces):
        first = nxt
        # Step back into the previous span for the overlap. Never to its first piece: the
        # previous span stopped because it could not also hold piece ``nxt``.
        while first - 1 > prev_first and may_repeat(first - 1, nxt):
            first -= 1
        while first < nxt and units.count(pieces[first][0], pieces[nxt][1]) > size:
            first += 1
        last = nxt
        while last + 1 < len(pieces) and units.count(pieces[first][0], pieces[last + 1][1]) <= size:
            last += 1
        spans.append((pieces[first][0], pieces[last][1]))
        prev_first, nxt = first, last + 1
    return spans
