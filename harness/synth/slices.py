"""Where each question is asked: slices of the corpus, one per LLM call.

The report shows the model "a random 4,000-character slice of a corpus". A slice here lies in one
document (its evidence spans are that document's). Where slices fall is a setting, drawn with the
run's seed:

- ``stratified`` (the default): the pooled corpus is cut into as many equal strata as questions and
  each slice is centred on a point drawn in its own stratum, so the questions cover every document
  in proportion to its length and every part of it, not the first pages;
- ``random``: each centre drawn uniformly from the pooled corpus (the report's draw; slices may
  repeat and some documents go unasked).

The draws are shuffled, so a run cut short still spreads its questions.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from harness.types import ConfigError, Document

SPREADS = ("stratified", "random")


@dataclass(frozen=True)
class Slice:
    doc_id: str
    start: int
    end: int


def plan_slices(documents: list[Document], n: int, size: int, spread: str, seed: int) -> list[Slice]:
    """``n`` slices of at most ``size`` characters (a shorter document is one whole slice)."""
    if spread not in SPREADS:
        raise ConfigError(f"synth.spread: one of {', '.join(SPREADS)}, got {spread!r}")
    rng = random.Random(seed)
    ends = list(accumulate(len(d.text) for d in documents))
    total = ends[-1]
    if spread == "random":
        points = [rng.randrange(total) for _ in range(n)]
    else:
        points = [min(total - 1, int((k + rng.random()) * total / n)) for k in range(n)]
        rng.shuffle(points)
    slices = []
    for p in points:
        i = bisect_right(ends, p)
        doc, offset = documents[i], p - (ends[i - 1] if i else 0)
        start = max(0, min(offset - size // 2, len(doc.text) - size))
        slices.append(Slice(doc.doc_id, start, min(len(doc.text), start + size)))
    return slices
