"""Hand-checked chunks, parameter validation and edge documents for the rule-based chunkers."""

from __future__ import annotations


import pytest

from harness.chunking.base import check_chunks
from harness.chunking.fixed import FixedSizeChunker
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.paragraph import ParagraphChunker
from harness.chunking.recursive import RecursiveChunker
from harness.chunking.section import SectionChunker, section_segments
from harness.chunking.sentence import SentenceChunker
from harness.types import ConfigError, Document, Section
from tests.conftest import CONFIGS

CHUNKER_CONFIGS = CONFIGS / "chunker"


def texts(chunks):
    return [c.text for c in chunks]


def chunk(chunker, text, **doc):
    d = Document("d", text, **doc)
    chunks = chunker.chunk_document(d)
    check_chunks(d, chunks)
    return chunks


# --- hand-checked chunks -------------------------------------------------------------------

def test_fixed_words_with_overlap():
    chunks = chunk(FixedSizeChunker(size=3, overlap=1, unit="words"), "a b c d e")
    assert texts(chunks) == ["a b c", "c d e"]
    assert [(c.start, c.end) for c in chunks] == [(0, 5), (4, 9)]
    assert [c.chunk_id for c in chunks] == ["d#0", "d#1"]


def test_fixed_words_last_window_is_shorter():
    assert texts(chunk(FixedSizeChunker(size=2, unit="words"), "a b c d e")) == ["a b", "c d", "e"]


def test_fixed_chars():
    assert texts(chunk(FixedSizeChunker(size=4, unit="chars"), "abcdefghij")) == ["abcd", "efgh", "ij"]
    assert texts(chunk(FixedSizeChunker(size=4, overlap=2, unit="chars"), "abcdefghij")) == [
        "abcd", "cdef", "efgh", "ghij"]


def test_fixed_tokens():
    assert texts(chunk(FixedSizeChunker(size=2, unit="tokens"), "Hello, world!")) == ["Hello,", "world!"]


SENTENCES = "One two three. Four five. Six seven eight nine. Ten.\n\nEleven twelve. Thirteen."


def test_sentence_merges_up_to_size():
    assert texts(chunk(SentenceChunker(size=5, unit="words"), SENTENCES)) == [
        "One two three. Four five.", "Six seven eight nine. Ten.", "Eleven twelve. Thirteen."]


def test_sentence_overlap_repeats_trailing_sentences_that_fit():
    # "Four five." cannot lead the second chunk: with "Six seven eight nine." it would be 6 words.
    assert texts(chunk(SentenceChunker(size=5, overlap_sentences=1, unit="words"), SENTENCES)) == [
        "One two three. Four five.", "Six seven eight nine. Ten.", "Ten.\n\nEleven twelve. Thirteen."]


def test_sentence_overlap_larger_than_chunks_still_advances():
    chunks = chunk(SentenceChunker(size=3, overlap_sentences=5, unit="words"), "Aa bb. Cc. Dd. Ee ff.")
    assert texts(chunks) == ["Aa bb. Cc.", "Cc. Dd.", "Dd. Ee ff."]


def test_sentence_never_cuts_a_long_sentence():
    text = "Short one. This sentence has far more than four words in it. End."
    assert texts(chunk(SentenceChunker(size=4, unit="words"), text)) == [
        "Short one.", "This sentence has far more than four words in it.", "End."]


def test_recursive_splits_paragraphs_then_words():
    text = "aaa bbb\n\nccc ddd eee fff"
    assert texts(chunk(RecursiveChunker(size=2, unit="words"), text)) == ["aaa bbb", "ccc ddd", "eee fff"]


def test_recursive_overlap_in_units():
    chunker = RecursiveChunker(size=3, overlap=1, unit="words", separators=[" "])
    assert texts(chunk(chunker, "a b c d e")) == ["a b c", "c d e"]


def test_recursive_empty_separator_cuts_by_units():
    assert texts(chunk(RecursiveChunker(size=3, unit="chars", separators=[""]), "abcdefg")) == [
        "abc", "def", "g"]


def test_recursive_keeps_an_unsplittable_piece_whole():
    assert texts(chunk(RecursiveChunker(size=2, unit="words", separators=["\n"]), "a b c")) == ["a b c"]


def test_recursive_accepts_yaml_list_of_separators():
    from omegaconf import OmegaConf

    separators = OmegaConf.create({"s": ["\n\n", " "]}).s
    chunker = RecursiveChunker(size=2, unit="words", separators=separators)
    assert texts(chunk(chunker, "a b\n\nc d e")) == ["a b", "c d", "e"]


# LangChain's RecursiveCharacterTextSplitter (style="langchain", the default) against ChunkBench's
# earlier splitter (style="chunkbench"), hand-worked from LangChain's rules (recursive.py docstring).

def _both(text, **kw):
    return {style: texts(chunk(RecursiveChunker(style=style, **kw), text)) for style in ("langchain", "chunkbench")}


def test_recursive_langchain_puts_the_separator_before_the_next_piece():
    # LangChain: pieces "aaa" " bbb" " ccc" (3, 4, 4 chars): 3 + 4 <= 7, + 4 > 7.
    # ChunkBench: pieces "aaa " "bbb " "ccc" (4, 4, 3): 4 + 4 > 7, then 4 + 3 <= 7.
    assert _both("aaa bbb ccc", size=7, unit="chars", separators=[" ", ""]) == {
        "langchain": ["aaa bbb", "ccc"], "chunkbench": ["aaa", "bbb ccc"]}


def test_recursive_langchain_overlap_drops_pieces_from_the_front():
    # LangChain: after "a b c" (1+2+2 = 5 chars) the front is dropped while the sum exceeds 2
    # ("a", " b": 5 -> 2), so " c" (2) starts the next chunk: every chunk repeats one piece.
    # ChunkBench: pieces "a " .. "e " (2 each), "f" (1); one piece repeated, so "d " "e " "f" (5) last.
    assert _both("a b c d e f", size=5, overlap=2, unit="chars", separators=[" "]) == {
        "langchain": ["a b c", "c d", "d e", "e f"], "chunkbench": ["a b", "b c", "c d", "d e f"]}


def test_recursive_langchain_small_is_below_size_and_counts_each_piece():
    # size 1 word: LangChain's "ab" (1 word) is not < 1, so it is split into characters, each a
    # word of its own when counted alone; ChunkBench keeps "ab " (1 word <= 1) whole.
    assert _both("ab cd", size=1, unit="words", separators=[" ", ""]) == {
        "langchain": ["a", "b", "c", "d"], "chunkbench": ["ab", "cd"]}


def test_recursive_langchain_recurses_with_later_separators_only():
    # "\n\n" first; the long second paragraph goes on with "\n" (its leading "\n\n" yields the
    # whitespace piece "\n", dropped), then " ": "\nSecond" + " para" (7 + 5) fit 15, " here." not.
    text = "Hello world.\n\nSecond para here."
    chunks = chunk(RecursiveChunker(size=15, unit="chars"), text)
    assert texts(chunks) == ["Hello world.", "Second para", "here."]
    assert [(c.start, c.end) for c in chunks] == [(0, 12), (14, 25), (26, 31)]


def test_recursive_langchain_keeps_true_offsets_of_repeated_text():
    text = "ab ab ab ab"  # pieces "ab" " ab" " ab" " ab": 2 + 3 fit 6, then 3 + 3
    chunks = chunk(RecursiveChunker(size=6, unit="chars"), text)
    assert [(c.text, c.start) for c in chunks] == [("ab ab", 0), ("ab ab", 6)]


def test_paragraph_warns_once_about_a_long_single_paragraph(caplog):
    text = "\n".join(["A line of a paragraph set apart by a single newline."] * 200)
    with caplog.at_level("WARNING", logger="harness.chunking.paragraph"):
        assert len(ParagraphChunker(unit="words").chunk_document(Document("book", text))) == 1
        ParagraphChunker(unit="words").chunk_document(Document("note", "Short.\nText."))
        assert len(ParagraphChunker(pattern="\n", unit="words").chunk_document(Document("lines", text))) == 200
    assert [r.getMessage() for r in caplog.records] == [
        "paragraph chunker: document 'book' is one paragraph of 10599 characters: chunker.pattern "
        "'\\n\\s*\\n' finds no break (paragraphs on single lines need chunker.pattern='\\n')"]


def test_paragraph_splits_on_blank_lines():
    text = "First para,\nstill first.\n\n  \n Second.\n\nThird"
    assert texts(chunk(ParagraphChunker(unit="words"), text)) == [
        "First para,\nstill first.", "Second.", "Third"]


def test_paragraph_custom_pattern_keeps_the_matched_text():
    assert texts(chunk(ParagraphChunker(pattern="---", unit="words"), "a---b")) == ["a---", "b"]


def test_paragraph_max_size_packs_long_paragraphs_by_sentence():
    assert texts(chunk(ParagraphChunker(max_size=4, unit="words"), SENTENCES)) == [
        "One two three.", "Four five.", "Six seven eight nine.", "Ten.", "Eleven twelve. Thirteen."]


SECTIONED = "Preamble. # A intro. ## B body. A again. # C last."
#            0         10        20        30        40      48
SECTIONS = (Section(10, 41, 1, "A"), Section(20, 31, 2, "B"), Section(41, 50, 1, "C"))


def test_section_one_chunk_per_smallest_section():
    chunks = chunk(SectionChunker(unit="words"), SECTIONED, sections=SECTIONS)
    assert [(c.text, c.level) for c in chunks] == [
        ("Preamble.", 0), ("# A intro.", 1), ("## B body.", 2), ("A again.", 1), ("# C last.", 1)]


def test_section_max_size_sub_splits_and_keeps_the_level():
    text = "Alpha beta. Gamma delta. Epsilon."
    chunks = chunk(SectionChunker(max_size=2, unit="words"), text, sections=(Section(0, len(text), 3),))
    assert [(c.text, c.level) for c in chunks] == [("Alpha beta.", 3), ("Gamma delta.", 3), ("Epsilon.", 3)]


def test_section_without_sections_is_one_chunk():
    assert [(c.text, c.level) for c in chunk(SectionChunker(unit="words"), " a. b. ")] == [("a. b.", 0)]


def test_section_segments_pick_the_innermost_section():
    # Shortest covering section wins; on equal length ([2, 6) vs [4, 8)) the deeper level.
    sections = [Section(0, 10, 1), Section(0, 10, 2), Section(2, 6, 1), Section(4, 8, 3)]
    assert section_segments(sections, 12) == [
        ((0, 2), 2), ((2, 4), 1), ((4, 6), 3), ((6, 8), 3), ((8, 10), 2), ((10, 12), 0)]


# --- parameter validation ------------------------------------------------------------------

@pytest.mark.parametrize("make, message", [
    (lambda: FixedSizeChunker(size=0), "chunker.size must be an integer >= 1 (got size=0)"),
    (lambda: FixedSizeChunker(size=-5), "chunker.size"),
    (lambda: FixedSizeChunker(size=True), "chunker.size"),
    (lambda: FixedSizeChunker(size=200, overlap=200),
     "chunker.overlap must be < chunker.size (got overlap=200, size=200)"),
    (lambda: FixedSizeChunker(overlap=-1), "chunker.overlap must be an integer >= 0 (got overlap=-1)"),
    (lambda: FixedSizeChunker(unit="lines"),
     "chunker.unit must be one of tokens, words, chars, hichunk_words (got unit='lines')"),
    (lambda: FixedSizeChunker(tokenizer="/no/such/tokenizer"), "chunker.tokenizer"),
    (lambda: SentenceChunker(size=0), "chunker.size"),
    (lambda: SentenceChunker(overlap_sentences=-1), "chunker.overlap_sentences must be an integer >= 0"),
    (lambda: SentenceChunker(unit="pages"), "chunker.unit must be one of tokens, words, chars"),
    (lambda: RecursiveChunker(size=10, overlap=10), "chunker.overlap must be < chunker.size"),
    (lambda: RecursiveChunker(overlap=-3), "chunker.overlap"),
    (lambda: RecursiveChunker(separators=[]), "chunker.separators must be a non-empty list of strings"),
    (lambda: RecursiveChunker(separators="\n"), "chunker.separators"),
    (lambda: RecursiveChunker(separators=["\n", 3]), "chunker.separators"),
    (lambda: RecursiveChunker(unit="bytes"), "chunker.unit"),
    (lambda: RecursiveChunker(style="llamaindex"),
     "chunker.style must be one of langchain, chunkbench (got style='llamaindex')"),
    (lambda: ParagraphChunker(pattern="("), "chunker.pattern is not a valid regular expression"),
    (lambda: ParagraphChunker(pattern=r"\s*"), "chunker.pattern must not match the empty string"),
    (lambda: ParagraphChunker(max_size=0), "chunker.max_size must be null or an integer >= 1"),
    (lambda: SectionChunker(max_size=-1), "chunker.max_size"),
    (lambda: SectionChunker(unit="Words"), "chunker.unit"),
])
def test_bad_parameters_name_the_parameter(make, message):
    with pytest.raises(ConfigError) as err:
        make()
    assert message in str(err.value)


# --- every chunker: edge documents, determinism, repeated text -----------------------------

CHUNKERS = {
    "fixed": lambda unit, size=8: FixedSizeChunker(size=size, overlap=2, unit=unit),
    "sentence": lambda unit, size=8: SentenceChunker(size=size, overlap_sentences=1, unit=unit),
    "recursive": lambda unit, size=8: RecursiveChunker(size=size, overlap=2, unit=unit),
    "paragraph": lambda unit, size=8: ParagraphChunker(max_size=size, unit=unit),
    "section": lambda unit, size=8: SectionChunker(max_size=size, unit=unit),
}
OVERLAPPING = {"fixed", "sentence", "recursive"}


@pytest.fixture(params=sorted(CHUNKERS))
def name(request):
    return request.param


@pytest.mark.parametrize("text", ["", "   \n\t \n\n  "], ids=["empty", "whitespace"])
def test_blank_documents_give_no_chunks(name, text):
    assert CHUNKERS[name]("words").chunk_document(Document("d", text)) == []


@pytest.mark.parametrize("unit", ["words", "chars", "tokens"])
def test_one_sentence(name, unit):
    text = "  Just one short sentence.\n"
    assert [(c.text, c.start, c.end) for c in chunk(CHUNKERS[name](unit, size=30), text)] == [
        ("Just one short sentence.", 2, 26)]


def test_chinese_document(name):
    text = "分块是检索增强生成的第一步。句子在句号处结束！问号也结束句子吗？是的。最后一句没有标点"
    doc = Document("d", text, language="zh", sections=(Section(0, 14, 1), Section(14, len(text), 1)))
    chunks = CHUNKERS[name]("chars").chunk_document(doc)
    check_chunks(doc, chunks, covering=name not in OVERLAPPING)
    assert len(chunks) > 1


def test_chinese_sentences_are_never_cut():
    text = "今天天气很好。我们去公园吧！你去吗？好"
    chunks = chunk(SentenceChunker(size=6, unit="chars"), text, language="zh")
    assert texts(chunks) == ["今天天气很好。", "我们去公园吧！", "你去吗？好"]


@pytest.mark.parametrize("unit", ["tokens", "words"])
@pytest.mark.parametrize("text", ["\u200f", "\u00ad\u200f\u00ad", "\u200f \u00ad\n\u200f"],
                         ids=["rlm", "soft-hyphens", "spaced"])
def test_a_document_of_characters_the_tokenizer_drops_is_covered(name, unit, text):
    """No token, no word: still text (not whitespace), so it is in a chunk (issue 51, item 10)."""
    doc = Document("d", text)
    chunks = CHUNKERS[name](unit).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert chunks and chunks[0].start == 0


@pytest.mark.slow
def test_a_run_on_a_document_the_tokenizer_drops_covers_it(tmp_path):
    from tests.user_folder import chunkbench_run, recorded, user_folder

    folder = user_folder(tmp_path, [{"doc_id": "d1", "text": "\u200f\u00ad\u200f\u00ad"}],
                         [{"qid": "q1", "question": "what?", "answers": ["x"], "doc_ids": ["d1"]}])
    out = chunkbench_run(folder, "chunker=fixed", "chunker.unit=tokens")
    assert out.returncode == 0, out.stderr[-3000:]
    assert recorded(folder)[0].data.metrics["n_chunks"] == 1


def test_same_input_gives_identical_chunks(name):
    doc = Document("d", SENTENCES * 3, sections=(Section(5, 60, 1), Section(20, 40, 2)))
    chunker = CHUNKERS[name]("tokens")
    assert chunker.chunk_document(doc) == chunker.chunk_document(doc)
    assert CHUNKERS[name]("tokens").chunk_document(doc) == chunker.chunk_document(doc)


def test_repeated_text_gets_true_offsets(name):
    sentence = "The cat sat on the mat. "
    doc = Document("d", sentence * 50)
    chunks = CHUNKERS[name]("words").chunk_document(doc)
    check_chunks(doc, chunks, covering=name not in OVERLAPPING)
    assert chunks[-1].end == len(doc.text) - 1  # found where it is, not at the first occurrence


def test_repeated_sentences_each_at_their_own_offset():
    sentence = "The cat sat. "
    chunks = chunk(SentenceChunker(size=3, unit="words"), sentence * 20)
    assert [(c.text, c.start) for c in chunks] == [("The cat sat.", 13 * i) for i in range(20)]


PARAGRAPH = ("Retrieval-augmented generation splits documents into chunks before indexing them. "
             "Dr. Smith measured recall on 3.5 million passages, e.g. news and law! "
             "Was the chunk size too small? Nobody knew.\n"
             "A second line follows the first one in the same paragraph.\n\n")


@pytest.fixture(scope="module")
def long_document():
    text = (PARAGRAPH * (1_000_000 // len(PARAGRAPH) + 1))[:1_000_000]
    step = len(PARAGRAPH)
    # One level-1 section per ten paragraphs, a level-2 section per paragraph inside it.
    sections = [Section(s, min(s + 10 * step, len(text)), 1) for s in range(0, len(text), 10 * step)]
    sections += [Section(s, min(s + step - 2, len(text)), 2) for s in range(0, len(text), step)]
    return Document("long", text, sections=tuple(sections))


def test_million_character_document(name, long_document):
    chunker = {
        "fixed": FixedSizeChunker(size=200, overlap=20, unit="words"),
        "sentence": SentenceChunker(size=200, overlap_sentences=1, unit="words"),
        "recursive": RecursiveChunker(size=200, overlap=20, unit="words"),
        "paragraph": ParagraphChunker(max_size=30, unit="words"),
        "section": SectionChunker(max_size=30, unit="words"),
    }[name]
    # A quadratic step would show as a suite that takes minutes (speed is measured in scripts/).
    chunks = chunker.chunk_document(long_document)
    check_chunks(long_document, chunks, covering=name not in OVERLAPPING)
    assert len(chunks) > 500


def test_million_character_unspaced_chinese_document():
    # sentencex alone is quadratic here (over a minute); sentence_spans feeds it in blocks.
    text = ("分块是检索增强生成的第一步。句子在句号处结束！问号也结束句子吗？是的" * 30_000)[:1_000_000]
    doc = Document("zh", text, language="zh")
    chunks = SentenceChunker(size=200, unit="chars").chunk_document(doc)
    check_chunks(doc, chunks, covering=True)


# --- the shipped configs build the chunkers they name --------------------------------------

@pytest.mark.parametrize("config", sorted(p.stem for p in CHUNKER_CONFIGS.glob("*.yaml") if p.stem != "custom"))
def test_config_instantiates(config, make_cfg):
    from harness.pipeline.components import build_component

    # Composed as a run would be: some chunkers interpolate other groups (${embedder}).
    chunker = build_component(make_cfg(f"chunker={config}").chunker, "chunker")
    if isinstance(chunker, LLMChunker) or getattr(chunker, "llm", None) is not None:
        # built with the run's model; real-model runs are in test_llm*.py
        assert chunker.llm is not None
        return
    check_chunks(Document("d", SENTENCES), chunker.chunk_document(Document("d", SENTENCES)))


def test_the_custom_template_builds_the_class_it_is_given(make_cfg):
    from harness.pipeline.components import build_component

    with pytest.raises(ConfigError, match=r"chunker._target_: name the class"):
        build_component(make_cfg("chunker=custom").chunker, "chunker")
    built = build_component(make_cfg("chunker=custom", "chunker._target_=harness.chunking.fixed.FixedSizeChunker",
                                     "++chunker.size=50").chunker, "chunker")
    assert built.size == 50
