"""Hierarchical, multi-view and non-contiguous chunks: the structure-tree chunker, the
multi-view chunker, and the assemblers that read structure (Auto-Merge, parent scoring,
small-to-big, multi-view merge, fractional top-k)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chunking.base import check_chunks
from harness.chunking.section import SectionChunker
from harness.chunking.structure_tree import StructureTreeChunker
from harness.chunking.multi_view import MultiViewChunker
from harness.metrics.spans import precision_omega, union
from harness.retrieval.assemblers import TokenBudgetAssembler, TopKAssembler, k_for
from harness.retrieval.auto_merge import AutoMergeAssembler
from harness.retrieval.multi_view import MultiViewAssembler
from harness.types import Chunk, ConfigError, Document, Retrieved, Section, Span
from tests.chunking.test_chunk_properties import sectioned_documents

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- a hand-built tree: sections hold leaves of a given number of words ----------------------

def build_tree(spec: dict, doc_id: str = "d") -> dict[str, Chunk]:
    """``spec``: {section name: [leaf sizes in words] or {subsection: ...}}. Leaves are named
    <section>.<i>; every word is unique, so no text repeats."""
    words, chunks, counter = [], {}, [0]

    def add(name: str, body, parent: str | None, level: int) -> tuple[int, int]:
        start_word = len(words)
        kids = []
        if isinstance(body, dict):
            for sub, sub_body in body.items():
                kids.append(add(sub, sub_body, name, level + 1))
        else:
            for i, n in enumerate(body):
                s = len(words)
                for _ in range(n):
                    words.append(f"w{counter[0]}")
                    counter[0] += 1
                chunks[f"{name}.{i}"] = (s, len(words), level + 1, name, True)
        chunks[name] = (start_word, len(words), level, parent, False)
        return start_word, len(words)

    for top, body in spec.items():
        add(top, body, None, 1)
    text = " ".join(words)
    offsets, pos = [], 0
    for w in words:
        offsets.append(pos)
        pos += len(w) + 1

    def span(a: int, b: int) -> tuple[int, int]:
        return offsets[a], offsets[b - 1] + len(words[b - 1])

    out = {}
    for cid, (a, b, level, parent, leaf) in chunks.items():
        s, e = span(a, b)
        out[cid] = Chunk(cid, doc_id, text[s:e], s, e, level, parent, indexed=leaf)
    return out


def ranked(*ids: str, qid: str = "q") -> Retrieved:
    return Retrieved(qid, tuple((cid, 1.0 - i / 100) for i, cid in enumerate(ids)))


def am(budget: int = 100, cond3: str = "paper") -> AutoMergeAssembler:
    """The paper's reading, every length in words (hand-computed below); the authors' code
    variants are tested in test_auto_merge.py."""
    return AutoMergeAssembler(budget=budget, unit="words", cond3=cond3, length_unit="budget")


def test_auto_merge_merges_two_children_into_their_parent():
    tree = build_tree({"P": [4, 4, 4], "Q": [4, 4]})
    ctx = am().assemble(ranked("P.0", "P.1", "Q.0"), tree)
    assert ctx.chunk_ids == ("P", "Q.0") and ctx.merges == 1
    assert ctx.text.startswith(tree["P"].text) and ctx.n_tokens == 16


def test_cond1_alone_blocks_a_single_retrieved_child():
    tree = build_tree({"P": [8, 4], "Q": [4, 4]})
    # P.0 alone: 8 words >= theta (12/3 * (1 + 0)) and the budget fits P, but it is one child.
    ctx = am().assemble(ranked("P.0", "Q.0"), tree)
    assert ctx.chunk_ids == ("P.0", "Q.0") and ctx.merges == 0


def test_cond2_alone_blocks_children_too_short_for_theta():
    tree = build_tree({"P": [1, 1, 10]})
    # Two children (Cond1) and budget enough (Cond3), but 2 words < theta = 12/3 * (1 + 1/100).
    ctx = am().assemble(ranked("P.0", "P.1"), tree)
    assert ctx.chunk_ids == ("P.0", "P.1") and ctx.merges == 0


def test_cond2_threshold_grows_with_the_budget_used():
    tree = build_tree({"X": [57], "P": [3, 3, 6]})
    # First in the context: theta = 12/3 * (1 + 3/100) = 4.1 <= 6 words: merges.
    assert am(100).assemble(ranked("P.0", "P.1"), tree).merges == 1
    # After X's 57 words: theta = 12/3 * (1 + 60/100) = 6.4 > 6, while Cond1 holds and
    # Cond3 (100 - 60 >= 12) too: Cond2 alone blocks.
    ctx = am(100).assemble(ranked("X.0", "P.0", "P.1"), tree)
    assert ctx.merges == 0 and ctx.chunk_ids == ("X", "P.0", "P.1")


def test_cond3_alone_blocks_a_parent_larger_than_the_budget_left():
    tree = build_tree({"P": [4, 4, 4]})
    # T = 14: at P.1, tk_cur = 4, 14 - 4 = 10 < len(P) = 12; Cond1 and Cond2 (8 >= 5.1) hold.
    ctx = am(14).assemble(ranked("P.0", "P.1"), tree)
    assert ctx.merges == 0 and ctx.chunk_ids == ("P.0", "P.1") and ctx.n_tokens <= 14


def test_an_only_child_is_replaced_by_its_parent():
    tree = build_tree({"P": [5], "Q": [3, 3]})
    ctx = am().assemble(ranked("P.0"), tree)
    assert ctx.chunk_ids == ("P",)


def test_merges_climb_the_tree_and_count_each_step():
    tree = build_tree({"G": {"A": [3, 3], "B": [3, 3]}, "H": [2, 2]})
    ctx = am().assemble(ranked("A.0", "A.1", "B.0", "B.1", "H.0"), tree)
    # A.0+A.1 -> A; B.0+B.1 -> B; A+B -> G.
    assert ctx.chunk_ids[0] == "G" and ctx.merges == 3
    assert "A.0" not in ctx.chunk_ids and "A" not in ctx.chunk_ids


def test_leaves_inside_a_merged_parent_are_skipped():
    tree = build_tree({"P": [3, 3, 3], "Q": [3, 3]})
    ctx = am().assemble(ranked("P.0", "P.1", "P.2", "Q.0"), tree)
    assert ctx.chunk_ids == ("P", "Q.0")


def test_flat_chunks_make_auto_merge_a_budget_with_truncation():
    flat = {f"c{i}": Chunk(f"c{i}", "d", "a b c", 6 * i, 6 * i + 5) for i in range(4)}
    ctx = am(7).assemble(ranked("c0", "c1", "c2"), flat)
    assert ctx.n_tokens == 7 and ctx.merges == 0 and ctx.chunk_ids == ("c0", "c1", "c2")


def _no_text_twice(ctx) -> bool:
    spans = sorted((s.start, s.end) for s in ctx.spans)
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


tree_specs = st.dictionaries(
    st.sampled_from(["A", "B", "C"]),
    st.one_of(st.lists(st.integers(1, 8), min_size=1, max_size=4),
              st.dictionaries(st.sampled_from(["X", "Y"]), st.lists(st.integers(1, 8), min_size=1, max_size=3),
                              min_size=1)),
    min_size=1)


@PROPS
@given(tree_specs, st.integers(1, 60), st.sampled_from(["paper", "code"]), st.randoms(use_true_random=False))
def test_auto_merge_never_exceeds_the_budget_nor_repeats_text(spec, budget, cond3, rng):
    # Subsection names repeat across sections; prefix them so ids stay unique.
    spec = {top: ({f"{top}{k}": v for k, v in body.items()} if isinstance(body, dict) else body)
            for top, body in spec.items()}
    tree = build_tree(spec)
    leaves = [cid for cid, c in tree.items() if c.indexed]
    rng.shuffle(leaves)
    ctx = am(budget, cond3).assemble(ranked(*leaves), tree)
    assert ctx.n_tokens <= budget
    assert _no_text_twice(ctx)
    assert ctx.merges >= 0


def test_bad_auto_merge_budget():
    with pytest.raises(ConfigError, match="context.budget"):
        AutoMergeAssembler(budget=0)


# --- parent scoring (LGMGC), small-to-big --------------------------------------------------

def test_root_expansion_ranks_parents_by_their_best_chunk():
    tree = build_tree({"A": [2, 2], "B": [2, 2]})
    a = TokenBudgetAssembler(budget=100, unit="words", expand="root")
    ctx = a.assemble(ranked("B.1", "A.0", "A", "B.0"), tree)
    assert ctx.chunk_ids == ("B", "A")


def test_parent_expansion_returns_each_hits_parent_once():
    tree = build_tree({"G": {"A": [2, 2], "B": [2]}})
    ctx = TopKAssembler(k=5, unit="words", expand="parent").assemble(ranked("A.1", "A.0", "B.0"), tree)
    assert ctx.chunk_ids == ("A", "B")


def test_bad_expand():
    with pytest.raises(ConfigError, match="context.expand"):
        TopKAssembler(expand="grandparent")


# --- fractional k and the multi-view merge (MC-indexing) ----------------------------------------

def test_fractional_k_splits_queries_about_half_and_half_and_is_seeded():
    draws = [k_for(1.5, f"q{i}", seed=0) for i in range(400)]
    assert set(draws) == {1, 2} and 0.4 < draws.count(1) / 400 < 0.6
    assert draws == [k_for(1.5, f"q{i}", seed=0) for i in range(400)]
    assert draws != [k_for(1.5, f"q{i}", seed=1) for i in range(400)]


@pytest.mark.parametrize("k", [0, 1.25, -2, "3", True])
def test_bad_k(k):
    with pytest.raises(ConfigError, match="context.k"):
        TopKAssembler(k=k)


def _views() -> dict[str, Chunk]:
    text = "alpha one. beta two. gamma three. delta four."
    out = {}
    for i, (s, e) in enumerate([(0, 10), (11, 20), (21, 33), (34, 45)]):
        out[f"c{i}"] = Chunk(f"c{i}", "d", text[s:e], s, e)
        out[f"c{i}@keywords"] = Chunk(f"c{i}@keywords", "d", text[s:e].split()[0], s, e, parent_id=f"c{i}",
                                      view="keywords")
    return out


def test_multi_view_takes_k_prime_per_view_and_dedupes():
    chunks = _views()
    r = ranked("c0", "c1@keywords", "c1", "c2@keywords", "c3", "c0@keywords")
    ctx = MultiViewAssembler(k=3, unit="words").assemble(r, chunks)  # k' = 2
    # text view: c0, c1; keywords view: c1, c2 -> rank 1: c0, c1; rank 2: (c1 dup), c2.
    assert ctx.chunk_ids == ("c0", "c1", "c2")


def test_multi_view_restricted_to_chosen_views():
    chunks = _views()
    ctx = MultiViewAssembler(k=3, views=["keywords"], unit="words").assemble(
        ranked("c0", "c2@keywords", "c3@keywords"), chunks)
    assert ctx.chunk_ids == ("c2", "c3")


def test_other_assemblers_resolve_views_to_their_content():
    chunks = _views()
    ctx = TopKAssembler(k=2, unit="words").assemble(ranked("c1@keywords", "c1", "c0"), chunks)
    assert ctx.chunk_ids == ("c1", "c0")


# --- the structure-tree chunker -------------------------------------------------------------

MD = "# A\nIntro one. Intro two.\n## A1\nAlpha one. Alpha two. Alpha three.\n## A2\nBeta one.\n# B\nGamma one."


def markdown_doc(text: str = MD) -> Document:
    import re

    heads = [(m.start(), len(m.group(1))) for m in re.finditer(r"^(#+) ", text, re.M)]
    sections = [Section(s, next((s2 for s2, l2 in heads[i + 1:] if l2 <= lvl), len(text)), lvl)
                for i, (s, lvl) in enumerate(heads)]
    return Document("d", text, sections=tuple(sections))


def test_structure_tree_builds_the_section_tree_with_leaves_under_it():
    doc = markdown_doc()
    chunks = StructureTreeChunker(size=6, unit="words").chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    by_text = {c.text.split("\n")[0]: c for c in chunks if not c.indexed}
    assert set(by_text) == {"# A", "## A1", "## A2", "# B"}
    assert by_text["## A1"].parent_id == by_text["# A"].chunk_id and by_text["# A"].parent_id is None
    leaves = [c for c in chunks if c.indexed]
    assert [c.text for c in leaves if c.parent_id == by_text["## A1"].chunk_id] == \
        ["## A1\nAlpha one. Alpha two.", "Alpha three."]
    assert all(c.level == chunks[int(c.parent_id.split("#")[1])].level + 1 for c in leaves)


def test_structure_tree_max_level_folds_deeper_sections_into_their_ancestor():
    doc = markdown_doc()
    chunks = StructureTreeChunker(size=50, unit="words", max_level=1).chunk_document(doc)
    nodes = [c for c in chunks if not c.indexed]
    assert [c.level for c in nodes] == [1, 1]
    a_leaves = [c for c in chunks if c.parent_id == nodes[0].chunk_id]
    assert len(a_leaves) == 1 and a_leaves[0].text == doc.text[:doc.text.index("# B")].strip()


def test_structure_tree_without_sections_is_flat():
    doc = Document("d", "One. Two. Three. Four.")
    chunks = StructureTreeChunker(size=2, unit="words").chunk_document(doc)
    assert all(c.indexed and c.parent_id is None and c.level == 1 for c in chunks) and len(chunks) == 2


@PROPS
@given(sectioned_documents(), st.integers(1, 30), st.one_of(st.none(), st.integers(1, 4)))
def test_structure_tree_span_properties(doc, size, max_level):
    chunks = StructureTreeChunker(size=size, max_level=max_level, unit="words").chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    by_id = {c.chunk_id: c for c in chunks}
    for c in chunks:
        if not c.indexed:
            assert max_level is None or c.level <= max_level
        if c.parent_id:
            assert not by_id[c.parent_id].indexed  # leaves hang under sections only


def test_structure_tree_parameters():
    with pytest.raises(ConfigError, match="chunker.size"):
        StructureTreeChunker(size=0)
    with pytest.raises(ConfigError, match="chunker.max_level"):
        StructureTreeChunker(max_level=0)


def test_auto_merge_on_structure_tree_chunks_returns_whole_sections():
    doc = markdown_doc()
    chunks = {c.chunk_id: c for c in StructureTreeChunker(size=3, unit="words").chunk_document(doc)}
    a1 = next(c for c in chunks.values() if c.text.startswith("## A1"))
    kids = [c.chunk_id for c in chunks.values() if c.parent_id == a1.chunk_id]
    ctx = am().assemble(ranked(*kids[:2]), chunks)
    assert ctx.chunk_ids == (a1.chunk_id,) and ctx.text == a1.text


# --- the multi-view chunker -----------------------------------------------------------------

def test_multi_view_chunker_adds_a_keyword_view_per_content_chunk():
    doc = markdown_doc()
    chunker = MultiViewChunker(SectionChunker(), views=["keywords"], n_keywords=3)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks)
    content = [c for c in chunks if c.view == "text"]
    views = {c.parent_id: c for c in chunks if c.view == "keywords"}
    assert set(views) == {c.chunk_id for c in content}
    for c in content:
        terms = views[c.chunk_id].text.split(", ")
        assert 1 <= len(terms) <= 3 and all(t in c.text.lower() for t in terms)
        assert (views[c.chunk_id].start, views[c.chunk_id].end) == (c.start, c.end)


def test_multi_view_chunker_rejects_unknown_views_and_llm_views_without_a_model():
    with pytest.raises(ConfigError, match="chunker.views"):
        MultiViewChunker(SectionChunker(), views=["tags"])
    with pytest.raises(ConfigError, match="need a language model: chunker=multi_view_llm"):
        MultiViewChunker(SectionChunker(), views=["summary"])


def test_multi_view_llm_views_follow_the_papers_prompts_and_count_failures():
    from tests.conftest import ScriptedLLM

    def reply(prompt):
        if prompt.startswith("You are a helpful summarization assistant"):
            return "  A short summary.  "
        section = prompt.split("**Beginning of text** ", 1)[1]
        return "Sure, no list here." if section.startswith("## A2") else '["alpha", "beta gamma"]'

    llm = ScriptedLLM(reply=reply)
    doc = markdown_doc()
    chunker = MultiViewChunker(SectionChunker(), views=["summary", "llm_keywords"], llm=llm, summary_min_tokens=3)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks)
    content = {c.chunk_id: c for c in chunks if c.view == "text"}
    summaries = {c.parent_id: c.text for c in chunks if c.view == "summary"}
    keywords = {c.parent_id: c.text for c in chunks if c.view == "llm_keywords"}
    long_enough = {i for i, c in content.items() if len(c.text.split()) > 3}
    assert set(summaries) == long_enough and set(summaries.values()) == {"A short summary."}
    failed = {i for i, c in content.items() if c.text.startswith("## A2")}
    assert failed and set(keywords) == set(content) - failed
    assert set(keywords.values()) == {"alpha, beta gamma"}
    assert chunker.doc_counts[doc.doc_id]["llm_keywords_parse_failures"] == len(failed)
    assert any("Section Name: " in p and "Section Text: **Beginning of text**" in p for p in llm.prompts)


@pytest.mark.parametrize("reply, expected", [('["a", "b"]', "a, b"), ("Keywords: ['x', 'y z',]", "x, y z"),
                                             ("[revenue, cloud growth]", "revenue, cloud growth"),
                                             ("no list", ""), ("[]", "")])
def test_keyword_replies_parse_leniently(reply, expected):
    from harness.chunking.multi_view import parse_keywords

    assert parse_keywords(reply) == expected


# --- non-contiguous chunks ------------------------------------------------------------------

def _parted() -> tuple[Document, Chunk]:
    text = "Cats purr. Stocks fell. Cats nap."
    parts = ((0, 10), (24, 33))
    return Document("d", text), Chunk("d#0", "d", "Cats purr. Cats nap.", 0, 33, parts=parts)


def test_check_chunks_accepts_parts_and_rejects_a_wrong_join():
    doc, chunk = _parted()
    check_chunks(doc, [chunk, Chunk("d#1", "d", "Stocks fell.", 11, 23)], covering=True)
    from dataclasses import replace

    with pytest.raises(ValueError, match="text differs"):
        check_chunks(doc, [replace(chunk, text="Cats purr.\nCats nap.")])
    with pytest.raises(ValueError, match="parts"):
        check_chunks(doc, [replace(chunk, parts=((24, 33), (0, 10)))])


def test_parts_are_what_span_metrics_and_truncation_see():
    _, chunk = _parted()
    assert chunk.spans_upto(len(chunk.text)) == chunk.spans
    assert chunk.spans_upto(4) == (Span("d", 0, 4),)
    assert chunk.spans_upto(14) == (Span("d", 0, 10), Span("d", 24, 27))
    # Evidence "Stocks fell." is not in the parted chunk: precision-omega must not credit its hull.
    assert precision_omega([Span("d", 11, 23)], {"d": [chunk]}) != precision_omega(
        [Span("d", 11, 23)], {"d": [Chunk("x", "d", "", 0, 33)]})
    ctx = TokenBudgetAssembler(budget=3, unit="words", overflow="truncate").assemble(ranked("d#0"), {"d#0": chunk})
    assert union((s.start, s.end) for s in ctx.spans) == [(0, 10), (24, 28)]


def test_structure_and_view_chunkers_are_deterministic():
    doc = markdown_doc()
    for make in (lambda: StructureTreeChunker(size=4, unit="words"),
                 lambda: MultiViewChunker(SectionChunker(), n_keywords=2)):
        assert make().chunk_document(doc) == make().chunk_document(doc)
