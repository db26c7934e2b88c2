"""Computed groups (``aggregate: {mean_of: [...]}``, LGMGC's Avg.), a scale's own row sweep, and
the paper's ± transcribed beside its values (issue 30, item 7)."""

import csv
import io
import statistics

import pytest

from harness.report.tables import grid, render, spec
from harness.types import ConfigError

from tests.report.test_tables import fake_runs, write_table

LGMGC_AVG_GROUPS = {"llama8b_avg": ("llama8b_nqa", "llama8b_mqa", "llama8b_qap"),
                    "llama70b_avg": ("llama70b_nqa", "llama70b_mqa", "llama70b_qap")}

AVERAGED = """
title: Averaged
source: a test
numbers: NUMBERS
sweep_select: SELECT
rows:
  fixed: {label: Fixed, overrides: [chunker=fixed], sweep: {chunker.size: [100, 200]}}
  sentence: {label: Sentence, overrides: [chunker=sentence]}
  gone: {label: Gone, overrides: [], missing: not built}
groups:
  a: {label: A, overrides: [dataset=qasper]}
  b: {label: B, overrides: [dataset=ohrbench]}
  c: {label: C, overrides: [dataset=gutenqa]}
  avg: {label: Avg., aggregate: {mean_of: [a, b, c]}}
metrics:
  f1: {metric: doc_f1_at_1, label: F1, factor: 100, digits: 1}
"""
# fixed: size 100 is best on a and c, size 200 on b
VALUES = {"a": (0.2, 0.1), "b": (0.3, 0.5), "c": (0.6, 0.4)}
SENTENCE = {"a": 0.25, "b": 0.35, "c": 0.45}


def averaged(tmp_path, select="best", numbers="row,column,value\n"):
    return write_table(tmp_path, AVERAGED.replace("SELECT", select), numbers)


def runs_for(groups=VALUES):
    values = {}
    for g, (v100, v200) in groups.items():
        values[f"fixed|{g}|chunker.size=100"] = {"doc_f1_at_1": v100}
        values[f"fixed|{g}|chunker.size=200"] = {"doc_f1_at_1": v200}
    values.update({f"sentence|{g}": {"doc_f1_at_1": v} for g, v in SENTENCE.items() if g in groups})
    return fake_runs(values)


def test_an_aggregate_group_has_columns_but_no_run(tmp_path):
    t = averaged(tmp_path)
    assert [c.key for c in t.columns()] == ["a/f1", "b/f1", "c/f1", "avg/f1"]
    assert {p.group for p in t.runs("smoke")} == {"a", "b", "c"}
    assert len(t.runs("full")) == 3 * 3  # fixed: 2 sizes x 3 groups, sentence: 3
    assert t.groups[-1].aggregate == ("a", "b", "c") and t.groups[-1].overrides == ()


@pytest.mark.parametrize("select, fixed_avg", [
    ("best", (0.2 + 0.5 + 0.6) / 3 * 100),             # each dataset's best point, then the mean (LGMGC's Avg.)
    ("mean", statistics.fmean([0.15, 0.4, 0.5]) * 100),  # the mean of the cells as shown: each a mean over sizes
])
def test_the_aggregate_is_the_mean_of_the_rows_rendered_cells(tmp_path, select, fixed_avg):
    t = averaged(tmp_path, select)
    cells = render.table_cells(t, "smoke", runs_for())
    fixed = cells[("fixed", "avg/f1")]
    assert fixed.ours == pytest.approx(fixed_avg)
    assert fixed.ours == pytest.approx(statistics.fmean(cells[("fixed", f"{g}/f1")].ours for g in "abc"))
    assert fixed.n_runs == 6 and fixed.note == "mean of a, b, c"
    if select == "best":
        assert fixed.chosen == "a: chunker.size=100; b: chunker.size=200; c: chunker.size=100"
        assert render.ours_text(fixed, 1).startswith("43.3 (best at a: chunker.size=100;")
    sentence = cells[("sentence", "avg/f1")]
    assert sentence.ours == pytest.approx(35.0) and sentence.chosen == ""
    assert cells[("gone", "avg/f1")].note == "not built"
    assert list(cells) == [(r.key, c.key) for r in t.rows for c in t.columns()]  # layout order


def test_an_aggregate_cell_says_why_it_is_empty(tmp_path):
    t = averaged(tmp_path)
    cells = render.table_cells(t, "smoke", runs_for({"a": VALUES["a"], "c": VALUES["c"]}))  # b not run yet
    assert cells[("fixed", "avg/f1")].ours is None
    assert cells[("fixed", "avg/f1")].note == "b has no value (not run yet)"
    skipped = write_table(tmp_path / "s", AVERAGED.replace("SELECT", "best")
                          + "scale:\n  smoke:\n    skip: {a: slow, b: slow, c: slow}\n")
    assert render.table_cells(skipped, "smoke", {})[("sentence", "avg/f1")].note == "not run at smoke scale"
    assert render.cell(t, "smoke", t.rows[1], t.columns()[-1], runs_for(), None).ours is None  # no run of its own


def test_an_aggregate_renders_with_the_papers_value_and_a_caption(tmp_path):
    t = averaged(tmp_path, numbers="row,column,value\nfixed,avg/f1,40.0\n")
    rows = grid.paper_rows(t)
    cells = render.table_cells(t, "smoke", runs_for(), rows)
    rendered = render.Rendered(t, "smoke", cells, [])
    md = render.markdown(rendered)
    assert "Avg.: no run of its own, each cell the mean of the row's cells in A, B, C (as shown)." in md
    assert "43.3 (best at a: chunker.size=100; b: chunker.size=200; c: chunker.size=100)<br>paper 40.0, Δ +3.3" in md
    out = list(csv.DictReader(io.StringIO(render.csv_text(rendered))))
    avg = next(r for r in out if (r["row"], r["column"]) == ("fixed", "avg/f1"))
    assert float(avg["ours"]) == pytest.approx(43.333333) and avg["paper"] == "40.000000"


@pytest.mark.parametrize("groups, match", [
    ("  avg: {label: Avg., aggregate: {mean_of: [a, nope]}}\n", "'nope' is not a group"),
    ("  avg: {label: Avg., aggregate: {mean_of: [a, avg]}}\n", "'avg' is itself an aggregate"),
    ("  avg: {label: Avg., aggregate: {mean_of: [a]}}\n  avg2: {aggregate: {mean_of: [avg]}}\n", "itself an aggregate"),
    ("  avg: {label: Avg., overrides: [dataset=qasper], aggregate: {mean_of: [a]}}\n", "has only a label"),
    ("  avg: {label: Avg., aggregate: {median_of: [a]}}\n", "mean_of"),
    ("  avg: {label: Avg., aggregate: {mean_of: a}}\n", "mean_of"),
])
def test_bad_aggregates_name_the_problem(tmp_path, groups, match):
    body = AVERAGED.replace("SELECT", "best").replace("  avg: {label: Avg., aggregate: {mean_of: [a, b, c]}}\n", groups)
    with pytest.raises(ConfigError, match=match):
        write_table(tmp_path, body)


def test_only_groups_aggregate(tmp_path):
    body = AVERAGED.replace("SELECT", "best").replace("  gone: {label: Gone, overrides: [], missing: not built}",
                                                      "  gone: {label: Gone, aggregate: {mean_of: [fixed]}}")
    with pytest.raises(ConfigError, match="keys are label, metrics, missing, overrides, sweep"):
        write_table(tmp_path, body)


def test_shipped_lgmgc_table2_averages_each_datasets_best():
    t = next(s for s in spec.select("lgmgc/table2"))
    assert {g.key: g.aggregate for g in t.groups if g.aggregate} == LGMGC_AVG_GROUPS
    assert t.sweep_select == "best" and not any(p.group.endswith("_avg") for p in t.runs("full"))
    # the paper's 14 Avg. cells are the mean of the row's NQA, MQA and QAP cells (to its rounding)
    numbers = grid.paper_numbers(t)
    rows = {r for r, _ in numbers}
    assert len(rows) == 7
    for row in rows:
        for avg, members in LGMGC_AVG_GROUPS.items():
            mean = statistics.fmean(numbers[(row, f"{m}/f1")] for m in members)
            assert numbers[(row, f"{avg}/f1")] == pytest.approx(mean, abs=0.05 + 1e-9), (row, avg)


# -- a scale's own sweep for a row --------------------------------------------------------------

SCALED = AVERAGED.replace("SELECT", "mean") + """scale:
  smoke:
    rows:
      fixed: {sweep: {}}
      sentence: {sweep: {chunker.size: [50, 60]}}
"""


def test_a_scale_may_replace_a_rows_sweep(tmp_path):
    t = write_table(tmp_path, SCALED)
    smoke = [p.key for p in t.runs("smoke") if p.group == "a"]
    assert smoke == ["fixed|a", "sentence|a|chunker.size=50", "sentence|a|chunker.size=60"]
    full = [p.key for p in t.runs("full") if p.group == "a"]
    assert full == ["fixed|a|chunker.size=100", "fixed|a|chunker.size=200", "sentence|a"]
    assert t.sweep(t.rows[0], "smoke") == () and t.sweep(t.rows[0], "full") == ((("chunker.size", (100, 200)),),)
    assert "chunker.size=100" not in t.runs("smoke")[0].overrides
    # the renderer takes the cell's points at that scale: one run at smoke, a mean over two at full
    one = render.table_cells(t, "smoke", fake_runs({"fixed|a": {"doc_f1_at_1": 0.3}}))[("fixed", "a/f1")]
    assert (one.ours, one.n_runs) == (pytest.approx(30.0), 1)


UNION = AVERAGED.replace("SELECT", "best").replace(
    "sweep: {chunker.size: [100, 200]}",
    "sweep: [{chunker.size: [100, 200]}, {chunker.size: [200], chunker.overlap: [0, 10]}, {chunker.size: [100]}]")


def test_a_list_of_sweeps_runs_the_union_of_their_grids(tmp_path):
    """Each mapping is a Cartesian product of its own parameters; a point two products share runs once."""
    t = write_table(tmp_path, UNION)
    assert [p.key for p in t.runs("full") if p.row == "fixed" and p.group == "a"] == [
        "fixed|a|chunker.size=100", "fixed|a|chunker.size=200",
        "fixed|a|chunker.size=200|chunker.overlap=0", "fixed|a|chunker.size=200|chunker.overlap=10"]
    best = render.table_cells(t, "full", fake_runs({
        "fixed|a|chunker.size=100": {"doc_f1_at_1": 0.1}, "fixed|a|chunker.size=200": {"doc_f1_at_1": 0.2},
        "fixed|a|chunker.size=200|chunker.overlap=0": {"doc_f1_at_1": 0.4},
        "fixed|a|chunker.size=200|chunker.overlap=10": {"doc_f1_at_1": 0.3}}))[("fixed", "a/f1")]
    assert (best.ours, best.n_runs, best.chosen) == (pytest.approx(40.0), 4, "chunker.size=200|chunker.overlap=0")


@pytest.mark.parametrize("scale, match", [
    ("    rows:\n      fixed: {sweep: {chunker.size: 100}}\n", "must map a parameter to its values"),
    ("    rows:\n      fixed: {sweep: [{chunker.size: [1]}, {}]}\n", r"sweep\[1\]: must map a parameter"),
    ("    rows:\n      fixed: {sweep: [{chunker.size: []}]}\n", r"sweep\[0\]: must map a parameter"),
    ("    rows:\n      nope: {sweep: {}}\n", "'nope' is not one of the table's rows"),
    ("    rows:\n      fixed: {swep: {}}\n", "keys are add, label, overrides, sweep"),
    ("    groups:\n      a: {sweep: {chunker.size: [1]}}\n", "keys are add, label, overrides"),
])
def test_bad_scale_entries_name_the_problem(tmp_path, scale, match):
    with pytest.raises(ConfigError, match=match):
        write_table(tmp_path, AVERAGED.replace("SELECT", "mean") + "scale:\n  smoke:\n" + scale)


# -- the paper's ± --------------------------------------------------------------------------------

def test_the_papers_std_is_read_and_shown_beside_its_value(tmp_path):
    numbers = ("row,column,value,std\nsentence,a/f1,47.22,2.47\nsentence,b/f1,50.0,-\n"
               "sentence,c/f1,55.67,0.00\nfixed,a/f1,10,\n")
    t = averaged(tmp_path, "mean", numbers)
    assert grid.paper_numbers(t) == {("sentence", "a/f1"): 47.22, ("sentence", "b/f1"): 50.0,
                                     ("sentence", "c/f1"): 55.67, ("fixed", "a/f1"): 10.0}
    assert grid.paper_stds(t) == {("sentence", "a/f1"): 2.47, ("sentence", "c/f1"): 0.0}
    cells = render.table_cells(t, "smoke", runs_for(), grid.paper_rows(t))
    assert (cells[("sentence", "a/f1")].paper, cells[("sentence", "a/f1")].paper_std) == (47.22, 2.47)
    rendered = render.Rendered(t, "smoke", cells, [])
    md = render.markdown(rendered)
    assert "<br>paper 47.2 ± 2.5, Δ" in md and "<br>paper 50.0, Δ" in md and "<br>paper 55.7 ± 0.0, Δ" in md
    assert "the paper's value (± its own where it prints one)" in md
    assert "(47.2 $\\pm$ 2.5)" in render.latex(rendered)
    row = next(r for r in csv.DictReader(io.StringIO(render.csv_text(rendered))) if r["column"] == "a/f1"
               and r["row"] == "sentence")
    assert (row["paper"], row["paper_std"]) == ("47.220000", "2.470000")


@pytest.mark.parametrize("numbers, match", [
    ("row,column,value,sd\nfixed,a/f1,1,2\n", "columns must be row,column,value or row,column,value,std"),
    ("row,column,value,std\nfixed,a/f1,1,two\n", "std 'two' is not a number"),
    ("row,column,value\nfixed,a/f1,1,2\n", "does not have the header's 3 fields"),
])
def test_bad_numbers_files_name_the_problem(tmp_path, numbers, match):
    t = averaged(tmp_path, "mean", numbers)
    with pytest.raises(ConfigError, match=match):
        grid.paper_rows(t)


def test_shipped_lgmgc_table1_transcribes_the_papers_std():
    t = next(s for s in spec.select("lgmgc/table1"))
    stds, values = grid.paper_stds(t), grid.paper_numbers(t)
    assert len(stds) == len(values) == 70  # every printed cell has its ±
    assert stds[("semantic", "gutenqa/dcg1")] == 2.42 and stds[("lgmgc", "gutenqa/recall10")] == 0.16
    assert stds[("recursive", "gutenqa/recall20")] == 1.29 and stds[("mg", "gutenqa/dcg1")] == 3.81
    assert all(stds[(r, c)] == 0.0 for r, c in stds if r in ("para", "lumber"))  # printed as ± 0.00
    assert all(stds[(r, c)] > 0 for r, c in stds if r not in ("para", "lumber"))
    # DCG@1 = Recall@1 (one relevant chunk), and so are their ±
    for row in {r for r, _ in stds}:
        assert stds[(row, "gutenqa/dcg1")] == stds[(row, "gutenqa/recall1")]
