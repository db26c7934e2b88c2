"""What a reader of the figures needs, checked on figures drawn from hand-made cells (no runs): the
table's labels and title, panels in rows of at most three, every coinciding line visible and named,
a note on a saturated metric, and a Pareto plot that labels its front only."""

from dataclasses import replace

import pytest
from matplotlib.text import Annotation

from harness.report.tables import figure, pareto
from harness.report.tables.cells import Cell, Rendered
from tests.report.test_tables import write_table

METRICS = ("dr", "dp", "df", "er", "ep", "ef")
PANELS = f"""
title: Retrieval against the number of chunks, per weight
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none]
x: {{param: chunker.n_chunks, label: chunks, values: [2, 3, 4], names: ["2", "3", "4"]}}
rows:
  a: {{label: A, overrides: [chunker=fixed]}}
  b: {{label: B, overrides: [chunker=sentence]}}
  c: {{label: C, overrides: [chunker=paragraph]}}
groups:
  qasper: {{label: Qasper, overrides: [dataset=qasper]}}
metrics:
{"".join(f"  {m}: {{metric: evidence_recall, label: {m.upper()}@5, factor: 100}}" + chr(10) for m in METRICS)}
scale:
  smoke:
    groups:
      qasper: {{label: bundled news, overrides: [dataset=ohrbench]}}
"""


def rendered(tmp_path, values, metrics=METRICS) -> Rendered:
    """The table above with ``values(row, metric, x index)`` in its cells (shown values, ×100)."""
    t = write_table(tmp_path, PANELS)
    t = replace(t, metrics=tuple(m for m in t.metrics if m.key in metrics))
    cells = {}
    for row in t.rows:
        for col in t.columns():
            v = values(row.key, col.metric.key, t.x.names.index(col.x_name))
            cells[(row.key, col.key)] = Cell(v, max(v - 5, 0), min(v + 5, 100), n_runs=1)
    return Rendered(spec=t, scale="smoke", cells=cells, models=[])


def apart(row, metric, x):
    """Three rows that never meet."""
    return 10.0 * (1 + "abc".index(row)) + x + METRICS.index(metric)


def test_six_panels_are_two_rows_of_three(tmp_path):
    fig = figure.draw(rendered(tmp_path, apart))
    assert len(fig.axes) == 6  # no empty cell left in the grid
    assert {ax.get_subplotspec().get_geometry()[:2] for ax in fig.axes} == {(2, 3)}
    rows = [ax.get_subplotspec().rowspan.start for ax in fig.axes]
    assert rows == [0, 0, 0, 1, 1, 1]
    two = figure.draw(rendered(tmp_path / "two", apart, METRICS[:2]))
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in two.axes] == [(1, 2), (1, 2)]
    four = figure.draw(rendered(tmp_path / "four", apart, METRICS[:4]))
    assert len(four.axes) == 4 and four.axes[3].get_subplotspec().rowspan.start == 1


def test_the_figure_reads_with_the_tables_labels_and_title(tmp_path):
    fig = figure.draw(rendered(tmp_path, apart))
    assert fig.axes[0].get_title() == "Qasper* DR@5"  # the table's column header: the stand-in starred
    assert fig.axes[0].get_ylabel() == "DR@5" and fig.axes[0].get_xlabel() == "chunks"
    [legend] = fig.legends
    assert [x.get_text() for x in legend.get_texts()] == ["A", "B", "C"]
    title = fig._suptitle.get_text()
    assert title.startswith("Retrieval against the number of chunks, per weight\n(demo/t1, smoke scale)")
    assert "* Stand-in data at this scale: Qasper → bundled news." in title.replace("\n", " ")
    assert not figure.notes(fig.axes[0])  # lines apart, values spread: nothing to say


def test_coinciding_lines_are_all_drawn_and_named(tmp_path):
    def same(row, metric, x):  # B is A's line; C its own
        return apart("a" if row == "b" else row, metric, x)

    ax = figure.draw(rendered(tmp_path, same)).axes[0]
    assert figure.notes(ax) == ["lines A and B coincide"]
    a, b, c = (bars.lines[0] for bars in ax.containers)  # each row's errorbar: its line first
    assert a.get_linewidth() > b.get_linewidth()  # A under B, wider: both show
    assert [bars.get_label() for bars in ax.containers] == ["A", "B", "C"]
    assert len({a.get_marker(), b.get_marker(), c.get_marker()}) == 3
    assert list(a.get_xdata()) != list(b.get_xdata())  # offset sideways: the markers do not stack
    assert [x.get_text() for x in ax.get_xticklabels()] == ["2", "3", "4"]


def test_a_saturated_metric_is_noted(tmp_path):
    def ceiling_first(row, metric, x):  # every row at 100 in DR@5, apart elsewhere
        return 100.0 if metric == "dr" else apart(row, metric, x)

    axes = figure.draw(rendered(tmp_path, ceiling_first)).axes
    assert figure.notes(axes[0]) == ["saturated: every point is 100 (a score of 1)", "all 3 lines coincide"]
    assert axes[0].get_ylim()[1] <= 102  # no axis above the ceiling
    assert figure.notes(axes[1]) == []
    assert figure.saturation([0.0, 0.0, 0.0], 100, 1) == "saturated: every point is 0"
    assert figure.saturation([0.0, 1.0, 1.0], 1, 2) == "saturated: every point is 0 or 1"
    assert figure.saturation([70.59, 70.59], 100, 2) == "saturated: every point is 70.59 (all equal)"
    assert figure.saturation([70.0, 71.0], 100, 2) == "" and figure.saturation([100.0], 100, 2) == ""


def point(name, quality, seconds, front):
    return pareto.Point("demo", name, quality, seconds, 0.0, 0.0, 0.0, ("demo/t1",), pareto=front)


def test_the_pareto_plot_labels_its_front_only(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(pareto, "save", lambda fig, path: drawn.append(fig))
    pts = [point("Fixed-size size=100", 0.4, 0.001, True), point("Semantic breakpoint", 0.6, 0.01, True),
           *(point(f"Clustering n_chunks={n} position_weight=0.5", 0.3, 0.002 + n / 1000, False) for n in range(40))]
    pareto.plot("OHR-Bench (news, textbook)", "evidence_recall", "Dense retrieval with all-MiniLM-L6-v2; "
                "TokenBudget context of 4096 tokens", pts, tmp_path / "p.png", "smoke")
    [fig] = drawn
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts if isinstance(t, Annotation)]
    assert labels == ["1", "2"]  # the front, numbered; the other 40 unlabelled
    assert fig._suptitle.get_text() == "OHR-Bench (news, textbook): evidence recall against chunking cost"
    assert ax.get_title().startswith("Dense retrieval with all-MiniLM-L6-v2")
    assert "not on the front: 40 configurations" in [x.get_text() for x in ax.get_legend().get_texts()]
    [front] = fig.legends
    assert [x.get_text() for x in front.get_texts()] == ["Fixed-size size=100: 0.400 at 0.001 s/doc",
                                                         "Semantic breakpoint: 0.600 at 0.01 s/doc"]


@pytest.mark.parametrize("n", [1, 3, 7])
def test_a_panel_grid_keeps_at_most_three_a_row(n):
    fig, axes = figure.panel_grid(figure.pyplot(), n)
    assert len(fig.axes) == len(axes) == n
    assert max(ax.get_subplotspec().colspan.stop for ax in axes) == min(n, figure.MAX_COLUMNS)
    figure.pyplot().close(fig)


def test_coinciding_correlation_curves_are_named(tmp_path, monkeypatch):
    from harness.report.tables import correlation
    from tests.report.test_tables import CORRELATED

    data = "  data: {label: Data, overrides: []}"
    t = write_table(tmp_path, CORRELATED.replace(data, data + "\n  copy: {label: Copy, overrides: []}"))
    values = {"a": (4.0, 10.0, 0.2), "b": (3.0, 20.0, 0.4), "c": (2.0, 30.0, 0.6), "d": (1.0, 40.0, 0.8)}
    cells = {}
    for row in t.rows:
        for g in ("data", "copy"):
            for i, m in enumerate(("li", "sd", "rouge")):
                found = values.get(row.key)
                cells[(row.key, f"{g}/{m}")] = Cell(found[i]) if found else Cell(None, note="not built")
    drawn = []
    monkeypatch.setattr(correlation, "save", lambda fig, path: drawn.append(fig))
    correlation.plot(Rendered(spec=t, scale="smoke", cells=cells, models=[]), tmp_path / "c.png")
    [ax] = drawn[0].axes
    assert figure.notes(ax) == ["both lines coincide"]  # the same rows in both groups: one curve on the other
    data, copy = ax.get_lines()
    assert (data.get_label(), copy.get_label()) == ("Data (4 rows)", "Copy (4 rows)")
    assert data.get_linestyle() != copy.get_linestyle() and data.get_linewidth() > copy.get_linewidth()
    assert drawn[0]._suptitle.get_text().startswith("Correlated\n(demo/t1, smoke scale)")
