"""Aligning an evidence snippet to a character span of a document.

Datasets give evidence as text ("this sentence supports the answer"); metrics need it as a
span of ``Document.text``, because chunk ids mean nothing across chunkers. Matchers are tried
in order (exact, then normalised); each first searches the caller's window (e.g. the evidence
page) and then the whole text, so repeated text resolves to the occurrence the dataset meant.

Every span returned is in ORIGINAL text offsets: the normalised matcher searches a normalised
copy of the text that carries, for each of its characters, the original span it came from.

Extension point: a later matcher (fuzzy alignment) is one function with the ``Matcher``
signature appended to ``MATCHERS``; ``AlignmentReport`` picks its name up on its own.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

# Typographic variants that differ between a PDF parse and a hand-typed snippet.
_FOLD = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
})
# Printable ASCII other than space maps to itself: copied in bulk, which keeps a
# 1M-character document fast to normalise.
_PLAIN_RUN = re.compile(r"[!-~]+")


@dataclass(frozen=True)
class NormalisedText:
    """``text`` normalised; character ``i`` of it came from original ``[starts[i], ends[i])``."""

    text: str
    starts: array  # typecode "q": compact for long documents, and bisect works on it
    ends: array


def _fold(piece: str) -> str:
    return unicodedata.normalize("NFKC", piece).translate(_FOLD)


def _cluster_end(text: str, i: int) -> int:
    """End of the character at ``i`` plus the combining marks after it: NFKC composes
    across them ("e" + acute -> "é"), so they must be normalised together."""
    j = i + 1
    while j < len(text) and unicodedata.combining(text[j]):
        j += 1
    return j


def normalise_with_map(text: str) -> NormalisedText:
    """NFKC, curly->straight quotes and dashes, whitespace runs -> one space; with offsets."""
    out: list[str] = []
    starts = array("q")
    ends = array("q")
    i, n = 0, len(text)
    while i < n:
        run = _PLAIN_RUN.match(text, i)
        if run:
            j = run.end()
            if j < n and unicodedata.combining(text[j]):
                j -= 1  # the run's last letter belongs to the cluster that follows
            if j > i:
                out.append(text[i:j])
                starts.extend(range(i, j))
                ends.extend(range(i + 1, j + 1))
                i = j
                continue
        j = _cluster_end(text, i)
        for ch in _fold(text[i:j]):
            if ch.isspace():
                if out and out[-1] == " ":
                    ends[-1] = j  # fold the run into the space already emitted
                    continue
                ch = " "
            out.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    return NormalisedText("".join(out), starts, ends)


def normalise(text: str) -> str:
    """The normalised form used for matching, with outer whitespace removed."""
    return normalise_with_map(text).text.strip()


@lru_cache(maxsize=8)
def _normalised_doc(text: str) -> NormalisedText:
    # Many snippets are aligned against the same document: normalise it once.
    return normalise_with_map(text)


# A matcher finds ``snippet`` in ``text`` wholly inside ``[lo, hi)``: (start, end) or None.
Matcher = Callable[[str, str, int, int], "tuple[int, int] | None"]


def match_exact(text: str, snippet: str, lo: int, hi: int) -> tuple[int, int] | None:
    i = text.find(snippet, lo, hi)
    return (i, i + len(snippet)) if i >= 0 else None


def match_normalised(text: str, snippet: str, lo: int, hi: int) -> tuple[int, int] | None:
    needle = normalise(snippet)
    if not needle:
        return None
    doc = _normalised_doc(text)
    # Output characters whose source lies wholly inside [lo, hi).
    a, b = bisect_left(doc.starts, lo), bisect_right(doc.ends, hi)
    i = doc.text.find(needle, a, b)
    while i >= 0:
        k = i + len(needle) - 1
        # Reject a match that starts or ends inside one source character's expansion
        # (e.g. inside the "fi" of a ligature): its original span would not normalise back.
        starts_clean = i == 0 or doc.starts[i - 1] != doc.starts[i]
        ends_clean = k + 1 == len(doc.starts) or doc.starts[k + 1] != doc.starts[k]
        if starts_clean and ends_clean:
            return doc.starts[i], doc.ends[k]
        i = doc.text.find(needle, i + 1, b)
    return None


MATCHERS: list[tuple[str, Matcher]] = [
    ("exact", match_exact),
    ("normalised", match_normalised),
]


def align_evidence(text: str, snippet: str, search_from: int = 0,
                   search_to: int | None = None) -> tuple[int, int, str] | None:
    """``(start, end, method)`` with ``text[start:end]`` the snippet's occurrence, or None.

    Each matcher tries the window ``[search_from, search_to)`` first, then the whole text,
    before the next (looser) matcher is tried.
    """
    if not snippet or not snippet.strip():
        return None
    n = len(text)
    lo = max(0, min(search_from, n))
    hi = n if search_to is None else max(lo, min(search_to, n))
    windows = [(lo, hi)] if (lo, hi) == (0, n) else [(lo, hi), (0, n)]
    for method, matcher in MATCHERS:
        for w_lo, w_hi in windows:
            span = matcher(text, snippet, w_lo, w_hi)
            if span is not None:
                return span[0], span[1], method
    return None


@dataclass
class AlignmentReport:
    """Counts how each snippet was aligned, so the unaligned share is always reported."""

    counts: Counter = field(default_factory=Counter)

    def add(self, result: tuple[int, int, str] | None) -> tuple[int, int, str] | None:
        self.counts[result[2] if result else "unaligned"] += 1
        return result

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_report(self, prefix: str = "evidence") -> dict[str, float]:
        """``{prefix}_total``, and per method ``{prefix}_{method}`` (count) and
        ``{prefix}_{method}_share``; every method appears, even at zero."""
        total = self.total
        report: dict[str, float] = {f"{prefix}_total": total}
        for method in [m for m, _ in MATCHERS] + ["unaligned"]:
            n = self.counts.get(method, 0)
            report[f"{prefix}_{method}"] = n
            report[f"{prefix}_{method}_share"] = n / total if total else 0.0
        return report
