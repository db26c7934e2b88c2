"""dataset.limit_queries limits the documents too where retrieval is per document (issue 16
item 9): a 5-question run chunks only the documents those questions search."""

import pytest

from harness.data.base import query_doc_ids
from harness.pipeline.runner import Pipeline


def run(cfg, log=lambda *_: None):
    return Pipeline(cfg, log=log).run()


@pytest.mark.slow
def test_limit_queries_under_document_scope_chunks_only_the_needed_documents(make_cfg):
    lines = []
    r = run(make_cfg("dataset.limit_queries=5", "retriever=bm25"), log=lines.append)
    needed = {d for row in r.per_query for d in row["doc_ids"]}
    kept = int(r.metrics["n_docs"])  # the chunk statistics: documents actually chunked
    assert r.metrics["n_queries"] == 5 and kept == len(needed) < 4  # TINY: 4 documents, 20 questions
    assert r.dataset_report["n_docs"] == kept and r.dataset_report["docs_dropped_not_queried"] == 4 - kept
    assert any(f"{kept} documents kept, the ones the 5 questions search; {4 - kept} left out" in line
               for line in lines), lines
    # corpus scope searches every document: the corpus stays whole
    corpus = run(make_cfg("dataset.limit_queries=5", "retriever=bm25", "retriever.scope=corpus"))
    assert corpus.metrics["n_docs"] == 4 and "docs_dropped_not_queried" not in corpus.dataset_report
    # and so does a run without a question limit, under its old load key
    assert run(make_cfg("retriever=bm25")).metrics["n_docs"] == 4


def test_the_documents_kept_are_those_the_questions_need(make_cfg):
    from harness.data.base import only_queried_documents
    from harness.data.ohrbench import OHRBench

    full = OHRBench(domains=["news", "textbook"], limit_queries=5).load()
    kept = only_queried_documents(full)
    assert [d.doc_id for d in kept.documents] == [
        d.doc_id for d in full.documents if any(d.doc_id in query_doc_ids(q) for q in full.queries)]
    assert kept.queries == full.queries and len(kept.documents) < len(full.documents)
    assert kept.report["docs_dropped_not_queried"] == len(full.documents) - len(kept.documents)
    kept.validate()  # every query's documents and evidence are still there
