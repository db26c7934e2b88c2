"""A table's pairwise judging (MC-indexing Figure 3): the ``pairwise`` block of a table file, judging
two rows' recorded runs with scripted judge replies, logging the rates to MLflow, and rendering them
from the record (markdown, CSV, stacked-bar PNG)."""

import csv
import io
import json
import time
from pathlib import Path

import pytest

from harness.report.tables import checks, grid, pairwise, pairwise_judge, render, spec
from harness.types import ConfigError
from tests.conftest import ScriptedLLM
from tests.report.test_judge import RUN_A, RUN_B, judge_reply
from tests.report.test_tables import write_table

PAIRED = """
title: Paired
source: a test
numbers: NUMBERS
shared: [responder=llm, "dataset.domains=[news]", dataset.limit_queries=2]
x: {param: context.k, label: Top k, values: [1.5, 3], names: [Top1.5, Top3]}
rows:
  flc: {label: FLC, overrides: [chunker=sentence, context=topk]}
  mc: {label: MC, overrides: [chunker=section, context=topk]}
groups:
  bm25: {label: BM25, overrides: [retriever=bm25]}
  tfidf: {label: TF-IDF, overrides: [retriever=tfidf]}
  gone: {label: Gone, overrides: [], missing: not built}
metrics:
  erec: {metric: evidence_recall, label: ERec}
pairwise:
  a: mc
  b: flc
  judge: [llm=openai, llm.model=gpt-4]
  label: GPT-4
scale:
  smoke:
    pairwise: {judge: [llm=transformers, llm.batch_size=3], label: bundled stand-in, max_tokens: 48}
    skip: {context.k=3: one k at smoke}
"""


# --- the table file ------------------------------------------------------------------------------

def test_a_pairwise_block_adds_a_layout_per_group_and_k(tmp_path):
    t = write_table(tmp_path, PAIRED)
    full, smoke = t.pairwise_at("full"), t.pairwise_at("smoke")
    assert (full.a, full.b, full.judge, full.max_tokens, full.outcomes) == (
        "mc", "flc", ("llm=openai", "llm.model=gpt-4"), 512, ("score", "round"))
    assert (smoke.judge, smoke.label, smoke.max_tokens) == (("llm=transformers", "llm.batch_size=3"),
                                                             "bundled stand-in", 48)
    cols = t.pair_columns()
    assert [c.key for c in cols[:4]] == ["score/win@1.5", "score/tie@1.5", "score/loss@1.5", "score/win@3"]
    assert len(cols) == 12 and cols[0].label == "Score-based win @Top1.5" and cols[-1].key == "round/loss@3"
    assert t.in_layout("bm25", "round/tie@3") and t.in_layout("mc", "bm25/erec@1.5")
    assert not t.in_layout("bm25", "round/draw@3") and not t.in_layout("mc", "score/win@1.5")
    assert full.run_key("bm25", "context.k=1.5") == "mc~flc|bm25|context.k=1.5"
    # an x value skipped at a scale: its grid points carry the reason, the other k runs
    runs = {r.key: r for r in t.runs("smoke")}
    assert runs["mc|bm25|context.k=3"].skip == "one k at smoke" and runs["mc|bm25|context.k=1.5"].skip is None
    assert all(r.skip is None for r in t.runs("full"))


@pytest.mark.parametrize("edit, message", [
    (("a: mc", "a: mcc"), "pairwise.a: 'mcc' is not a row \\(flc, mc\\)"),
    (("b: flc", "b: mc"), "a and b are the same row 'mc'"),
    (("  label: GPT-4\n", "  label: GPT-4\n  outcomes: [score, vote]\n"), "outcomes: a list of score \\| round"),
    (("  label: GPT-4\n", "  label: GPT-4\n  judges: [llm=openai]\n"), "pairwise: needs \\{a: row, b: row"),
    (("judge: [llm=openai, llm.model=gpt-4]", "judge: []"), "the Hydra overrides composing the judge's llm"),
    (("max_tokens: 48}", "max_tokens: 0}"), "needs max_tokens >= 1"),
    (("pairwise: {judge:", "pairwise: {a: flc, judge:"), "scale.smoke.pairwise: may replace judge, label"),
    (("mc: {label: MC, overrides: [chunker=section, context=topk]}",
      "mc: {label: MC, overrides: [chunker=fixed], sweep: {chunker.size: [100, 200]}}"), "row 'mc' must be one run"),
])
def test_bad_pairwise_blocks_name_the_problem(tmp_path, edit, message):
    assert edit[0] in PAIRED
    with pytest.raises(ConfigError, match=message):
        write_table(tmp_path, PAIRED.replace(*edit))


def test_pairwise_paper_numbers_and_judge_are_validated(tmp_path):
    t = write_table(tmp_path, PAIRED, "row,column,value\nbm25,score/win@1.5,40\nbm25,round/tie@3,\n")
    checks.validate(t, "smoke")  # the grid's points and the judge's llm compose and build (no weights load)
    bad = write_table(tmp_path / "b", PAIRED, "row,column,value\nbm25,score/draw@1.5,40\n")
    with pytest.raises(ConfigError, match="\\(bm25, score/draw@1.5\\), not in the layout"):
        checks.validate(bad, "smoke")
    judge = write_table(tmp_path / "c", PAIRED.replace("[llm=transformers, llm.batch_size=3]", "[llm=gpt5]"))
    with pytest.raises(ConfigError, match="pairwise.judge: .*llm/gpt5"):
        checks.validate(judge, "smoke")


def test_the_judge_is_built_from_the_config_with_the_runs_cache(tmp_path):
    t = write_table(tmp_path, PAIRED)
    llm = pairwise_judge.build_judge(t, "smoke", [f"cache.dir={tmp_path / 'cache'}"])
    assert type(llm).__name__ == "TransformersLLM" and llm.batch_size == 3
    assert llm.cache.dir.absolute() == (tmp_path / "cache").absolute()  # judge calls are cached with the runs'


# --- judging recorded runs and rendering from the record ------------------------------------------

def record(uri: str, t, key: str, rows: dict) -> str:
    """A tiny recorded grid point: its tags and per-query answers, as log_run writes them."""
    import mlflow

    time.sleep(0.01)  # distinct start times: the latest run of a grid point wins
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(t.experiment)
    with mlflow.start_run(run_name=key) as run:
        mlflow.set_tags({"table": t.id, "table.run": key, "table.scale": "smoke", grid.SET_TAG: grid.set_tag([])})
        mlflow.log_metrics({"evidence_recall": 0.5})
        mlflow.log_text("\n".join(json.dumps(r) for r in rows.values()), "per_query.jsonl")
    return run.info.run_id


@pytest.fixture
def judged(tmp_path):
    """PAIRED with bm25 at top 1.5 recorded for both rows and judged by a scripted, cached model;
    tfidf has FLC's run only."""
    from harness.cache import open_cache

    t = write_table(tmp_path, PAIRED)
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    ids = {"a": record(uri, t, "mc|bm25|context.k=1.5", RUN_A), "b": record(uri, t, "flc|bm25|context.k=1.5", RUN_B)}
    record(uri, t, "flc|tfidf|context.k=1.5", RUN_B)
    llm = ScriptedLLM(reply=judge_reply)
    llm.cache = open_cache(tmp_path / "cache")
    lines = []
    done = pairwise_judge.judge_table(t, "smoke", [f"tracking.uri={uri}"], log=lines.append, llm=llm)
    return t, uri, ids, llm, lines, done


def test_judging_logs_one_run_per_pair_with_its_rates(judged):
    from mlflow.tracking import MlflowClient

    t, uri, ids, llm, lines, done = judged
    assert len(done) == 1 and len(llm.prompts) == 7  # 4 pairs x 2 rounds; q2's two rounds are one prompt
    assert lines[0].startswith("[demo/t1] mc~flc|bm25|context.k=1.5: score win/tie/loss 0.33/0.33/0.33 over 3 "
                               "queries (1 invalid), 7 judge calls computed")
    assert lines[1] == ("[demo/t1] mc~flc|tfidf|context.k=1.5: not judged (mc|tfidf|context.k=1.5 not recorded "
                        "as finished)")
    run = MlflowClient(uri).get_run(done[0])
    m, tags = run.data.metrics, run.data.tags
    third = pytest.approx(1 / 3)
    assert {k: m[k] for k in ("score/win", "score/tie", "score/loss", "round/win")} == {
        "score/win": third, "score/tie": third, "score/loss": third, "round/win": third}
    assert (m["n"], m["invalid"], m["parse_failures"], m["llm_calls"], m["prompts"]) == (3, 1, 2, 7, 8)
    assert tags["table.run"] == "mc~flc|bm25|context.k=1.5" and tags["table.group"] == "bm25"
    assert (tags["table.pair.a_run"], tags["table.pair.b_run"]) == (ids["a"], ids["b"])
    assert tags["table.pair.a"] == "mc|bm25|context.k=1.5" and json.loads(tags["judge.left_out"]) == {
        "only_in_one_run": 1, "no_answer": 1, "no_gold": 1}
    assert run.data.params["judge.llm.model"] == "bundled" and run.data.params["judge.llm._target_"].endswith(
        "TransformersLLM")
    from mlflow.artifacts import download_artifacts

    path = download_artifacts(run_id=done[0], artifact_path="judged.jsonl", tracking_uri=uri)
    verdicts = [json.loads(x) for x in Path(path).read_text().splitlines()]
    assert [v["score_based"] for v in verdicts] == ["win", "tie", "loss", None]
    # a warm re-run asks the model nothing: every judge call comes from the cache
    again = pairwise_judge.judge_table(t, "smoke", [f"tracking.uri={uri}"], log=lambda *_: None, llm=llm)
    assert MlflowClient(uri).get_run(again[0]).data.metrics["llm_calls"] == 0 and len(llm.prompts) == 7


def test_rates_render_from_the_record(judged, tmp_path):
    import matplotlib.image

    t, uri, *_ = judged
    rendered = render.build(t, uri, "smoke")
    cell = rendered.pairwise[("bm25", "score/win@1.5")]
    assert cell.ours == pytest.approx(100 / 3) and (cell.n, cell.invalid) == (3, 1)
    assert rendered.pairwise[("tfidf", "round/tie@1.5")].note == "not run yet"
    assert rendered.pairwise[("bm25", "score/win@3")].note == "not run at smoke scale"
    assert rendered.pairwise[("gone", "score/win@1.5")].note == "not built"
    assert rendered.cells[("mc", "bm25/erec@1.5")].ours == 0.5  # the rows' own cells read the same record
    assert rendered.filled == 3 + 6 and rendered.total == 2 * 6 + 3 * 12
    paths = render.write(rendered, tmp_path / "results")
    md = paths[0].read_text()
    assert "## Pairwise judge: MC against FLC" in md and "Judge: bundled stand-in (MC-indexing Figure 11" in md
    assert "| BM25 | 33.3 (n = 3, 1 invalid) | 33.3 (n = 3, 1 invalid) |" in md
    assert "Not run at this scale, context.k=3: one k at smoke." in md
    [pair_csv] = [p for p in paths if p.name == "t1_pairwise.csv"]
    rows = list(csv.DictReader(io.StringIO(pair_csv.read_text())))
    assert len(rows) == 36 and rows[0] == {"row": "bm25", "column": "score/win@1.5", "ours": "33.333333", "n": "3",
                                           "invalid": "1", "paper": "", "diff": "", "note": ""}
    png = matplotlib.image.imread(paths[-1])
    assert paths[-1].name == "t1.png" and png.std() > 0
    # a newer run of one side: the judged rates are stale until judged again
    record(uri, t, "mc|bm25|context.k=1.5", RUN_A)
    stale = render.build(t, uri, "smoke").pairwise[("bm25", "score/win@1.5")]
    assert stale.ours is None and stale.note.startswith("judged older runs of the pair")


def test_a_pair_without_answers_is_recorded_as_failed(tmp_path):
    t = write_table(tmp_path, PAIRED)
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    retrieval_only = {q: {k: v for k, v in r.items() if k not in ("answer", "gold_answers")} for q, r in RUN_A.items()}
    record(uri, t, "mc|bm25|context.k=1.5", retrieval_only)
    record(uri, t, "flc|bm25|context.k=1.5", RUN_B)
    lines = []
    assert pairwise_judge.judge_table(t, "smoke", [f"tracking.uri={uri}"], log=lines.append,
                                llm=ScriptedLLM(reply=judge_reply)) == []
    assert "no query has an answer and a gold answer in both runs" in lines[0]
    note = render.build(t, uri, "smoke").pairwise[("bm25", "round/win@1.5")].note
    assert note.startswith("no query has an answer and a gold answer in both runs")


def test_the_figure_has_a_panel_per_outcome_kind_and_k(judged):
    t, uri, *_ = judged
    fig = pairwise.draw(render.build(t, uri, "smoke"))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Score-based, Top1.5", "Score-based, Top3", "Round-based, Top1.5", "Round-based, Top3"]
    assert [x.get_text() for x in fig.axes[0].get_yticklabels()] == ["BM25", "TF-IDF"]
    assert [x.get_text() for x in fig.legends[0].get_texts()] == ["MC wins", "Tie", "FLC wins"]
    texts = [x.get_text() for x in fig.axes[0].texts]
    assert "33" in texts and "n=3, 1 inv." in texts and "n/a (not run yet)" in texts
    assert "n/a (not run at smoke scale)" in [x.get_text() for x in fig.axes[1].texts]
    assert fig.axes[0].get_xlim() == (0, 100)


def test_the_figure_is_a_column_per_outcome_kind_and_a_row_per_k(judged):
    t, uri, *_ = judged
    fig = pairwise.draw(render.build(t, uri, "smoke"))
    where = [(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start) for ax in fig.axes]
    assert where == [(0, 0), (1, 0), (0, 1), (1, 1)]  # two panels a row however many k: Figure 3's four fit
    assert fig._suptitle.get_text().startswith("Paired\n(demo/t1, smoke scale)")  # the table's title in words


def test_shipped_figure3_is_the_papers_layout():
    t = next(s for s in spec.all_specs() if s.id == "mc_indexing/figure3")
    assert [g.key for g in t.groups] == ["bm25", "dpr", "colbert", "bge"] and t.x.values[0] == 1.5
    assert (t.pairwise.a, t.pairwise.b) == ("mc", "flc300") and "llm.model=gpt-4" in t.pairwise.judge
    assert t.pairwise_at("smoke").judge == ("llm=transformers", "llm.model=bundled")
    smoke = [r for r in t.runs("smoke") if not r.skip]
    assert sorted(r.key for r in smoke) == ["flc300|bm25|context.k=1.5", "flc300|dpr|context.k=1.5",
                                            "mc|bm25|context.k=1.5", "mc|dpr|context.k=1.5"]
    assert {c.key for c in t.pair_columns()} >= {"score/win@1.5", "round/loss@10"}


@pytest.mark.slow
def test_a_pairwise_table_end_to_end_with_the_bundled_model(tmp_path):
    """Grid runs with answers, judged by the bundled model, rendered: what `tables reproduce` does."""
    t = write_table(tmp_path, PAIRED.replace("values: [1.5, 3], names: [Top1.5, Top3]", "values: [1], names: [Top1]")
                    .replace("    skip: {context.k=3: one k at smoke}\n", "    skip: {tfidf: one retriever here}\n")
                    .replace("dataset.limit_queries=2", "dataset.limit_queries=2, responder.max_tokens=16, "
                             "responder.max_context_tokens=256"))
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    extra = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    assert all(o.status == "finished" for o in grid.run_table(t, "smoke", extra, log=lambda *_: None)
               if o.status != "skipped")
    assert len(pairwise_judge.judge_table(t, "smoke", extra, log=lambda *_: None)) == 1
    rendered = render.build(t, uri, "smoke")
    cells = [rendered.pairwise[("bm25", f"{k}/{o}@1")] for k in ("score", "round") for o in ("win", "tie", "loss")]
    first = cells[0]
    assert first.n + first.invalid == 2  # both questions judged or counted as invalid
    if first.n:
        assert sum(c.ours for c in cells[:3]) == pytest.approx(100)
        assert sum(c.ours for c in cells[3:]) == pytest.approx(100)
    else:
        assert all(c.note.startswith("no query judged") for c in cells)
