"""The results index (results/README.md, index.json), what a table's runs cost, and the
quality-vs-cost points' names and merge."""

from __future__ import annotations

import json
from types import SimpleNamespace

from harness.report.tables import costs, pareto, spec
from harness.report.tables import index as tables_index
from harness.report.tables.cells import Cell, Rendered


def run(run_id: str, params: dict, stages: dict[str, tuple[str, float]], tags: dict | None = None):
    """A recorded run as MLflow returns it: stage -> (computed|cached, seconds)."""
    return SimpleNamespace(
        info=SimpleNamespace(run_id=run_id, status="FINISHED"),
        data=SimpleNamespace(params=params, tags={**{f"stage/{s}": st for s, (st, _) in stages.items()}, **(tags or {})},
                             metrics={f"stage_seconds/{s}": sec for s, (_, sec) in stages.items()}))


DATA = {"dataset.name": "ohrbench", "chunker.size": "200"}


def test_a_cached_stage_reuses_the_seconds_of_the_run_that_computed_the_same_work():
    a = run("a", {**DATA, "retriever.k": "5"}, {"load": ("computed", 2.0), "chunk": ("computed", 30.0),
                                                "retrieve": ("computed", 5.0)})
    # same data and chunker, another retriever: load and chunk read from the cache
    b = run("b", {**DATA, "retriever.k": "10"}, {"load": ("cached", 0.1), "chunk": ("cached", 0.2),
                                                 "retrieve": ("computed", 6.0)})
    # another chunker size whose chunks came from a cache no run here wrote
    c = run("c", {**DATA, "chunker.size": "300", "retriever.k": "10"},
            {"load": ("cached", 0.1), "chunk": ("cached", 0.2), "retrieve": ("computed", 4.0)})
    everyone = costs.computed([a, b, c])
    assert costs.table_cost([a], everyone) == costs.Cost(37.0, 0.0, 0)
    assert costs.table_cost([b], everyone) == costs.Cost(6.0, 32.0, 0)
    cost = costs.table_cost([b, c], everyone)
    assert cost == costs.Cost(10.0, 32.0, 1)  # c's chunk: the same load, but no recorded run chunked size 300
    assert cost.text() == "10 s + 32 s reused, 1 stage untimed"
    # a stage's work depends on the groups upstream of it: the retriever does not change the chunks
    assert "retriever" not in costs.stage_groups()["chunk"] and "chunker" in costs.stage_groups()["retrieve"]


def test_stand_ins_are_named_short_and_settings_counted():
    got = tables_index.short_stand_ins(("bundled all-MiniLM-L6-v2", "bundled sample of ohrbench", "chunker.window",
                                        "bundled sample of gutenqa", "responder.max_context_tokens"))
    assert got == "all-MiniLM-L6-v2, ohrbench + gutenqa samples, 2 settings"
    assert tables_index.short_stand_ins(()) == "none"


def rendered(table: str, filled: int, empty_note: str = "not run yet") -> Rendered:
    s = spec.select(table)[0]
    cells = {(f"r{i}", f"g/m{i}"): Cell(1.0 if i < filled else None, note="" if i < filled else empty_note)
             for i in range(4)}
    return Rendered(s, "smoke", cells, [])


def test_the_index_leads_with_a_summary_and_a_render_of_some_tables_keeps_the_others_rows(tmp_path):
    out = tmp_path / "results"
    order = ["lgmgc/table1", "lgmgc/table2", "qu_et_al/table8"]
    tables_index.write([rendered("lgmgc/table1", 4), rendered("lgmgc/table2", 1)], {}, order, out=out)
    first = json.loads((out / "index.json").read_text())["tables"]
    assert [r["table"] for r in first] == ["lgmgc/table1", "lgmgc/table2"]
    # now only lgmgc/table1, with fewer cells: lgmgc/table2's row stays as it was; a new table is added
    path = tables_index.write([rendered("lgmgc/table1", 2), rendered("qu_et_al/table8", 0)], {}, order, out=out)
    rows = {r["table"]: r for r in json.loads((out / "index.json").read_text())["tables"]}
    assert list(rows) == order and rows["lgmgc/table2"] == first[1]
    assert (rows["lgmgc/table1"]["filled"], rows["qu_et_al/table8"]["filled"]) == (2, 0)
    text = path.read_text()
    lines = text.splitlines()
    assert lines[2].startswith("**3 of 12 cells filled** in 3 tables at smoke scale: 0 complete, 2 partial, 1 empty")
    assert "| 2/4 | none | 2: not run yet | none |" in text
    assert max(map(len, lines)) <= 400


def test_why_empty_names_the_commonest_reasons_within_the_column():
    t = rendered("lgmgc/table1", 0, "x" * 200)
    why = tables_index.why_empty(t)
    assert why.startswith("4: " + "x" * 60) and why.endswith("…") and len(why) <= tables_index.WHY_CELL
    many = Rendered(t.spec, "smoke", {(f"r{i}", f"g/m{i}"): Cell(None, note=f"reason {i} " + "y" * 50)
                                      for i in range(5)}, [])
    assert tables_index.why_empty(many).endswith("+3 other reasons")


def test_points_carry_their_tables_labels_and_datasets_their_names():
    table8 = spec.select("qu_et_al/table8")[0]
    point = next(p for p in table8.runs("smoke") if not p.skip and "chunker." in p.key)
    r = run("r", {"dataset._target_": "harness.data.ohrbench.OHRBench", "dataset.name": "ohrbench",
                  "dataset.domains": "['news', 'textbook']", "dataset.min_words": "0", "dataset.limit_docs": "None"},
            {}, {"table": table8.id, "table.run": point.key})
    row = next(a for a in table8.rows if a.key == point.row)
    assert pareto.table_label(r).startswith(row.label + " ") and "=" in pareto.table_label(r)
    assert pareto.dataset_label(r) == "OHR-Bench (news, textbook)"
    r.data.params.update({"dataset.limit_docs": "4", "dataset.domains": "None"})
    assert pareto.dataset_label(r) == "OHR-Bench (4 documents)"
    assert pareto.setting_text({"retriever._target_": "harness.retrieval.dense.DenseRetriever",
                                "embedder.model": "bundled", "context._target_": "x.BudgetAssembler",
                                "context.budget": "4096", "context.unit": "tokens"}) == \
        "Dense retrieval with all-MiniLM-L6-v2 (bundled); Budget context of 4096 tokens"


def point(name: str, quality: float, seconds: float, tables: tuple[str, ...]) -> pareto.Point:
    return pareto.Point("D", name, quality, seconds, 0.0, 0.0, 0.0, tables)


def test_committed_points_of_tables_the_record_lacks_stay_in_the_plot(tmp_path):
    folder = tmp_path / "pareto"
    folder.mkdir()
    held = [point("old-a", 0.9, 10.0, ("t/other",)), point("old-b", 0.2, 0.1, ("t/mine",))]
    (folder / "d.csv").write_text(pareto.csv_text("D", "evidence_recall", "S", held))
    found = {"D": ("evidence_recall", "S", pareto.with_front([point("new", 0.5, 1.0, ("t/mine",))]))}
    got = pareto.merged(found, pareto.committed(folder), {"t/mine"})
    pts = {p.chunker: p for p in got["D"][2]}
    assert set(pts) == {"new", "old-a"}   # old-b is t/mine's, which the record now holds
    assert pts["new"].pareto and pts["old-a"].pareto   # cheaper, or better: both on the front
    # another retrieval setting is another plot's axes: the committed points are not mixed in
    assert pareto.merged(found, {"D": ("evidence_recall", "T", held)}, {"t/mine"})["D"] == found["D"]
