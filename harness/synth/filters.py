"""The report's two embedding filters, run once every question has been asked.

- Relevance: a question is dropped (with its excerpts) when its cosine similarity with any of its
  excerpts is below ``relevance_threshold`` (the report's "excerpt threshold": 0.40 to 0.43 per
  corpus with text-embedding-3-large).
- Duplicates: a question whose cosine similarity with a question kept before it exceeds
  ``duplicate_threshold`` is dropped (the report's 0.67 to 0.73); the first of a near-identical
  pair stays. Run after relevance, so a question dropped as irrelevant never removes another.

The thresholds were set for text-embedding-3-large; another embedder's similarities sit on
another scale, so they are settings (docs/synth.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def relevant(embedder, questions: Sequence[str], excerpts: Sequence[Sequence[str]], threshold: float) -> list[bool]:
    """Per question: every excerpt at least ``threshold`` similar to it."""
    if not questions:
        return []
    flat = [e for es in excerpts for e in es]
    q = embedder.encode(list(questions), desc="synth: embed questions")
    x = embedder.encode(flat, desc="synth: embed excerpts")
    out, i = [], 0
    for row, es in zip(q, excerpts):
        sims = x[i:i + len(es)] @ row
        out.append(bool(np.min(sims) >= threshold))
        i += len(es)
    return out


def not_duplicates(embedder, questions: Sequence[str], threshold: float) -> list[bool]:
    """Per question: not more than ``threshold`` similar to any question kept before it."""
    if not questions:
        return []
    q = embedder.encode(list(questions), desc="synth: embed questions")
    kept: list[int] = []
    out = []
    for i, row in enumerate(q):
        fresh = not kept or float(np.max(q[kept] @ row)) <= threshold
        out.append(fresh)
        if fresh:
            kept.append(i)
    return out
