"""What every answer-quality metric shares: reading the answer, the gold answers and the
language off a :class:`QueryEval`, and the NaN rule.

A query without an answer (retrieval-only run) or without gold answers scores NaN under every
name the metric emits, so the keys never change from query to query. With several gold
answers, a score is the best over them (LongBench's ``scorer``: ``max`` over
``ground_truths``), unless a metric's reference implementation says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from harness.metrics.base import QueryEval
from harness.text import is_cjk

NAN = float("nan")


@dataclass(frozen=True)
class AnswerInputs:
    prediction: str
    golds: tuple[str, ...]
    language: str  # "zh" or "en"


def nan_scores(names: Iterable[str]) -> dict[str, float]:
    return {n: NAN for n in names}


def query_language(item: QueryEval) -> str:
    """"zh" when any of the query's documents is Chinese; else the documents' language; with no
    document to ask, "zh" when the question or the gold answers contain CJK characters."""
    langs = [item.documents[d].language for d in item.query.doc_ids if d in item.documents]
    if any(lang.startswith("zh") for lang in langs):
        return "zh"
    if langs:
        return "en"
    texts = (item.query.question, *item.query.answers)
    return "zh" if any(is_cjk(t) for t in texts) else "en"


def answer_inputs(item: QueryEval, need_gold: bool = True) -> AnswerInputs | None:
    """The prediction, gold answers and language; None when the query cannot be scored."""
    if item.answer is None or (need_gold and not item.query.answers):
        return None
    return AnswerInputs(item.answer.text, tuple(item.query.answers), query_language(item))


def best_over(golds: Sequence[str], score: Callable[[str], float]) -> float:
    """max over gold answers, starting from 0 as LongBench does."""
    best = 0.0
    for g in golds:
        best = max(best, score(g))
    return best
