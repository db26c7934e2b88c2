"""Qu et al.'s tables (configs/tables/qu_et_al): at full scale every point runs the paper's embedder
from its one config (embedder=stella / bge_large / mpnet: id, repository code, query prompt) for
retrieval and the semantic chunkers, the paper's data, and is the paper's declared experiment; the
smoke grid is the bundled MiniLM's, as before."""

from collections import Counter

import pytest

from harness.report.tables import checks, grid, spec

TABLES = [s for s in spec.all_specs() if s.id.startswith("qu_et_al/")]
STELLA = ("dunzhang/stella_en_1.5B_v5", True,
          "Instruct: Given a web search query, retrieve relevant passages that answer the query.\nQuery: ")
EMBEDDER = {"qu_et_al/table10": ("BAAI/bge-large-en-v1.5", False, "Represent this sentence for searching relevant passages: "),
            "qu_et_al/table11": ("sentence-transformers/all-mpnet-base-v2", False, "")}
# runs (not skipped) at smoke scale, as before the paper: blocks and embedder configs
SMOKE_RUNS = {"qu_et_al/figure2": 45, "qu_et_al/figure3": 0, "qu_et_al/figure4": 10, "qu_et_al/figure5": 18,
              "qu_et_al/table1": 0, "qu_et_al/table2": 0, "qu_et_al/table3": 3, "qu_et_al/table7": 3,
              "qu_et_al/table8": 73, "qu_et_al/table9": 73, "qu_et_al/table10": 0, "qu_et_al/table11": 0}


def one_point_per_cell(t, scale):
    """The first grid point of each (row, group, x) cell: every row's and group's overrides, cheaply."""
    seen, out = set(), []
    for p in t.runs(scale):
        if (p.row, p.group, p.x) not in seen:
            seen.add((p.row, p.group, p.x))
            out.append(p)
    return out


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_full_scale_runs_the_papers_embedder_data_and_setup(t):
    assert t.paper is not None
    model, remote, query = EMBEDDER.get(t.id, STELLA)
    for point in one_point_per_cell(t, "full"):
        check = checks.check_point(t, point, "full")
        assert check.status not in checks.FAILING, (point.key, check.problems, [f.line() for f in check.findings])
        assert not any(f for f in check.findings if not f.declared), point.key
        assert check.dataset["source"] in ("hub", "path"), point.key
        for path in ("retriever.embedder", "chunker.embedder", "metrics.qa_similarity.embedder"):
            role = check.roles.get(path)
            if role is None:
                continue
            assert (role.model, role.settings["trust_remote_code"]) == (model, remote), (point.key, path)
            assert (role.settings["query_prefix"], role.settings["document_prefix"]) == (query, ""), (point.key, path)
        assert "retriever.embedder" in check.roles, point.key
        if point.row not in ("fixed",) and not point.row.startswith("overlap"):
            assert "chunker.embedder" in check.roles, point.key


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_no_table_repeats_a_model_id_and_its_prefixes(t):
    """A paper model is named by its config (configs/embedder/<name>.yaml), not by id and prefix overrides."""
    for scale in ("smoke", "full"):
        at = t.scales.get(scale, {})
        over = [*t.shared, *at.get("shared", ())]
        for kind, axes in (("rows", t.rows), ("groups", t.groups)):
            for axis in axes:
                over += [*t.overrides(axis, kind, scale)]
        assert not any(o.startswith(("embedder.model=", "embedder.query_prefix=", "embedder.document_prefix="))
                       for o in over), (t.id, scale)
    assert any(o.startswith("embedder=") for o in t.scales["full"]["shared"])


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_smoke_scale_is_the_bundled_minilm_on_the_same_grid(t):
    runs = [p for p in t.runs("smoke") if not p.skip]
    assert len(runs) == SMOKE_RUNS[t.id]
    assert not any(o.startswith("embedder") for p in runs for o in p.overrides)
    for point in one_point_per_cell(t, "smoke"):
        if point.skip:
            continue
        check = checks.check_point(t, point, "smoke")
        assert check.status == "ok", (point.key, check.problems)
        assert {r.model for path, r in check.roles.items() if path.endswith("embedder")} == {"bundled"}


def test_the_full_grids_are_the_papers_and_the_smoke_grid_is_unchanged():
    """App. B: Fixed-size 9 sizes x 2 overlaps; Breakpoint's 30 points, each threshold type with its own
    five values (a union of sweeps); Clustering's single linkage 5 lambdas x 9 chunk counts and DBSCAN
    5 lambdas x 5 eps x 5 min_samples. At smoke scale Breakpoint keeps percentile and gradient, Clustering
    single linkage."""
    t = next(s for s in TABLES if s.id == "qu_et_al/table9")
    full = [p for p in t.runs("full") if p.group == "qasper"]
    assert Counter(p.row for p in full) == {"fixed": 18, "breakpoint": 30, "clustering": 170}
    types = Counter(o.split("=")[1] for p in full if p.row == "breakpoint"
                    for o in p.overrides if o.startswith("chunker.threshold_type="))
    assert types == {t: 5 for t in ("percentile", "gradient", "standard_deviation", "interquartile", "distance",
                                    "gradient_absolute")}
    amounts = {o for p in full if p.row == "breakpoint" and "chunker.threshold_type=gradient_absolute" in p.overrides
               for o in p.overrides if o.startswith("chunker.threshold_amount=")}
    assert amounts == {f"chunker.threshold_amount={v}" for v in (0.01, 0.05, 0.1, 0.15, 0.2)}
    dbscan = [p for p in full if p.row == "clustering" and p.overrides[-4] == "chunker.method=dbscan"]
    assert len(dbscan) == 125
    smoke = [p for p in t.runs("smoke") if p.group == "qasper"]
    assert Counter(p.row for p in smoke) == {"fixed": 18, "breakpoint": 10, "clustering": 45}
    deviations = {e.get("key") for e in t.paper.entries if e.kind == "deviations"}
    assert not deviations & {"chunker.threshold_type", "chunker.method"}
    fig3 = next(s for s in TABLES if s.id == "qu_et_al/figure3")
    assert len(fig3.runs("full")) == 125


CONDITIONALQA = [t for t in TABLES if any(g.key == "conditionalqa" for g in t.groups)]


@pytest.mark.parametrize("t", CONDITIONALQA, ids=lambda t: t.id)
def test_the_conditionalqa_column_composes_at_both_scales(t):
    """ConditionalQA is a real column in every table that has it: the dev split of a clone under
    ${data_dir}, corpus-wide; 100 seeded questions for document retrieval (Sec. 3.1), the questions
    with evidence for the evidence and answer tables (Table 5). Every point composes at both scales;
    at smoke scale it is skipped where the file says why (no documents are bundled)."""
    group = next(g for g in t.groups if g.key == "conditionalqa")
    assert group.missing is None and "dataset=conditionalqa" in group.overrides
    document_task = t.id in ("qu_et_al/table1", "qu_et_al/table8")
    entry = next(e for e in t.paper.entries if e.kind == "datasets" and e.get("group") == "conditionalqa")
    assert entry.get("documents") == 652 and entry.get("config")["split"] == "dev"
    smoke_skip = t.scales["smoke"].get("skip") or {}
    assert "documents.json" in smoke_skip["conditionalqa"]
    for scale in ("full", "smoke"):
        points = [p for p in t.runs(scale) if p.group == "conditionalqa"]
        assert points, scale
        for point in points:
            if point.skip:  # the row's own skip, or the column's: no documents are bundled
                assert scale == "smoke" and point.skip in (smoke_skip.get(point.row), smoke_skip.get("conditionalqa"))
                continue
            cfg = grid.compose(t, point, scale)
            assert cfg.dataset.path.endswith("/ConditionalQA/v1_0") and cfg.dataset.split == "dev"
            assert cfg.retriever.scope == "corpus"
            if document_task:
                assert (cfg.dataset.limit_queries, cfg.dataset.seed) == (100, 0)
            else:
                assert cfg.dataset.require_evidence is True and cfg.dataset.limit_queries in (None, 4)


def test_hotpotqa_and_msmarco_say_why_they_are_not_ragbench():
    for t in TABLES:
        for g in t.groups:
            if g.key in ("hotpotqa", "msmarco"):
                assert g.missing and "Not RAGBench" in g.missing and "Table 4" in g.missing, (t.id, g.key)
