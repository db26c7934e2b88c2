"""Paper tables: the shipped table files, the grid they expand to, and rendering from real runs."""

import csv
import functools
import io

import pytest

from harness.report.tables import checks, grid, render, spec
from harness.report.tables import index as tables_index
from harness.types import ConfigError

SHIPPED = spec.all_specs()


@pytest.mark.parametrize("table", SHIPPED, ids=lambda t: t.id)
def test_paper_numbers_match_the_layout(table):
    numbers = grid.paper_numbers(table)
    assert all(table.in_layout(r, c) for r, c in numbers)  # a row's cell, or a group's pairwise rate
    assert table.numbers.read_text().startswith("#")  # the citation header (says so where the paper prints none)


@pytest.mark.slow
@pytest.mark.parametrize("table", SHIPPED, ids=lambda t: t.id)
def test_shipped_tables_validate(table):
    checks.validate(table, "smoke")  # composes and builds every grid point's components


def write_table(tmp_path, body: str, numbers: str = "row,column,value\n"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "papers.csv").write_text("# a test's numbers\n" + numbers)
    path = tmp_path / "tables" / "demo" / "t1.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(body.replace("NUMBERS", str(tmp_path / "papers.csv")))
    return spec.load_spec(path, tmp_path / "tables")


DEMO = """
title: Demo
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none, "dataset.domains=[news]"]
rows:
  fixed: {label: Fixed, overrides: [chunker=fixed], sweep: {chunker.size: [100, 200]}}
  sentence: {label: Sentence, overrides: [chunker=sentence]}
  skipped: {label: Skipped, overrides: [chunker=paragraph]}
groups:
  paper_data: {label: PaperSet, overrides: [dataset=qasper]}
metrics:
  erec: {metric: evidence_recall, label: ERec, factor: 100, digits: 1}
scale:
  smoke:
    groups:
      paper_data: {label: bundled news, overrides: [dataset=ohrbench]}
    skip: {skipped: too slow here}
"""


def test_grid_expands_sweeps_stand_ins_and_skips(tmp_path):
    t = write_table(tmp_path, DEMO)
    runs = {r.key: r for r in t.runs("smoke")}
    assert list(runs) == ["fixed|paper_data|chunker.size=100", "fixed|paper_data|chunker.size=200",
                          "sentence|paper_data", "skipped|paper_data"]
    assert "dataset=ohrbench" in runs["sentence|paper_data"].overrides  # the stand-in replaces dataset=qasper
    assert "dataset=qasper" not in runs["sentence|paper_data"].overrides
    assert "dataset=qasper" in t.runs("full")[0].overrides
    assert runs["skipped|paper_data"].skip == "too slow here"
    assert t.label(t.groups[0], "groups", "smoke") == "PaperSet → bundled news"
    assert (t.columns()[0].key, t.columns()[0].label) == ("paper_data/erec", "PaperSet ERec")


def test_bad_table_files_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="table demo/t1: keys are challenge, correlation, .*, x, got 'colour'"):
        write_table(tmp_path, DEMO + "colour: red\n")
    t = write_table(tmp_path / "b", DEMO.replace("chunker=sentence", "chunker=no_such_chunker"))
    with pytest.raises(ConfigError, match="sentence\\|paper_data"):
        checks.validate(t, "smoke")
    t = write_table(tmp_path / "m", DEMO.replace("metric: evidence_recall", "metric: evidence_recal"))
    with pytest.raises(ConfigError, match="no metric of this run records evidence_recal "):
        checks.validate(t, "smoke")
    t = write_table(tmp_path / "c", DEMO, "row,column,value\nfixed,paper_data/nope,1\n")
    with pytest.raises(ConfigError, match="not in the layout"):
        checks.validate(t, "smoke")
    with pytest.raises(ConfigError, match="no table matches"):
        spec.select("hichunk/no_such_table")


@pytest.mark.slow
def test_a_table_runs_records_and_renders_from_mlflow(tmp_path):
    t = write_table(tmp_path, DEMO, "row,column,value\nsentence,paper_data/erec,50.0\nfixed,paper_data/erec,-\n")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    extra = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    outcomes = grid.run_table(t, "smoke", extra, log=lambda *_: None)
    assert sorted(o.status for o in outcomes) == ["finished", "finished", "finished", "skipped"]
    rendered = render.build(t, uri, "smoke")  # from the record, not from the outcomes
    assert rendered.filled == 2 and len(rendered.cells) == 3
    sentence = rendered.cells[("sentence", "paper_data/erec")]
    assert sentence.paper == 50.0 and sentence.low <= sentence.ours <= sentence.high
    fixed = rendered.cells[("fixed", "paper_data/erec")]
    assert fixed.n_runs == 2 and fixed.std is not None and fixed.paper is None
    assert rendered.cells[("skipped", "paper_data/erec")].note == "not run at smoke scale"
    paths = render.write(rendered, tmp_path / "results")
    md, table_csv, tex = (p.read_text() for p in paths)
    assert "| PaperSet* ERec |" in md and "Stand-in data at this scale: PaperSet → bundled news." in md
    assert "Scale: **smoke**" in md and "Not run at this scale, Skipped: too slow here." in md
    assert "n/a (not run at smoke scale)" in md
    assert "paper 50.0, not comparable: the table declares no paper setup" in md and sentence.diff is None
    assert "bundled all-MiniLM-L6-v2" not in md  # bm25: no model was used
    rows = list(csv.DictReader(io.StringIO(table_csv)))
    assert [r["row"] for r in rows] == ["fixed", "sentence", "skipped"] and rows[1]["paper"] == "50.000000"
    assert tex.startswith("\\begin{tabular}{lc}") and "(50.0)" in tex
    assert r"{\scriptsize [" in tex and r"$\pm$" in tex   # the interval of one run, the std over a sweep
    index = tables_index.write([rendered], {}, [t.id], out=tmp_path / "results").read_text()
    assert "| [demo/t1](demo/t1.md) | Demo | 2/3 | the table declares no paper setup | 1: too slow here |" in index
    assert "**2 of 3 cells filled** in 1 tables at smoke scale: 0 complete, 1 partial, 0 empty" in index
    # Run again: every grid point is recorded already (same config, code and point), so nothing
    # runs and nothing is logged; tracking.rerun=new logs them anyway.
    import sqlite3

    def stored():
        return sqlite3.connect(tmp_path / "mlruns.db").execute("SELECT count(*) FROM runs").fetchone()[0]

    said, before = [], stored()
    again = grid.run_table(t, "smoke", extra, log=said.append)
    assert [o.status for o in again] == [o.status for o in outcomes]
    assert sum("already recorded as run" in line for line in said) == 3 and stored() == before == 3
    grid.run_table(t, "smoke", [*extra, "tracking.rerun=new"], log=lambda *_: None)
    assert stored() == 6


FIGURE = """
title: Demo figure
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none, dataset=ohrbench, "dataset.domains=[news]"]
x: {param: chunker.size, label: Chunk size, values: [100, 200], names: [S, L]}
rows:
  fixed: {label: Fixed, overrides: [chunker=fixed]}
  sentence: {label: Sentence, overrides: [chunker=sentence]}
  raptor: {label: RAPTOR, overrides: [], missing: RAPTOR is not built yet}
groups:
  news: {label: News, overrides: []}
metrics:
  erec: {metric: evidence_recall, label: ERec, factor: 100, digits: 1}
"""


def test_a_figure_has_an_x_axis_and_missing_rows_are_never_run(tmp_path):
    t = write_table(tmp_path, FIGURE)
    assert t.is_figure and [r.key for r in t.runs("smoke")] == [
        "fixed|news|chunker.size=100", "fixed|news|chunker.size=200",
        "sentence|news|chunker.size=100", "sentence|news|chunker.size=200"]
    assert [(c.key, c.label) for c in t.columns()] == [("news/erec@100", "News ERec @S"), ("news/erec@200", "News ERec @L")]
    with pytest.raises(ConfigError, match="2 names for 1 values"):
        write_table(tmp_path / "b", FIGURE.replace("values: [100, 200]", "values: [100]"))
    with pytest.raises(ConfigError, match="sweep_select"):
        write_table(tmp_path / "c", FIGURE + "sweep_select: median\n")


@pytest.mark.slow
def test_a_figure_renders_to_png_with_the_papers_points(tmp_path):
    import matplotlib.image

    from harness.report.tables import figure

    t = write_table(tmp_path, FIGURE, "row,column,value\nfixed,news/erec@100,40\nfixed,news/erec@200,45\n")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    grid.run_table(t, "smoke", [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"], log=lambda *_: None)
    rendered = render.build(t, uri, "smoke")
    assert rendered.filled == 4 and rendered.cells[("raptor", "news/erec@100")].note == "not built"
    fig = figure.draw(rendered)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Chunk size", "ERec")
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["S", "L"]
    assert "Fixed (paper)" in [h.get_label() for h in ax.get_lines()] or any(
        "paper" in text.get_text() for text in fig.legends[0].get_texts())
    paths = render.write(rendered, tmp_path / "results")
    png = matplotlib.image.imread(paths[-1])
    assert paths[-1].suffix == ".png" and png.shape[0] > 100 and png.shape[1] > 100 and png.std() > 0
    md = paths[0].read_text()
    assert "Not built, RAPTOR: RAPTOR is not built yet." in md and "n/a (not built)" in md
    # quality against cost over the same runs: one dataset, four chunker configurations
    from harness.report.tables import pareto

    stale = tmp_path / "results" / "pareto" / "a_dataset_no_longer_run.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    [(dataset, metric, plot_path, n)] = pareto.write(uri, "smoke", tmp_path / "results")
    assert not stale.exists()  # the folder holds this record's plots only
    assert metric == "evidence_recall" and n == 4 and plot_path.is_file()
    rows = list(csv.DictReader(line for line in plot_path.with_suffix(".csv").read_text().splitlines()
                               if not line.startswith("#")))
    assert {r["chunker"] for r in rows} == {"FixedSizeChunker size=100", "FixedSizeChunker size=200",
                                            "SentenceChunker size=100", "SentenceChunker size=200"}
    assert any(r["pareto"] == "1" for r in rows) and all(float(r["embed_texts_per_doc"]) == 0 for r in rows)
    best = max(rows, key=lambda r: float(r["evidence_recall"]))
    assert best["pareto"] == "1"  # the best quality is never dominated


@pytest.mark.slow
def test_make_reproduce_tables_end_to_end(tmp_path):
    """The README's command on one small shipped table, into a scratch store, cache and folder."""
    import subprocess

    out = tmp_path / "results"
    args = f"--uri sqlite:///{tmp_path / 'mlruns.db'} --out {out} --set cache.dir={tmp_path / 'cache'}"
    done = subprocess.run(["make", "-s", "reproduce-tables", "TABLES=mc_indexing/table6", f"TABLES_ARGS={args}"],
                          cwd=spec.REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 table file(s) valid at smoke scale" in done.stdout
    md = (out / "mc_indexing" / "table6.md").read_text()
    assert "Wiki-2M* Chunking error (%)" in md and "paper 0.0" in md  # stand-in starred, paper beside ours
    rows = list(csv.DictReader(io.StringIO((out / "mc_indexing" / "table6.csv").read_text())))
    filled = [r for r in rows if r["ours"]]
    assert len(filled) == 7 and all(0 <= float(r["ours"]) <= 100 for r in filled)
    content = next(r for r in rows if r["row"] == "content" and r["column"] == "wikiweb2m/error")
    assert float(content["ours"]) == 0.0  # sections hold every page-aligned answer scope whole
    index = (out / "README.md").read_text()
    assert "[mc_indexing/table6](mc_indexing/table6.md)" in index and "7/14" in index


def test_an_axis_may_read_its_own_run_metric(tmp_path):
    body = DEMO.replace("paper_data: {label: PaperSet, overrides: [dataset=qasper]}",
                        "paper_data: {label: PaperSet, overrides: [dataset=qasper], metrics: {erec: span_recall}}")
    t = write_table(tmp_path, body.replace("sentence: {label: Sentence, overrides: [chunker=sentence]}",
                                           "sentence: {label: Sentence, overrides: [chunker=sentence], "
                                           "metrics: {erec: span_precision}}"))
    [col] = t.columns()
    assert col.metric.metric == "span_recall"  # the group's choice
    assert t.metric_name(t.rows[1], col) == "span_precision" and t.metric_name(t.rows[0], col) == "span_recall"
    checks.validate(t, "smoke")  # both are keys the retrieval metrics record
    bad = write_table(tmp_path / "b", body.replace("metrics: {erec: span_recall}", "metrics: {erec: no_such_key}"))
    with pytest.raises(ConfigError, match="records no_such_key"):
        checks.validate(bad, "smoke")
    with pytest.raises(ConfigError, match="not layout metrics"):
        write_table(tmp_path / "c", body.replace("metrics: {erec: span_recall}", "metrics: {f1: span_recall}"))
    with pytest.raises(ConfigError, match="keys are aggregate, label, metrics, missing, overrides, sweep"):
        write_table(tmp_path / "d", body.replace("metrics: {erec: span_recall}", "missin: typo"))


SWEPT = """
title: Swept
source: a test
numbers: NUMBERS
rows:
  fixed: {label: Fixed, overrides: [chunker=fixed], sweep: {chunker.size: [100, 200]}}
groups:
  data: {label: Data, overrides: []}
metrics:
  f1_1: {metric: doc_f1_at_1, label: F1@1}
  f1_5: {metric: doc_f1_at_5, label: F1@5}
"""


def fake_runs(values: dict[str, dict[str, float]]):
    from types import SimpleNamespace

    return {key: SimpleNamespace(info=SimpleNamespace(status="FINISHED"), data=SimpleNamespace(metrics=m, tags={}))
            for key, m in values.items()}


@pytest.mark.parametrize("select, expected", [
    ("mean", {"f1_1": (0.5, None), "f1_5": (0.45, None)}),
    ("best", {"f1_1": (0.6, "chunker.size=200"), "f1_5": (0.8, "chunker.size=100")}),
    # one configuration for the group: size 100 has the better mean (0.4 + 0.8) / 2 > (0.6 + 0.1) / 2
    ("best_group", {"f1_1": (0.4, "chunker.size=100"), "f1_5": (0.8, "chunker.size=100")}),
])
def test_a_swept_row_shows_its_mean_its_best_or_the_groups_best(tmp_path, select, expected):
    t = write_table(tmp_path, SWEPT + f"sweep_select: {select}\n")
    runs = fake_runs({"fixed|data|chunker.size=100": {"doc_f1_at_1": 0.4, "doc_f1_at_5": 0.8},
                      "fixed|data|chunker.size=200": {"doc_f1_at_1": 0.6, "doc_f1_at_5": 0.1}})
    for col in t.columns():
        c = render.cell(t, "smoke", t.rows[0], col, runs, None)
        assert (c.ours, c.chosen or None) == (pytest.approx(expected[col.metric.key][0]), expected[col.metric.key][1])
    # select_by: choose on other run metrics than the ones shown
    t = write_table(tmp_path / "b", SWEPT + "sweep_select: best_group\nselect_by: [doc_f1_at_1]\n")
    assert render.cell(t, "smoke", t.rows[0], t.columns()[1], runs, None).chosen == "chunker.size=200"
    with pytest.raises(ConfigError, match="only with sweep_select: best_group"):
        write_table(tmp_path / "c", SWEPT + "select_by: [doc_f1_at_1]\n")


def test_a_cell_shows_its_interval_or_its_std_over_queries(tmp_path):
    body = SWEPT.replace(", sweep: {chunker.size: [100, 200]}", "")
    runs = fake_runs({"fixed|data": {"doc_f1_at_1": 0.4, "doc_f1_at_1/ci95_low": 0.3, "doc_f1_at_1/ci95_high": 0.5,
                                     "doc_f1_at_1/std": 0.2, "doc_f1_at_5": 0.6}})
    ci = write_table(tmp_path, body)
    c = render.cell(ci, "smoke", ci.rows[0], ci.columns()[0], runs, None)
    assert (c.low, c.high, c.std) == (0.3, 0.5, None) and render.ours_text(c, 2) == "0.40 [0.30, 0.50]"
    std = write_table(tmp_path / "b", body + "spread: std\n")
    c = render.cell(std, "smoke", std.rows[0], std.columns()[0], runs, None)
    assert (c.low, c.high, c.std) == (0.3, 0.5, 0.2) and render.ours_text(c, 2) == "0.40 ± 0.20"
    # where the point is the paper's setup, whether the paper's value lies in our interval is said
    from dataclasses import replace
    assert render.inside_text(replace(c, paper=0.45), 2) == ", inside our 95% interval [0.30, 0.50]"
    assert render.inside_text(replace(c, paper=0.55), 2) == ", outside our 95% interval [0.30, 0.50]"
    assert render.inside_text(replace(c, paper=0.55, incomparable="a stand-in"), 2) == ""
    assert "ours ± std over queries" in "\n".join(render.caption(render.Rendered(std, "smoke", {}, [])))
    with pytest.raises(ConfigError, match="spread: ci | std"):
        write_table(tmp_path / "c", body + "spread: sd\n")


CORRELATED = """
title: Correlated
source: a test
numbers: NUMBERS
rows:
  a: {label: A, overrides: [chunker=fixed]}
  b: {label: B, overrides: [chunker=sentence]}
  c: {label: C, overrides: [chunker=paragraph]}
  d: {label: D, overrides: [chunker=recursive]}
  gone: {label: Gone, overrides: [], missing: not built}
groups:
  data: {label: Data, overrides: []}
metrics:
  li: {metric: chunkscore_li, label: LI}
  sd: {metric: chunkscore_sd, label: SD, factor: 100}
  rouge: {metric: rouge_l_qchunker, label: ROUGE-L}
correlation:
  mix: [li, sd]
  target: rouge
  lambdas: {start: 0.0, stop: 1.0, step: 0.01}
"""


def test_a_correlation_figure_tracks_a_metric_mix_across_rows(tmp_path):
    import matplotlib.image

    from harness.report.tables import correlation

    t = write_table(tmp_path, CORRELATED)
    assert len(t.correlation.lambdas) == 101 and t.correlation.lambdas[30] == 0.3
    # ROUGE-L follows SD exactly and LI backwards: r = 1 at lambda 0, -1 at lambda 1
    values = {"a": (4.0, 0.1, 0.2), "b": (3.0, 0.2, 0.4), "c": (2.0, 0.3, 0.6), "d": (1.0, 0.4, 0.8)}
    runs = fake_runs({f"{k}|data": {"chunkscore_li": li, "chunkscore_sd": sd, "rouge_l_qchunker": y}
                      for k, (li, sd, y) in values.items()})
    cells = {(row.key, col.key): render.cell(t, "smoke", row, col, runs, None) for row in t.rows for col in t.columns()}
    rendered = render.Rendered(t, "smoke", cells, [])
    [(group, curve)] = correlation.curves(rendered).items()
    r = dict(curve)
    assert group == "data" and r[0.0] == pytest.approx(1.0) and r[1.0] == pytest.approx(-1.0)
    assert correlation.best(curve) == (0.0, pytest.approx(1.0))
    assert correlation.row_values(rendered, "data")[1] == ("b", 3.0, pytest.approx(0.2), 0.4)  # factor undone
    md = render.markdown(rendered)
    assert "| 0.3 |" in md and "r = 1.000 at λ = 0" in md and "Data: 4" in md
    paths = render.write(rendered, tmp_path / "results")
    rows = list(csv.DictReader(io.StringIO(paths[3].read_text())))
    assert paths[3].name == "t1_correlation.csv" and len(rows) == 101 and rows[-1]["n_rows"] == "4"
    png = matplotlib.image.imread(paths[4])
    assert paths[4].suffix == ".png" and png.std() > 0
    # fewer than three rows with values: undefined, not a fake +-1
    two = {k: v for k, v in runs.items() if k[0] in "ab"}
    cells = {(row.key, col.key): render.cell(t, "smoke", row, col, two, None) for row in t.rows for col in t.columns()}
    assert all(rv is None for _, rv in correlation.curves(render.Rendered(t, "smoke", cells, []))["data"])
    with pytest.raises(ConfigError, match="not layout metrics"):
        write_table(tmp_path / "b", CORRELATED.replace("target: rouge", "target: bleu"))
    with pytest.raises(ConfigError, match="step > 0"):
        write_table(tmp_path / "c", CORRELATED.replace("step: 0.01", "step: 0"))


def test_models_name_each_llm_with_its_precision():
    from types import SimpleNamespace

    def run(**params):
        return SimpleNamespace(data=SimpleNamespace(params=params))

    runs = {"a": run(**{"chunker.llm.model": "bundled", "chunker.llm.dtype": "bfloat16",
                        "retriever.embedder.model": "bundled"}),
            "b": run(**{"responder.llm.model": "Qwen/Qwen3-8B", "responder.llm.dtype": "auto"}),
            "c": run(**{"judge.llm.model": "gpt-4o", "judge.llm.dtype": "None"})}
    assert render.models_used(runs) == ["embedder: bundled all-MiniLM-L6-v2", "llm: Qwen/Qwen3-8B",
                                        "llm: bundled SmolLM2-135M-Instruct (bfloat16)", "llm: gpt-4o"]


def test_grid_points_that_differ_in_values_share_one_hydra_composition(tmp_path, monkeypatch):
    """`tables reproduce` validates every table, then runs it: Hydra reads the YAML once per set
    of group choices (chunker=fixed for both sizes, chunker=sentence), for validation and run
    alike; each caller gets its own copy with its values set."""
    from harness import registry

    t = write_table(tmp_path, DEMO)
    monkeypatch.setattr(registry, "_compose_choices", functools.lru_cache(registry._compose_choices.__wrapped__))
    extra = [f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}"]
    checks.validate(t, "smoke", extra)
    points = [p for p in t.runs("smoke") if not p.skip]
    assert len(points) == 3 and registry._compose_choices.cache_info().misses == 2
    cfgs = [grid.compose(t, p, "smoke", extra) for p in points]
    assert registry._compose_choices.cache_info().misses == 2
    assert [c.chunker.size for c in cfgs[:2]] == [100, 200] and cfgs[2].chunker._target_.endswith("SentenceChunker")
    assert {c.cache.dir for c in cfgs} == {str(tmp_path / "cache")}
    cfgs[0].cache.dir = "elsewhere"  # each caller gets its own copy
    assert grid.compose(t, points[0], "smoke", extra).cache.dir == str(tmp_path / "cache")


def test_tables_run_checks_the_table_before_running_it(tmp_path, monkeypatch, capsys):
    """A table whose metric no run records fails `tables run` in one line, as `validate` does, and
    runs no point (the check composes and builds, it loads no model)."""
    from harness import cli

    t = write_table(tmp_path, DEMO.replace("metric: evidence_recall", "metric: evidence_recal"))
    monkeypatch.setattr(spec, "select", lambda pattern: [t])
    ran = []
    monkeypatch.setattr(grid, "run_table", lambda *a, **k: ran.append(a))
    with pytest.raises(SystemExit) as e:
        cli.main(["tables", "run", "--tables", "demo/t1", "--set", f"cache.dir={tmp_path / 'cache'}",
                  "--set", "tracking=none"])
    err = capsys.readouterr().err.splitlines()
    assert e.value.code == 2 and ran == [] and len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith("chunkbench: error: 3 of 4 point(s) in 1 table(s) fail at smoke scale: demo/t1")


@pytest.mark.slow
def test_three_processes_running_one_table_record_each_point_once(tmp_path):
    """Issue 34: the check and the log of a grid point under the store's lock, so processes that
    run the same table at once (each computing what the cache lacks) log every point once."""
    import subprocess
    import sys

    write_table(tmp_path, DEMO)
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    driver = ("import sys; from pathlib import Path; from harness.report.tables import grid, spec; "
              "root = Path(sys.argv[1]); t = spec.load_spec(root / 'demo' / 't1.yaml', root); "
              "grid.run_table(t, 'smoke', sys.argv[2:], log=print)")
    env = {**__import__("os").environ, "PYTHONPATH": str(spec.REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", driver, str(tmp_path / "tables"), f"tracking.uri={uri}",
                               f"cache.dir={tmp_path / 'cache'}"], env=env, cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    import sqlite3

    runs = sqlite3.connect(tmp_path / "mlruns.db").execute("SELECT status FROM runs").fetchall()
    assert sorted(runs) == [("FINISHED",)] * 3   # 3 grid points, each logged by one process
    said = "".join(out for out, _ in outs)
    assert said.count("already recorded as run") == 6   # the other two processes' 3 points each


def test_only_selects_points_by_row_and_group_globs():
    from harness.report.tables import grid, spec

    t = spec.select("chroma/table2")[0]
    points = t.runs("smoke")
    assert grid.selected(points) == points
    assert [p.row for p in grid.selected(points, ["tokentext_*|all"])] == [
        "tokentext_250_125", "tokentext_250_0", "tokentext_200_0"]
    assert [p.row for p in grid.selected(points, ["cluster_200|*", "recursive_200_0|all"])] == [
        "recursive_200_0", "cluster_200"]
    assert grid.selected(points, ["*|delucionqa"]) == []


@pytest.mark.slow
def test_sensitivity_readings_run_apart_and_sit_beside_the_tables_cells(tmp_path):
    """A reading is the grid again with its overrides last, in an experiment of its own: the
    table's cells never read it, and each line holds both values and their difference."""
    from mlflow.tracking import MlflowClient

    from harness.report.tables import sensitivity

    body = DEMO + ("sensitivity:\n  small: {label: one chunk, overrides: [context=topk, context.k=1], "
                   "why: a test}\n")
    t = write_table(tmp_path, body, "row,column,value\nsentence,paper_data/erec,50.0\n")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    extra = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    grid.run_table(t, "smoke", extra, log=lambda *_: None, only=["sentence|*"])
    sensitivity.run(t, "smoke", extra, only=["sentence|*"], log=lambda *_: None)
    client = MlflowClient(uri)
    params = {e.name: [r.data.params for r in client.search_runs([e.experiment_id])] for e in client.search_experiments()}
    assert [p["context.k"] for p in params["sensitivity/demo/t1/small"]] == ["1"]   # the reading's overrides, last
    assert [p["context._target_"].rsplit(".", 1)[1] for p in params["tables/demo/t1"]] == ["TokenBudgetAssembler"]
    s = sensitivity.build(t, uri, "smoke")
    table = render.build(t, uri, "smoke")
    assert s.table.cells == table.cells   # the reading's run is not one of the table's
    (line,) = [x for x in sensitivity.lines(s) if x["row"] == "sentence"]
    small = s.by_reading["small"].cells[("sentence", "paper_data/erec")].ours
    assert float(line["small"]) == pytest.approx(small, abs=0.05) and line["paper"] == "50.0"
    assert float(line["small_diff"]) == pytest.approx(small - table.cells[("sentence", "paper_data/erec")].ours, abs=0.1)
    md = sensitivity.write(s, tmp_path / "out").read_text()
    assert "**small**: one chunk (`context=topk context.k=1`). a test" in md and "| Sentence | PaperSet ERec | 50.0 |" in md
    with pytest.raises(ConfigError, match="no sensitivity: block"):
        sensitivity.readings(write_table(tmp_path / "none", DEMO))


@pytest.mark.parametrize("table", [t for t in SHIPPED if t.sensitivity], ids=lambda t: t.id)
def test_each_shipped_reading_composes_on_every_grid_point(table):
    """A reading's overrides go last on each point at full scale (where readings are measured)."""
    from harness.report.tables.sensitivity import reading_spec

    for reading in table.sensitivity:
        for point in reading_spec(table, reading).runs("full"):
            if not point.skip:
                grid.compose(table, point, "full", list(reading.overrides))


def test_a_reading_names_groups_of_its_table(tmp_path):
    body = DEMO + "sensitivity:\n  r: {label: R, overrides: [context.k=1], groups: [paper_data]}\n"
    (reading,) = write_table(tmp_path, body).sensitivity
    assert (reading.key, reading.overrides, reading.groups) == ("r", ("context.k=1",), ("paper_data",))
    with pytest.raises(ConfigError, match=r"sensitivity.r.groups: \['other'\] are not groups of the table"):
        write_table(tmp_path / "b", body.replace("groups: [paper_data]", "groups: [other]"))


def test_a_best_point_of_two_swept_keys_keeps_the_markdown_row_whole():
    from harness.report.tables.cells import Cell

    text = render.ours_text(Cell(31.09, 26.51, 35.43, chosen="chunker.sentences=3|chunker.overlap=0"), 2)
    assert text == "31.09 [26.51, 35.43] (best at chunker.sentences=3, chunker.overlap=0)" and "|" not in text
