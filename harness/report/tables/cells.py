"""The rendered table's model: a cell (the record's value, its spread and the paper's number) and
the table of cells, with the texts every output writes from them. It imports nothing of the report
wing: the table outputs and blocks (render, pairwise, correlation, figure) import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from harness.report.tables.spec import Axis, TableSpec


@dataclass(frozen=True)
class Cell:
    ours: float | None
    low: float | None = None
    high: float | None = None
    std: float | None = None
    n_runs: int = 0
    paper: float | None = None
    note: str = ""
    chosen: str = ""   # sweep_select: best: the sweep point the value is from
    paper_std: float | None = None   # the paper's ± where its numbers file transcribes one
    incomparable: str = ""   # why the point is not the paper's setup (a stand-in): no Δ then
    shown: str = "ci"   # what the cell prints beside its value: ci (its 95% interval) | std (the table's spread: std)
    saturated: str = ""   # why chunking cannot change the value here (saturated_note), or ""

    @property
    def diff(self) -> float | None:
        if self.ours is None or self.paper is None or self.incomparable:
            return None
        return self.ours - self.paper

    @property
    def paper_inside(self) -> bool | None:
        """Whether the paper's value lies in our bootstrap 95% interval (None: no comparison)."""
        if self.diff is None or self.low is None or self.high is None:
            return None
        return self.low <= self.paper <= self.high


@dataclass(frozen=True)
class Rendered:
    spec: TableSpec
    scale: str
    cells: dict[tuple[str, str], Cell]
    models: list[str]
    # spec.series: (row, group) -> line key -> the run's per-chunk values (from per_document.jsonl)
    series: dict[tuple[str, str], dict[str, list[float]]] = field(default_factory=dict)
    pairwise: dict[tuple[str, str], Cell] = field(default_factory=dict)   # (group, pair column): a judged rate
    not_comparable: tuple[str, ...] = ()   # the distinct reasons its points are not the paper's setup
    runs: dict[str, Any] = field(default_factory=dict)   # grid point key -> the run its cells read
    history: tuple[Any, ...] = ()   # every recorded run of its grid points and judged pairs: what it cost
    overrides: tuple[str, ...] = ()   # the --set overrides every point ran under (grid.config_overrides)
    # the other --set overrides (each a SET_TAG) under which an empty cell's point has runs: render with one to read them
    elsewhere: tuple[str, ...] = ()

    @property
    def filled(self) -> int:
        return sum(c.ours is not None for c in (*self.cells.values(), *self.pairwise.values()))

    @property
    def total(self) -> int:
        return len(self.cells) + len(self.pairwise)


SATURATED = "saturated: chunking cannot change this number here"
WHOLE_DOCUMENTS = "contexts_whole_documents"   # the run's share of contexts that hold their documents whole


def _at(v: float, target: float, factor: float) -> bool:
    return math.isclose(v, target * factor, rel_tol=1e-9, abs_tol=1e-12)


def at_ceiling(values: list[float], factor: float) -> bool:
    """Two or more points, every one a score of 1 (``values`` as shown, times ``factor``)."""
    return len(values) >= 2 and all(_at(v, 1, factor) for v in values)


def saturation(values: list[float], factor: float, digits: int) -> str:
    """Why a figure panel's points cannot tell its rows apart, or "": every point at 1 (the metric's
    ceiling), at 0, at 0 or 1, or all equal. ``values`` are as shown (times ``factor``)."""
    if len(values) < 2:
        return ""
    top = f"{factor:g} (a score of 1)" if factor != 1 else "1"
    if at_ceiling(values, factor):
        return f"saturated: every point is {top}"
    if all(_at(v, 0, factor) for v in values):
        return "saturated: every point is 0"
    if all(_at(v, 0, factor) or _at(v, 1, factor) for v in values):
        return f"saturated: every point is 0 or {factor:g}"
    if all(math.isclose(v, values[0], rel_tol=1e-9, abs_tol=1e-12) for v in values):
        return f"saturated: every point is {values[0]:.{digits}f} (all equal)"
    return ""


def saturated_note(ceiling: bool, whole: bool, factor: float) -> str:
    """A table cell's note where chunking cannot change its value: every row of its column at the
    metric's ceiling (:func:`at_ceiling`, the figures' first case of :func:`saturation`), or every
    row equal with every context of every row's runs holding its documents whole
    (:data:`WHOLE_DOCUMENTS` = 1)."""
    why = [w for w, on in ((f"every row scores {factor:g}", ceiling),
                           ("every row equal, every context holding its documents whole", whole)) if on]
    return f"{SATURATED} ({'; '.join(why)})" if why else ""


def fmt(x: float | None, digits: int) -> str:
    return "" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def paper_text(c: Cell, digits: int) -> str:
    """The paper's value, with its ± where transcribed ("" where the paper prints none)."""
    if c.paper is None:
        return ""
    return fmt(c.paper, digits) + (f" ± {fmt(c.paper_std, digits)}" if c.paper_std is not None else "")


def ours_text(c: Cell, digits: int) -> str:
    if c.ours is None:
        return f"n/a ({c.note})"
    text = fmt(c.ours, digits)
    if c.low is not None and c.high is not None and c.shown == "ci":
        text += f" [{fmt(c.low, digits)}, {fmt(c.high, digits)}]"
    if c.std is not None:
        text += f" ± {fmt(c.std, digits)}"
    if c.chosen:  # "a=1|b=2": a markdown cell must hold no bare "|"
        text += f" (best at {c.chosen.replace('|', ', ')})"
    if c.saturated:
        text += f" — {c.saturated}"
    return text


def short_label(s: TableSpec, axis: Axis, kind: str, scale: str) -> str:
    """The axis label, starred when stand-in data replaces it at this scale (named in the caption);
    an unlabelled axis (a table's only group) stays unlabelled: the caption names its stand-in."""
    return axis.label + ("*" if axis.label and s.at(scale, kind, axis.key).get("label") else "")
