"""MC-indexing's tables (configs/tables/mc_indexing): one definition per retriever in every table, the
RAPTOR tree's model roles at full scale (the row's dense model, ada-002 for sparse and ColBERT rows,
GPT-3.5-turbo summaries) with the smoke stand-ins unchanged, and every point the paper's declared
experiment at full scale."""

import pytest

from harness.pipeline.roles import roles
from harness.report.tables import checks, grid, spec

TABLES = [s for s in spec.all_specs() if s.id.startswith("mc_indexing/")]
RETRIEVERS = {"tfidf": "retriever=tfidf", "bm25": "retriever=bm25", "dpr": "retriever=dpr", "colbert": "retriever=colbert",
              "contriever": "retriever=contriever", "e5": "retriever=e5", "bge": "retriever=bge", "gte": "retriever=gte"}
TREE = {"tfidf": "text-embedding-ada-002", "bm25": "text-embedding-ada-002", "colbert": "text-embedding-ada-002",
        "dpr": "facebook/dpr-ctx_encoder-multiset-base", "contriever": "facebook/contriever-msmarco",
        "e5": "intfloat/e5-large-v2", "bge": "BAAI/bge-large-en-v1.5", "gte": "thenlper/gte-large"}


def table(table_id):
    return next(s for s in TABLES if s.id == table_id)


def retriever_of(key):
    return next((r for r in RETRIEVERS if key.startswith(f"{r}_")), None)


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_every_retriever_row_runs_its_own_config_as_table_2_does(t):
    """DPR, ColBERT and Contriever are built (no row is missing for them), and E5, BGE and GTE are their
    retriever configs everywhere (BGE's query instruction in every table), never retriever=dense."""
    for axes in (t.rows, t.groups):
        for axis in axes:
            assert not (axis.missing and "not built" in axis.missing), (t.id, axis.key)
            assert "retriever=dense" not in axis.overrides, (t.id, axis.key)
            if (r := retriever_of(axis.key)) and not axis.missing:
                assert RETRIEVERS[r] in axis.overrides, (t.id, axis.key)
    for scale in ("smoke", "full"):
        for kind in ("rows", "groups"):
            for key, at in (t.scales.get(scale, {}).get(kind) or {}).items():
                over = [*at.get("overrides", []), *at.get("add", [])]
                assert "retriever=dense" not in over and not any(o.startswith("embedder.model=") for o in over), (t.id, key)


@pytest.mark.parametrize("table_id", ["mc_indexing/table3", "mc_indexing/table4", "mc_indexing/table5", "mc_indexing/table9"])
def test_the_rows_table_2_runs_run_here_too(table_id):
    t = table(table_id)
    built = {retriever_of(r.key) for r in t.rows if not r.missing}
    assert built == set(RETRIEVERS)
    smoke = {p.row for p in t.runs("smoke") if not p.skip}
    assert {retriever_of(r) for r in smoke} == set(RETRIEVERS) - {"bge", "gte"}   # no BGE or GTE model is bundled


def test_raptor_tree_roles_at_full_scale_and_stand_ins_at_smoke():
    t = table("mc_indexing/table2")
    full = {p.key: p for p in t.runs("full")}
    for r, model in TREE.items():
        for group in ("wikiweb2m", "nq"):
            found = roles(grid.compose(t, full[f"{r}_raptor|{group}"], "full"))
            tree, summariser = found["chunker.embedder"], found["chunker.llm"]
            assert (tree.model, tree.follows, summariser.model, summariser.follows) == (model, None, "gpt-3.5-turbo", None)
            assert summariser.backend == "OpenAILLM" and summariser.settings["base_url"] == "https://api.openai.com/v1"
            if model == "text-embedding-ada-002":
                assert tree.backend == "OpenAIEmbedder" and tree.settings["base_url"] == "https://api.openai.com/v1"
            else:  # the retriever's settings: its vectors are the retriever's passage vectors (one cache entry)
                assert (tree.backend, tree.settings["max_seq_length"], tree.settings["batch_size"]) == \
                    ("SentenceTransformerEmbedder", 512, 64)
            if r not in ("tfidf", "bm25", "colbert"):   # the tree's model is the retriever's (DPR: its context encoder)
                assert model in found["retriever"].model.split(" | ")
        # the views and atomic sections keep the run's GPT-4
        assert roles(grid.compose(t, full[f"{r}_mc|nq"], "full"))["chunker.llm"].model == "gpt-4"
    e5 = grid.compose(t, full["e5_raptor|nq"], "full")
    assert e5.chunker.embedder.document_prefix == "passage: " and e5.retriever.passage_prefix == "passage: "
    assert grid.compose(t, full["contriever_raptor|nq"], "full").chunker.embedder.pooling == "mean"
    smoke = {p.key: p for p in t.runs("smoke") if not p.skip}
    for key in [k for k in smoke if "_raptor" in k]:
        found = roles(grid.compose(t, smoke[key], "smoke"))
        assert found["chunker.embedder"].bundled and found["chunker.embedder"].follows == "embedder"
        assert found["chunker.llm"].bundled and found["chunker.llm"].follows == "llm"


@pytest.mark.slow
@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_mc_indexing_tables_are_the_papers_experiments_at_full_scale(t):
    """No config error and no undeclared difference at full scale; every dataset from the Hub or a
    path, and no role runs a bundled model or the run's model where the paper names another."""
    check = checks.check_table(t, "full")
    assert check.failed == []
    for p in check.points:
        assert p.dataset["source"] in ("hub", "path")
        assert not any(r.bundled for r in p.roles.values())
    assert t.paper is not None and t.paper.of("datasets", t.rows[0].key, t.groups[0].key)


def test_the_single_view_rows_of_table_2_retrieve_by_one_view_alone():
    """App. C.4's Content-aware Keywords and Summary rows: MC-indexing's views (computed once, the same
    chunker as its rows), the sections ranked by one view alone, top k (metrics.scope_recall.view_k=k);
    the sparse retrievers index each view apart, the dense ones rank every chunk (each scored alone)."""
    t = table("mc_indexing/table2")
    for scale in ("full", "smoke"):
        points = [p for p in t.runs(scale) if p.row.endswith(("_keywords", "_summary")) and not p.skip]
        assert {retriever_of(p.row) for p in points} == set(RETRIEVERS) - ({"bge", "gte"} if scale == "smoke" else set())
        for point in points:
            view = "llm_keywords" if point.row.endswith("_keywords") else "summary"
            cfg = grid.compose(t, point, scale)
            mc = grid.compose(t, next(p for p in t.runs(scale) if p.key == point.key.replace(
                point.row, f"{retriever_of(point.row)}_mc")), scale)
            assert cfg.chunker == mc.chunker   # the views are MC-indexing's, chunked once
            sr = cfg.metrics.scope_recall
            assert (sr.selection, list(sr.views), sr.view_k) == ("multi_view", [view], "k"), point.key
            assert list(cfg.context.views) == [view] and cfg.context.k_per_view == cfg.context.k
            if retriever_of(point.row) in ("tfidf", "bm25"):
                assert cfg.retriever.view_index == "per_view"
            else:
                assert cfg.retriever.top_k >= 100000
