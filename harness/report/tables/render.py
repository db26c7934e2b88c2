"""Rendering a paper table from the MLflow record: ``results/<paper>/<table>.{md,csv,tex}``.

Each cell is ours (with its bootstrap 95% interval when the metric is a mean over queries or
documents, or the standard deviation over a row's sweep, e.g. LGMGC's chunk sizes) beside the
paper's value and the difference. Nothing is read from memory: the latest run of every grid
point is looked up by its ``table.run`` tag (else by its config: :mod:`harness.report.tables.records`), so a table can be re-rendered from a tracking
server after a cluster sweep. A cell without a value says why (skipped at this scale, data not
available, not run yet). A group with ``aggregate`` (LGMGC's "Avg.") has no run: its cells are the
mean of the row's cells in its groups, as rendered. The paper's ± (its numbers file's ``std``
column) is shown beside the paper's value. A table with ``pairwise`` adds its judged win/tie/loss rates per group
(:mod:`harness.report.tables.pairwise`), read from the judged runs in the same record.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness.report.tables import blocks, pairwise
from harness.report.tables.cells import (WHOLE_DOCUMENTS, Cell, Rendered, at_ceiling, fmt, ours_text, paper_text,
                                        saturated_note, short_label)
from harness.report.tables.grid import SET_TAG, config_overrides, paper_rows, set_tag
from harness.report.tables.records import point_runs, recorded_runs
from harness.report.tables.spec import REPO, Axis, Column, GridRun, TableSpec

RESULTS = REPO / "results"
MODEL_NAMES = {"embedder": "bundled all-MiniLM-L6-v2", "llm": "bundled SmolLM2-135M-Instruct"}


def grid_points(spec: TableSpec, scale: str) -> dict[tuple[str, str, str | None], list[GridRun]]:
    """The grid points of each cell, (row, group, x) -> its sweep points, computed once per table."""
    out: dict[tuple[str, str, str | None], list[GridRun]] = {}
    for p in spec.runs(scale):
        out.setdefault((p.row, p.group, p.x), []).append(p)
    return out


def cell(spec: TableSpec, scale: str, row: Axis, col: Column, runs: dict, paper,
         points_by_cell: dict | None = None) -> Cell:
    if row.missing or col.group.missing:
        return Cell(None, paper=paper, note="not built")
    if col.group.aggregate:  # no run of its own: table_cells computes it from the other groups' cells
        return Cell(None, paper=paper, note=f"the mean of {', '.join(col.group.aggregate)}")
    metric = replace(col.metric, metric=spec.metric_name(row, col))
    points = (points_by_cell or grid_points(spec, scale)).get((row.key, col.group.key, col.x), [])
    if points and all(p.skip for p in points):  # the reason is printed once, in the caption
        return Cell(None, paper=paper, note=f"not run at {scale} scale")
    records = [runs.get(p.key) for p in points]
    if any(r is None for r in records):
        return Cell(None, paper=paper, note="not run yet")
    failed = [r for r in records if r.info.status != "FINISHED"]
    if failed:
        return Cell(None, paper=paper, note=failed[0].data.tags.get("error", "failed").splitlines()[0])
    values = [r.data.metrics.get(metric.metric) for r in records]
    if any(v is None for v in values):  # NaN is not recorded: no query or document had anything to score
        return Cell(None, paper=paper, note="nothing to score in this data")
    f = metric.factor
    read = picked(spec, row, col, points, records, values)
    if len(read) == 1:
        point, record = read[0]
        m, value = record.data.metrics, record.data.metrics[metric.metric]
        chosen = sweep_point(spec, point) if len(values) > 1 else ""
        low, high = m.get(f"{metric.metric}/ci95_low"), m.get(f"{metric.metric}/ci95_high")
        if spec.spread == "std":  # printed ± std, as the paper does; the interval still decides "inside"
            std = m.get(f"{metric.metric}/std")
            return Cell(value * f, None if low is None else low * f, None if high is None else high * f,
                        std=None if std is None else std * f, n_runs=len(values), paper=paper, chosen=chosen,
                        shown="std")
        return Cell(value * f, None if low is None else low * f, None if high is None else high * f,
                    n_runs=len(values), paper=paper, chosen=chosen)
    return Cell(statistics.fmean(values) * f, std=statistics.pstdev(values) * f, n_runs=len(values), paper=paper)


def picked(spec: TableSpec, row: Axis, col: Column, points: list[GridRun], records: list,
           values: list[float]) -> list[tuple[GridRun, object]]:
    """The points (with their runs) a cell's value is read from: its one point, or its best sweep
    point under ``sweep_select`` best or best_group, else all of them (the mean over the sweep)."""
    if len(values) == 1 or spec.sweep_select != "mean":
        names = selection_names(spec, row, col)
        best = max(range(len(values)), key=lambda i: selection_score(spec, names, records[i], values[i]))
        return [(points[best], records[best])]
    return list(zip(points, records))


def sweep_point(spec: TableSpec, point: GridRun) -> str:
    """A grid point's sweep overrides (``chunker.size=200``), without its row, group and x value."""
    return "|".join(point.key.split("|")[2 + (spec.x is not None):])


def cell_runs(spec: TableSpec, scale: str, row: Axis, col: Column, runs: dict,
              points_by_cell: dict | None = None) -> list[tuple[GridRun, object]]:
    """The grid points and finished runs a cell's value is read from: its best sweep point under
    ``sweep_select`` best or best_group, else all of them (a mean over the sweep); empty where the
    cell has no value."""
    points = [p for p in (points_by_cell or grid_points(spec, scale)).get((row.key, col.group.key, col.x), [])]
    records = [runs.get(p.key) for p in points]
    if not points or any(r is None or r.info.status != "FINISHED" for r in records):
        return []
    values = [r.data.metrics.get(spec.metric_name(row, col)) for r in records]
    return [] if any(v is None for v in values) else picked(spec, row, col, points, records, values)


def aggregate_cell(spec: TableSpec, scale: str, row: Axis, col: Column, cells: dict[tuple[str, str], Cell],
                   paper: float | None = None) -> Cell:
    """A cell of an ``aggregate`` group: the mean of the row's cells in the groups it names, same
    layout metric and x value, each as rendered (``cells``: the row's cells of those groups)."""
    if row.missing:
        return Cell(None, paper=paper, note="not built")
    keys = [f"{g}/{col.metric.key}" + ("" if col.x is None else f"@{col.x}") for g in col.group.aggregate]
    members = [cells[(row.key, k)] for k in keys]
    empty = [(g, c) for g, c in zip(col.group.aggregate, members) if c.ours is None]
    if empty:
        notes = {c.note for _, c in empty}
        if notes == {f"not run at {scale} scale"} and len(empty) == len(members):
            return Cell(None, paper=paper, note=f"not run at {scale} scale")
        g, c = empty[0]
        return Cell(None, paper=paper, note=f"{g} has no value ({c.note})")
    chosen = "; ".join(f"{g}: {c.chosen}" for g, c in zip(col.group.aggregate, members) if c.chosen)
    return Cell(statistics.fmean(c.ours for c in members), n_runs=sum(c.n_runs for c in members), paper=paper,
                note=f"mean of {', '.join(col.group.aggregate)}", chosen=chosen)


def incomparable_by_cell(spec: TableSpec, scale: str, points: dict) -> dict[tuple[str, str], str]:
    """(row, group) -> why its points are not the paper's setup ('' when they are): checked on the
    cell's first point that runs (:func:`harness.report.tables.checks.incomparable`)."""
    from harness.report.tables.checks import incomparable

    out: dict[tuple[str, str], str] = {}
    for (row, group, _), pts in points.items():
        runnable = [p for p in pts if not p.skip]
        if runnable and (row, group) not in out:
            out[(row, group)] = incomparable(spec, runnable[0], scale)
    return out


def table_cells(spec: TableSpec, scale: str, runs: dict, numbers: dict | None = None,
                points_by_cell: dict | None = None, why_not: dict | None = None) -> dict[tuple[str, str], Cell]:
    """Every (row, column) cell of the layout: run cells from ``runs`` (the latest run per grid
    point), then the aggregate groups' from those; ``numbers``: the paper's (value, ±) by cell;
    ``why_not``: (row, group) -> why the cell is not comparable with the paper's (no Δ then)."""
    numbers, why_not = numbers or {}, why_not or {}
    points = points_by_cell if points_by_cell is not None else grid_points(spec, scale)
    columns = spec.columns()
    out: dict[tuple[str, str], Cell] = {}
    for row in spec.rows:
        for col in columns:
            if not col.group.aggregate:
                value, std = numbers.get((row.key, col.key), (None, None))
                out[(row.key, col.key)] = replace(cell(spec, scale, row, col, runs, value, points), paper_std=std,
                                                  incomparable=why_not.get((row.key, col.group.key), ""))
        for col in columns:
            if col.group.aggregate:
                value, std = numbers.get((row.key, col.key), (None, None))
                members = [why_not.get((row.key, g), "") for g in col.group.aggregate]
                out[(row.key, col.key)] = replace(aggregate_cell(spec, scale, row, col, out, value), paper_std=std,
                                                  incomparable=", ".join(dict.fromkeys(m for m in members if m)))
    for col in columns:  # a value chunking cannot change says so (cells.saturated_note)
        valued = [(row, c) for row in spec.rows if (c := out[(row.key, col.key)]).ours is not None]
        values = [c.ours for _, c in valued]
        ceiling = at_ceiling(values, col.metric.factor)
        # whole documents in every context make chunking moot only where it moved nothing: a metric
        # that reads the context's text (ERec) still sees where chunk boundaries cut the evidence
        whole = len(values) >= 2 and all(math.isclose(v, values[0], rel_tol=1e-9, abs_tol=1e-12) for v in values) \
            and all((read := cell_runs(spec, scale, row, col, runs, points))
                    and all(r.data.metrics.get(WHOLE_DOCUMENTS) == 1.0 for _, r in read) for row, _ in valued)
        if note := saturated_note(ceiling, whole, col.metric.factor):
            for row, c in valued:
                out[(row.key, col.key)] = replace(c, saturated=note)
    return {(row.key, col.key): out[(row.key, col.key)] for row in spec.rows for col in columns}


def selection_names(spec: TableSpec, row: Axis, col: Column) -> list[str]:
    """The run metrics ``best_group`` averages: ``select_by``, else every metric of the cell's group."""
    return list(spec.select_by) or [spec.metric_name(row, c) for c in spec.columns()
                                    if c.group.key == col.group.key and c.x == col.x]


def selection_score(spec: TableSpec, names: list[str], record, value: float) -> float:
    """What picks a swept row's point: ``best`` its value in this cell; ``best_group`` the mean
    of ``names`` (one configuration per dataset, as Qu et al. choose it by the mean F1 over k)."""
    if spec.sweep_select == "best":
        return value
    found = [record.data.metrics[n] for n in names if n in record.data.metrics]
    return statistics.fmean(found) if found else -math.inf


def models_used(runs: dict) -> list[str]:
    """The models the table's runs used, from their recorded params (component.model keys),
    each LLM with the precision it ran in where the config states one (``.llm.dtype``)."""
    found = set()
    for r in runs.values():
        params = r.data.params
        for k, v in params.items():
            m = re.search(r"\.(embedder|llm)\.model$", k)
            if m:
                dtype = params.get(k[:-len("model")] + "dtype") if m.group(1) == "llm" else None
                precision = f" ({dtype})" if dtype not in (None, "None", "auto") else ""
                found.add(f"{m.group(1)}: {MODEL_NAMES[m.group(1)] if v == 'bundled' else v}{precision}")
    return sorted(found)


def per_document_rows(uri: str, run_id: str) -> list[dict]:
    """A run's ``per_document.jsonl`` (document metrics' rows); empty when it has none."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow
    from mlflow.tracking import MlflowClient

    if "per_document.jsonl" not in {f.path for f in MlflowClient(tracking_uri=uri).list_artifacts(run_id)}:
        return []
    path = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="per_document.jsonl",
                                                    tracking_uri=uri))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def series_values(spec: TableSpec, uri: str, scale: str, runs: dict) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Each finished (row, group) run's series of ``spec.series``, documents concatenated in order."""
    out = {}
    for p in spec.runs(scale):
        run = runs.get(p.key)
        if p.skip or run is None or run.info.status != "FINISHED":
            continue
        rows = per_document_rows(uri, run.info.run_id)
        out[(p.row, p.group)] = {ln.key: [float(v) for r in rows for v in r.get(ln.series) or ()]
                                 for ln in spec.series.lines}
    return out


def build(spec: TableSpec, uri: str, scale: str, extra: Sequence[str] = ()) -> Rendered:
    """The table from the record (``extra``: the overrides its points ran with: a run under others
    is not the point's, :func:`harness.report.tables.records.point_runs`)."""
    recorded = point_runs(spec, uri, scale, extra)
    runs = {key: rs[0] for key, rs in recorded.items()}
    rows = paper_rows(spec)
    numbers = {k: v for k, (v, _) in rows.items()}
    points = grid_points(spec, scale)
    why_not = incomparable_by_cell(spec, scale, points)
    if scale == "full" and spec.paper is not None:  # the run's question count against the paper's
        for p in spec.runs(scale):
            if p.key in runs and not why_not.get((p.row, p.group)):
                why_not[(p.row, p.group)] = spec.paper.questions_differ(
                    p.row, p.group, runs[p.key].data.metrics.get("n_queries"))
    cells = table_cells(spec, scale, runs, rows, points, why_not)
    series = series_values(spec, uri, scale, runs) if spec.series else {}
    pair_cells, judged = {}, {}
    if spec.pairwise is not None:
        judged = {k: rs[0] for k, rs in recorded_runs(spec, uri, scale).items() if k not in runs}
        pair_cells = pairwise.cells(spec, scale, {**runs, **judged}, numbers)  # the judge's runs are no grid points
    reasons = tuple(dict.fromkeys(r for why in why_not.values() for r in why.split(", ") if r))
    history = (*(r for rs in recorded.values() for r in rs), *judged.values())
    return Rendered(spec, scale, cells, models_used(runs), series, pair_cells, reasons, runs, history,
                    tuple(config_overrides(extra)), other_overrides(spec, uri, scale, runs, extra))


def other_overrides(spec: TableSpec, uri: str, scale: str, runs: dict, extra: Sequence[str]) -> tuple[str, ...]:
    """The other ``--set`` overrides (as :data:`SET_TAG` writes them) under which a point left
    empty here has runs: a grid run on the cluster (``--set profile=cluster``) rendered without it."""
    empty = {p.key for p in spec.runs(scale) if not p.skip and p.key not in runs}
    if not empty:
        return ()
    wanted = set_tag(extra)
    return tuple(sorted({r.data.tags[SET_TAG] for k, rs in recorded_runs(spec, uri, scale).items() if k in empty
                         for r in rs if r.data.tags.get(SET_TAG, wanted) != wanted}))


def caption(t: Rendered) -> list[str]:
    s, at = t.spec, t.spec.scales.get(t.scale, {})
    lines = [f"Source: {s.source}. Scale: **{t.scale}**."]
    if t.overrides:  # a point recorded without them is another point: its cell reads "not run yet"
        lines.append("Every run under the overrides " + ", ".join(f"`{o}`" for o in t.overrides)
                     + " (`--set`), beyond the table file's.")
    stand_ins = s.stand_ins(t.scale)
    if stand_ins:
        lines.append("\\* Stand-in data at this scale: " + "; ".join(stand_ins) + ".")
    labels = {a.key: a.label for a in (*s.rows, *s.groups)}
    for axis in (*s.rows, *s.groups):
        if axis.missing:
            lines.append(f"Not built, {axis.label}: {axis.missing}.")
    for g in s.groups:
        if g.aggregate:
            lines.append(f"{g.label}: no run of its own, each cell the mean of the row's cells in "
                         + ", ".join(labels.get(k, k) for k in g.aggregate) + " (as shown).")
    for key, why in (at.get("skip") or {}).items():
        lines.append(f"Not run at this scale, {' / '.join(labels.get(k, k) for k in key.split('/'))}: {why}.")
    if at.get("shared"):
        lines.append("Caps and settings at this scale: " + ", ".join(f"`{o}`" for o in at["shared"]) + ".")
    if t.models:
        lines.append("Models: " + "; ".join(t.models) + ".")
    if s.note:
        lines.append(s.note)
    over = {"best": "best point of the row's sweep",
            "best_group": "at the row's sweep point best on the mean of the group's metrics"}.get(
        s.sweep_select, "± std over the row's sweep")
    spread = "± std over queries" if s.spread == "std" else "[bootstrap 95% interval]"
    paper = ("the paper's value (± its own where it prints one)"
             if any(c.paper_std is not None for c in t.cells.values()) else "the paper's value")
    lines.append(f"Each cell: ours {spread} ({over}), {paper}, and ours − paper where the point is the paper's "
                 f"setup (its `paper:` block); elsewhere the paper's value is marked not comparable, with why.")
    return lines


def column_label(s: TableSpec, col: Column, scale: str) -> str:
    label = f"{short_label(s, col.group, 'groups', scale)} {col.metric.label}".strip()
    return label + (f" @{col.x_name}" if col.x is not None else "")


def inside_text(c: Cell, digits: int) -> str:
    """Where the paper's value falls against our 95% interval (printed here when the cell shows
    ± std instead of its interval)."""
    if c.paper_inside is None:
        return ""
    where = "inside" if c.paper_inside else "outside"
    return f", {where} our 95% interval" + (f" [{fmt(c.low, digits)}, {fmt(c.high, digits)}]" if c.shown == "std" else "")


def markdown(t: Rendered) -> str:
    s = t.spec
    cols = s.columns()
    head = "| " + " | ".join(["", *(column_label(s, c, t.scale) for c in cols)]) + " |"
    out = [f"# {s.id}: {s.title}", "", *caption(t), "", head, "|" + "---|" * (len(cols) + 1)]
    for row in s.rows:
        cells = []
        for col in cols:
            c, digits = t.cells[(row.key, col.key)], col.metric.digits
            text = ours_text(c, digits)
            if c.paper is not None:
                text += f"<br>paper {paper_text(c, digits)}" + (
                    f", not comparable: {c.incomparable}" if c.incomparable else
                    f", Δ {c.diff:+.{digits}f}" + inside_text(c, digits) if c.diff is not None else "")
            cells.append(text)
        out.append(f"| {short_label(s, row, 'rows', t.scale)} | " + " | ".join(cells) + " |")
    for block in blocks.of(s):
        out += block.markdown_lines(t)
    return "\n".join(out) + "\n"


def csv_text(t: Rendered) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row", "column", "ours", "ci95_low", "ci95_high", "std", "n_runs", "paper", "paper_std", "diff",
                "best_at", "note", "not_comparable"])
    for row in t.spec.rows:
        for col in t.spec.columns():
            c = t.cells[(row.key, col.key)]
            w.writerow([row.key, col.key, *(fmt(x, 6) for x in (c.ours, c.low, c.high, c.std)), c.n_runs,
                        fmt(c.paper, 6), fmt(c.paper_std, 6), fmt(c.diff, 6), c.chosen, c.note or c.saturated,
                        c.incomparable])
    return buf.getvalue()


def latex(t: Rendered) -> str:
    def esc(x: str) -> str:
        return re.sub(r"([&%$#_{}])", r"\\\1", x)

    cols = t.spec.columns()
    lines = [r"\begin{tabular}{l" + "c" * len(cols) + "}", r"\toprule",
             " & ".join(["", *(esc(column_label(t.spec, c, t.scale)) for c in cols)]) + r" \\",
             r"\midrule"]
    for row in t.spec.rows:
        cells = []
        for col in cols:
            c, digits = t.cells[(row.key, col.key)], col.metric.digits
            ours = fmt(c.ours, digits) or "--"
            if c.ours is not None and c.low is not None and c.high is not None and c.shown == "ci":
                ours += rf" {{\scriptsize [{fmt(c.low, digits)}, {fmt(c.high, digits)}]}}"
            if c.ours is not None and c.std is not None:
                ours += rf" $\pm$ {fmt(c.std, digits)}"
            paper = paper_text(c, digits).replace("±", r"$\pm$")
            cells.append(ours + (f" ({paper})" if c.paper is not None else ""))
        lines.append(" & ".join([esc(short_label(t.spec, row, "rows", t.scale)), *cells]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}",
              "% " + esc(f"{t.spec.id} at {t.scale} scale: ours (paper). ") + " ".join(caption(t))]
    return "\n".join(lines) + "\n"


def write(t: Rendered, out: Path = RESULTS) -> list[Path]:
    base = out / t.spec.id
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, text in ((".md", markdown(t)), (".csv", csv_text(t)), (".tex", latex(t))):
        path = base.with_suffix(suffix)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    for block in blocks.of(t.spec):
        paths += block.write(t, base)
    return paths
