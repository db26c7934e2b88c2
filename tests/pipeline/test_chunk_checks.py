"""Degenerate chunkings are counted and said: chunks over the context budget or the passage
encoder's input, and long documents left as one chunk."""

import logging
import subprocess
import sys

import pytest

from harness.pipeline.chunk_checks import check_contexts, chunk_checks, warning
from harness.pipeline.runner import Pipeline
from harness.pipeline.stages import STAGES
from harness.types import Chunk, DocChunks, Document
from tests.conftest import TINY
from tests.test_cli import ENV


def _doc(doc_id, n_chunks, text="x" * 100):
    doc = Document(doc_id=doc_id, text=text)
    step = len(text) // n_chunks
    chunks = [Chunk(f"{doc_id}:{i}", doc_id, text[i * step:(i + 1) * step], i * step, (i + 1) * step)
              for i in range(n_chunks)]
    return doc, DocChunks(chunks, 0.0)


def test_counts_over_each_limit_and_single_chunk_documents():
    (a, ca), (b, cb), (c, cc) = _doc("a", 1), _doc("b", 2), _doc("c", 1)
    chunked = {"a": ca, "b": cb, "c": cc}
    sizes = [900, 50, 50, 30]             # a's one chunk, b's two, c's one (context units)
    encoder = (128, [40, 20, 20, 300])    # c's chunk is over the encoder's input
    got = chunk_checks([a, b, c], chunked, sizes, budget=512, encoder=encoder)
    assert got == {"docs_single_chunk": 2.0, "chunks_over_context_budget": 1.0,
                   "chunks_over_embedder_input": 1.0, "docs_single_chunk_over_limit": 2.0}
    # without a budget or an encoder those counts are absent, not zero
    assert chunk_checks([a, b, c], chunked, sizes, None, None) == {
        "docs_single_chunk": 2.0, "docs_single_chunk_over_limit": 0.0}


def test_the_warning_names_each_flag_and_is_silent_otherwise():
    metrics = {"n_chunks": 4, "n_docs": 3, "chunk_size_max": 900, "chunks_over_context_budget": 1,
               "chunks_over_embedder_input": 1, "docs_single_chunk_over_limit": 2}
    line = warning(metrics, 512, 128)
    assert line.startswith("chunks the scores may flatter: 1 of 4 chunks exceed the context budget (512; largest 900)")
    assert "1 of 4 chunks exceed the passage encoder's input (128 tokens)" in line
    assert "2 of 3 documents are one chunk over those limits" in line
    assert warning({"n_chunks": 4, "n_docs": 3, "docs_single_chunk": 3, "chunks_over_context_budget": 0}, 512, 128) is None


def test_a_run_of_one_chunk_per_document_warns_and_records_the_counts(make_cfg, caplog):
    # truncate: with overflow=stop no context would hold a chunk, and such a run fails (check_contexts)
    cfg = make_cfg("chunker=fixed", "chunker.size=100000", "context.budget=256", "context.overflow=truncate")
    with caplog.at_level(logging.WARNING, logger="harness.pipeline.runner"):
        r = Pipeline(cfg, log=lambda *_: None).run()
    m = r.metrics
    assert m["docs_single_chunk"] == m["n_docs"] == m["n_chunks"] > 0
    assert m["chunks_over_context_budget"] == m["docs_single_chunk_over_limit"] > 0
    assert m["embedder_input_limit"] == 256 and m["chunks_over_embedder_input"] > 0  # MiniLM's own limit
    assert any(rec.getMessage().startswith("chunks the scores may flatter:") for rec in caplog.records)
    # a cached rerun still says it
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness.pipeline.runner"):
        again = Pipeline(cfg, log=lambda *_: None).run()
    assert set(again.stages.values()) == {"cached"}
    assert any(rec.getMessage().startswith("chunks the scores may flatter:") for rec in caplog.records)


def test_a_plain_run_is_not_flagged(make_cfg, caplog):
    with caplog.at_level(logging.WARNING, logger="harness.pipeline.runner"):
        m = Pipeline(make_cfg(), log=lambda *_: None).run().metrics
    assert m["chunks_over_context_budget"] == m["docs_single_chunk_over_limit"] == 0
    assert not any("chunks the scores may flatter" in rec.getMessage() for rec in caplog.records)


def test_ranking_metrics_do_not_credit_a_chunk_the_context_cannot_hold(make_cfg):
    """One chunk per document retrieves every evidence at rank 1; with a context budget
    smaller than that chunk the reader never sees it whole, so no ranking metric credits it."""
    whole = ("chunker=fixed", "chunker.size=100000", "metrics=qu_et_al")
    held = Pipeline(make_cfg(*whole, "context=topk"), log=lambda *_: None).run().metrics
    over = Pipeline(make_cfg(*whole, "context.budget=256", "context.overflow=truncate"),  # a cut chunk is no hit
                    log=lambda *_: None).run().metrics
    assert over["chunks_over_context_budget"] == over["n_chunks"] > 0
    ranking = [k for k in held if k.startswith(("doc_recall_at_", "evidence_sentence_recall_at_")) and "/" not in k]
    assert ranking and all(held[k] > 0 for k in ranking)
    assert all(over[k] == 0 for k in ranking)


def test_contexts_all_empty_fail_and_one_context_suffices():
    from harness.types import ConfigError, Context

    empty, held = Context("q1", (), "", 0), Context("q2", ("a:0",), "x", 1)
    check_contexts([empty, held], 5, "tokens", lambda: [100])  # one context holds a chunk: a run, not refused
    check_contexts([], 5, "tokens", lambda: [])  # no queries: nothing to say
    with pytest.raises(ConfigError, match=r"^context.budget=5 words holds no chunk \(the smallest chunk is 100 "
                                          r"words\): every context of the 2 queries is empty"):
        check_contexts([empty, empty], 5, "words", lambda: [300, 100])
    # chunks that fit exist, yet every query's first-ranked one does not: the stop rule, not the budget
    with pytest.raises(ConfigError, match=r"^context.budget=512 tokens holds no query's first-ranked chunk \(chunks "
                                          r"of 105 to 816 tokens; .*use context.overflow=truncate"):
        check_contexts([empty, empty], 512, "tokens", lambda: [816, 105])
    with pytest.raises(ConfigError, match="the retriever ranked no chunk for any of the 1 queries"):
        check_contexts([empty], None, "tokens", lambda: [100])


def test_a_budget_smaller_than_any_chunk_ends_the_run_in_one_line(tmp_path):
    """Not a record of zeros: exit 2, one line naming the budget and the smallest chunk."""
    p = subprocess.run([sys.executable, "-m", "harness", *TINY, "dataset.limit_docs=1", "retriever=bm25",
                        "context.budget=5", f"cache.dir={tmp_path / 'cache'}", "tracking=none"],
                       cwd=tmp_path, env=ENV, text=True, capture_output=True, timeout=600)
    errors = [line for line in p.stderr.splitlines() if line.startswith("chunkbench: error:")]
    assert p.returncode == 2 and len(errors) == 1 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert errors[0].startswith("chunkbench: error: context.budget=5 tokens holds no chunk (the smallest chunk is ")


def test_the_load_stage_warns_of_evidence_no_query_searches(make_cfg, caplog):
    from dataclasses import replace

    from harness.types import Span

    p = Pipeline(make_cfg("retriever=bm25", "dataset.limit_docs=2"), log=lambda *_: None)
    for stage in STAGES[:1]:
        p.keys[stage.name] = p.key(stage)
        p.outputs[stage.name], _ = p.run_whole(stage)
    ds = p.outputs["load"]
    other = next(d.doc_id for d in ds.documents if d.doc_id not in ds.queries[0].doc_ids)
    ds.queries[0] = replace(ds.queries[0], evidence=(Span(other, 0, 1),))
    with caplog.at_level(logging.WARNING, logger="harness.pipeline.runner"):
        p.check("load")
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"retriever.scope=document: 1 of {len(ds.queries)} queries have evidence in a document "
                           f"they do not search (1 spans)")


def test_a_context_holds_its_documents_whole_only_when_its_chunks_cover_them():
    """Measured: the documents fit the budget AND the context's chunks cover their text; a retriever
    that ranks only some chunks leaves a document partly out however small it is."""
    from harness.pipeline.chunk_checks import whole_document_contexts
    from harness.types import Context, Document, Query, Span

    docs = [Document("a", "one two. three four."), Document("b", "five six.")]
    queries = [Query("q1", "?", doc_ids=("a",)), Query("q2", "?", doc_ids=("a",)), Query("q3", "?", doc_ids=("b",))]
    contexts = [Context("q1", ("a#1", "a#0"), "", 0, (Span("a", 9, 20), Span("a", 0, 8))),
                Context("q2", ("a#0",), "", 0, (Span("a", 0, 8),)), Context("q3", ("b#0",), "", 0, (Span("b", 0, 9),))]
    sizes = {"a": 4, "b": 2}
    assert whole_document_contexts(queries, contexts, docs, sizes, 10, "document") == 2 / 3
    assert whole_document_contexts(queries, contexts, docs, sizes, 3, "document") == 1 / 3  # a does not fit
    assert whole_document_contexts(queries, contexts, docs, sizes, 10, "corpus") == 0.0  # b is in no context of a's
