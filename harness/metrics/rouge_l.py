"""ROUGE-L F in its two common implementations, kept apart because they disagree.

``rouge_l_py``: what the PyPI package ``rouge`` 1.0.1 (``Rouge().get_scores(...)["rouge-l"]["f"]``)
computes, which is what LongBench's ``rouge_score`` and HiChunk's ``metrics.py`` report
(HiChunk pins ``rouge==1.0.1``). It is *not* textbook ROUGE-L:

1. Each side is cut into "sentences" at every ``.``; pieces of length 0 are dropped *before*
   whitespace is collapsed, so a whitespace-only piece survives as the empty sentence, whose
   one word is ``""``. Words are the pieces split on single spaces.
2. Summary-level union LCS over word *types*: for every (reference sentence, prediction
   sentence) pair an LCS is traced back through the DP table (diagonal on a match, else up
   when the cell above is strictly larger, else left) and the words it picks are pooled in
   one set; ``llcs`` is the size of that set.
3. ``R = llcs / |set(reference words)|``, ``P = llcs / |set(prediction words)|``,
   ``F = 2PR / (P + R + 1e-8)``.

An empty side raises in the package; LongBench and HiChunk catch it and score 0, as here.
One divergence: the package traces back recursively, so a sentence pair longer than about
1,000 words together hits Python's recursion limit and LongBench scores it 0; this
implementation is iterative and gives the value the definition says. LongBench's Chinese
variant (``rouge_zh_score``) joins jieba tokens with spaces first (``tokenizer="jieba"``).

``rouge_l_google``: Google's ``rouge-score`` package (``RougeScorer(["rougeL"])``): one LCS over
token sequences, ``F = 2PR / (P + R)``. Its default tokenizer lower-cases and keeps only
``[a-z0-9]`` runs, so Chinese scores 0; ``tokenizer="jieba"`` passes raw jieba tokens instead,
as CRUD-RAG's ``rougeL_score`` (reused by QChunker for Table 1) does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from harness.metrics.answers import answer_inputs, best_over, nan_scores
from harness.metrics.base import QueryEval, QueryMetric
from harness.metrics.tokenizers import check_choice, get_tokenizer

IMPLEMENTATIONS = ("py", "google")
_TOKENIZERS = {"py": ("auto", "whitespace", "jieba"), "google": ("auto", "default", "jieba")}


def _sentences(text: str) -> list[list[str]]:
    """The ``rouge`` package's split: at ".", pieces kept if non-empty, then whitespace collapsed."""
    return [" ".join(p.split()).split(" ") for p in text.split(".") if len(p) > 0]


def _lcs_words(x: Sequence[str], y: Sequence[str]) -> set[str]:
    """The words of the LCS of ``x`` (reference) and ``y`` that the package's traceback picks."""
    n, m = len(x), len(y)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        xi, row, prev = x[i - 1], table[i], table[i - 1]
        for j in range(1, m + 1):
            row[j] = prev[j - 1] + 1 if xi == y[j - 1] else max(prev[j], row[j - 1])
    words: set[str] = set()
    i, j = n, m
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            words.add(x[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return words


def rouge_l_py(prediction: str, reference: str) -> float:
    """ROUGE-L F of the ``rouge`` 1.0.1 package (LongBench's ``rouge_score``); 0 when a side is empty."""
    hyp, ref = _sentences(prediction), _sentences(reference)
    if not hyp or not ref:
        return 0.0
    union: set[str] = set()
    for r in ref:
        for h in hyp:
            union |= _lcs_words(r, h)
    recall = len(union) / len({w for s in ref for w in s})
    precision = len(union) / len({w for s in hyp for w in s})
    return 2.0 * (precision * recall) / (precision + recall + 1e-8)


def rouge_l_py_zh(prediction: str, reference: str) -> float:
    """LongBench's ``rouge_zh_score``: jieba tokens joined by spaces, then :func:`rouge_l_py`."""
    from harness.metrics.tokenizers import jieba_tokens

    return rouge_l_py(" ".join(jieba_tokens(prediction)), " ".join(jieba_tokens(reference)))


class _TokenizerAdapter:
    """rouge-score wants an object with ``tokenize``."""

    def __init__(self, fn):
        self.tokenize = fn


@lru_cache(maxsize=8)
def _google_scorer(tokenizer: str, use_stemmer: bool):
    from rouge_score import rouge_scorer

    tok = None if tokenizer == "default" else _TokenizerAdapter(get_tokenizer(tokenizer))
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer, tokenizer=tok)


def rouge_l_google(prediction: str, reference: str, tokenizer: str = "default",
                   use_stemmer: bool = False) -> float:
    """ROUGE-L F of Google's ``rouge-score`` (``score(target=reference, prediction=...)``)."""
    check_choice(tokenizer, ("default", "jieba"), "tokenizer")
    return _google_scorer(tokenizer, use_stemmer).score(reference, prediction)["rougeL"].fmeasure


class RougeL(QueryMetric):
    """ROUGE-L F, best over gold answers.

    - ``implementation``: ``py`` (the ``rouge`` package: LongBench, HiChunk) or ``google``
      (``rouge-score``: CRUD-RAG/QChunker).
    - ``tokenizer``: ``auto`` (Chinese -> jieba, else the implementation's own), ``jieba``,
      ``whitespace`` (py) or ``default`` (google's own).
    - ``use_stemmer``: Porter stemming in google's default tokenizer.
    - ``name``: the score's key (default ``rouge_l_<implementation>``).
    """

    def __init__(self, implementation: str = "py", tokenizer: str = "auto", use_stemmer: bool = False,
                 name: str | None = None):
        self.implementation = check_choice(implementation, IMPLEMENTATIONS, "implementation")
        self.tokenizer = check_choice(tokenizer, _TOKENIZERS[implementation], "tokenizer")
        self.use_stemmer = bool(use_stemmer)
        self.name = name or f"rouge_l_{implementation}"

    def keys(self) -> set[str]:
        return {self.name}

    def _tokenizer_for(self, language: str) -> str:
        if self.tokenizer != "auto":
            return self.tokenizer
        if language == "zh":
            return "jieba"
        return "whitespace" if self.implementation == "py" else "default"

    def score(self, prediction: str, golds: Sequence[str], language: str = "en") -> float:
        tok = self._tokenizer_for(language)
        if self.implementation == "py":
            fn = rouge_l_py_zh if tok == "jieba" else rouge_l_py
            return best_over(golds, lambda g: fn(prediction, g))
        return best_over(golds, lambda g: rouge_l_google(prediction, g, tok, self.use_stemmer))

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item)
        if inp is None:
            return nan_scores([self.name])
        return {self.name: self.score(inp.prediction, inp.golds, inp.language)}
