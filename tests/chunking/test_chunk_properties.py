"""Property tests: every chunker keeps the span contract on generated documents and parameters."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chunking.base import check_chunks
from harness.chunking.fixed import FixedSizeChunker
from harness.chunking.paragraph import ParagraphChunker
from harness.chunking.recursive import DEFAULT_SEPARATORS, STYLES, RecursiveChunker
from harness.chunking.section import SectionChunker
from harness.chunking.sentence import SentenceChunker, sentence_pieces
from harness.chunking.units import UnitIndex
from harness.text import Tokenizer
from harness.types import Document, Section

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAGMENTS = [
    "the ", "quick ", "brown ", "fox", "jumps", " ", "  ", "\t", ". ", "! ", "? ", ".", "\n", "\n\n",
    " \n \n", "Dr. ", "e.g. ", "3.14 ", "U.S.A. ", "The cat sat on the mat. ", "Is it? Yes! ",
    "数据", "分块", "检索", "。", "！", "？", "“引号”", "café ", "naïve ", "🙂", "---",
]

texts = st.builds(
    lambda parts, extra, times: ("".join(parts) + extra) * times,
    st.lists(st.sampled_from(FRAGMENTS), max_size=60),
    st.text(alphabet="ab .\n。？", max_size=12),
    st.integers(1, 3),  # repeated text: offsets must not be recovered by searching
)
languages = st.sampled_from(["en", "zh"])
documents = st.builds(lambda text, lang: Document("d", text, language=lang), texts, languages)


@st.composite
def sectioned_documents(draw):
    text = draw(texts)
    n = len(text)
    sections = []
    if n:
        for _ in range(draw(st.integers(0, 6))):
            start = draw(st.integers(0, n - 1))
            end = draw(st.integers(start + 1, n))
            sections.append(Section(start, end, draw(st.integers(1, 4))))
    return Document("d", text, sections=tuple(sections), language=draw(languages))


def size_and_overlap(max_size: int):
    return st.integers(1, max_size).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))


def over_budget(doc: Document, chunks, unit: str, size: int) -> list:
    """Chunks holding more than ``size`` units, counted on the whole document as the chunkers do
    (a model tokenizer may split a chunk's text differently when it starts mid-word)."""
    units = UnitIndex(doc.text, Tokenizer(unit))
    return [c for c in chunks if units.count(c.start, c.end) > size]


@FAST
@given(documents, st.sampled_from(["words", "chars"]), size_and_overlap(40))
def test_fixed_size(doc, unit, size_overlap):
    size, overlap = size_overlap
    chunks = FixedSizeChunker(size=size, overlap=overlap, unit=unit).chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap == 0)
    assert not over_budget(doc, chunks, unit, size)


@TOKENS
@given(documents, size_and_overlap(30))
def test_fixed_size_tokens(doc, size_overlap):
    size, overlap = size_overlap
    chunks = FixedSizeChunker(size=size, overlap=overlap, unit="tokens").chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap == 0)


def _check_sentence_packs(doc, chunks, size, unit):
    """A chunk over budget must be exactly one sentence (sentences are never cut)."""
    sentences = set(sentence_pieces(doc.text, 0, len(doc.text), doc.language))
    assert all((c.start, c.end) in sentences for c in over_budget(doc, chunks, unit, size))


@FAST
@given(documents, st.sampled_from(["words", "chars"]), st.integers(1, 40), st.integers(0, 3))
def test_sentence(doc, unit, size, overlap_sentences):
    chunks = SentenceChunker(size=size, overlap_sentences=overlap_sentences, unit=unit).chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap_sentences == 0)
    _check_sentence_packs(doc, chunks, size, unit)


@TOKENS
@given(documents, st.integers(1, 30), st.integers(0, 2))
def test_sentence_tokens(doc, size, overlap_sentences):
    chunker = SentenceChunker(size=size, overlap_sentences=overlap_sentences, unit="tokens")
    check_chunks(doc, chunker.chunk_document(doc), covering=overlap_sentences == 0)


separator_lists = st.one_of(
    st.sampled_from([list(seps) for seps in DEFAULT_SEPARATORS.values()]),
    st.lists(st.sampled_from(["\n\n", "\n", "。", ". ", " ", "", "a", "?"]), min_size=1, max_size=4),
)


@FAST
@given(documents, st.sampled_from(["words", "chars"]), size_and_overlap(40), separator_lists,
       st.sampled_from(STYLES))
def test_recursive(doc, unit, size_overlap, separators, style):
    size, overlap = size_overlap
    chunker = RecursiveChunker(size=size, overlap=overlap, unit=unit, separators=separators, style=style)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap == 0)
    # Cutting into units or characters is the last resort, so nothing stays over budget (a whole
    # word never counts more than the sum of its characters).
    if "" in separators:
        assert not over_budget(doc, chunks, unit, size)


# Characters a tokenizer may drop or merge: combining marks, variation selectors, joiners, emoji
# modifiers; a run of them inside a word makes the splitter cut between characters of length 0.
MARKS = ["e\u0301", "\u0301", "\ufe0f", "\u200d", "👍🏽", "👩\u200d💻", "数据", "a\u0308" * 5, "x" * 7]
marked = st.builds(lambda parts, times: "".join(parts) * times, st.lists(st.sampled_from(MARKS), max_size=40),
                   st.integers(1, 8)).map(lambda t: Document("d", t))


@TOKENS
@given(marked, size_and_overlap(8), st.sampled_from(STYLES))
def test_recursive_tokens_never_share_characters_without_overlap(doc, size_overlap, style):
    recursive_tokens(doc, size_overlap, style)


def recursive_tokens(doc, size_overlap, style) -> list:
    """The recursive chunker's chunks in tokens, checked: disjoint and covering without overlap."""
    size, overlap = size_overlap
    chunks = RecursiveChunker(size=size, overlap=overlap, unit="tokens", style=style).chunk_document(doc)
    check_chunks(doc, chunks, covering=overlap == 0)
    return chunks


def test_a_combining_mark_at_a_cut_stays_in_its_chunk():
    doc = Document("d", "e\u0301" * 300)   # 'e' is a token, the accent none (the bundled tokenizer drops it)
    chunks = RecursiveChunker(size=200).chunk_document(doc)
    assert [(c.start, c.end) for c in chunks] == [(0, 400), (400, 600)]
    check_chunks(doc, chunks, covering=True)


@TOKENS
@given(documents, size_and_overlap(30), st.sampled_from(STYLES))
def test_recursive_tokens(doc, size_overlap, style):
    chunks = recursive_tokens(doc, size_overlap, style)
    if style == "chunkbench":  # LangChain counts each piece alone, not the document's tokenization
        assert not over_budget(doc, chunks, "tokens", size_overlap[0])


@FAST
@given(documents, st.sampled_from(["words", "chars", "tokens"]), st.none() | st.integers(1, 30))
def test_paragraph(doc, unit, max_size):
    chunks = ParagraphChunker(max_size=max_size, unit=unit).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert not any(re.search(r"\n\s*\n", c.text) for c in chunks)


def _innermost_level(doc: Document, start: int, end: int) -> int:
    covering = [s for s in doc.sections if s.start <= start and end <= s.end]
    return min(covering, key=lambda s: (s.end - s.start, -s.level)).level if covering else 0


@FAST
@given(sectioned_documents(), st.sampled_from(["words", "chars", "tokens"]), st.none() | st.integers(1, 30))
def test_section(doc, unit, max_size):
    chunks = SectionChunker(max_size=max_size, unit=unit).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    edges = {b for s in doc.sections for b in (s.start, s.end)}
    for c in chunks:
        assert not any(c.start < b < c.end for b in edges), "a chunk crosses a section edge"
        assert c.level == _innermost_level(doc, c.start, c.end)
