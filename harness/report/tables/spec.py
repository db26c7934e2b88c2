"""A paper table as data: ``configs/tables/<paper>/<table>.yaml``.

A table is a grid of runs: every row (a method, or a dataset) crossed with every column group
(a dataset, or a method), each a list of Hydra overrides on top of the table's ``shared`` ones;
a row may also ``sweep`` a parameter (LGMGC's chunk sizes), and its cells are then the mean and
standard deviation over the sweep's runs. A sweep maps parameters to their values and runs their
Cartesian product; a list of such mappings runs the union of their products (a grid whose parts
sweep different parameters: Qu et al.'s six Breakpoint threshold types, each with its own values). Inside a group, one column per entry of ``metrics``
(the run's metric, an optional ``factor``, e.g. 100 for percentages). ``numbers`` is the CSV of
the paper's published values (``row,column,value``, columns named ``<group>/<metric key>``).

A row or group that ChunkBench cannot run yet says so with ``missing: <why>`` (a method
not built): it is never run, and its cells print the reason. A file with ``x`` is a figure: the
grid gets a third axis (one run per row x group x value of ``x.param``), and besides the table it
renders as a line plot, one panel per group and metric, one line per row; its paper numbers are
keyed ``<group>/<metric>@<value>``. A group may read another run metric for a layout key
(``metrics: {score: lb_score_task_mean}``: LongBench's score is the mean over its subsets), and
so may a row (a row's choice wins over its group's).
``sweep_select: best`` makes a swept row's cell its best
sweep point (a paper that reports the best chunk size per method) instead of mean ± std, and
``best_group`` the point best on the mean of the group's metrics (one configuration per dataset),
or of the run metrics ``select_by`` names (a table that shows F1@5 of the configuration chosen by
the mean F1 over k). ``spread: std`` shows a one-run cell's population standard deviation over
queries (the papers' ±) instead of its bootstrap 95% interval (``ci``, the default).

``correlation`` makes a table a correlation figure over its rows (QChunker's Figure 2): for each
weight λ of ``lambdas``, the Pearson correlation, across the rows of a group, between the mix
``λ·a + (1-λ)·b`` of two layout metrics (``mix: [a, b]``) and the ``target`` layout metric.

``series`` makes a table also a per-item line plot (QChunker's Figure 3): one panel per row and
group, one line per entry of ``lines``, each a per-chunk series a document metric of the run
records (``DocumentMetric.series_keys``, read back from the run's ``per_document.jsonl``),
concatenated over the documents in order; the x axis is the item's index. Not with ``x`` or a
swept row (a panel is one run).

``pairwise`` makes a table MC-indexing's Figure 3 as well: after the grid's runs exist, the
answers of row ``a``'s run are judged against row ``b``'s by :mod:`harness.report.judge` (Figure 11
prompt, both answer orders), per group and x value, by the LLM that the Hydra overrides ``judge``
compose; each judged pair is one MLflow run of the table's experiment, and its win/tie/loss rates
render as a second layout: rows are the groups, columns ``<score|round>/<win|tie|loss>[@<x>]``
(paper numbers keyed ``<group>,<score|round>/<outcome>@<x>``). A scale's ``pairwise`` replaces any
of ``judge``, ``label``, ``max_tokens``, ``temperature``, ``retries``, ``seed`` there (a stand-in
judge). A scale's ``skip`` may also name an x value, as ``<param>=<value>``.

``aggregate: {mean_of: [groups]}`` makes a group computed, not run (LGMGC's "Avg."): each of its
cells is the mean of the same row's rendered cells, same layout metric (and x value), in the named
groups, each as the table shows it (a swept row's mean, or its best point with ``sweep_select:
best``: the mean of each dataset's best). It has no overrides, sweep or metrics of its own and
no grid point; a cell is empty, saying why, when one of its groups' cells is. Not with
``series`` or ``pairwise`` (they read a run per group).

``scale`` maps each scale to what changes there. For a row or a group, ``overrides`` replace the
axis's own (a stand-in for a paper dataset that is not bundled; its ``label`` is shown in the
rendered header) and ``add`` appends to them (e.g. a reply budget the bundled model needs);
a row's ``sweep`` replaces the row's own sweep there (``{}``: one run, at the row's overrides;
e.g. a sweep too slow for the smoke scale); ``shared`` caps documents and questions for every
run, and ``skip`` names a row or a ``row/group`` cell that is not run at that scale, with the
reason the rendered table prints.

The paper's numbers file may carry the paper's ± beside each value: a fourth column ``std``
(``row,column,value,std``; empty or ``-`` where the paper prints none), rendered beside the
paper's value.

``challenge`` says how a new chunker joins the table (``chunkbench challenge``): which
rows it is compared with, in which families (one per retriever or reader), which overrides it
replaces and gets, the size parameter it is swept over, or why the table takes none
(:class:`harness.report.tables.spec_blocks.Challenge`).

The keys and their types, checked in one validation: :mod:`harness.report.tables.schema`.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.report.tables.spec_blocks import (OUTCOMES, Axis, Challenge, Correlation, PairColumn, Pairwise, Reading,
                                               Series, Sweep, override_list, pairwise_fields, parse_challenge,
                                               parse_correlation, parse_pairwise, parse_readings, parse_series, show,
                                               sweep_points)
from harness.report.tables.spec_blocks import parse_sweep as _sweep
from harness.report.tables.schema import read, set_keys
from harness.report.tables.setup import PaperSetup, parse_paper
from harness.types import ConfigError

REPO = Path(__file__).resolve().parents[3]
TABLES = REPO / "configs" / "tables"


@dataclass(frozen=True)
class XAxis:
    """A figure's x axis: one run per value of ``param`` (``names`` label the ticks)."""

    param: str
    label: str
    values: tuple[Any, ...]
    names: tuple[str, ...]

    def point(self, value: Any) -> str:
        return f"{self.param}={show(value)}"


@dataclass(frozen=True)
class Metric:
    key: str
    metric: str
    label: str
    factor: float = 1.0
    digits: int = 4


@dataclass(frozen=True)
class Column:
    """One column of the rendered table: a group's metric (at one x value, for a figure)."""

    key: str          # "<group>/<metric>" or "<group>/<metric>@<x value>"
    label: str
    group: Axis
    metric: Metric
    x: str | None = None   # the x value as written in the file
    x_name: str = ""       # its tick label


@dataclass(frozen=True)
class GridRun:
    """One run of a table's grid: ``key`` = ``row|group`` (``|param=value`` for an x value and a
    sweep point)."""

    key: str
    row: str
    group: str
    overrides: tuple[str, ...]
    skip: str | None = None
    x: str | None = None


@dataclass(frozen=True)
class TableSpec:
    id: str                       # "<paper>/<table>"
    title: str
    source: str
    numbers: Path | None          # the paper's numbers file (None: a table of no paper, the user's own data)
    note: str
    shared: tuple[str, ...]
    rows: tuple[Axis, ...]
    groups: tuple[Axis, ...]
    metrics: tuple[Metric, ...]
    scales: dict[str, dict[str, Any]]
    x: XAxis | None = None
    sweep_select: str = "mean"
    select_by: tuple[str, ...] = ()   # best_group: these run metrics instead of the group's
    spread: str = "ci"                # a one-run cell's spread: ci (bootstrap 95%) | std (over queries)
    correlation: Correlation | None = None
    series: Series | None = None
    pairwise: Pairwise | None = None
    paper: PaperSetup | None = None   # the paper's declared setup (models, data, settings, deviations)
    challenge: Challenge | None = None   # how a challenger chunker joins the table (spec_blocks.Challenge)
    sensitivity: tuple[Reading, ...] = ()   # other readings of the protocol (harness.report.tables.sensitivity)
    reading: str | None = None   # this spec is the table under one of its readings (its runs' own experiment)

    @property
    def experiment(self) -> str:
        return f"tables/{self.id}" if self.reading is None else f"sensitivity/{self.id}/{self.reading}"

    @property
    def is_figure(self) -> bool:
        return self.x is not None

    def columns(self) -> list[Column]:
        """The columns in layout order (a figure: every x value of every group's metric)."""
        out = []
        for g in self.groups:
            for m in self.metrics:
                m = replace(m, metric=dict(g.metrics).get(m.key, m.metric))
                label = f"{g.label} {m.label}".strip()
                if self.x is None:
                    out.append(Column(f"{g.key}/{m.key}", label, g, m))
                    continue
                for value, name in zip(self.x.values, self.x.names):
                    out.append(Column(f"{g.key}/{m.key}@{show(value)}", f"{label} @{name}", g, m, show(value), name))
        return out

    def pair_columns(self) -> list[PairColumn]:
        """The pairwise layout's columns: every outcome of every kind (at every x value)."""
        if self.pairwise is None:
            return []
        xs = list(zip(self.x.values, self.x.names)) if self.x else [(None, "")]
        kinds = {"score": "Score-based", "round": "Round-based"}
        return [PairColumn(f"{kind}/{o}" + ("" if v is None else f"@{show(v)}"),
                           f"{kinds[kind]} {o}" + ("" if v is None else f" @{name}"), kind, o,
                           None if v is None else show(v), name)
                for kind in self.pairwise.outcomes for v, name in xs for o in OUTCOMES]

    def in_layout(self, row: str, column: str) -> bool:
        """A paper number's key: a row's cell, or a group's pairwise rate."""
        if row in {r.key for r in self.rows}:
            return column in {c.key for c in self.columns()}
        return (self.pairwise is not None and row in {g.key for g in self.groups}
                and column in {c.key for c in self.pair_columns()})

    def pairwise_at(self, scale: str) -> Pairwise | None:
        """``pairwise`` with what ``scale`` replaces (a stand-in judge)."""
        if self.pairwise is None:
            return None
        at = self.scales.get(scale, {}).get("pairwise") or {}
        return replace(self.pairwise, **pairwise_fields(at, f"table {self.id}.scale.{scale}.pairwise"))

    def at(self, scale: str, kind: str, key: str) -> dict[str, Any]:
        """What ``scale`` changes for the row or group ``key`` (``kind``: rows | groups)."""
        return (self.scales.get(scale, {}).get(kind) or {}).get(key) or {}

    def label(self, axis: Axis, kind: str, scale: str) -> str:
        """The axis label, with its stand-in at this scale ("Qasper → OHR-Bench paper ...")."""
        stand_in = self.at(scale, kind, axis.key).get("label")
        return f"{axis.label or axis.key} → {stand_in}" if stand_in else axis.label

    def stand_ins(self, scale: str) -> list[str]:
        return [self.label(a, kind, scale) for kind, axes in (("rows", self.rows), ("groups", self.groups))
                for a in axes if self.at(scale, kind, a.key).get("label")]

    def metric_name(self, row: Axis, col: Column) -> str:
        """The run metric of a cell: the row's own for the column's layout key, else the column's."""
        return dict(row.metrics).get(col.metric.key, col.metric.metric)

    def sweep(self, row: Axis, scale: str) -> Sweep:
        """The row's sweep at ``scale``: the scale's own (``scale.<s>.rows.<row>.sweep``) or the row's."""
        at = self.at(scale, "rows", row.key)
        return _sweep(at["sweep"]) if "sweep" in at else row.sweep

    def overrides(self, axis: Axis, kind: str, scale: str) -> tuple[str, ...]:
        at = self.at(scale, kind, axis.key)
        return (*at.get("overrides", axis.overrides), *at.get("add", ()))

    def runs(self, scale: str) -> list[GridRun]:
        """Every grid point at ``scale``; rows and groups that are ``missing``, and ``aggregate``
        groups, have none."""
        at = self.scales.get(scale, {})
        skips = at.get("skip") or {}
        protocol = self.paper.protocol if self.paper else None  # the authors' code's settings (.protocol)
        out = []
        for row, group in itertools.product(self.rows, self.groups):
            if row.missing or group.missing or group.aggregate:
                continue
            skip = skips.get(f"{row.key}/{group.key}") or skips.get(row.key) or skips.get(group.key)
            base = (*self.shared, *at.get("shared", ()), *self.overrides(row, "rows", scale),
                    *self.overrides(group, "groups", scale))
            points = sweep_points(self.sweep(row, scale))
            xs = [(show(v), (self.x.point(v),)) for v in self.x.values] if self.x else [(None, ())]
            for x, x_point in xs:
                why = skip or (skips.get(x_point[0]) if x_point else None)
                for swept in points:
                    point = (*x_point, *swept)
                    key = "|".join((row.key, group.key, *point))
                    own = (*base, *point)  # the paper's protocol first: the table's own settings win
                    out.append(GridRun(key, row.key, group.key, (*(protocol.overrides(own) if protocol else ()), *own), why, x))
        return out


def _aggregate(node: dict | None, where: str) -> tuple[str, ...]:
    if node is None:
        return ()
    if not node["mean_of"]:
        raise ConfigError(f"{where}.aggregate.mean_of: name at least one group")
    return tuple(node["mean_of"])


def _axes(node: dict[str, dict], where: str) -> tuple[Axis, ...]:
    if not node:
        raise ConfigError(f"{where}: must map keys to {{label, overrides}}, got {node!r}")
    out = []
    for key, spec in node.items():
        aggregate = _aggregate(spec.get("aggregate"), f"{where}.{key}")
        others = [k for k, v in spec.items() if k not in ("label", "aggregate") and v not in (None, [], {})]
        if aggregate and others:
            raise ConfigError(f"{where}.{key}: an aggregate group is computed from other groups' cells, so it has "
                              f"only a label (got {sorted(others)})")
        out.append(Axis(key, key if spec["label"] is None else spec["label"],
                        override_list(spec["overrides"], f"{where}.{key}"), _sweep(spec["sweep"], f"{where}.{key}.sweep"),
                        spec["missing"], tuple(spec["metrics"].items()), aggregate))
    return tuple(out)


def _check_aggregates(groups: tuple[Axis, ...], where: str) -> None:
    by_key = {g.key: g for g in groups}
    for g in groups:
        for member in g.aggregate:
            other = by_key.get(member)
            if other is None or other is g or other.aggregate:
                why = "is not a group" if other is None else "is itself an aggregate"
                raise ConfigError(f"{where}.groups.{g.key}.aggregate: {member!r} {why} (groups that run: "
                                  f"{', '.join(k for k, a in by_key.items() if not a.aggregate)})")


def _scales(scales: dict[str, dict[str, Any]], rows: tuple[Axis, ...], groups: tuple[Axis, ...],
            where: str) -> dict[str, dict[str, Any]]:
    """What each scale changes, its rows' and groups' entries as the keys the file sets: for known
    axes, with a well-formed sweep."""
    names = {"rows": {r.key for r in rows}, "groups": {g.key for g in groups}}
    out = {}
    for scale, at in scales.items():
        out[scale] = {**at, **{kind: {key: set_keys(entry) for key, entry in at[kind].items()} for kind in names}}
        for kind in names:
            for key, entry in out[scale][kind].items():
                here = f"{where}.scale.{scale}.{kind}.{key}"
                if key not in names[kind]:
                    raise ConfigError(f"{here}: {key!r} is not one of the table's {kind} "
                                      f"({', '.join(sorted(names[kind]))})")
                if "sweep" in entry:
                    _sweep(entry["sweep"] or {}, f"{here}.sweep")
    return out


def _x_axis(node: dict | None) -> XAxis | None:
    if node is None:
        return None
    values = tuple(node["values"])
    names = tuple(node["names"] or [show(v) for v in values])
    if len(names) != len(values):
        raise ConfigError(f"x: {len(names)} names for {len(values)} values")
    return XAxis(node["param"], node["label"] or node["param"], values, names)


def load_spec(path: Path, root: Path = TABLES) -> TableSpec:
    """A table file, checked for its shape (:mod:`harness.report.tables.schema`) and what a shape
    cannot say (names are checked by ``checks.validate``); its id is its path under ``root``
    without the suffix (``hichunk/table3``). Parsed once per content in a process: validating a
    file against its schema costs a fifth of a second, and a render, a plan or a test session
    reads every table many times."""
    try:
        content = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        content = None  # the parse names the problem
    return _parsed(path, root, content)


@functools.lru_cache(maxsize=512)
def _parsed(path: Path, root: Path, content: str | None) -> TableSpec:
    table_id = path.relative_to(root).with_suffix("").as_posix()
    where = f"table {table_id}"
    raw = read(path, where)
    metrics = tuple(Metric(k, v["metric"], k if v["label"] is None else v["label"], v["factor"], v["digits"])
                    for k, v in raw["metrics"].items())
    select, select_by = raw["sweep_select"], tuple(raw["select_by"])
    if select_by and select != "best_group":
        raise ConfigError(f"{where}.select_by: only with sweep_select: best_group")
    layout = set(raw["metrics"])
    for kind in ("rows", "groups"):
        for key, axis in raw[kind].items():
            unknown_keys = set(axis["metrics"]) - layout
            if unknown_keys:
                raise ConfigError(f"{where}.{kind}.{key}.metrics: {sorted(unknown_keys)} are not layout metrics "
                                  f"({sorted(layout)})")
    rows, series = _axes(raw["rows"], f"{where}.rows"), parse_series(raw["series"], where)
    groups = _axes(raw["groups"], f"{where}.groups")
    _check_aggregates(groups, where)
    scales = _scales(raw["scale"], rows, groups, where)
    swept = [r for r in rows if r.sweep or any("sweep" in at["rows"].get(r.key, {}) for at in scales.values())]
    if series and (raw["x"] is not None or swept):
        raise ConfigError(f"{where}.series: a panel plots one run, so no x axis and no swept row")
    if any(g.aggregate for g in groups) and (series or raw["pairwise"] is not None):
        raise ConfigError(f"{where}: an aggregate group has no run, so no series or pairwise in its table")
    try:
        x = _x_axis(raw["x"])
    except ConfigError as e:
        raise ConfigError(f"{where}.{e}") from None
    return TableSpec(table_id, raw["title"], raw["source"], REPO / raw["numbers"], raw["note"],
                     override_list(raw["shared"], f"{where}.shared"), rows, groups, metrics, scales, x,
                     select, select_by, raw["spread"], parse_correlation(raw["correlation"], layout, where), series,
                     parse_pairwise(raw["pairwise"], rows, scales, where),
                     parse_paper(raw["paper"], {r.key for r in rows}, set(raw["groups"]), where),
                     parse_challenge(raw["challenge"], tuple(r.key for r in rows), layout,
                                     None if x is None else x.param, where),
                     parse_readings(raw["sensitivity"], set(raw["groups"]), where))


def all_specs(skip_broken: Callable[[str], None] | None = None) -> list[TableSpec]:
    """Every table file; the first that fails to load raises, unless ``skip_broken`` is given:
    then it is told each broken file's one-line error and the file is left out (the index of
    ``tables render``: one table being edited must not stop the others)."""
    specs = []
    for p in sorted(TABLES.rglob("*.yaml")):
        try:
            specs.append(load_spec(p, TABLES))
        except ConfigError as e:
            if skip_broken is None:
                raise
            skip_broken(str(e))
    return specs


def table_ids() -> list[str]:
    """Every table file's id, in the index's order, without reading the files."""
    return [p.relative_to(TABLES).with_suffix("").as_posix() for p in sorted(TABLES.rglob("*.yaml"))]


def select(pattern: str | None) -> list[TableSpec]:
    """Tables matching ``pattern`` (comma-separated globs over ids, e.g. ``hichunk/table3,lgmgc/*``)."""
    if not pattern or pattern == "all":
        return all_specs()
    paths = {p.relative_to(TABLES).with_suffix("").as_posix(): p for p in sorted(TABLES.rglob("*.yaml"))}
    globs = [p.strip() for p in pattern.split(",") if p.strip()]
    if not globs:
        raise ConfigError(f"--tables {pattern!r} names no table: give ids or globs, comma-separated "
                          f"(hichunk/table3,lgmgc/*), or all")
    unmatched = [g for g in globs if not any(fnmatch.fnmatch(i, g) for i in paths)]
    if unmatched:
        raise ConfigError(f"no table matches {', '.join(unmatched)} (tables: {', '.join(paths)})")
    # only the chosen files are loaded: a table being edited elsewhere does not stop these
    return [load_spec(p, TABLES) for i, p in paths.items() if any(fnmatch.fnmatch(i, g) for g in globs)]
