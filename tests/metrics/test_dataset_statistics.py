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


def test_words_counts_english_as_whitespace_words():
    from harness.metrics.dataset_statistics import words

    assert words(TEXT) == len(TEXT.split()) == 10
    # an apostrophe inside a word and separators inside a number do not split it; a hyphen
    # does (10-K: 10, K) and punctuation alone ($) is no word
    assert words("Don't pay $1,234.56 for the 10-K.") == 7
    assert words("") == 0 and words(" ,.;$ | — ") == 0


def test_words_counts_each_cjk_character_without_punctuation():
    from harness.metrics.dataset_statistics import words

    assert words("我们在北京。") == 5          # 我 们 在 北 京; 。 is no word
    assert words("「你好」，世界！") == 4       # 你 好 世 界
    assert words("カードを買いました。") == 9    # カ ー ド を 買 い ま し た (ー is Katakana's)
    assert words("한국어 텍스트") == 6           # one word per Hangul syllable


def test_words_counts_mixed_text_both_ways():
    from harness.metrics.dataset_statistics import words

    # ChunkBench | 在 | 2026 | 年 发 布 了 | v2: 1 + 1 + 1 + 4 + 1
    assert words("ChunkBench 在 2026 年发布了 v2") == 8
    # with no spaces between the scripts: 数 据 集 | ChunkBench | 的 | 2.5 | 版
    assert words("数据集ChunkBench的2.5版") == 7


def test_one_cjk_character_no_longer_makes_english_count_characters():
    from harness.metrics.dataset_statistics import words

    english = " ".join(["The company reported revenue growth in every segment this year."] * 200)
    n = len(english.split())
    assert words(english) == n == 2000
    # before: one CJK character made the whole text count its 13,000 characters
    assert words(english + " 一") == n + 1
    assert words(english.replace("every", "every一", 1)) == n + 1
    row = DocumentStatistics()(Document("d", english + " 一"), [])
    assert row["doc_words"] == n + 1
