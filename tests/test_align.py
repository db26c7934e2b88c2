from hypothesis import given, settings
from hypothesis import strategies as st

from harness.data.align import AlignmentReport, align_evidence, normalise


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
