"""Auto-Merge's two readings: the paper's text and the authors' code (HiChunk's
retrieval_algo.py), on hand-built trees whose numbers are worked out in the comments."""

from __future__ import annotations

import pytest

from harness.retrieval.auto_merge import AutoMergeAssembler
from harness.types import Chunk, ConfigError
from tests.retrieval.test_assemblers import build_tree, ranked


def tree_of_texts(spec: dict, doc_id: str = "d") -> dict[str, Chunk]:
    """``spec``: {section: [leaf texts] or {subsection: ...}}; leaves <section>.<i>, joined
    by newlines into the document text (sections are the slices over their leaves)."""
    pieces: list[str] = []
    found: dict[str, tuple[int, int, int, str | None, bool]] = {}

    def offset() -> int:
        return sum(len(p) + 1 for p in pieces)

    def add(name: str, body, parent: str | None, level: int) -> None:
        start = offset()
        if isinstance(body, dict):
            for sub, sub_body in body.items():
                add(sub, sub_body, name, level + 1)
        else:
            for i, leaf in enumerate(body):
                found[f"{name}.{i}"] = (offset(), offset() + len(leaf), level + 1, name, True)
                pieces.append(leaf)
        found[name] = (start, offset() - 1, level, parent, False)

    for top, body in spec.items():
        add(top, body, None, 1)
    text = "\n".join(pieces)
    return {cid: Chunk(cid, doc_id, text[s:e], s, e, lvl, parent, indexed=leaf)
            for cid, (s, e, lvl, parent, leaf) in found.items()}


def words(n: int) -> str:
    return " ".join(["wwww"] * n)


def am(budget: int, cond3: str = "code", length_unit: str = "chars") -> AutoMergeAssembler:
    return AutoMergeAssembler(budget=budget, unit="words", cond3=cond3, length_unit=length_unit)


def test_cond3_code_needs_only_the_units_merging_adds():
    tree = build_tree({"P": [4, 4, 4]})
    # T = 14, at P.1 tk_cur = 4: paper 14 - 4 = 10 < len(P) = 12, no merge; code: merging adds
    # 12 - (4 + 4) = 4 <= 10, merge. (Cond1: 2 children; Cond2 holds in either unit.)
    paper = am(14, "paper").assemble(ranked("P.0", "P.1"), tree)
    code = am(14, "code").assemble(ranked("P.0", "P.1"), tree)
    assert paper.chunk_ids == ("P.0", "P.1") and paper.merges == 0 and paper.n_tokens == 8
    assert code.chunk_ids == ("P",) and code.merges == 1 and code.n_tokens == 12


def test_cond2_in_characters_or_in_the_budgets_unit():
    long, short = "aaaaaaaaa bbbbbbbbb", "e f g h i j k l"
    tree = tree_of_texts({"P": [long, long, short]})
    # Words: theta = 12/3 * (1 + 2/100) = 4.08 > 4 words in P.0 + P.1: no merge.
    # Chars of the leaves: theta = (19 + 19 + 15)/3 * 1.02 = 18.02 <= 38: merge.
    by_words = am(100, length_unit="budget").assemble(ranked("P.0", "P.1"), tree)
    by_chars = am(100, length_unit="chars").assemble(ranked("P.0", "P.1"), tree)
    assert by_words.chunk_ids == ("P.0", "P.1") and by_words.merges == 0
    assert by_chars.chunk_ids == ("P",) and by_chars.merges == 1


def test_follows_the_authors_code_path():
    # R: {A: {A1: [5, 5, 5], A2: [4, 4]}, B: [6]} words, T = 24, leaves ranked in order.
    # tree_chunk_retrieval_auto_merge with check_merge_condition (tokens = words):
    #  A1.0: A1 has one retrieved child.  A1.1: tk_cur 5, adds 15 - 10 = 5 <= 19: A1.
    #  A1.2: inside A1, skipped.  A2.0: tk_cur 15, one child.
    #  A2.1: tk_cur 19, adds 8 - 8 = 0 <= 5: A2; tk_cur 23, A adds 23 - 23 = 0 <= 1: A.
    #  B.0: B's only child, so B; R adds 29 - 29 = 0 <= 1: R (29 words), cut to 24.
    # The authors' function returns the first 24 words (auto_merge_count 1: one leaf, A1.2,
    # was brought in by a merge; ChunkBench counts the 4 upward merges).
    tree = tree_of_texts({"R": {"A": {"A1": [words(5)] * 3, "A2": [words(4)] * 2}, "B": [words(6)]}})
    leaves = ("A1.0", "A1.1", "A1.2", "A2.0", "A2.1", "B.0")
    code = am(24).assemble(ranked(*leaves), tree)
    assert code.chunk_ids == ("R",) and code.merges == 4 and code.n_tokens == 24
    assert code.text == tree["R"].text[:tree["B.0"].start + 4]  # A and B's first word
    # The paper's Cond3 blocks A2 (24 - 19 = 5 < len(A2) = 8), so A never merges; B (only
    # child) ends the walk at 29 words, cut to 24: the same words, in four nodes.
    paper = am(24, "paper").assemble(ranked(*leaves), tree)
    assert paper.chunk_ids == ("A1", "A2.0", "A2.1", "B") and paper.merges == 1 and paper.n_tokens == 24


@pytest.mark.parametrize("kw, name", [({"cond3": "text"}, "context.cond3"),
                                      ({"length_unit": "tokens"}, "context.length_unit")])
def test_bad_variant_names(kw, name):
    with pytest.raises(ConfigError, match=f"{name} must be one of"):
        AutoMergeAssembler(**kw)
