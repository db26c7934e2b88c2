"""Natural Questions rows: the page built from NQ's HTML tokens (the loader: test_nq)."""

from harness.data.nq_rows import build_page


def test_block_tags_become_line_breaks_and_headings_sections():
    tokens = "<H1> Title </H1> <P> One two . </P> <Ul> <Li> a </Li> <Li> b </Li> </Ul>".split()
    page = build_page(tokens, [t.startswith("<") for t in tokens], 3, frozenset())
    assert page.text == "Title\n\nOne two .\n\na\nb"
    assert page.n_tokens == 6 and page.char_start[1] == 0 and page.char_end[1] == 5
    assert [(s.level, s.title, page.text[s.start:s.end]) for s in page.sections] == [
        (1, "Title", page.text)]


def test_heading_without_closing_tag_ends_at_the_next_block():
    tokens = "<H1> Title </H1> <H2> Orphan heading <P> Body text . </P>".split()
    page = build_page(tokens, [t.startswith("<") for t in tokens], 3, frozenset())
    assert page.text == "Title\n\nOrphan heading\n\nBody text ."
    assert [(s.level, s.title) for s in page.sections] == [(1, "Title"), (2, "Orphan heading")]


def test_dropped_sections_leave_the_text_with_their_subsections():
    tokens = ("<H2> Keep </H2> <P> kept . </P> <H2> See also </H2> <P> gone . </P> "
              "<H3> Sub </H3> <P> also gone . </P> <H2> Next </H2> <P> back . </P>").split()
    page = build_page(tokens, [t.startswith("<") for t in tokens], 3, frozenset({"see also"}))
    assert page.text == "Keep\n\nkept .\n\nNext\n\nback ."
    assert page.headings_dropped == ["See also"]
    assert [s.title for s in page.sections] == ["Keep", "Next"]
    assert [t for t, c in zip(tokens, page.char_start) if c >= 0] == [
        "Keep", "kept", ".", "Next", "back", "."]
