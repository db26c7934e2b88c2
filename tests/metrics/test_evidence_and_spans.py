"""Retrieval metrics against hand-computed values."""

import math

import pytest

from tests.conftest import query_eval
from harness.metrics.evidence import (EvidenceRecall, EvidenceSpanRecall, auto_unit, evidence_span_recall,
                                      normalize_answer, sent_tokenize)
from harness.metrics.spans import SpanOverlap, precision_omega, span_scores, union
from harness.types import Chunk, ConfigError, Context, DataError, Document, Query, Span


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


def test_evidence_span_recall_is_length_weighted():
    ev = ["The cat sat on the mat.", "Dogs bark loudly at night, every night."]
    ctx = "Intro. the CAT sat on   the mat! Other text."
    assert evidence_span_recall(ev, ctx) == pytest.approx(len(ev[0]) / (len(ev[0]) + len(ev[1])))


def test_evidence_span_recall_edge_cases():
    assert math.isnan(evidence_span_recall([], "anything"))
    assert math.isnan(evidence_span_recall(["..."], "anything"))  # normalises to nothing
    assert evidence_span_recall(["# Heading text"], "heading text follows") == 1.0
    assert evidence_span_recall(["完全一致。"], "前文完全一致。后文") == 1.0
    assert evidence_span_recall(["some words"], "") == 0.0


def test_evidence_span_recall_metric_counts_unaligned_snippets():
    doc = Document("d", "xx alpha beta")
    q = Query("q", "?", evidence=(Span("d", 3, 13),), unaligned_evidence=("gamma delta",))
    out = EvidenceSpanRecall()(query_eval(q, Context("q", (), "alpha beta", 2), documents={"d": doc}))
    assert out["evidence_span_recall"] == pytest.approx(10 / 21)  # length-weighted: 10 of 10 + 11 chars


# HiChunk's eval.py on a small document. The context is the document without its last line.
DOC = Document("d", "# Results\nThe model reached 91% accuracy. It beat the baseline by two points.\n"
                    "Training took 3 days on 8 GPUs.")
CONTEXT = DOC.text[:DOC.text.index("Training")]
E1 = "The model reached 91% accuracy. It beat the baseline by two points."  # exact; runs over ". "
E2 = "Training took 3 days on 8 GPUs."                                      # exact; not in the context
E3 = "# Results"                                                            # a header line
FUZZY = "the model reached 91 % accuracy"     # the data set's words of a span aligned fuzzily
FUZZY_SPAN = DOC.text.index("The model reached 91% accuracy")


def span(text):
    start = DOC.text.index(text)
    return Span("d", start, start + len(text))


def erec(query, text=CONTEXT, **options):
    item = query_eval(query, Context(query.qid, (), text, 0), documents={"d": DOC})
    return EvidenceRecall(**options)(item)["evidence_recall"], EvidenceSpanRecall()(item)["evidence_span_recall"]


def test_evidence_unit_rewrites_sentence_ends_in_the_evidence_only():
    q = Query("q", "?", evidence=(span(E1), span(E2), span(E3)))
    total = len(E1) + len(E2) + len(E3)
    # eval.py on the context as assembled: E1 becomes "...accuracy.It beat...", normalised "91
    # accuracyit beat", not in the context's "91 accuracy it beat": missed; E2 is not there;
    # "# " stripped, E3 is found. ChunkBench's reading finds E1 as well.
    code, ours = erec(q, unit="evidence", context="as_is")
    assert code == pytest.approx(len(E3) / total)
    assert ours == pytest.approx((len(E1) + len(E3)) / total)
    # on the context's sentences joined as HiChunk's chunk text ("accuracy.It beat") E1 is found
    assert erec(q, unit="evidence")[0] == pytest.approx((len(E1) + len(E3)) / total)


def test_an_abbreviation_in_the_evidence_is_missed_as_in_hichunk_pipeline():
    doc = Document("m", "Intro. Mr. Smith won the race. He smiled.")
    q = Query("q", "?", evidence=(Span("m", 7, 30),))  # "Mr. Smith won the race."
    item = query_eval(q, Context("q", (), doc.text, 0), documents={"m": doc})
    # "Mr.Smith" -> "mrsmith"; Punkt keeps "Mr. Smith" in one sentence, so no context has "mrsmith"
    assert EvidenceRecall(unit="evidence")(item)["evidence_recall"] == 0.0
    assert EvidenceRecall(unit="evidence", context="as_is")(item)["evidence_recall"] == 0.0
    assert EvidenceSpanRecall()(item)["evidence_span_recall"] == 1.0


def test_a_fuzzily_aligned_snippet_is_scored_by_its_own_words():
    aligned = Span("d", FUZZY_SPAN, FUZZY_SPAN + len("The model reached 91% accuracy"))
    q = Query("q", "?", evidence=(aligned, span(E3)), evidence_wording=(FUZZY, E3))
    code, ours = erec(q, unit="evidence")
    # normalised wording "model reached 91 accuracy" is in the context; so is the aligned text
    assert code == 1.0 and ours == 1.0
    q = Query("q", "?", evidence=(aligned,), evidence_wording=("the model got 91 % accuracy",))
    code, ours = erec(q, unit="evidence")
    assert (code, ours) == (0.0, 1.0)  # the data set's words are not in the context; the span's are


def test_sentences_unit_gives_each_sentence_its_length_weighted_credit():
    paragraph = "We use BERT. Results improve by two points. Training is fast."
    doc = Document("p", "Intro.\n" + paragraph)
    q = Query("q", "?", evidence=(Span("p", 7, 7 + len(paragraph)),))
    context = "We use BERT. Other words. Training is fast."
    item = query_eval(q, Context("q", (), context, 0), documents={"p": doc})
    s1, s2, s3 = sent_tokenize(paragraph)
    assert (s1, s3) == ("We use BERT.", "Training is fast.")
    assert EvidenceRecall(unit="sentences")(item)["evidence_recall"] == pytest.approx(
        (len(s1) + len(s3)) / (len(s1) + len(s2) + len(s3)))
    assert EvidenceRecall(unit="evidence")(item)["evidence_recall"] == 0.0  # the paragraph, whole
    assert EvidenceSpanRecall()(item)["evidence_span_recall"] == 0.0


def test_sentences_are_nltks_english_punkt_model():
    # the trained model knows "Dr." and "p.m."; an untrained Punkt splits after each
    assert sent_tokenize("Dr. Smith arrived at 5 p.m. on Monday. He sat down.") == [
        "Dr. Smith arrived at 5 p.m. on Monday.", "He sat down."]


def test_answers_unit_and_a_query_with_nothing_to_find():
    q = Query("q", "?", answers=("BERT", "two points"))
    item = query_eval(q, Context("q", (), "We use BERT.", 0))
    assert EvidenceRecall(unit="answers")(item)["evidence_recall"] == pytest.approx(4 / 14)
    assert EvidenceRecall(unit="evidence")(item)["evidence_recall"] == 0.0  # eval.py: 0 / (0 + 1e-20)
    assert math.isnan(EvidenceRecall(unit="evidence", no_evidence="nan")(item)["evidence_recall"])


@pytest.mark.parametrize("dataset, subset, unit", [
    ("harness.data.qasper.Qasper", None, "sentences"),
    ("harness.data.longbench.LongBench", "all", "answers"),
    ("harness.data.ohrbench.OHRBench", None, "evidence"),
    ("harness.data.gutenqa.GutenQA", None, "evidence"),
    ("harness.data.hicbench.HiChunkLayout", "HiCBench", "evidence"),
    ("harness.data.hicbench.HiChunkLayout", "qasper_all", "sentences"),
    ("harness.data.hicbench.HiChunkLayout", "narrativeqa", "answers"),
])
def test_auto_unit_is_eval_py_choice_by_data_set(dataset, subset, unit):
    assert auto_unit(dataset, subset) == unit


def test_evidence_recall_config_picks_the_unit_of_the_run_data_set(make_cfg):
    from harness.pipeline.components import build_component

    for dataset, unit in [("qasper", "sentences"), ("ohrbench", "evidence"), ("longbench", "answers")]:
        cfg = make_cfg(f"dataset={dataset}")
        assert build_component(cfg.metrics.evidence_recall, "metrics.evidence_recall").unit == unit, dataset


def test_no_evidence_nan_from_the_command_line(make_cfg):
    """Hydra reads an unquoted ``no_evidence=nan`` as the float NaN: it means the option "nan"."""
    from harness.pipeline.components import build_component

    cfg = make_cfg("metrics.evidence_recall.no_evidence=nan")
    assert build_component(cfg.metrics.evidence_recall, "metrics.evidence_recall").no_evidence == "nan"


def test_evidence_recall_bad_options_name_the_parameter():
    with pytest.raises(ConfigError, match="unit must be one of auto, evidence, sentences, answers"):
        EvidenceRecall(unit="paragraphs")
    with pytest.raises(ConfigError, match="no_evidence"):
        EvidenceRecall(no_evidence="skip")
    with pytest.raises(ConfigError, match="context must be one of joined_sentences, as_is"):
        EvidenceRecall(context="document")


def test_evidence_wording_is_one_snippet_per_span():
    with pytest.raises(DataError, match="evidence_wording"):
        Query("q", "?", evidence=(span(E1),), evidence_wording=("a", "b")).validate("toy", {"d": DOC})


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
            | {f"chunk_point_f1_{t}_macro": 0.5 for t in ("l1", "l2", "all")} for c in ((1, 1, 1), (2, 3, 5))]
    micro = ChunkPointF1().aggregate(docs)
    assert micro["chunk_point_precision_all"] == pytest.approx(3 / 4)
    assert micro["chunk_point_recall_all"] == pytest.approx(3 / 6)
    assert micro["chunk_point_f1_all"] == pytest.approx(2 * 0.75 * 0.5 / 1.25)
    cov = [{"fact_cov": 1.0, "fact_cov_facts": 1, "fact_cov_covered": 1.0},
           {"fact_cov": 0.25, "fact_cov_facts": 4, "fact_cov_covered": 1.0}, {"fact_cov": float("nan")}]
    assert FactCov(ScriptedLLM()).aggregate(cov) == {"fact_cov_fact_weighted": pytest.approx(2 / 5)}


def test_precision_omega_counts_a_bordering_chunk_only_under_closed_intervals():
    # chunks [0,10) [10,20) [20,30); evidence [10,20) is exactly chunk 1, bordered by chunk 0
    # (its end 10 == the evidence's start) and chunk 2 (its start 20 == the evidence's end)
    chunks = {"d": [Chunk(f"d#{i}", "d", "x" * 10, 10 * i, 10 * i + 10) for i in range(3)]}
    # open: chunk 1 only: 10 / (10 + 10 - 10)
    assert precision_omega([S(10, 20)], chunks, "open") == pytest.approx(1.0)
    # closed (default, Chroma's rule): chunks 0, 1, 2 count, union [0,30): 10 / (30 + 10 - 10)
    assert precision_omega([S(10, 20)], chunks) == pytest.approx(10 / 30)
    assert precision_omega([S(10, 20)], chunks, "closed") == pytest.approx(10 / 30)
    # one character of gap: chunk [0,9) ends before the evidence [10,20) starts, touching neither way
    gap = {"d": [Chunk("d#0", "d", "x" * 9, 0, 9), Chunk("d#1", "d", "x" * 10, 10, 20)]}
    assert precision_omega([S(10, 20)], gap, "closed") == precision_omega([S(10, 20)], gap, "open") == 1.0


def test_precision_omega_hand_computed_under_both_rules():
    # chunks [0,8) [8,20) [20,26) [26,40) [40,50); evidence [12,20) and [30,34) = 12 chars
    bounds = [(0, 8), (8, 20), (20, 26), (26, 40), (40, 50)]
    chunks = {"d": [Chunk(f"d#{i}", "d", "x" * (e - s), s, e) for i, (s, e) in enumerate(bounds)]}
    ev = [S(12, 20), S(30, 34)]
    # open: [8,20) and [26,40) overlap E: union 26 chars, all 12 evidence chars in it: 12 / 26
    assert precision_omega(ev, chunks, "open") == pytest.approx(12 / 26)
    # closed: [20,26) also counts (its start 20 == the end of [12,20)): union [8,40) = 32: 12 / 32
    assert precision_omega(ev, chunks, "closed") == pytest.approx(12 / 32)
    # [0,8) ends 4 characters before E and [40,50) starts 6 after: never counted
    # evidence not covered by any chunk still counts in the denominator: [50,55) adds 5
    assert precision_omega(ev + [S(50, 55)], {"d": chunks["d"][:4]}, "closed") == pytest.approx(12 / (32 + 5))
    assert precision_omega(ev + [S(50, 55)], {"d": chunks["d"][:4]}, "open") == pytest.approx(12 / (26 + 5))


def test_span_overlap_omega_intervals_option():
    q = Query("q", "?", evidence=(S(4, 8),))
    ctx = Context("q", ("d#1",), "efgh", 1, spans=(S(4, 8),))
    chunks = {"d": [Chunk("d#0", "d", "abcd", 0, 4), Chunk("d#1", "d", "efgh", 4, 8)]}
    item = query_eval(q, ctx, chunks_by_doc=chunks)
    assert SpanOverlap()(item)["span_precision_omega"] == pytest.approx(4 / 8)
    assert SpanOverlap(omega_intervals="open")(item)["span_precision_omega"] == 1.0
    with pytest.raises(ConfigError, match="omega_intervals"):
        SpanOverlap(omega_intervals="half-open")


def test_chunk_spans_found_places_a_repeated_chunk_at_its_first_occurrence():
    """Chroma's code finds each chunk's text in the corpus: a chunk whose text recurs earlier is
    scored there (``found``); the carried offsets score where the chunker cut it."""
    text = "Total 10.\nTotal 10.\nOther."
    doc = Document("d", text)
    chunks = {"d": [Chunk("d#0", "d", "Total 10.", 0, 9), Chunk("d#1", "d", "Total 10.", 10, 19),
                    Chunk("d#2", "d", "Other.", 20, 26)]}
    q = Query("q", "?", evidence=(S(10, 19),))            # the second "Total 10."
    ctx = Context("q", ("d#1",), "Total 10.", 3, spans=(S(10, 19),))
    item = query_eval(q, ctx, chunks_by_doc=chunks, documents={"d": doc})
    carried = SpanOverlap()(item)
    assert (carried["span_recall"], carried["span_precision_omega"]) == (1.0, 1.0)
    found = SpanOverlap(chunk_spans="found")(item)
    # d#1 is placed at [0, 9), where d#0 is: the context holds no evidence, and no placed chunk
    # touches [10, 19) (both end a character before it, d#2 starts one after it).
    assert found["span_recall"] == 0.0 and found["span_precision"] == 0.0
    assert found["span_precision_omega"] == pytest.approx(0.0)
    with pytest.raises(ConfigError, match="chunk_spans must be one of carried, found"):
        SpanOverlap(chunk_spans="located")
