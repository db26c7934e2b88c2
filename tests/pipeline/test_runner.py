"""End-to-end runs of the default pipeline on tiny real data (four one-page OHR-Bench docs)."""

import json
import math

import pytest

from harness.pipeline.runner import Pipeline
from harness.retrieval.dense import DenseRetriever
from harness.types import ConfigError


def run(cfg):
    return Pipeline(cfg, log=lambda *_: None).run()


@pytest.mark.slow
def test_default_run_end_to_end(make_cfg):
    r = run(make_cfg())
    assert set(r.stages.values()) == {"computed"}
    assert r.metrics["n_queries"] == 20 and r.metrics["n_docs"] == 4
    for name in ("evidence_recall", "span_recall", "span_precision", "span_iou", "span_precision_omega"):
        assert 0.0 <= r.metrics[name] <= 1.0, name
    assert r.metrics["chunk_size_max"] <= 210  # fixed 200-token chunks (re-tokenised text may shift by a few)
    assert r.metrics["context_tokens"] <= 4096
    assert len(r.per_query) == 20 and all(row["context_chunk_ids"] for row in r.per_query)
    assert r.dataset_report["evidence_total"] == 20


@pytest.mark.slow
def test_second_identical_run_recomputes_nothing(make_cfg):
    first = run(make_cfg())
    second = run(make_cfg())
    assert set(second.stages.values()) == {"cached"}
    assert all(c["misses"] == 0 for c in second.cache_counts.values()), second.cache_counts
    assert "embeddings" not in second.cache_counts  # retrieval was cached whole: the model never loaded
    same = {k: v for k, v in first.metrics.items() if "seconds" not in k}
    assert same == pytest.approx({k: v for k, v in second.metrics.items() if "seconds" not in k}, nan_ok=True)


@pytest.mark.slow
def test_warm_run_reads_its_summary_and_chunk_sizes_from_the_cache(make_cfg):
    first = run(make_cfg())
    warm = Pipeline(make_cfg(), log=lambda *_: None)

    def no_tokenizing(text):
        raise AssertionError("a warm run tokenized a chunk again")

    warm.c.context.tokenizer.count = no_tokenizing
    second = warm.run()
    assert second.cache_counts["summary"] == {"hits": 1, "misses": 0}  # nothing aggregated again
    assert json.dumps([second.metrics, second.per_query]) == json.dumps([first.metrics, first.per_query])  # NaN too
    # another budget over the same chunks: a new summary, the chunk sizes from the cache
    other = Pipeline(make_cfg("context.budget=300"), log=lambda *_: None)
    other.c.context.tokenizer.count = no_tokenizing
    with pytest.raises(AssertionError, match="tokenized"):  # the assembler itself counts the new budget
        other.run()
    third = run(make_cfg("context.budget=300"))
    assert third.cache_counts["chunk_sizes"] == {"hits": 1, "misses": 0}
    assert third.metrics["chunk_size_mean"] == first.metrics["chunk_size_mean"]


@pytest.mark.slow
def test_results_do_not_depend_on_what_the_cache_held(make_cfg, tmp_path):
    """The embedding cache's history (which texts earlier runs embedded, so which were
    encoded together in this one) does not move a single score."""
    from harness.cache import Cache
    from harness.pipeline.stages import all_chunks
    from harness.embedding.embedder import SentenceTransformerEmbedder

    fresh = Pipeline(make_cfg("chunker.size=120"), log=lambda *_: None)
    first = fresh.run()
    texts = [ch.text for ch in all_chunks(fresh.outputs)]
    seeded = tmp_path / "seeded"
    SentenceTransformerEmbedder(batch_size=1, cache=Cache(seeded)).encode(texts[::3])  # a different history
    second = run(make_cfg("chunker.size=120", cache=seeded))
    assert second.cache_counts["embeddings"]["hits"] > 0 and second.cache_counts["embeddings"]["misses"] > 0
    def scores(r):
        return json.dumps([{k: v for k, v in row.items() if "seconds" not in k} for row in r.per_query])

    assert scores(second) == scores(first)


@pytest.mark.slow
def test_changing_budget_reuses_chunks_and_retrieval(make_cfg):
    run(make_cfg("context.budget=4096"))
    r = run(make_cfg("context.budget=300"))
    assert r.stages == {"load": "cached", "chunk": "cached", "retrieve": "cached",
                        "assemble": "computed", "evaluate": "computed"}
    assert r.metrics["context_tokens"] <= 300


@pytest.mark.slow
def test_changing_retriever_reuses_chunks_and_embeddings(make_cfg):
    run(make_cfg())
    r = run(make_cfg("retriever.top_k=7"))
    assert r.stages["chunk"] == "cached" and r.stages["retrieve"] == "computed"
    assert r.cache_counts["embeddings"]["misses"] == 0 and r.cache_counts["embeddings"]["hits"] > 0
    lexical = run(make_cfg("retriever=bm25"))
    assert lexical.stages["chunk"] == "cached" and "embeddings" not in lexical.cache_counts


@pytest.mark.slow
def test_chunkers_share_embeddings_of_identical_text(make_cfg):
    # Paragraph and section chunks of a one-page document coincide in places; the
    # embedding cache is keyed by (model, text), so a second chunker pays only for new text.
    run(make_cfg("chunker=section"))
    r = run(make_cfg("chunker=section", "chunker.max_size=200", "retriever.top_k=50"))
    assert r.cache_counts["embeddings"]["hits"] > 0


@pytest.mark.slow
def test_crashed_run_resumes_from_finished_work(make_cfg, monkeypatch):
    def crash(self, index, queries, k):
        raise KeyboardInterrupt("killed mid-retrieval")

    monkeypatch.setattr(DenseRetriever, "search", crash)
    with pytest.raises(KeyboardInterrupt):
        run(make_cfg())
    monkeypatch.undo()
    r = run(make_cfg())
    assert r.stages["load"] == "cached" and r.stages["chunk"] == "cached"
    emb = r.cache_counts["embeddings"]
    assert emb["hits"] > 0  # the first collection's chunk vectors survived the crash
    assert emb["misses"] > 0  # the rest had not been embedded yet


@pytest.mark.slow
def test_bad_parameter_fails_before_any_work(make_cfg, tmp_path):
    cfg = make_cfg("chunker.size=-5", cache=tmp_path / "c")
    with pytest.raises(ConfigError, match=r"chunker.*size"):
        Pipeline(cfg)
    assert not (tmp_path / "c").exists()


@pytest.mark.slow
def test_unknown_parameter_names_the_valid_ones(make_cfg):
    with pytest.raises(ConfigError, match=r"chunker.*Valid parameters: size, overlap"):
        Pipeline(make_cfg("+chunker.sise=100"))


def test_unknown_choice_lists_the_options(make_cfg):
    from hydra.errors import MissingConfigException

    with pytest.raises(MissingConfigException, match=r"(?s)Available options.*fixed.*sentence"):
        make_cfg("chunker=fixd")


@pytest.mark.slow
def test_metrics_are_means_over_scored_queries(make_cfg):
    r = run(make_cfg())
    scored = [row["span_recall"] for row in r.per_query if not math.isnan(row["span_recall"])]
    assert r.metrics["n/span_recall"] == len(scored)
    assert r.metrics["span_recall"] == pytest.approx(sum(scored) / len(scored))


# --- structure-aware chunkers and assemblers, end to end --------------------------------------

@pytest.mark.slow
def test_structure_tree_with_auto_merge_end_to_end(make_cfg):
    # OHR-Bench pages are level-1 sections: leaves of 60 tokens merge back into whole pages.
    r = run(make_cfg("chunker=structure_tree", "chunker.size=60", "context=auto_merge", "context.budget=2048"))
    m = r.metrics
    assert m["n_nodes"] > m["n_chunks"]  # page nodes are kept, but only leaves are searched and counted
    assert m["context_merges_total"] > 0 and m["context_tokens"] <= 2048
    assert 0.0 <= m["evidence_recall"] <= 1.0 and 0.0 <= m["span_recall"] <= 1.0
    assert any(row["context_merges"] for row in r.per_query)


@pytest.mark.slow
def test_semantic_chunker_reads_sentence_vectors_through_the_run_cache(make_cfg, tmp_path):
    cache = tmp_path / "shared"
    run(make_cfg("chunker=semantic_breakpoint", cache=cache))
    again = run(make_cfg("chunker=semantic_breakpoint", "chunker.threshold_amount=90", cache=cache))
    assert again.stages["chunk"] == "computed"
    assert again.cache_counts["embeddings"]["hits"] > 0  # sentence windows embedded once


@pytest.mark.slow
def test_multi_view_chunks_end_to_end(make_cfg):
    r = run(make_cfg("chunker=multi_view", "context=multi_view", "context.k=1.5"))
    assert r.metrics["n_nodes"] == 2 * r.metrics["n_chunks"]  # one keyword view per section chunk
    assert {len(row["context_chunk_ids"]) for row in r.per_query} <= {1, 2}
    assert all("@" not in cid for row in r.per_query for cid in row["context_chunk_ids"])


def test_a_stage_another_process_holds_is_timed_without_the_wait(make_cfg):
    import threading
    import time

    from harness.pipeline.stages import STAGES

    lines = []
    p = Pipeline(make_cfg(), log=lines.append)
    key = p.key(STAGES[0])  # load: read by no other stage's key
    held = threading.Event()

    def hold():
        with p.cache.lock("load", key):
            held.set()
            time.sleep(1.5)

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    result = p.run()
    t.join()
    load = next(line for line in lines if line.startswith("[load]"))
    assert "after waiting" in load and float(load.split("after waiting ")[1].split("s")[0]) >= 1.0
    assert result.stage_seconds["load"] < float(load.split("after waiting ")[1].split("s")[0])
