"""Paper tables: the shipped table files, the grid they expand to, and rendering from real runs."""

import csv
import io

import pytest

from harness.report.tables import grid, render, spec
from harness.types import ConfigError

SHIPPED = spec.all_specs()


@pytest.mark.parametrize("table", SHIPPED, ids=lambda t: t.id)
def test_paper_numbers_match_the_layout(table):
    numbers = grid.paper_numbers(table)
    rows, columns = {r.key for r in table.rows}, {c for c, *_ in table.columns()}
    assert numbers and all(r in rows and c in columns for r, c in numbers)
    assert table.numbers.read_text().startswith("#")  # the citation header


@pytest.mark.slow
@pytest.mark.parametrize("table", SHIPPED, ids=lambda t: t.id)
def test_shipped_tables_validate(table):
    grid.validate(table, "smoke")  # composes and builds every grid point's components


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
    assert t.columns()[0][:2] == ("paper_data/erec", "PaperSet ERec")


def test_bad_table_files_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="unknown keys \\['colour'\\]"):
        write_table(tmp_path, DEMO + "colour: red\n")
    t = write_table(tmp_path / "b", DEMO.replace("chunker=sentence", "chunker=no_such_chunker"))
    with pytest.raises(ConfigError, match="sentence\\|paper_data"):
        grid.validate(t, "smoke")
    t = write_table(tmp_path / "c", DEMO, "row,column,value\nfixed,paper_data/nope,1\n")
    with pytest.raises(ConfigError, match="not in the layout"):
        grid.validate(t, "smoke")
    with pytest.raises(ConfigError, match="no table matches"):
        spec.select("hichunk/no_such_table")


@pytest.mark.slow
def test_a_table_runs_records_and_renders_from_mlflow(tmp_path):
    t = write_table(tmp_path, DEMO, "row,column,value\nsentence,paper_data/erec,50.0\nfixed,paper_data/erec,-\n")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    extra = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    outcomes = grid.run_table(t, "smoke", extra, log=lambda *_: None)
    assert [o.status for o in outcomes] == ["finished", "finished", "finished", "skipped"]
    rendered = render.build(t, uri, "smoke")  # from the record, not from the outcomes
    assert rendered.filled == 2 and len(rendered.cells) == 3
    sentence = rendered.cells[("sentence", "paper_data/erec")]
    assert sentence.paper == 50.0 and sentence.low <= sentence.ours <= sentence.high
    assert sentence.diff == pytest.approx(sentence.ours - 50.0)
    fixed = rendered.cells[("fixed", "paper_data/erec")]
    assert fixed.n_runs == 2 and fixed.std is not None and fixed.paper is None
    assert rendered.cells[("skipped", "paper_data/erec")].note == "not run at smoke scale"
    paths = render.write(rendered, tmp_path / "results")
    md, table_csv, tex = (p.read_text() for p in paths)
    assert "| PaperSet* ERec |" in md and "Stand-in data at this scale: PaperSet → bundled news." in md
    assert "Scale: **smoke**" in md and "Not run at this scale, Skipped: too slow here." in md
    assert "n/a (not run at smoke scale)" in md and "paper 50.0, Δ" in md
    assert "bundled all-MiniLM-L6-v2" not in md  # bm25: no model was used
    rows = list(csv.DictReader(io.StringIO(table_csv)))
    assert [r["row"] for r in rows] == ["fixed", "sentence", "skipped"] and rows[1]["paper"] == "50.000000"
    assert tex.startswith("\\begin{tabular}{lc}") and "(50.0)" in tex
    index = render.index([rendered], tmp_path / "results").read_text()
    assert "| [demo/t1](demo/t1.md) | Demo | smoke | 2/3 | PaperSet → bundled news |" in index
