"""Dataset statistics (HiChunk Table 2, MC-indexing Table 1): counts per document and question,
and tokens when a tokenizer is named."""

import math

import pytest

from harness.metrics.dataset_statistics import DocumentStatistics
from harness.text import Tokenizer
from harness.types import ConfigError, Document, Section

TEXT = "Alpha beta gamma. Delta epsilon.\n\nZeta eta theta iota. Kappa."


def doc(doc_id: str, sections: int) -> Document:
    half = TEXT.index("\n\n")
    parts = [(0, half), (half + 2, len(TEXT))][:sections]
    return Document(doc_id, TEXT, sections=tuple(Section(s, e, 1) for s, e in parts))


def test_words_sentences_and_sections_without_tokens():
    m = DocumentStatistics()
    row = m(doc("d", 2), [])
    assert row == {"doc_sentences": 4.0, "doc_words": 10.0, "doc_sections": 2.0}
    assert set(row) == m.keys() and m.aggregate([row]) == {} and m.aggregate_keys() == set()


def test_tokens_per_section_is_a_ratio_of_sums():
    m = DocumentStatistics(tokenizer="cl100k")
    n = Tokenizer("tokens", "cl100k").count(TEXT)
    rows = [m(doc("a", 2), []), m(doc("b", 1), [])]
    assert rows[0]["doc_tokens"] == n and set(rows[0]) == m.keys()
    # MC-indexing's tokens/sec is tokens/doc over sections/doc: 2n tokens in 3 sections, not (n/2 + n) / 2
    assert m.aggregate(rows) == {"tokens_per_section": pytest.approx(2 * n / 3)}
    assert math.isnan(m.aggregate([m(doc("c", 0), [])])["tokens_per_section"])


def test_an_unknown_tokenizer_is_a_config_error():
    with pytest.raises(ConfigError, match="no_such_tokenizer"):
        DocumentStatistics(tokenizer="no_such_tokenizer")
