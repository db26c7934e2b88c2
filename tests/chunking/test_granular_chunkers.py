"""Sentence-count, LlamaIndex-style sentence splitting and LGMGC multi-granular chunkers:
hand-checked chunks, span-contract properties on generated documents, parameter checks
and the Hydra configs that build them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chunking.base import check_chunks
from harness.chunking.fixed import FixedSizeChunker
from harness.chunking.multi_granular import MultiGranularChunker
from harness.chunking.paragraph import ParagraphChunker
from harness.chunking.recursive import RecursiveChunker
from harness.chunking.sentence import sentence_pieces
from harness.chunking.fixed_sentences import SentenceCountChunker
from harness.chunking.sentence_splitter import SentenceSplitterChunker
from harness.chunking.units import UnitIndex
from harness.text import Tokenizer
from harness.types import ConfigError, Document
from tests.chunking.test_rule_chunkers import chunk
from tests.chunking.test_rule_chunkers import texts as texts_of  # chunk texts; `texts` here is a strategy

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAGMENTS = [
    "the ", "quick ", "brown ", "fox", "jumps", " ", "\t", ". ", "! ", "? ", ".", "\n", "\n\n",
    " \n \n", "Dr. ", "e.g. ", "3.14 ", "The cat sat on the mat. ", "Is it? Yes! ",
    "A much longer sentence with quite a few words in it for splitting. ",
    "数据", "分块", "检索", "。", "！", "“引号”", "café ", "🙂", "---",
]
texts = st.builds(lambda parts, times: "".join(parts) * times,
                  st.lists(st.sampled_from(FRAGMENTS), max_size=50), st.integers(1, 2))
documents = st.builds(lambda text, lang: Document("d", text, language=lang),
                      texts, st.sampled_from(["en", "zh"]))
units_wc = st.sampled_from(["words", "chars"])


def size_and_overlap(max_size: int):
    return st.integers(1, max_size).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))


def spans(chunks):
    return [(c.start, c.end) for c in chunks]


def sentences(doc: Document, start: int = 0, end: int | None = None):
    return sentence_pieces(doc.text, start, len(doc.text) if end is None else end, doc.language)


TEN = " ".join(f"Sentence {i} ends here." for i in range(1, 11))


# --- fixed_sentences -------------------------------------------------------------------------

def test_sentence_count_windows_share_overlap_sentences():
    got = texts_of(chunk(SentenceCountChunker(sentences=3, overlap=1), TEN))
    assert got == [" ".join(f"Sentence {i} ends here." for i in idx)
                   for idx in ([1, 2, 3], [3, 4, 5], [5, 6, 7], [7, 8, 9], [9, 10])]


def test_sentence_count_without_overlap_ignores_sentence_length():
    text = "A. This sentence is rather long compared with the others. B. C."
    assert texts_of(chunk(SentenceCountChunker(sentences=2), text)) == [
        "A. This sentence is rather long compared with the others.", "B. C."]


def test_sentence_count_chinese():
    text = "今天天气很好。我们去公园散步。公园里有很多人！大家都很开心。你呢？"
    assert texts_of(chunk(SentenceCountChunker(sentences=2), text, language="zh")) == [
        "今天天气很好。我们去公园散步。", "公园里有很多人！大家都很开心。", "你呢？"]


@FAST
@given(documents, size_and_overlap(5))
def test_sentence_count_properties(doc, size_overlap):
    n, overlap = size_overlap
    chunks = SentenceCountChunker(sentences=n, overlap=overlap).chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap == 0)
    pieces = sentences(doc)
    starts, ends = [s for s, _ in pieces], [e for _, e in pieces]
    windows = [(starts.index(c.start), ends.index(c.end) + 1) for c in chunks]
    step = n - overlap
    assert [first for first, _ in windows] == list(range(0, step * len(windows), step))
    assert all(last - first == n for first, last in windows[:-1])
    assert (windows[-1][1] if windows else 0) == len(pieces)  # the last window reaches the end


# --- sentence_splitter -----------------------------------------------------------------------

def test_sentence_splitter_overlap_repeats_whole_trailing_sentences():
    chunks = chunk(SentenceSplitterChunker(chunk_size=12, chunk_overlap=4, unit="words"), TEN)
    assert texts_of(chunks)[:2] == [
        "Sentence 1 ends here. Sentence 2 ends here. Sentence 3 ends here.",
        "Sentence 3 ends here. Sentence 4 ends here. Sentence 5 ends here."]
    assert texts_of(chunks)[-1] == "Sentence 9 ends here. Sentence 10 ends here."


def test_sentence_splitter_keeps_paragraphs_that_fit_together():
    # Packing sentences would fill the first chunk with "Dd ee ff." (8 words).
    text = "Aa bb. Cc.\n\nDd ee ff. Gg hh ii."
    assert texts_of(chunk(SentenceSplitterChunker(chunk_size=8, chunk_overlap=0, unit="words"), text)) == [
        "Aa bb. Cc.", "Dd ee ff. Gg hh ii."]


def test_sentence_splitter_cuts_only_sentences_too_long_by_words_then_units():
    # The long sentence's words are pieces like any other, merged greedily with their neighbours.
    text = "Short one. One two three four five six seven eight nine ten. End."
    assert texts_of(chunk(SentenceSplitterChunker(chunk_size=4, chunk_overlap=0, unit="words"), text)) == [
        "Short one. One two", "three four five six", "seven eight nine ten.", "End."]
    assert texts_of(chunk(SentenceSplitterChunker(chunk_size=4, chunk_overlap=0, unit="chars"), "abcdefghij")) == [
        "abcd", "efgh", "ij"]


def test_sentence_splitter_whole_document_that_fits_is_one_chunk():
    assert texts_of(chunk(SentenceSplitterChunker(chunk_size=100, chunk_overlap=10, unit="words"), TEN)) == [TEN]


def _fitting_sentences(doc: Document, units: UnitIndex, size: int):
    paragraphs = ParagraphChunker(unit="chars").paragraphs(doc.text)
    return [s for p in paragraphs for s in sentences(doc, *p) if units.count(*s) <= size]


def _check_sentence_splitter(doc, unit, size, overlap, tokenizer=None):
    chunks = SentenceSplitterChunker(chunk_size=size, chunk_overlap=overlap, unit=unit).chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap == 0)
    units = UnitIndex(doc.text, tokenizer or Tokenizer(unit))
    assert all(units.count(c.start, c.end) <= size for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        assert b.end > a.end  # every chunk adds new text
        assert b.start >= a.end or units.count(b.start, a.end) <= overlap
    for s, e in _fitting_sentences(doc, units, size):
        assert any(c.start <= s and e <= c.end for c in chunks), f"sentence [{s}, {e}) was cut"


@FAST
@given(documents, units_wc, size_and_overlap(30))
def test_sentence_splitter_properties(doc, unit, size_overlap):
    _check_sentence_splitter(doc, unit, *size_overlap)


@TOKENS
@given(documents, size_and_overlap(25))
def test_sentence_splitter_tokens(doc, size_overlap):
    _check_sentence_splitter(doc, "tokens", *size_overlap)


# --- multi_granular --------------------------------------------------------------------------

# Words per sentence: 4, 2, 1, 1, 4. theta=12: one parent; theta/2=6: [4 2][1 1 4];
# theta/4=3: [4][2 1][1][4], where [2 1] straddles the two theta/2 children.
MG_TEXT = "The cat sat down. It rained. Yes. No. Then we left home."


def test_multi_granular_levels_and_parent_links():
    chunks = chunk(MultiGranularChunker(theta=12), MG_TEXT)
    assert [(c.level, c.text) for c in chunks] == [
        (1, MG_TEXT),
        (2, "The cat sat down. It rained."), (3, "The cat sat down."), (3, "It rained. Yes."),
        (2, "Yes. No. Then we left home."), (3, "No."), (3, "Then we left home.")]
    assert [c.chunk_id for c in chunks] == [f"d#{i}" for i in range(7)]
    assert [c.parent_id for c in chunks] == [None] + ["d#0"] * 6
    assert all(c.indexed for c in chunks)


def test_multi_granular_parents_are_recursive_chunks():
    doc = Document("d", MG_TEXT + " " + MG_TEXT)
    chunks = MultiGranularChunker(theta=6, divisors=[2]).chunk_document(doc)
    parents = [c for c in chunks if c.level == 1]
    assert spans(parents) == spans(RecursiveChunker(size=6, unit="words").chunk_document(doc))
    assert {c.level for c in chunks} == {1, 2}


def test_multi_granular_chinese_in_chars():
    text = "今天天气很好。我们去公园散步。公园里有很多人！大家都很开心。"
    # LangChain's separators hold no "。": ChunkBench's style splits Chinese parents at sentence ends.
    chunks = chunk(MultiGranularChunker(theta=16, unit="chars", style="chunkbench"), text, language="zh")
    assert [(c.level, c.text) for c in chunks if c.level == 1] == [
        (1, "今天天气很好。我们去公园散步。"), (1, "公园里有很多人！大家都很开心。")]
    assert [c.text for c in chunks if c.level == 3][:2] == ["今天天气很好。", "我们去公园散步。"]


def _check_multi_granular(doc, chunks, theta, divisors, unit):
    check_chunks(doc, chunks)
    levels = range(1, len(divisors) + 2)
    assert {c.level for c in chunks} <= set(levels)
    by_id = {c.chunk_id: c for c in chunks}
    assert [c.chunk_id for c in chunks] == [f"d#{i}" for i in range(len(chunks))]
    assert all(c.indexed for c in chunks)
    for level in levels:  # each granularity alone covers the text
        check_chunks(doc, [replace(c, parent_id=None) for c in chunks if c.level == level], covering=True)
    units = UnitIndex(doc.text, Tokenizer(unit))
    parent = None
    for c in chunks:
        if c.level == 1:
            parent = c
            assert c.parent_id is None and units.count(c.start, c.end) <= theta
            continue
        assert by_id[c.parent_id] is parent  # children follow their parent, point at it
        size = theta // divisors[c.level - 2]
        assert units.count(c.start, c.end) <= size or (c.start, c.end) in sentences(doc, parent.start, parent.end)
    for a, b in zip(chunks, chunks[1:]):
        if b.level > 1 and a.level > 1:
            assert (a.start, a.level) < (b.start, b.level)


divisor_lists = st.sampled_from([[2, 4], [2], [3, 6, 12]])


@FAST
@given(documents, units_wc, st.integers(12, 40), divisor_lists)
def test_multi_granular_properties(doc, unit, theta, divisors):
    chunks = MultiGranularChunker(theta=theta, divisors=divisors, unit=unit).chunk_document(doc)
    _check_multi_granular(doc, chunks, theta, divisors, unit)


@TOKENS
@given(documents, st.integers(12, 30))
def test_multi_granular_tokens(doc, theta):
    chunks = MultiGranularChunker(theta=theta, unit="tokens").chunk_document(doc)
    _check_multi_granular(doc, chunks, theta, [2, 4], "tokens")


# --- all -------------------------------------------------------------------------------------

CHUNKERS = [
    lambda: SentenceCountChunker(sentences=2, overlap=1),
    lambda: SentenceSplitterChunker(chunk_size=5, chunk_overlap=2, unit="words"),
    lambda: MultiGranularChunker(theta=8),
]


@pytest.mark.parametrize("make", CHUNKERS)
@pytest.mark.parametrize("text", ["", "  \n\n ", "Word.", TEN, MG_TEXT])
def test_edge_documents_and_determinism(make, text):
    doc = Document("d", text)
    first = make().chunk_document(doc)
    assert first == make().chunk_document(doc)
    if not text.strip():
        assert first == []
    else:
        check_chunks(doc, first)


@pytest.mark.parametrize("make, problem", [
    (lambda: SentenceCountChunker(sentences=0), r"chunker\.sentences .*sentences=0"),
    (lambda: SentenceCountChunker(sentences=True), r"chunker\.sentences .*sentences=True"),
    (lambda: SentenceCountChunker(overlap=-1), r"chunker\.overlap .*overlap=-1"),
    (lambda: SentenceCountChunker(sentences=3, overlap=3), r"chunker\.overlap must be < .*overlap=3"),
    (lambda: SentenceSplitterChunker(chunk_size=0), r"chunker\.chunk_size .*chunk_size=0"),
    (lambda: SentenceSplitterChunker(chunk_size=10, chunk_overlap=10), r"chunker\.chunk_overlap .*=10"),
    (lambda: SentenceSplitterChunker(chunk_overlap=1.5), r"chunker\.chunk_overlap .*1\.5"),
    (lambda: SentenceSplitterChunker(unit="lines"), r"chunker\.unit .*'lines'"),
    (lambda: MultiGranularChunker(theta=0), r"chunker\.theta .*theta=0"),
    (lambda: MultiGranularChunker(divisors=[4, 2]), r"chunker\.divisors .*\[4, 2\]"),
    (lambda: MultiGranularChunker(divisors=[1, 2]), r"chunker\.divisors .*\[1, 2\]"),
    (lambda: MultiGranularChunker(theta=3, divisors=[2, 4]), r"chunker\.divisors .*theta=3"),
    (lambda: MultiGranularChunker(divisors="24"), r"chunker\.divisors .*'24'"),
    (lambda: MultiGranularChunker(unit="pages"), r"chunker\.unit .*'pages'"),
])
def test_bad_parameters_name_the_parameter_and_value(make, problem):
    with pytest.raises(ConfigError, match=problem):
        make()


@pytest.mark.parametrize("name, cls, params", [
    ("fixed_sentences", SentenceCountChunker, {"sentences": 5, "overlap": 0}),
    ("original", FixedSizeChunker, {"size": 200, "overlap": 0}),
    ("sentence_splitter", SentenceSplitterChunker, {"chunk_size": 1024, "chunk_overlap": 200}),
    ("multi_granular", MultiGranularChunker, {"theta": 200, "divisors": (2, 4)}),
])
def test_configs_build_the_chunker(make_cfg, name, cls, params):
    from harness.pipeline.components import build_components

    chunker = build_components(make_cfg(f"chunker={name}")).chunker
    assert type(chunker) is cls
    assert {k: getattr(chunker, k) for k in params} == params
