"""RAPTOR (chunker=raptor, context=raptor): clustering on planted clusters, the tree's invariants
with scripted summaries (well-formed, empty, garbage), both retrieval modes on a hand-built tree,
the traversal selection of scope recall, and the bundled model on a real document (slow)."""

import numpy as np
import pytest
from tests.conftest import SAMPLES, ScriptedLLM, query_eval

from harness.chunking.base import check_chunks
from harness.chunking.raptor import SUMMARY_PROMPT, SYSTEM_PROMPT, VIEW, RaptorChunker
from harness.chunking.raptor_clustering import Clustering, best_n_components, global_local, soft_clusters
from harness.chunking.sentence import SentenceChunker
from harness.metrics.ranking import AnswerScopeRecall
from harness.retrieval.raptor import RaptorAssembler
from harness.types import Chunk, ConfigError, Document, Query, Retrieved, Span

TOPICS = {"cook": "The chef bakes bread with flour, yeast and butter in a hot oven every morning.",
          "space": "The rocket launches a satellite into orbit around the planet and the moon.",
          "law": "The court rules on the contract dispute and the judge fines the company."}


def planted(n_per=20, dims=2, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [10, 0], [0, 10]])
    return np.vstack([c + rng.normal(0, 0.3, (n_per, dims)) for c in centres]), np.repeat([0, 1, 2], n_per)


def test_bic_finds_planted_clusters_and_soft_labels_recover_them():
    x, truth = planted()
    assert best_n_components(x, 8) == 3
    clusters = soft_clusters(x, 0.1, 8)
    assert sorted(sorted(set(truth[m])) for m in clusters) == [[0], [1], [2]]
    assert sorted(i for m in clusters for i in m) == list(range(len(x)))
    assert best_n_components(x[:2], 50) == 1 and best_n_components(x, 2) == 1  # 1 .. min(max, n) - 1


@pytest.mark.parametrize("reduction", ["none", "pca"])
def test_global_local_clusters_cover_every_point(reduction):
    x, truth = planted()
    clusters = global_local(x, Clustering(dim=2, reduction=reduction, max_clusters=8))
    assert {i for m in clusters for i in m} == set(range(len(x)))
    assert all(len(set(truth[m])) == 1 for m in clusters)  # local clusters never mix planted ones


def test_size_cap_reclusters_a_large_cluster_and_stops_when_it_cannot_split():
    x, _ = planted()
    c = Clustering(dim=2, reduction="none", max_cluster_tokens=10, max_clusters=8)
    assert c.layer(x, [1] * len(x)) == global_local(x, c)  # 20 tokens a cluster: no cap reached
    same = np.ones((5, 4)) + np.arange(5)[:, None] * 1e-9  # one blob: cannot split, kept as is
    assert c.layer(same, [100] * 5) == [[0, 1, 2, 3, 4]]


def topic_doc(n=6):
    order = [t for _ in range(n) for t in TOPICS]
    return Document("d", " ".join(TOPICS[t] for t in order)), order


@pytest.fixture(scope="module")
def embedder():
    from harness.embedding.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def raptor(embedder, llm, **kw):
    kw = {"reduction": "pca", "reduction_dimension": 2, **kw}
    return RaptorChunker(SentenceChunker(size=20, unit="words"), embedder, llm, **kw)


def leaves_under(node, by_id):
    return {node.chunk_id} if not node.children else {x for c in node.children for x in leaves_under(by_id[c], by_id)}


def test_tree_invariants_with_scripted_summaries(embedder):
    doc, _ = topic_doc()
    llm = ScriptedLLM(reply=lambda p: "A summary: " + p.split(": ", 1)[1][:60])
    chunker = raptor(embedder, llm)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    by_id = {c.chunk_id: c for c in chunks}
    leaves = [c for c in chunks if c.view == "text"]
    summaries = [c for c in chunks if c.view == VIEW]
    assert len(leaves) == 18 and summaries and all(c.level == 0 and not c.children for c in leaves)
    for s in summaries:
        under = leaves_under(s, by_id)
        assert all(by_id[c].level == s.level - 1 for c in s.children)
        assert sorted((x.start, x.end) for x in s.spans) == sorted((by_id[u].start, by_id[u].end) for u in under)
        assert s.text.startswith("A summary: ")
    top = max(c.level for c in chunks)
    reached = set().union(*(leaves_under(s, by_id) for s in summaries if s.level == top))
    assert reached == {c.chunk_id for c in leaves}  # every leaf lies under a root
    # the authors' prompt, verbatim, with the cluster's texts one per line and a blank line after each
    assert llm.prompts[0].startswith("Write a summary of the following, including as many key details as possible: ")
    assert llm.prompts[0].endswith("\n\n:") and SYSTEM_PROMPT == "You are a helpful assistant."
    assert SUMMARY_PROMPT.endswith("{context}:")
    assert chunker.take_counts("d") == {"summaries": len(summaries)}


@pytest.mark.parametrize("reply", ["", "   \n", "...", "<think>thinking</think>  "])
def test_empty_or_garbage_summary_falls_back_to_the_cluster_text_and_is_counted(embedder, reply):
    doc, _ = topic_doc()
    chunker = raptor(embedder, ScriptedLLM(reply=lambda p: reply), summarization_length=8)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = chunker.take_counts("d")
    summaries = [c for c in chunks if c.view == VIEW]
    assert counts["empty_summaries"] == counts["summaries"] == len(summaries) > 0
    assert all(len(s.text.split()) <= 8 and s.text for s in summaries)


def test_too_few_leaves_make_no_tree_and_config_errors(embedder):
    doc = Document("d", TOPICS["cook"])
    chunker = raptor(embedder, ScriptedLLM(reply=lambda p: "s"))
    assert [c.view for c in chunker.chunk([doc])[0]] == ["text"]
    for bad in ({"reduction": "tsne"}, {"threshold": 1.5}, {"num_layers": 0}, {"reduction_dimension": 0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            raptor(embedder, ScriptedLLM(), **bad)
    with pytest.raises(ConfigError, match="chunker.llm"):
        RaptorChunker(SentenceChunker(), embedder, None)


def test_check_chunks_rejects_a_summary_that_is_not_its_childrens_union():
    doc = Document("d", "alpha beta. gamma delta. epsilon zeta.")
    a, b = Chunk("d#0", "d", "alpha beta.", 0, 11), Chunk("d#1", "d", "gamma delta.", 12, 24)
    good = Chunk("d#L1.0", "d", "sum", 0, 24, 1, None, VIEW, ((0, 11), (12, 24)), True, ("d#0", "d#1"))
    check_chunks(doc, [a, b, good])
    bad = Chunk("d#L1.0", "d", "sum", 0, 24, 1, None, VIEW, ((0, 11), (12, 24)), True, ("d#0",))
    with pytest.raises(ValueError, match="union of its children"):
        check_chunks(doc, [a, b, bad])


# --- retrieval over a hand-built tree ----------------------------------------------------

def hand_tree():
    """Leaves l0..l3 (10 chars each), summaries s0 = {l0, l1}, s1 = {l1, l2, l3} (soft), root r = {s0, s1}."""
    text = " ".join(f"leaf{i} text" for i in range(4))
    leaves = [Chunk(f"l{i}", "d", text[11 * i:11 * i + 10], 11 * i, 11 * i + 10) for i in range(4)]
    span = lambda ids: tuple((leaves[i].start, leaves[i].end) for i in ids)  # noqa: E731
    s0 = Chunk("s0", "d", "first two", 0, 21, 1, None, VIEW, span([0, 1]), True, ("l0", "l1"))
    s1 = Chunk("s1", "d", "last three", 11, 43, 1, None, VIEW, span([1, 2, 3]), True, ("l1", "l2", "l3"))
    r = Chunk("r", "d", "root", 0, 43, 2, None, VIEW, span([0, 1, 2, 3]), True, ("s0", "s1"))
    doc = Document("d", text)
    chunks = [*leaves, s0, s1, r]
    check_chunks(doc, chunks, covering=True)
    return doc, {c.chunk_id: c for c in chunks}


def test_traversal_descends_k_per_layer_and_returns_leaves():
    doc, by_id = hand_tree()
    ranked = Retrieved("q", (("l3", 0.9), ("s1", 0.8), ("l0", 0.7), ("r", 0.6), ("s0", 0.5), ("l2", 0.4), ("l1", 0.3)))
    ctx = RaptorAssembler(k=1).assemble(ranked, by_id)  # r -> s1 (better than s0) -> l3
    assert ctx.chunk_ids == ("l3",) and ctx.ranking.chunk_ids == ("l3",)
    ctx = RaptorAssembler(k=2).assemble(ranked, by_id)  # r -> s1, s0 -> l3, l0 (l1, l2 rank lower)
    assert ctx.chunk_ids == ("l3", "l0") and ctx.spans == (Span("d", 33, 43), Span("d", 0, 10))
    ctx = RaptorAssembler(k=1, returns="all_layers").assemble(ranked, by_id)
    assert ctx.chunk_ids == ("r", "s1", "l3") and ctx.text == "root\n\nlast three\n\nleaf3 text"
    assert {len(RaptorAssembler(k=1.5, seed=s).assemble(Retrieved(f"q{s}", ranked.ranked), by_id).chunk_ids)
            for s in range(20)} == {1, 2}


def test_collapsed_takes_nodes_in_score_order_until_top_k_or_budget():
    doc, by_id = hand_tree()
    ranked = Retrieved("q", (("s1", 0.9), ("l0", 0.8), ("r", 0.7), ("l1", 0.6)))
    ctx = RaptorAssembler(mode="collapsed", top_k=3, unit="words").assemble(ranked, by_id)
    assert ctx.chunk_ids == ("s1", "l0", "r")
    assert {(s.start, s.end) for s in ctx.spans} == {(0, 10), (11, 21), (22, 32), (33, 43)}  # a summary reads its leaves
    ctx = RaptorAssembler(mode="collapsed", top_k=3, budget=4, unit="words").assemble(ranked, by_id)
    assert ctx.chunk_ids == ("s1", "l0") and ctx.n_tokens == 4
    with pytest.raises(ConfigError, match="context.mode"):
        RaptorAssembler(mode="flat")
    with pytest.raises(ConfigError, match="context.returns"):
        RaptorAssembler(returns="roots")


def test_scope_recall_redoes_the_traversal_at_each_k():
    doc, by_id = hand_tree()
    ranked = (("l3", 0.9), ("s1", 0.8), ("l0", 0.7), ("r", 0.6), ("s0", 0.5), ("l2", 0.4), ("l1", 0.3))
    q = Query("q", "?", doc_ids=("d",), evidence=(Span("d", 0, 10),))
    item = query_eval(q, chunks_by_doc={"d": list(by_id.values())}, ranked=ranked)
    got = AnswerScopeRecall(ks=(1, 2), selection="tree_traversal")(item)
    assert got == {"scope_recall_at_1": 0.0, "scope_recall_at_2": 1.0}  # k=1 reaches l3, k=2 also l0


# --- the bundled model -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("reduction", ["pca", "umap"])
def test_bundled_model_builds_a_valid_tree_on_a_real_document(embedder, reduction):
    if reduction == "umap":
        pytest.importorskip("umap")
    from harness.data.ohrbench import OHRBench
    from harness.llm.transformers_llm import TransformersLLM

    doc = next(d for d in OHRBench(SAMPLES / "ohr_bench", domains=["news"]).load().documents if d.doc_id == "news/07_15")
    chunker = RaptorChunker(SentenceChunker(size=80, tokenizer="cl100k"), embedder, TransformersLLM(),
                            reduction=reduction, reduction_dimension=3, summarization_length=24, num_layers=2)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = chunker.take_counts(doc.doc_id)
    assert counts["summaries"] == sum(c.view == VIEW for c in chunks) > 0
    assert counts.get("empty_summaries", 0) <= counts["summaries"]
