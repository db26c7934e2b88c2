"""HiChunk's evidence recall (ERec): the length-weighted share of evidence sentences found
in the retrieved context after normalisation.

Normalisation is LongBench/SQuAD-style (lower-case, punctuation and English articles
removed, whitespace collapsed), applied to evidence and context alike. HiChunk's own
script additionally rewrites ". " to "." in the evidence only; we normalise both sides
the same way instead, so a multi-sentence evidence string can match a context that
keeps its spaces. Weights are the evidence strings' character lengths, as in HiChunk.
"""

from __future__ import annotations

import re
import string

from harness.metrics.base import QueryEval, QueryMetric

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def evidence_recall(evidence: list[str], context: str) -> float:
    """Length-weighted share of ``evidence`` strings contained in ``context``.

    Evidence that normalises to nothing (pure punctuation) cannot be found or missed and
    is left out; NaN when no evidence is left.
    """
    pairs = [(n, len(e)) for e in evidence if (n := normalize_answer(e.lstrip("# ")))]
    total = sum(w for _, w in pairs)
    if not total:
        return float("nan")
    ctx = normalize_answer(context)
    return sum(w for n, w in pairs if n in ctx) / total


class EvidenceRecall(QueryMetric):
    def keys(self) -> set[str]:
        return {"evidence_recall"}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        return {"evidence_recall": evidence_recall(item.evidence_texts, item.context.text)}
