"""Size and budget units in tiktoken's encodings (cl100k, o200k) beside the bundled WordPiece:
exact counts and character spans on non-ASCII text, offline loading, and what a chunker and a
budget make of the difference."""

import hashlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.chunking.fixed import FixedSizeChunker
from harness.data.gutenqa import GutenQA
from harness.data.ohrbench import OHRBench
from harness.retrieval.assemblers import TokenBudgetAssembler
from harness.text import Tokenizer, _tiktoken
from harness.types import Chunk, ConfigError, Document, Retrieved

CJK = "你好，世界！😀"  # 7 characters, 22 UTF-8 bytes


def test_cl100k_splits_characters_across_tokens_and_spans_stay_exact():
    # cl100k's bytes: 你 | 好 | ， | e4 b8 | 96 (世) | 界 | ！ | f0 9f 98 | 80 (😀): nine tokens. A
    # character split across tokens lies in the span of the token that completes it; the
    # token holding only its first bytes gets the empty span at its start.
    tok = Tokenizer("tokens", "cl100k")
    assert tok.count(CJK) == 9
    assert tok.spans(CJK) == [(0, 1), (1, 2), (2, 3), (3, 3), (3, 4), (4, 5), (5, 6), (6, 6), (6, 7)]
    # A prefix of at most n tokens never ends inside a character: 4 tokens keep "你好，".
    assert tok.cut(CJK, 4) == 3 and tok.cut(CJK, 5) == 4


def test_o200k_counts_chinese_in_fewer_tokens_than_cl100k():
    # o200k's bytes: 你好 | ， | 世界 | ！ | 😀: five tokens, each on character boundaries.
    tok = Tokenizer("tokens", "o200k")
    assert tok.count(CJK) == 5
    assert tok.spans(CJK) == [(0, 2), (2, 3), (3, 5), (5, 6), (6, 7)]


def test_token_spans_start_at_the_word_not_its_leading_space():
    text = "Tokenization of naïve café"
    # cl100k: "Token" "ization" " of" " naï" "ve" " café"; spans skip the space, as WordPiece's do.
    assert Tokenizer("tokens", "cl100k").spans(text) == [(0, 5), (5, 12), (13, 15), (16, 19), (19, 21), (22, 26)]
    # WordPiece (uncased, accents stripped): token ##ization of naive cafe.
    assert Tokenizer("tokens", "bundled").spans(text) == [(0, 5), (5, 12), (13, 15), (16, 21), (22, 26)]
    # Whitespace-only tokens keep their whole span: " " "two" " " "spaces" "\n\n" ...
    assert Tokenizer("tokens", "cl100k").spans("  two  spaces\n\nEnd") == [(0, 1), (2, 5), (5, 6), (7, 13),
                                                                          (13, 15), (15, 18)]


def test_tiktoken_reads_the_wheels_file_and_never_downloads(tmp_path, monkeypatch):
    import tiktoken.load
    import tiktoken.registry

    def no_download(url):
        raise AssertionError(f"tiktoken tried to download {url}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    _tiktoken.cache_clear()
    try:
        assert Tokenizer("tokens", "cl100k").count("hello world") == 2
        url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
        placed = tmp_path / hashlib.sha1(url.encode()).hexdigest()
        assert placed.is_file()
        # tiktoken checks the file's sha256: a tampered encoding is refused, not used.
        placed.write_bytes(placed.read_bytes().replace(b"aGVsbG8= 15339", b"aGVsbG8= 15340"))
        monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
        _tiktoken.cache_clear()
        with pytest.raises(ConfigError, match="tokenizer='cl100k' could not be loaded"):
            Tokenizer("tokens", "cl100k")
    finally:
        _tiktoken.cache_clear()


def test_fixed_windows_differ_by_tokenizer():
    doc = Document("d", "Tokenization of naïve café costs money.")
    # cl100k: Token|ization| of| naï|ve| café| costs| money|. -> windows of 3 tokens.
    cl = [c.text for c in FixedSizeChunker(size=3, tokenizer="cl100k").chunk_document(doc)]
    assert cl == ["Tokenization of", "naïve café", "costs money."]
    # WordPiece: token|##ization|of|naive|cafe|costs|money|. -> windows of 3 word pieces.
    wp = [c.text for c in FixedSizeChunker(size=3, tokenizer="bundled").chunk_document(doc)]
    assert wp == ["Tokenization of", "naïve café costs", "money."]


def test_budget_counts_in_the_named_tokenizer():
    texts = [CJK, "hello world", "naïve café"]
    chunks = {f"d#{i}": Chunk(f"d#{i}", "d", t, 100 * i, 100 * i + len(t)) for i, t in enumerate(texts)}
    ranked = Retrieved("q", tuple((cid, 1.0 - i / 10) for i, cid in enumerate(chunks)))
    # cl100k: 9 + 2 + 4 tokens (na|ï|ve| café); o200k: 5 + 2 + 4; WordPiece: 7 + 2 + 2. A budget of
    # 12 holds the first two in cl100k, all three in o200k.
    cl = TokenBudgetAssembler(budget=12, tokenizer="cl100k").assemble(ranked, chunks)
    o2 = TokenBudgetAssembler(budget=12, tokenizer="o200k").assemble(ranked, chunks)
    assert (cl.chunk_ids, cl.n_tokens) == (("d#0", "d#1"), 11)
    assert (o2.chunk_ids, o2.n_tokens) == (("d#0", "d#1", "d#2"), 11)


@pytest.mark.parametrize("name, match", [("no-such/tokenizer-xyz", "valid: 'bundled'"), ("", "must be a name"),
                                         ("reader", "python -m harness resolves 'reader'")])
def test_bad_tokenizer_names_raise_a_config_error(name, match):
    with pytest.raises(ConfigError, match=match):
        Tokenizer("tokens", name)
    with pytest.raises(ConfigError, match="chunker.tokenizer"):
        FixedSizeChunker(tokenizer=name)


def reference_spans(encoding, text: str) -> list[tuple[int, int]]:
    """The span rule token by token (the specification the array version implements)."""
    continuation = bytes(range(0x80, 0xC0))
    starts, chars = [], 0
    for b in encoding.decode_tokens_bytes(encoding.encode_ordinary(text)):
        starts.append(chars - (0x80 <= b[0] < 0xC0))
        chars += len(b.translate(None, continuation))
    spans = []
    for s, e in zip(starts, starts[1:] + [len(text)]):
        piece = text[s:e]
        core = piece.strip()
        if core:
            s += len(piece) - len(piece.lstrip())
            e = s + len(core)
        spans.append((s, e))
    return spans


SPAN_TEXT = (st.text(st.sampled_from(list("ab Z9.,\n\t\u3000\u00a0\u2003éß数据分块🙂👍🏽\r\x0b-")), max_size=80)
             | st.text(st.sampled_from(list("ab Z9.,\n\t\r\x0b\x1c-é")), max_size=80)   # whole-character tokens
             | st.text(st.characters(max_codepoint=127), max_size=80))                 # ASCII


@settings(max_examples=300, deadline=None)
@given(SPAN_TEXT, st.sampled_from(["cl100k", "o200k"]))
def test_tiktoken_spans_match_the_token_by_token_rule(text, name):
    tok = Tokenizer("tokens", name)
    expected = reference_spans(tok._backend(), text)
    assert tok.spans(text) == expected
    assert tok.starts(text).tolist() == [s for s, _ in expected]
    assert tok.count(text) == len(expected)


def test_tiktoken_spans_on_a_bundled_page():
    text = "\n\n".join(d.text for d in OHRBench().load().documents[:2])
    tok = Tokenizer("tokens", "cl100k")
    assert tok.spans(text) == reference_spans(tok._backend(), text)


@settings(max_examples=200, deadline=None)
@given(SPAN_TEXT | st.text(max_size=60))
def test_wordpiece_counts_by_ids_as_many_units_as_it_locates(text):
    # count() skips offsets for WordPiece: every WordPiece token covers a character.
    tok = Tokenizer("tokens", "bundled")
    assert tok._wordpiece
    assert tok.count(text) == len(tok.spans(text))


BOUND_TEXT = st.text(st.sampled_from(list("a Z9'!/.,-|)\n\r\t\x0b\x0c\x1c\u00a0\u3000\u0301é数🙂")), max_size=120) | st.text(max_size=60)


@settings(max_examples=400, deadline=None)
@given(BOUND_TEXT, st.sampled_from(["cl100k", "o200k", "bundled"]), st.integers(1, 16))
@example(")\n/", "o200k", 1)  # one o200k token (its pre-token may run on past a newline into "/")
@example("a\x0bb", "bundled", 1)  # BERT drops the control character: one word, one token
def test_the_cheap_lower_bound_never_exceeds_the_count(text, name, enough):
    # The recursive chunker trusts it to call a long piece over size without encoding it.
    tok = Tokenizer("tokens", name)
    bound = tok.at_least(text)
    assert 0 <= bound <= tok.count(text)
    # Reading only the start may stop early, never below what it is asked to reach.
    assert min(bound, enough) <= tok.at_least(text, enough) <= bound


def test_the_lower_bound_is_close_on_prose():
    text = " ".join(d.text for d in GutenQA().load().documents)[:20000]
    for name in ("cl100k", "o200k", "bundled"):
        tok = Tokenizer("tokens", name)
        assert 0.6 * tok.count(text) <= tok.at_least(text) <= tok.count(text), name
    assert Tokenizer("words").at_least("a b c") == 0  # no bound where none is known
