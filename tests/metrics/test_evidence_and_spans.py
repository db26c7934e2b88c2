"""Retrieval metrics against hand-computed values."""

import math

import pytest

from tests.conftest import query_eval
from harness.metrics.evidence import EvidenceRecall, evidence_recall, normalize_answer
from harness.metrics.spans import SpanOverlap, precision_omega, span_scores, union
from harness.types import Chunk, Context, Document, Query, Span


def S(a, b, doc="d"):
    return Span(doc, a, b)


def test_union_merges_overlaps_and_touching():
    assert union([(5, 8), (0, 3), (2, 4), (8, 9), (7, 7)]) == [(0, 4), (5, 9)]


def test_span_scores_hand_computed():
    # evidence [10,20) and [30,40) = 20 chars; retrieved [15,35) and [0,5): 10 covered, 25 retrieved
    s = span_scores([S(10, 20), S(30, 40)], [S(15, 35), S(0, 5)])
    assert s["span_recall"] == pytest.approx(10 / 20)
    assert s["span_precision"] == pytest.approx(10 / 25)
    assert s["span_iou"] == pytest.approx(10 / (25 + 10))


def test_overlapping_retrieved_spans_are_paid_for_twice():
    s = span_scores([S(0, 10)], [S(0, 10), S(0, 10)])
    assert s["span_recall"] == 1.0 and s["span_precision"] == pytest.approx(0.5)
    assert s["span_iou"] == pytest.approx(10 / 20)


def test_spans_of_other_documents_do_not_count():
    s = span_scores([S(0, 10, "a")], [S(0, 10, "b")])
    assert s["span_recall"] == 0.0 and s["span_precision"] == 0.0


def test_no_evidence_is_nan_and_empty_context_is_zero():
    assert all(math.isnan(v) for v in span_scores([], [S(0, 5)]).values())
    s = span_scores([S(0, 5)], [])
    assert s["span_recall"] == 0.0 and s["span_precision"] == 0.0 and s["span_iou"] == 0.0


def test_precision_omega_uses_every_chunk_touching_evidence():
    chunks = {"d": [Chunk("d#0", "d", "x" * 10, 0, 10), Chunk("d#1", "d", "x" * 10, 10, 20),
                    Chunk("d#2", "d", "x" * 10, 20, 30)]}
    # evidence [5,15) touches chunks 0 and 1: union 20 chars, 10 of them evidence
    assert precision_omega([S(5, 15)], chunks) == pytest.approx(10 / 20)
    # evidence inside one chunk
    assert precision_omega([S(22, 24)], chunks) == pytest.approx(2 / 10)


def test_span_overlap_metric_reads_context_spans():
    q = Query("q", "?", evidence=(S(0, 4),))
    ctx = Context("q", ("d#0",), "abcd", 1, spans=(S(0, 4),))
    out = SpanOverlap()(query_eval(q, ctx, chunks_by_doc={"d": [Chunk("d#0", "d", "abcd", 0, 4)]}))
    assert out == {"span_recall": 1.0, "span_precision": 1.0, "span_iou": 1.0, "span_precision_omega": 1.0}


def test_normalize_answer_matches_squad_style():
    assert normalize_answer("The  Cat, a dog; AN owl!") == "cat dog owl"


def test_evidence_recall_is_length_weighted():
    ev = ["The cat sat on the mat.", "Dogs bark loudly at night, every night."]
    ctx = "Intro. the CAT sat on   the mat! Other text."
    assert evidence_recall(ev, ctx) == pytest.approx(len(ev[0]) / (len(ev[0]) + len(ev[1])))


def test_evidence_recall_edge_cases():
    assert math.isnan(evidence_recall([], "anything"))
    assert math.isnan(evidence_recall(["..."], "anything"))  # normalises to nothing
    assert evidence_recall(["# Heading text"], "heading text follows") == 1.0
    assert evidence_recall(["完全一致。"], "前文完全一致。后文") == 1.0
    assert evidence_recall(["some words"], "") == 0.0


def test_evidence_recall_metric_counts_unaligned_snippets():
    doc = Document("d", "xx alpha beta")
    q = Query("q", "?", evidence=(Span("d", 3, 13),), unaligned_evidence=("gamma delta",))
    out = EvidenceRecall()(query_eval(q, Context("q", (), "alpha beta", 2), documents={"d": doc}))
    assert out["evidence_recall"] == pytest.approx(10 / 21)  # length-weighted: 10 of 10 + 11 chars


def test_run_level_aggregates_are_not_means():
    from harness.metrics.bleu import SacreBleu, corpus_bleu
    from harness.metrics.chunk_points import ChunkPointF1
    from harness.metrics.fact_cov import FactCov
    from tests.conftest import ScriptedLLM

    rows = [{"answer": "the cat sat on the mat", "gold_answers": ["the cat sat on the mat"]},
            {"answer": "a dog", "gold_answers": ["the dog barked", "a dog barked"]},
            {"qid": "unanswered"}]
    out = SacreBleu().aggregate(rows)
    assert out == {"sacrebleu_corpus": pytest.approx(corpus_bleu(
        ["the cat sat on the mat", "a dog"], [["the cat sat on the mat"], ["the dog barked", "a dog barked"]]))}
    assert 0 < out["sacrebleu_corpus"] < 1
    # Micro F1: 3 of 4 predicted points match 3 of 6 gold ones over two documents.
    docs = [{f"chunk_point_n_{k}_{t}": v for t in ("l1", "l2", "all") for k, v in zip(("match", "pred", "gold"), c)}
            | {f"chunk_point_f1_{t}": 0.5 for t in ("l1", "l2", "all")} for c in ((1, 1, 1), (2, 3, 5))]
    micro = ChunkPointF1().aggregate(docs)
    assert micro["chunk_point_precision_all_micro"] == pytest.approx(3 / 4)
    assert micro["chunk_point_recall_all_micro"] == pytest.approx(3 / 6)
    assert micro["chunk_point_f1_all_micro"] == pytest.approx(2 * 0.75 * 0.5 / 1.25)
    cov = [{"fact_cov": 1.0, "fact_cov_facts": 1, "fact_cov_covered": 1.0},
           {"fact_cov": 0.25, "fact_cov_facts": 4, "fact_cov_covered": 1.0}, {"fact_cov": float("nan")}]
    assert FactCov(ScriptedLLM()).aggregate(cov) == {"fact_cov_fact_weighted": pytest.approx(2 / 5)}
