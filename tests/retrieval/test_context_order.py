"""``context.order``: rank order (the papers') or document order, and why the latter matters to a
whole-string evidence look-up: evidence that runs over a chunk boundary is only found when the two
chunks read on in the context."""

import pytest

from harness.metrics.evidence import evidence_span_recall
from harness.retrieval.assemblers import TokenBudgetAssembler, TopKAssembler
from harness.types import ConfigError
from tests.retrieval.test_assemblers import build_tree, ranked


def test_document_order_sorts_the_picked_chunks_by_position_not_rank():
    chunks = build_tree({"a": [3, 3, 3]})
    hits = ranked("a.2", "a.0", "a.1")
    by_rank = TopKAssembler(k=2, unit="words").assemble(hits, chunks)
    by_doc = TopKAssembler(k=2, unit="words", order="document").assemble(hits, chunks)
    assert by_rank.chunk_ids == ("a.2", "a.0") and by_doc.chunk_ids == ("a.0", "a.2")
    assert by_doc.ranking == by_rank.ranking  # ranking metrics read the same ranking either way
    whole = TokenBudgetAssembler(budget=100, unit="words", order="document").assemble(hits, chunks)
    assert whole.chunk_ids == ("a.0", "a.1", "a.2")


def test_evidence_over_a_chunk_boundary_is_found_only_in_document_order():
    chunks = build_tree({"a": [3, 3, 3]})
    doc_text = " ".join(chunks[c].text for c in ("a.0", "a.1", "a.2"))
    evidence = doc_text.split()[2:4]  # the last word of a.0 and the first of a.1
    hits = ranked("a.1", "a.2", "a.0")  # every chunk retrieved
    by_rank = TokenBudgetAssembler(budget=100, unit="words").assemble(hits, chunks)
    by_doc = TokenBudgetAssembler(budget=100, unit="words", order="document").assemble(hits, chunks)
    assert evidence_span_recall([" ".join(evidence)], by_rank.text) == 0.0
    assert evidence_span_recall([" ".join(evidence)], by_doc.text) == 1.0


def test_bad_order_names_the_parameter():
    with pytest.raises(ConfigError, match="context.order must be one of rank, document"):
        TopKAssembler(order="score")
