"""MC-indexing's "Atomic Unit: Plus" (App. C.3): k_factor times the chunks per unit of top k, in the
context (context=atomic_plus) and in the answer-scope recall that reads it."""

from __future__ import annotations

import pytest
from tests.conftest import query_eval

from harness.metrics.ranking import AnswerScopeRecall
from harness.retrieval.assemblers import TopKAssembler, k_for
from harness.types import Chunk, ConfigError, Query, Retrieved, Span

CHUNKS = {f"c{i}": Chunk(f"c{i}", "d", f"w{i}", 10 * i, 10 * i + 2) for i in range(12)}
RANKED = Retrieved("q", tuple((f"c{i}", 1.0 - i / 100) for i in (3, 1, 4, 0, 5, 9, 2, 6, 8, 7, 11, 10)))


def test_k_factor_takes_that_many_chunks_per_unit_of_k():
    plain = TopKAssembler(k=3, unit="words").assemble(RANKED, CHUNKS)
    plus = TopKAssembler(k=3, k_factor=4, unit="words").assemble(RANKED, CHUNKS)
    assert plain.chunk_ids == ("c3", "c1", "c4")
    assert plus.chunk_ids == tuple(c for c, _ in RANKED.ranked)  # 12 = 4 x 3, in rank order
    assert plus.n_tokens == 12


def test_fractional_k_is_drawn_before_the_factor():
    seen = set()
    for i in range(20):
        ranked = Retrieved(f"q{i}", RANKED.ranked)
        n = len(TopKAssembler(k=1.5, k_factor=2, unit="words").assemble(ranked, CHUNKS).chunk_ids)
        assert n == 2 * k_for(1.5, f"q{i}", 0)
        seen.add(n)
    assert seen == {2, 4}  # 1 or 2 atomic "k", never 3


@pytest.mark.parametrize("bad", [0, 1.5, True, "4"])
def test_k_factor_must_be_a_whole_number(bad):
    with pytest.raises(ConfigError, match="context.k_factor"):
        TopKAssembler(k=3, k_factor=bad)
    with pytest.raises(ConfigError, match="k_factor"):
        AnswerScopeRecall(ks=[3], k_factor=bad)


def test_scope_recall_counts_the_same_chunks_under_the_k_name():
    q = Query("q", "?", doc_ids=("d",), evidence=(Span("d", 10, 12), Span("d", 50, 52), Span("d", 90, 92)))
    ranked = [(f"c{i}", 1.0 - i / 100) for i in (1, 7, 5, 3, 9, 0)]
    item = query_eval(q, chunks_by_doc={"d": list(CHUNKS.values())}, ranked=ranked)
    assert AnswerScopeRecall(ks=[1, 2])(item) == pytest.approx({"scope_recall_at_1": 1 / 3, "scope_recall_at_2": 1 / 3})
    # k_factor 2: top 1 -> c1, c7; top 2 -> c1, c7, c5, c3
    assert AnswerScopeRecall(ks=[1, 2], k_factor=2)(item) == pytest.approx(
        {"scope_recall_at_1": 1 / 3, "scope_recall_at_2": 2 / 3})
    with pytest.raises(ConfigError, match="selection=rank only"):
        AnswerScopeRecall(ks=[3], k_factor=2, selection="multi_view")


def test_configs_compose_and_the_metric_reads_the_contexts_factor(make_cfg):
    from harness.pipeline.components import build_components

    comps = build_components(make_cfg("context=atomic_plus", "metrics=mc_indexing", "llm=none"))
    assert isinstance(comps.context, TopKAssembler) and (comps.context.k, comps.context.k_factor) == (3, 4)
    cfg = make_cfg("context=atomic_plus", "context.k_factor=2", "metrics=mc_indexing")
    assert cfg.metrics.scope_recall.k_factor == 2
    assert make_cfg("context=topk", "metrics=mc_indexing").metrics.scope_recall.k_factor == 1
    assert make_cfg("context=multi_view", "metrics=mc_indexing").metrics.scope_recall.k_factor == 1
