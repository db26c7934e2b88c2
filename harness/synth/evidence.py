"""Placing a question's excerpts in its document: the report accepts an excerpt "only if it is an
exact full-text match in the corpus", and rejects the question with all its excerpts if any one
is not.

``match=exact`` (the default) is that rule: each span's text equals its excerpt, character for
character. ``match=fuzzy`` is a named relaxation through the loaders' aligner
(:mod:`harness.data.align`: exact, then normalised, then fuzzy at ``fuzzy_min_score``); an excerpt
placed other than exactly is recorded with how far the span's text is from it (the edit distance,
in characters), so a set built that way says so question by question.

Each excerpt is looked for in the slice it was asked about first, then in the rest of its
document (the aligner's window, then the whole text).
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from harness.data.align import align_evidence, configured_matchers, match_exact
from harness.synth.slices import Slice
from harness.types import ConfigError, Span

MATCHES = ("exact", "fuzzy")


@dataclass(frozen=True)
class Placed:
    span: Span
    excerpt: str
    method: str     # exact | normalised | fuzzy
    distance: int   # edit distance between the excerpt and the span's text (0 when exact)


class ExcerptMatcher:
    def __init__(self, match: str = "exact", fuzzy_min_score: float = 90.0):
        if match not in MATCHES:
            raise ConfigError(f"synth.match: one of {', '.join(MATCHES)}, got {match!r}")
        self.match = match
        self.matchers = [("exact", match_exact)] if match == "exact" else configured_matchers(fuzzy_min_score)

    def place(self, text: str, where: Slice, excerpts: tuple[str, ...]) -> list[Placed] | None:
        """A span per excerpt, in order (one span for excerpts placed on the same text), or None
        when any excerpt is not in the document."""
        placed: dict[tuple[int, int], Placed] = {}
        for excerpt in excerpts:
            found = align_evidence(text, excerpt, where.start, where.end, self.matchers)
            if found is None:
                return None
            start, end, method = found
            distance = 0 if method == "exact" else Levenshtein.distance(excerpt, text[start:end])
            placed.setdefault((start, end), Placed(Span(where.doc_id, start, end), excerpt, method, distance))
        return list(placed.values())
