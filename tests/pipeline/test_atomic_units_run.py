"""End to end: atomic-unit chunks by the bundled SmolLM2-135M, retrieved as MC-indexing's "Atomic Unit"
and "Atomic Unit: Plus" on one bundled one-page OHR-Bench document (one model call)."""

import pytest

from harness.pipeline.runner import Pipeline


def run(cfg):
    return Pipeline(cfg, log=lambda *_: None).run()


@pytest.mark.slow
def test_atomic_units_and_atomic_plus_end_to_end(make_cfg, tmp_path):
    common = ["chunker=atomic_units", "chunker.max_tokens=64", "dataset.limit_docs=1", "metrics=mc_indexing",
              "context.k=1"]
    plain = run(make_cfg(*common, "context=topk", cache=tmp_path / "c"))
    m = plain.metrics
    assert m["n_docs"] == 1 and m["chunker_llm_calls"] == 1 and m["n_chunks"] >= 1
    assert m.get("chunker_empty_replies", 0) <= 1
    assert all(len(row["context_chunk_ids"]) == 1 for row in plain.per_query)
    # Plus: the same chunks (nothing asked again), 4 per unit of k in the context and in the recall
    plus = run(make_cfg(*common, "context=atomic_plus", cache=tmp_path / "c"))
    assert plus.stages["chunk"] != "computed" and plus.metrics["n_chunks"] == m["n_chunks"]
    assert all(len(row["context_chunk_ids"]) == min(4, m["n_chunks"]) for row in plus.per_query)
    for k in ("1.5", "3", "5", "10"):
        assert 0.0 <= m[f"scope_recall_at_{k}"] <= plus.metrics[f"scope_recall_at_{k}"] <= 1.0
