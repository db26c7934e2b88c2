"""BLEU, as HiChunk and QChunker compute it per answer, and sacreBLEU.

``bleu4_sentence`` (HiChunk ``metrics.py`` ``bleu_score``): NLTK's ``sentence_bleu`` with
weights (0.25, 0.25, 0.25, 0.25) and no smoothing, on ``str.split()`` tokens. Unsmoothed, a
prediction that misses every n-gram of some order scores ~0 (NLTK substitutes the smallest
float for the zero precision, ~1e-77 after the geometric mean). QChunker's Table 1 BLEU is
CRUD-RAG's ``bleu_score`` with ``with_penalty=True`` (``chunk.ipynb``): HF ``evaluate``'s
``bleu`` (the TensorFlow-NMT ``compute_bleu``, max order 4, no smoothing) on raw
``jieba.cut`` tokens, which is the same number as ``tokenizer="jieba"`` here (NMT returns 0
where NLTK returns ~1e-77).

``sacrebleu``: sacreBLEU's ``sentence_bleu`` per answer (exp smoothing, effective order, its
defaults), 0-1 scale; :func:`corpus_bleu` is sacreBLEU's corpus BLEU over a run's answers (a
report-level number: it is not a mean of per-answer scores).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from harness.metrics.answers import answer_inputs, best_over, nan_scores
from harness.metrics.base import QueryEval, QueryMetric
from harness.metrics.tokenizers import check_choice, get_tokenizer

SACREBLEU_TOKENIZERS = ("auto", "13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab", "flores101",
                        "flores200", "spm")


def sentence_bleu4(prediction: str, reference: str, tokenizer: str = "whitespace") -> float:
    """HiChunk's sentence BLEU-4 (NLTK, uniform weights, unsmoothed) on ``tokenizer`` tokens."""
    from nltk.translate.bleu_score import sentence_bleu

    tok = get_tokenizer(tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns on every zero n-gram count
        return float(sentence_bleu([tok(reference)], tok(prediction), weights=(0.25, 0.25, 0.25, 0.25)))


def _sacre_tokenize(tokenize: str, language: str) -> str:
    return ("zh" if language == "zh" else "13a") if tokenize == "auto" else tokenize


def sacrebleu_sentence(prediction: str, references: Sequence[str], tokenize: str = "13a") -> float:
    """sacreBLEU's sentence BLEU with all references at once, on a 0-1 scale."""
    import sacrebleu

    return sacrebleu.sentence_bleu(prediction, list(references), tokenize=tokenize).score / 100.0


def corpus_bleu(predictions: Sequence[str], references: Sequence[Sequence[str]], tokenize: str = "13a") -> float:
    """sacreBLEU corpus BLEU (0-1) of ``predictions``; ``references[i]`` are the gold answers
    of prediction ``i``, any number of them (shorter lists are padded with None, which
    sacreBLEU skips)."""
    import sacrebleu

    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")
    width = max((len(r) for r in references), default=0)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]
    return sacrebleu.corpus_bleu(list(predictions), streams, tokenize=tokenize).score / 100.0


class SentenceBleu(QueryMetric):
    """Sentence BLEU-4, best over gold answers. ``tokenizer``: ``whitespace`` (HiChunk), ``jieba``
    (QChunker/CRUD-RAG), ``jieba_words``, or ``auto`` (jieba for Chinese, else whitespace)."""

    def __init__(self, tokenizer: str = "whitespace", name: str = "bleu4_sentence"):
        self.tokenizer = check_choice(tokenizer, ("auto", "whitespace", "jieba", "jieba_words"), "tokenizer")
        self.name = name

    def keys(self) -> set[str]:
        return {self.name}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item)
        if inp is None:
            return nan_scores([self.name])
        tok = self.tokenizer
        if tok == "auto":
            tok = "jieba" if inp.language == "zh" else "whitespace"
        return {self.name: best_over(inp.golds, lambda g: sentence_bleu4(inp.prediction, g, tok))}


class SacreBleu(QueryMetric):
    """sacreBLEU sentence BLEU against all gold answers (sacreBLEU's own multi-reference rule).
    ``tokenize``: a sacreBLEU tokenizer, or ``auto`` (``zh`` for Chinese, else ``13a``)."""

    def __init__(self, tokenize: str = "auto", name: str = "sacrebleu"):
        self.tokenize = check_choice(tokenize, SACREBLEU_TOKENIZERS, "tokenize")
        self.name = name

    def keys(self) -> set[str]:
        return {self.name}

    def aggregate_keys(self) -> set[str]:
        return {f"{self.name}_corpus"}

    def aggregate(self, rows: Sequence[Mapping]) -> dict[str, float]:
        """Corpus BLEU over the run's answered queries, as ``<name>_corpus`` (NaN with none)."""
        answered = [r for r in rows if r.get("answer") is not None and r.get("gold_answers")]
        if not answered:
            return {f"{self.name}_corpus": float("nan")}
        tokenize = "13a" if self.tokenize == "auto" else self.tokenize
        return {f"{self.name}_corpus": corpus_bleu([r["answer"] for r in answered],
                                                   [r["gold_answers"] for r in answered], tokenize)}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item)
        if inp is None:
            return nan_scores([self.name])
        return {self.name: sacrebleu_sentence(inp.prediction, inp.golds, _sacre_tokenize(self.tokenize, inp.language))}
