"""Perplexity before and after QChunker's knowledge completion (QChunker Sec. 4.6, Figure 3)."""

import json
import math
from dataclasses import replace

import pytest

from harness.aggregation import aggregate_documents
from harness.metrics.keys import recorded_series
from harness.metrics.rewrite_perplexity import RewritePerplexity, rewritten_pairs
from harness.types import Chunk, ConfigError, Document
from tests.conftest import ScriptedLLM

TEXT = "alpha beta gamma. delta epsilon. zeta eta theta iota."
DOC = Document("d", TEXT)
PIECES = [(0, 17), (18, 32), (33, len(TEXT))]


def chunks(doc=DOC, rewrites=None):
    """The document tiled into PIECES; ``rewrites`` maps a piece's index to its new text."""
    out = [Chunk(f"{doc.doc_id}#{i}", doc.doc_id, doc.text[s:e], s, e) for i, (s, e) in enumerate(PIECES)]
    for i, text in (rewrites or {}).items():
        out[i] = replace(out[i], text=text, rewritten=True)
    return out


def by_marker(prompt, text):
    """Log-probability -1 per word, -0.25 per word of a text that says it was completed."""
    return [-0.25 if "completed" in text else -1.0] * len(text.split())


def test_one_rewritten_chunk_hand_computed():
    llm = ScriptedLLM(score=by_marker)
    metric = RewritePerplexity(llm)
    rows = metric.score_all([DOC], {"d": chunks(rewrites={1: "delta epsilon, completed with context."})})
    [row] = rows
    assert set(row) == metric.keys() | metric.series_keys()
    assert row["rewrite_ppl_chunks"] == 1
    assert row["rewrite_ppl_original_chunks"] == [pytest.approx(math.e)]   # "delta epsilon." on its own
    assert row["rewrite_ppl_rewritten_chunks"] == [pytest.approx(math.exp(0.25))]
    assert row["rewrite_ppl_original_macro"] == pytest.approx(math.e)
    assert row["rewrite_ppl_rewritten_macro"] == pytest.approx(math.exp(0.25))
    assert row["rewrite_ppl_original_std_macro"] == 0 and row["rewrite_ppl_fell_macro"] == 1.0
    # the original is the source span's document text, whatever the chunk's text now is
    assert rewritten_pairs(DOC, chunks(rewrites={1: "x"})) == [("delta epsilon.", "x")]


def test_no_rewritten_chunk_is_nan_with_a_zero_count():
    metric = RewritePerplexity(ScriptedLLM(score=by_marker))
    [row] = metric.score_all([DOC], {"d": chunks()})
    assert row["rewrite_ppl_chunks"] == 0.0 and row["rewrite_ppl_original_chunks"] == []
    assert all(math.isnan(row[k]) for k in metric.keys() - {"rewrite_ppl_chunks"})
    run = metric.aggregate([row])
    assert set(run) == metric.aggregate_keys() and run["rewrite_ppl_chunks_total"] == 0.0
    assert all(math.isnan(v) for k, v in run.items() if k != "rewrite_ppl_chunks_total")
    assert metric(DOC, [])["rewrite_ppl_chunks"] == 0.0  # no chunk at all: the same


def test_run_level_pools_every_chunk_of_the_run_and_documents_average_apart():
    other = Document("e", TEXT)
    # d: two chunks, both completed (perplexity falls); e: one chunk rewritten to a worse text
    by_doc = {"d": chunks(rewrites={0: "alpha beta gamma, completed.", 2: "zeta eta theta iota, completed."}),
              "e": chunks(other, rewrites={1: "delta delta delta epsilon."})}
    metric = RewritePerplexity(ScriptedLLM(score=by_marker))
    rows = metric.score_all([DOC, other], by_doc)
    assert [r["rewrite_ppl_chunks"] for r in rows] == [2.0, 1.0]
    assert rows[0]["rewrite_ppl_fell_macro"] == 1.0 and rows[1]["rewrite_ppl_fell_macro"] == 0.0
    run = metric.aggregate(rows)
    assert run["rewrite_ppl_chunks_total"] == 3.0
    assert run["rewrite_ppl_fell"] == pytest.approx(2 / 3)
    assert run["rewrite_ppl_original"] == pytest.approx(math.e) and run["rewrite_ppl_original_std"] == 0
    rewritten = [math.exp(0.25), math.exp(0.25), math.e]
    assert run["rewrite_ppl_rewritten"] == pytest.approx(sum(rewritten) / 3)
    assert run["rewrite_ppl_rewritten_std"] == pytest.approx(math.sqrt(sum((v - sum(rewritten) / 3) ** 2
                                                                           for v in rewritten) / 3))
    # documents: the series are not averaged, the per-document scores are (the macro means)
    docs = aggregate_documents(rows)
    assert not [k for k in docs if k.startswith(("rewrite_ppl_original_chunks", "rewrite_ppl_rewritten_chunks"))]
    assert docs["rewrite_ppl_fell_macro"] == 0.5 and docs["n/rewrite_ppl_fell_macro"] == 2
    assert json.loads(json.dumps(rows))[0]["rewrite_ppl_original_chunks"] == rows[0]["rewrite_ppl_original_chunks"]


def test_adversarial_rewrites_and_views():
    # an empty rewrite has no scored token: its pair stays in the series, out of the numbers
    # and the count; a rewritten non-text view (a summary) is not a content chunk
    summary = Chunk("d#0@summary", "d", "a summary, completed.", 0, 17, parent_id="d#0", view="summary",
                    rewritten=True)
    metric = RewritePerplexity(ScriptedLLM(score=by_marker))
    [row] = metric.score_all([DOC], {"d": [*chunks(rewrites={1: "", 2: "zeta, completed."}), summary]})
    assert len(row["rewrite_ppl_original_chunks"]) == 2 and math.isnan(row["rewrite_ppl_rewritten_chunks"][0])
    assert row["rewrite_ppl_chunks"] == 1.0 and row["rewrite_ppl_fell_macro"] == 1.0
    # a non-contiguous chunk's original is its parts' text, joined as its own text is
    parts = Chunk("d#p", "d", "x", 0, len(TEXT), parts=((0, 5), (33, 37)), rewritten=True)
    assert rewritten_pairs(DOC, [parts]) == [("alpha zeta", "x")]


def test_scores_go_out_as_one_batch_through_the_llm_cache(tmp_path):
    from harness.cache import Cache

    llm = ScriptedLLM(score=by_marker)
    llm.cache = Cache(tmp_path)
    seen = []
    inner = llm._token_logprobs
    llm._token_logprobs = lambda texts: seen.append(list(texts)) or inner(texts)
    metric = RewritePerplexity(llm)
    by_doc = {"d": chunks(rewrites={0: "a, completed.", 2: "b, completed."})}
    first = metric.score_all([DOC], by_doc)
    assert len(seen) == 1 and len(seen[0]) == 4
    assert metric.score_all([DOC], by_doc) == first and len(seen) == 1  # the second time from the cache


def test_bad_scorer_is_a_config_error():
    with pytest.raises(ConfigError, match="llm must build a language model"):
        RewritePerplexity(None)
    with pytest.raises(ConfigError, match="llm"):
        RewritePerplexity(object())


def test_series_are_declared_for_tables():
    assert recorded_series({"rp": RewritePerplexity(ScriptedLLM())}) == {
        "rewrite_ppl_original_chunks", "rewrite_ppl_rewritten_chunks"}


def test_the_bundled_model_scores_a_garbled_rewrite_higher(make_cfg):
    """The real scorer (bundled SmolLM2-135M on CPU): finite perplexities of both texts, and a
    fluent sentence is less perplexing than its words shuffled."""
    from hydra.utils import instantiate

    llm = instantiate(make_cfg().llm)
    doc = Document("d", "The cat sat on the mat. It was warm in the sun.")
    fluent = Chunk("d#0", "d", "The cat sat on the mat.", 0, 23)
    garbled = replace(fluent, text="mat the on sat cat The.", rewritten=True)
    [row] = RewritePerplexity(llm).score_all([doc], {"d": [garbled]})
    [original], [rewritten] = row["rewrite_ppl_original_chunks"], row["rewrite_ppl_rewritten_chunks"]
    assert 1 < original < rewritten < 1e5 and row["rewrite_ppl_fell_macro"] == 0.0
