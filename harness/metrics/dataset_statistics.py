"""The papers' dataset-statistics tables (HiChunk Table 2, MC-indexing Table 1, Qu et al. Tables
4-5) as metrics, so that they are regenerated from runs like every other table.

Words are counted in any script, mixed text included (:func:`words`): each CJK character
is a word, and each run of other letters or digits is one; sentences come from the project's
sentence splitter. A run's means of these keys are the tables' per-document and per-question
averages; ``n_docs`` and ``n_queries`` are recorded by every run. The evidence of a question is its spans' text and what could not be aligned, joined.

With ``tokenizer`` set (a :class:`harness.text.Tokenizer` name: bundled, cl100k, a Hub id),
tokens are counted too: ``doc_tokens``, ``evidence_tokens`` and the run-level
``tokens_per_section``, the documents' tokens over their sections (a ratio of sums, as
MC-indexing's Table 1 reads: its tokens/sec is its tokens/doc over its sections/doc).
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

from harness.metrics.base import DocumentMetric, QueryEval, QueryMetric
from harness.text import Tokenizer, is_cjk, sentence_spans
from harness.types import Chunk, Document

NAN = float("nan")


# A CJK character: a letter or digit of the Han, Hiragana or Katakana script (Script_Extensions,
# so the iteration mark 々, the prolonged sound mark ー and 〇 count; the punctuation those scripts
# share, 、。「」 and the like, is not a letter) or a precomposed Hangul syllable.
_CJK_CHAR = r"[\p{L}\p{N}]&&[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]"
_HANGUL_SYLLABLE = r"\uac00-\ud7a3"
# Any other letter (with its combining marks) or digit.
_LETTER = rf"[[\p{{L}}\p{{M}}\p{{N}}]--[{_CJK_CHAR}]--[{_HANGUL_SYLLABLE}]]"
_WORDS = regex.compile(
    rf"[{_CJK_CHAR}]|[{_HANGUL_SYLLABLE}]"
    # a run of letters/digits; an apostrophe inside a word (don't) and . or , between digits
    # (1,234.56) do not end it, as in Unicode's word segmentation (UAX #29)
    rf"|{_LETTER}+(?:(?:['\u2019]|(?<=\p{{N}})[.,](?=\p{{N}})){_LETTER}+)*",
    regex.V1)


def words(text: str) -> int:
    """Words of ``text`` in any script, mixed text included: each CJK character (Han, Hiragana,
    Katakana, Hangul syllables; CJK punctuation excluded) is one word, as LongBench counts
    Chinese, and each run of other letters or digits is one word, e.g. 8 in
    "ChunkBench 在 2026 年发布了 v2" (ChunkBench, 在, 2026, 年, 发, 布, 了, v2). Punctuation and
    symbols alone are no word ("$", "|", "—"). Before, one CJK character anywhere made the
    whole text count its characters: an English 10-K with three stray 一 counted 253,700.
    """
    return sum(1 for _ in _WORDS.finditer(text))


class DocumentStatistics(DocumentMetric):
    """Sentences, words and gold sections of each document."""

    KEYS = ("doc_sentences", "doc_words", "doc_sections")

    def __init__(self, tokenizer: str | None = None):
        self.tokenizer = Tokenizer("tokens", tokenizer) if tokenizer else None

    def __call__(self, doc: Document, chunks: Sequence[Chunk]) -> dict[str, float]:
        row = {"doc_sentences": float(len(sentence_spans(doc.text, doc.language))),
               "doc_words": float(words(doc.text)), "doc_sections": float(len(doc.sections))}
        if self.tokenizer:
            row["doc_tokens"] = float(self.tokenizer.count(doc.text))
        return row

    def keys(self) -> set[str]:
        return set(self.KEYS) | ({"doc_tokens"} if self.tokenizer else set())

    def aggregate(self, rows: Sequence[dict[str, float]]) -> dict[str, float]:
        if not self.tokenizer:
            return {}
        sections = sum(r["doc_sections"] for r in rows)
        return {"tokens_per_section": sum(r["doc_tokens"] for r in rows) / sections if sections else NAN}

    def aggregate_keys(self) -> set[str]:
        return {"tokens_per_section"} if self.tokenizer else set()


class QueryStatistics(QueryMetric):
    """Words of each question, of its gold answers (their mean) and of its evidence, and the
    evidence's sentences; NaN where a question has no answer or no evidence."""

    KEYS = ("question_words", "answer_words", "evidence_words", "evidence_sentences")

    def __init__(self, tokenizer: str | None = None):
        self.tokenizer = Tokenizer("tokens", tokenizer) if tokenizer else None

    def __call__(self, item: QueryEval) -> dict[str, float]:
        q = item.query
        answers = [words(a) for a in q.answers]
        evidence = " ".join(item.evidence_texts)
        language = "zh" if is_cjk(evidence) else "en"
        row = {"question_words": float(words(q.question)),
               "answer_words": sum(answers) / len(answers) if answers else NAN,
               "evidence_words": float(words(evidence)) if evidence else NAN,
               "evidence_sentences": float(len(sentence_spans(evidence, language))) if evidence else NAN}
        if self.tokenizer:
            row["evidence_tokens"] = float(self.tokenizer.count(evidence)) if evidence else NAN
        return row

    def keys(self) -> set[str]:
        return set(self.KEYS) | ({"evidence_tokens"} if self.tokenizer else set())
