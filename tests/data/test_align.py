"""Aligning evidence snippets to document spans (harness.data.align): exact, normalised (in
original offsets) and fuzzy, which finds copy-slipped snippets, fast on a whole book, and leaves
text that is not there unaligned."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from harness.data.align import (FUZZY_MIN_CHARS, FUZZY_MIN_SCORE, MATCHERS, AlignmentReport,
                                align_evidence, check_fuzzy_min_score, configured_matchers,
                                fuzzy_search, normalise)
from harness.text import sentence_spans
from harness.types import ConfigError
from tests.conftest import SAMPLES

GUTENQA = SAMPLES / "gutenqa"
OHR = SAMPLES / "ohr_bench" / "retrieval_base" / "gt"


def _rows(name):
    return [json.loads(line) for line in (GUTENQA / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def emma():
    """The real GutenQA book (875k characters)."""
    return "\n".join(r["Chunk"] for r in _rows("gutenqa_chunks.jsonl"))


@pytest.fixture(scope="module")
def million(emma):
    """Exactly 1,000,000 characters: Emma followed by the OHR-Bench sample's documents."""
    ohr = "\n\n".join(p["text"] for f in sorted(OHR.glob("*/*.json"))
                      for p in json.loads(f.read_text()))
    text = (emma + "\n\n" + ohr)[:1_000_000]
    assert len(text) == 1_000_000
    return text


def test_exact_match_returns_verbatim_span():
    text = "Alpha beta. Gamma delta."
    assert align_evidence(text, "Gamma delta") == (12, 23, "exact")


def test_repeated_text_prefers_the_window():
    text = "the cat sat. the cat sat. the cat sat."
    s, e, method = align_evidence(text, "the cat sat", search_from=13, search_to=26)
    assert (s, e, method) == (13, 24, "exact")


def test_window_miss_falls_back_to_whole_text():
    text = "one two three. four five six."
    assert align_evidence(text, "one two", search_from=15) == (0, 7, "exact")


def test_exact_in_whole_text_beats_normalised_in_window():
    text = "a “quoted” word. a \"quoted\" word."
    assert align_evidence(text, 'a "quoted" word', 0, 16) == (17, 32, "exact")


def test_normalised_curly_quotes_and_dashes():
    text = "He said “don’t stop” — twice."
    s, e, method = align_evidence(text, "said \"don't stop\" - twice")
    assert method == "normalised"
    assert text[s:e] == "said “don’t stop” — twice"


def test_normalised_whitespace_runs():
    text = "first line\n\n  second\tline end"
    s, e, method = align_evidence(text, "line second line")
    assert method == "normalised"
    assert text[s:e] == "line\n\n  second\tline"


def test_normalised_nfkc_ligature_nbsp_and_combining_mark():
    text = "x ﬁne\u00a0print, cafe\u0301 au lait y"
    s, e, method = align_evidence(text, "fine print, café au lait")
    assert method == "normalised"
    assert text[s:e] == "ﬁne\u00a0print, cafe\u0301 au lait"


def test_match_inside_a_ligature_is_rejected():
    # "ine" starts inside "ﬁ": no original span normalises to it.
    assert align_evidence("ﬁne", "ine") is None


def test_normalised_window_is_in_original_offsets():
    text = "“a b” x “a  b”"
    s, e, method = align_evidence(text, '"a b"', search_from=7)
    assert (method, text[s:e], s) == ("normalised", "“a  b”", 8)


def test_unaligned_and_empty_return_none():
    assert align_evidence("some text here", "absent snippet") is None
    assert align_evidence("some text", "") is None
    assert align_evidence("some text", "   ") is None


def test_report_counts_and_shares():
    report = AlignmentReport()
    for r in [(0, 1, "exact"), (0, 1, "exact"), (2, 3, "normalised"), None]:
        report.add(r)
    out = report.as_report("evidence")
    assert out["evidence_total"] == 4
    counts = [out[f"evidence_{m}"] for m in ("exact", "normalised", "unaligned")]
    assert counts == [2, 1, 1]
    assert out["evidence_exact_share"] == 0.5
    shares = [out[f"evidence_{m}_share"] for m in ("exact", "normalised", "unaligned")]
    assert abs(sum(shares) - 1) < 1e-9
    assert AlignmentReport().as_report("x")["x_unaligned_share"] == 0.0


# Pieces that normalisation folds, expands or composes, mixed with plain letters.
_pieces = st.sampled_from(["a", "b", " ", "\n", "\u00a0", "“", "”", "’", "—", "-", "ﬁ",
                           "e\u0301", "é", "x"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_pieces, min_size=1, max_size=30), st.data())
def test_any_found_span_normalises_to_the_snippet(parts, data):
    text = "".join(parts)
    i = data.draw(st.integers(0, len(parts) - 1))
    j = data.draw(st.integers(i + 1, len(parts)))
    snippet = "".join(parts[i:j])
    found = align_evidence(text, snippet)
    if not snippet.strip():
        assert found is None
        return
    assert found is not None  # a verbatim piece of the text is always found
    s, e, _ = found
    assert 0 <= s < e <= len(text)
    assert normalise(text[s:e]) == normalise(snippet)


# -- fuzzy matching --------------------------------------------------------------------------

def _score(text, span, snippet):
    return fuzz.ratio(normalise(text[span[0]:span[1]]).lower(), normalise(snippet).lower())


def test_fuzzy_is_the_last_matcher_and_reported():
    assert [m for m, _ in MATCHERS] == ["exact", "normalised", "fuzzy"]
    report = AlignmentReport()
    for r in [(0, 1, "exact"), (0, 1, "fuzzy"), (0, 1, "fuzzy"), None]:
        report.add(r)
    out = report.as_report("evidence")
    assert (out["evidence_fuzzy"], out["evidence_fuzzy_share"]) == (2, 0.5)
    assert sum(out[f"evidence_{m}_share"] for m in ("exact", "normalised", "fuzzy", "unaligned")) == 1


def test_changed_word_aligns_in_original_offsets():
    # Curly quotes, a non-breaking space and a line break inside the passage: the span must be
    # in the original text, whole words, and cover the whole passage.
    text = ("Intro line.\nShe said “I  shall\u00a0never marry,” and walked\nslowly back to "
            "the house. Another sentence follows.")
    passage = "She said “I  shall\u00a0never marry,” and walked\nslowly back to the house."
    snippet = 'She said "I shall never marry," and strolled slowly back to the house.'
    s, e, method = align_evidence(text, snippet)
    assert method == "fuzzy"
    assert text[s:e] == passage


def test_real_gutenqa_slips_are_fuzzy(emma):
    """Two of GutenQA's own slips on this book: a capitalised first word, and single quotes
    where the book has double ones (normalisation folds curly to straight, not ' to ")."""
    rows = _rows("questions.jsonl")
    case_slip, quote_slip = rows[26]["Chunk Must Contain"], rows[24]["Chunk Must Contain"]
    assert case_slip.startswith("In one of the most") and "'This was really his,'" in quote_slip
    s, e, method = align_evidence(emma, case_slip)
    assert method == "fuzzy" and emma[s:e] == "i" + case_slip[1:]
    s, e, method = align_evidence(emma, quote_slip)
    assert method == "fuzzy"
    assert emma[s:e] == ("It was the end of an old pencil,—the part without any lead.\n"
                         "“This was really his,” said Harriet.")


def test_dropped_words_get_the_whole_passage(emma):
    passage = "I should like to see Emma in love, and in some doubt of a return; it would do her good."
    at = emma.index(passage)
    s, e, method = align_evidence(emma, "I should like to see Emma in love and in doubt of a "
                                        "return; it would do her good.")
    assert (method, s, e) == ("fuzzy", at, at + len(passage))


def test_unrelated_text_stays_unaligned(emma):
    for snippet in [
        "Net sales increased 20% in 2019 compared to the prior year, driven by unit sales.",
        "Swipe upwards on the Reject button to reject an incoming call from the third party.",
        "The Secret Service will review all of its security measures before the next rally.",
    ]:
        assert align_evidence(emma, snippet) is None


def test_sentences_not_in_the_text_stay_unaligned(emma):
    """The hardest non-matches: sentences of the same book (same names, same style) searched
    in the half of the book they are not in."""
    half = len(emma) // 2
    first, second = emma[:half], emma[half:]
    folded_first = normalise(first).lower()
    rng = random.Random(7)
    candidates = [second[a:b] for a, b in sentence_spans(second) if 60 <= b - a <= 300]
    tried = 0
    for sentence in rng.sample(candidates, 60):
        if normalise(sentence).lower() in folded_first:
            continue
        tried += 1
        found = fuzzy_search(first, sentence, min_score=0)
        assert found is not None and found[2] < FUZZY_MIN_SCORE - 5, (sentence, found)
        assert align_evidence(first, sentence) is None
    assert tried >= 50


def test_short_snippets_are_never_fuzzy(emma):
    snippet = "Emma could not forgive her!!"  # the book has "Emma could not forgive her"
    assert len(normalise(snippet)) < FUZZY_MIN_CHARS
    assert align_evidence(emma, snippet) is None


def test_window_is_preferred():
    sentence = "The committee approved the new budget for the coming year without a vote."
    text = f"{sentence} Something else entirely. {sentence} And the end."
    snippet = "The committee approved a new budget for the coming year without any vote."
    second = text.index(sentence, 1)
    assert align_evidence(text, snippet)[:2] == (0, len(sentence))
    assert align_evidence(text, snippet, second, len(text)) == (second, second + len(sentence),
                                                                "fuzzy")


def test_threshold_is_configurable():
    text = "Alpha. The committee approved the new budget for the coming year without a vote. Omega."
    snippet = "The committee approved a new budget for the coming year without any vote."
    assert align_evidence(text, snippet)[2] == "fuzzy"
    assert align_evidence(text, snippet, matchers=configured_matchers(None)) is None
    assert align_evidence(text, snippet, matchers=configured_matchers(99)) is None
    assert [m for m, _ in configured_matchers(None)] == ["exact", "normalised"]
    assert check_fuzzy_min_score(90) == 90.0 and check_fuzzy_min_score(None) is None
    for bad in (0, 101, "high", True):
        with pytest.raises(ConfigError, match="fuzzy_min_score"):
            check_fuzzy_min_score(bad)


def test_long_snippets(million):
    """Longer than two pieces: placed by pieces; a long non-match costs little."""
    start = 400_000
    passage = million[start:start + 3000]
    snippet = passage.replace(" the ", " a ").upper()
    s, e, score = fuzzy_search(million, snippet)
    assert abs(s - start) < 10 and abs(e - (start + 3000)) < 60 and score >= FUZZY_MIN_SCORE
    words = " ".join(random.Random(0).choice(["revenue", "cloud", "quarter", "growth", "tax"])
                     for _ in range(1000))
    assert fuzzy_search(million, words[:5000]) is None  # and cheaply (about 0.1 s measured)


def test_speed_on_a_million_characters(million):
    """GutenQA's 30 real snippets with one word dropped and the first letter's case flipped,
    searched in the whole 1M-character text (the slowest path: no window, no exact hit)."""
    rng = random.Random(3)
    slips, where = [], []
    for row in _rows("questions.jsonl"):
        words = row["Chunk Must Contain"].split(" ")
        del words[rng.randrange(1, len(words) - 1)]
        snippet = " ".join(words)
        slips.append(snippet[0].swapcase() + snippet[1:])
        where.append(align_evidence(million, row["Chunk Must Contain"])[:2])
    align_evidence(million, "warm up the normalised text cache, which is built once per text")
    found = [align_evidence(million, s) for s in slips]  # about 0.5 s on 2 cores, measured
    for f, (s, e), snippet in zip(found, where, slips):
        assert f is not None and f[2] == "fuzzy"
        assert f[0] < e and s < f[1]  # the passage the real snippet aligns to
        assert _score(million, f, snippet) >= FUZZY_MIN_SCORE
