"""RAPTOR end to end on two one-page OHR-Bench documents with the bundled models (slow)."""

import pytest

from harness.pipeline.runner import Pipeline

SMALL = ["dataset.domains=[news]", "chunker.base.size=80", "chunker.reduction=pca",
         "chunker.reduction_dimension=3", "chunker.num_layers=1", "chunker.summarization_length=16"]


@pytest.mark.slow
def test_raptor_tree_traversal_end_to_end(make_cfg):
    r = Pipeline(make_cfg("chunker=raptor", "context=raptor", "context.k=1.5", "metrics=mc_indexing",
                          "metrics.scope_recall.selection=tree_traversal", *SMALL), log=lambda *_: None).run()
    m = r.metrics
    assert m["n_nodes"] > m["n_chunks"] > 0  # summaries on top of the leaves
    assert {len(row["context_chunk_ids"]) for row in r.per_query} <= {1, 2}
    assert all("#L" not in cid for row in r.per_query for cid in row["context_chunk_ids"])  # leaves only
    assert 0.0 <= m["scope_recall_at_10"] <= 1.0
