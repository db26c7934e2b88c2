"""Model roles, the tables' declared paper setup, and the full-scale check of every grid point."""

import json

import pytest

from harness import cli
from harness.pipeline.components import check_full_scale
from harness.pipeline.roles import roles
from harness import registry
from harness.report.tables import checks, grid, spec
from harness.types import ConfigError

from tests.report.test_tables import write_table


def test_roles_follow_the_run_unless_set_apart():
    cfg = registry.compose(["chunker=hichunk", "responder=llm", "llm=vllm", "llm.model=Qwen/Qwen3-8B",
                            "llm@roles.chunker.llm=vllm", "roles.chunker.llm.model=tencent/Youtu-HiChunk",
                            "roles.chunker.llm.max_model_len=20544"])
    found = roles(cfg)
    assert found["chunker.llm"].model == "tencent/Youtu-HiChunk" and found["chunker.llm"].follows is None
    assert found["chunker.llm"].settings["max_model_len"] == 20544
    assert found["chunker.llm"].backend == "VLLM"   # its own node: no key of the run's backend merged in
    assert "device" not in cfg.chunker.llm
    assert found["responder.llm"].model == "Qwen/Qwen3-8B" and found["responder.llm"].follows == "llm"
    assert found["retriever.embedder"].bundled and found["retriever.embedder"].follows == "embedder"
    default = roles(registry.compose(["chunker=lumber"]))
    assert default["chunker.llm"].follows == "llm" and default["chunker.llm"].bundled


def test_a_role_no_component_reads_is_refused():
    from harness.pipeline.components import build_components

    with pytest.raises(ConfigError, match="roles.chunker.llm: set, but no component of this run reads it"):
        build_components(registry.compose(["chunker=sentence", "llm@roles.chunker.llm=vllm",
                                           "roles.chunker.llm.model=x/y"]))


def test_embedding_roles_and_retrievers_with_their_own_encoders():
    cfg = registry.compose(["chunker=semantic_breakpoint", "embedder@roles.chunker.embedder=hub",
                            "roles.chunker.embedder.model=BAAI/bge-large-en-v1.5", "retriever=dpr"])
    found = roles(cfg)
    assert found["chunker.embedder"].model == "BAAI/bge-large-en-v1.5"
    assert found["retriever"].model == "facebook/dpr-question_encoder-multiset-base | facebook/dpr-ctx_encoder-multiset-base"
    assert "retriever.embedder" not in found
    assert "chunker.llm" not in roles(registry.compose(["chunker=lumber", "llm=none"]))  # no model, no role


def test_full_scale_refuses_bundled_models_and_samples():
    with pytest.raises(ConfigError, match="retriever.embedder: scale=full runs the paper's models"):
        check_full_scale(registry.compose(["scale=full"]))
    with pytest.raises(ConfigError, match="dataset ohrbench: scale=full reads the paper's data, not the bundled sample"):
        check_full_scale(registry.compose(["scale=full", "retriever=bm25"]))
    check_full_scale(registry.compose(["scale=full", "retriever=bm25", "dataset=qasper"]))  # the Hub: fine
    check_full_scale(registry.compose(["retriever=bm25"]))  # smoke: stand-ins allowed


PAPER = """
paper:
  models:
    - {role: chunker.llm, rows: lc, model: deepseek-ai/DeepSeek-R1-0528, cite: "Sec. 5.2"}
  datasets:
    - {group: qasper, name: Qasper, documents: 416, questions: 1372, config: {split: test}, cite: "Table 2"}
  settings:
    - {key: context.budget, value: 4096, cite: "Sec. 5.3"}
"""
BODY = """
title: Demo
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none]
rows:
  fixed: {label: Fixed, overrides: [chunker=fixed]}
  lc: {label: LC, overrides: [chunker=lumber]}
groups:
  qasper: {label: Qasper, overrides: [dataset=qasper]}
metrics:
  erec: {metric: evidence_recall, label: ERec}
"""
FULL = """scale:
  full:
    rows:
      lc: {add: [llm@roles.chunker.llm=vllm, roles.chunker.llm.model=MODEL]}
"""


def table(tmp_path, model="deepseek-ai/DeepSeek-R1-0528", paper=PAPER, extra=""):
    return write_table(tmp_path, BODY + paper + extra + FULL.replace("MODEL", model))


def by_key(check):
    return {p.point.key: p for p in check.points}


def test_a_point_as_the_paper_declares_it_passes(tmp_path):
    result = by_key(checks.check_table(table(tmp_path), "full"))
    assert result["lc|qasper"].status == "needs a model"   # right, but not downloaded here: a status
    assert "deepseek-ai/DeepSeek-R1-0528" in result["lc|qasper"].problems[0]
    assert result["fixed|qasper"].status == "ok" and not result["fixed|qasper"].findings
    checks.validate(table(tmp_path / "b"), "full")


def test_a_planted_wrong_model_fails_naming_the_row_and_the_role(tmp_path):
    planted = table(tmp_path, model="Qwen/Qwen3-8B")
    check = checks.check_table(planted, "full")
    point = by_key(check)["lc|qasper"]
    assert point.status == "undeclared"
    assert [f.line() for f in point.findings] == ["chunker.llm: runs Qwen/Qwen3-8B (dtype=auto), the paper "
                                                  "deepseek-ai/DeepSeek-R1-0528"]
    with pytest.raises(ConfigError, match=r"table demo/t1, lc\|qasper: chunker.llm: runs Qwen/Qwen3-8B"):
        checks.validate(planted, "full")
    # the same point with no role of its own falls back to the bundled CPU model: also a failure
    bundled = write_table(tmp_path / "b", BODY + PAPER)
    findings = by_key(checks.check_table(bundled, "full"))["lc|qasper"].findings
    assert any("runs the bundled CPU model" in f.line() for f in findings)


def test_a_declared_deviation_is_a_status_not_a_failure(tmp_path):
    deviation = '  deviations:\n    - {rows: lc, role: chunker.llm, why: "the paper\'s model is not public"}\n'
    point = by_key(checks.check_table(table(tmp_path, model="Qwen/Qwen3-8B", extra=deviation), "full"))["lc|qasper"]
    assert point.status == "needs a model"   # not downloaded here; with it, "deviates"
    assert point.findings[0].declared == "the paper's model is not public"
    assert checks.check_table(table(tmp_path / "b", model="Qwen/Qwen3-8B", extra=deviation), "full").failed == []


def test_settings_datasets_and_undeclared_roles_are_checked(tmp_path):
    wrong = PAPER.replace("value: 4096", "value: 2048").replace("split: test", "split: validation")
    point = by_key(checks.check_table(table(tmp_path, paper=wrong), "full"))["fixed|qasper"]
    assert sorted(f.subject for f in point.findings) == ["context.budget", "dataset"]
    no_paper = checks.check_table(write_table(tmp_path / "n", BODY), "full")
    assert {p.status for p in no_paper.points} == {"undeclared"}
    assert checks.check_table(write_table(tmp_path / "s", BODY), "smoke").failed == []  # smoke: no paper needed
    with pytest.raises(ConfigError, match="row 'nope' matches no row"):
        table(tmp_path / "g", paper=PAPER.replace("rows: lc", "rows: nope"))


def test_every_point_is_checked_not_only_the_first(tmp_path):
    body = BODY.replace("chunker=fixed", "chunker=no_such_chunker").replace("chunker=lumber", "chunker=nope2")
    check = checks.check_table(write_table(tmp_path, body), "smoke")
    assert [p.status for p in check.points] == ["config error", "config error"]
    assert check.summary()[0] == "[demo/t1] 2 point(s) at smoke scale: 2 config error"


def test_explain_json_names_roles_dataset_and_the_paper(tmp_path, capsys, monkeypatch):
    root = tmp_path / "tables"
    table(tmp_path)
    monkeypatch.setattr(spec, "TABLES", root)
    cli.main(["tables", "explain", "--tables", "demo/t1", "--scale", "full", "--json"])
    records = json.loads(capsys.readouterr().out)
    lc = next(r for r in records if r["row"] == "lc")
    assert {"table", "row", "group", "roles", "dataset", "paper", "deviations"} <= set(lc)
    assert lc["roles"]["chunker.llm"] == "deepseek-ai/DeepSeek-R1-0528"
    assert lc["dataset"] == {"name": "qasper", "source": "hub", "path": "allenai/qasper"}
    assert lc["paper"]["models"][0]["model"] == "deepseek-ai/DeepSeek-R1-0528"


CHUNKING_ROWS = ("hichunk/", "lgmgc/")


@pytest.mark.slow
@pytest.mark.parametrize("table_id", [s.id for s in spec.all_specs() if s.id.startswith(CHUNKING_ROWS)])
def test_hichunk_and_lgmgc_tables_are_the_papers_experiments_at_full_scale(table_id):
    """No config error and no undeclared difference; every LLM chunker runs a model of its own
    (neither bundled nor the responder), every dataset from the Hub or a path."""
    check = checks.check_table(next(s for s in spec.all_specs() if s.id == table_id), "full")
    assert check.failed == []
    for p in check.points:
        assert p.dataset["source"] in ("hub", "path")
        llm = p.roles.get("chunker.llm")
        if llm is not None:
            assert not llm.bundled and llm.follows is None
            responder = p.roles.get("responder.llm")  # LGMGC: the same Llama3-8B, 8-bit to chunk, 4-bit to answer
            if responder is not None:
                assert (llm.model, llm.settings.get("quantization")) != (responder.model, responder.settings.get("quantization"))


def test_copied_table_with_a_wrong_model_fails_the_cli(tmp_path, capsys, monkeypatch):
    root = tmp_path / "tables"
    (root / "hichunk").mkdir(parents=True)
    text = (spec.TABLES / "hichunk" / "table3.yaml").read_text()
    planted = text.replace("roles.chunker.llm.model=deepseek-ai/DeepSeek-R1-0528", "roles.chunker.llm.model=Qwen/Qwen3-8B")
    assert planted != text
    (root / "hichunk" / "table3.yaml").write_text(planted)
    monkeypatch.setattr(spec, "TABLES", root)
    with pytest.raises(SystemExit) as e:
        cli.main(["tables", "validate", "--tables", "hichunk/table3", "--scale", "full"])
    assert e.value.code == 2
    out = capsys.readouterr()
    assert "3 undeclared" in out.out and "undeclared: chunker.llm: runs Qwen/Qwen3-8B" in out.out
    assert "hichunk/table3" in out.err


def test_a_delta_only_where_the_point_is_the_papers_setup(tmp_path):
    from harness.data.base import SAMPLES_DIR
    from harness.report.tables import render

    from tests.report.test_tables import fake_runs

    body = BODY.replace("  qasper: {label: Qasper, overrides: [dataset=qasper]}",
                        f"  copy: {{label: Copy, overrides: [dataset=ohrbench, dataset.source=path, "
                        f"'dataset.path={SAMPLES_DIR / 'ohr_bench'}']}}\n"
                        "  sample: {label: Sample, overrides: [dataset=ohrbench]}")
    numbers = "row,column,value\nfixed,copy/erec,0.5\nfixed,sample/erec,0.5\nlc,copy/erec,0.5\n"
    t = write_table(tmp_path, body + "paper:\n  models: []\n", numbers)
    points = render.grid_points(t, "smoke")
    why_not = render.incomparable_by_cell(t, "smoke", points)
    assert why_not[("fixed", "copy")] == ""   # the paper's data (a local copy) and no model: comparable
    assert why_not[("fixed", "sample")] == "bundled sample of ohrbench"
    assert why_not[("lc", "copy")] == "bundled SmolLM2-135M-Instruct"
    runs = fake_runs({k: {"evidence_recall": 0.75} for k in ("fixed|copy", "fixed|sample", "lc|copy", "lc|sample")})
    cells = render.table_cells(t, "smoke", runs, {k: (v, None) for k, v in grid.paper_numbers(t).items()},
                               points, why_not)
    assert cells[("fixed", "copy/erec")].diff == pytest.approx(0.25)
    assert cells[("fixed", "sample/erec")].diff is None and cells[("lc", "copy/erec")].diff is None
    md = render.markdown(render.Rendered(t, "smoke", cells, []))
    assert "paper 0.5000, Δ +0.2500" in md and "paper 0.5000, not comparable: bundled sample of ohrbench" in md


def test_a_run_of_other_questions_than_the_papers_is_not_comparable_unless_declared(tmp_path):
    """The declared question count is checked against what the run recorded (n_queries)."""
    paper = table(tmp_path).paper
    assert paper.questions_differ("fixed", "qasper", 1451.0) == "1451 questions, the paper's 1372"
    assert paper.questions_differ("fixed", "qasper", 1372.0) == "" and paper.questions_differ("fixed", "qasper", None) == ""
    declared = '  deviations:\n    - {groups: qasper, key: dataset.questions, why: "the paper does not say which"}\n'
    assert table(tmp_path / "d", extra=declared).paper.questions_differ("fixed", "qasper", 1451.0) == ""
