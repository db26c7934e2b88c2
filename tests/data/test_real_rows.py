"""The loaders on real upstream rows (tests/fixtures/real: verbatim copies, each folder's README says
where from), read as a user would, ``dataset.path=<folder>``: what the real files hold that
hand-written fixtures did not, and the counts Qu et al.'s Table 5 prints for the setting the tables
use."""

import pytest

from harness.data.beir_stitched import BeirStitched
from harness.data.hicbench import header_sections
from harness.data.longbench import LongBench
from harness.data.qasper import Qasper
from harness.data.ragbench import RAGBench
from harness.types import DataError
from tests.conftest import FIXTURES

REAL = FIXTURES / "real"


# -- RAGBench: every DelucionQA id on two rows (one per generator); 12 unlabelled ExpertQA rows ----

@pytest.fixture(scope="module")
def delucionqa():
    return RAGBench(REAL / "ragbench", subset="delucionqa", require_evidence=True).load()


def test_delucionqa_keeps_one_row_per_question_as_table_5_counts(delucionqa):
    """Table 5: 235 documents, 9 evidence sentences per question; each id's first row is gpt-3.5's."""
    r = delucionqa.report
    assert (len(delucionqa.documents), len(delucionqa.queries), r["rows_duplicate_id"]) == (235, 92, 92)
    assert r["evidence_per_query"] == pytest.approx(9.12, abs=0.005)
    assert {q.meta["generation_model_name"] for q in delucionqa.queries} == {"gpt-3.5-turbo-0125"}
    assert len({q.qid for q in delucionqa.queries}) == 92


def test_delucionqa_union_merges_both_generators_labels(delucionqa):
    union = RAGBench(REAL / "ragbench", subset="delucionqa", duplicate_ids="union").load()
    assert [q.qid for q in union.queries] == [q.qid for q in delucionqa.queries]
    more = [len(u.evidence) >= len(f.evidence) for u, f in zip(union.queries, delucionqa.queries)]
    assert all(more) and union.report["evidence_per_query"] > delucionqa.report["evidence_per_query"]
    assert union.queries[0].meta["generation_model_name"] == ["gpt-3.5-turbo-0125", "claude-3-haiku-20240307"]


def test_delucionqa_duplicate_ids_error_names_the_row():
    with pytest.raises(DataError, match="duplicate row id") as e:
        RAGBench(REAL / "ragbench", subset="delucionqa", duplicate_ids="error").load()
    assert e.value.field == "id" and e.value.row.startswith("delucionqa/")


def test_expertqa_labelled_rows_are_table_5s_documents():
    """Table 5: 777 documents, 12 evidence sentences per question: the 191 labelled rows' passages."""
    every = RAGBench(REAL / "ragbench", subset="expertqa").load()
    assert (len(every.documents), len(every.queries), every.report["queries_without_evidence"]) == (808, 203, 12)
    labelled = RAGBench(REAL / "ragbench", subset="expertqa", require_evidence=True).load()
    r = labelled.report
    assert (len(labelled.documents), len(labelled.queries), r["queries_dropped_no_evidence"]) == (777, 191, 12)
    assert r["evidence_per_query"] == pytest.approx(12.07, abs=0.005)
    assert all(q.evidence for q in labelled.queries)


# -- Qasper: raw v0.3 layout; "Experiments ::: Setup" etc. without an "Experiments" entry ------------

def _qasper(**kwargs):
    return Qasper(REAL / "qasper", split="validation", **kwargs).load()


def test_qasper_real_paper_sections_follow_their_paths():
    ds = _qasper()
    doc = ds.documents[0]
    assert (doc.doc_id, len(ds.queries), ds.report["sections_missing_parent"]) == ("1912.01214", 4, 5)
    by_title = {s.title: s for s in doc.sections}
    approach, setup = by_title["Approach"], by_title["Setup"]
    assert approach.end < setup.start  # the "#" rule alone ran Approach over Setup and Main Results
    assert (approach.end - approach.start) / len(doc.text) < 0.3
    hichunk = next(s for s in header_sections(doc.text) if s.title == "Approach")
    assert (hichunk.end - hichunk.start) / len(doc.text) > 0.6
    # the gold chunk points stay HiChunk's
    assert {(s.start, s.level) for s in doc.sections} == {(s.start, s.level) for s in header_sections(doc.text)}


def test_qasper_infer_adds_the_missing_parents_around_their_children():
    doc = _qasper(missing_parents="infer").documents[0]
    by_title = {s.title: s for s in doc.sections}
    experiments, analysis = by_title["Experiments"], by_title["Analysis"]
    assert (experiments.level, analysis.level) == (1, 2)
    for child in ("Setup", "Main Results", "Analysis", "The Effect of Freezing Parameters."):
        assert experiments.start <= by_title[child].start and by_title[child].end <= experiments.end
    assert experiments.end < by_title["Conclusion"].start
    assert by_title["Sentence Representation."].start == analysis.start


# -- LongBench: one real row of three subsets, data.zip's layout -----------------------------------

def test_longbench_real_rows_and_answers_in_context_as_the_metric_reads_them():
    ds = LongBench(REAL / "longbench", subset=["multifieldqa_en", "qasper", "2wikimqa"]).load()
    assert [q.task for q in ds.queries] == ["multifieldqa_en", "qasper", "2wikimqa"]
    r = ds.report
    # "South West Ultras fan club." is in its context only once normalised (its period), as
    # evidence_recall looks answers up; the qasper row's answer is not in its context at all
    assert (r["queries_answer_in_context"], r["queries_answer_in_context_verbatim"]) == (2, 1)
    assert r["docs_with_passage_sections"] == 1  # 2wikimqa's "Passage N:" blocks
    wiki = next(d for d in ds.documents if d.doc_id.startswith("2wikimqa/"))
    assert wiki.sections and all(wiki.text[s.start:s.end].startswith("Passage ") for s in wiki.sections)


# -- BEIR SciFact: the whole test qrels, a 21-document slice of the corpus, 5 queries ---------------

def test_beir_scifact_real_slice_keeps_the_one_query_whose_document_is_there():
    ds = BeirStitched(corpus="scifact", path=REAL / "beir_scifact" / "scifact").load()
    r = ds.report
    assert (r["qrels_total"], r["n_source_docs"], r["queries_with_relevant_docs"]) == (339, 21, 1)
    (q,) = ds.queries
    assert (q.qid, q.meta["relevant_source_ids"]) == ("1137", ["33370"])
    (span,) = q.evidence
    doc = next(d for d in ds.documents if d.doc_id == span.doc_id)
    assert r["evidence_exact"] == 1 and doc.text[span.start:span.end].strip()
