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

    @property
    def filled(self) -> int:
        return sum(c.ours is not None for c in (*self.cells.values(), *self.pairwise.values()))

    @property
    def total(self) -> int:
        return len(self.cells) + len(self.pairwise)


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
    return text


def short_label(s: TableSpec, axis: Axis, kind: str, scale: str) -> str:
    """The axis label, starred when stand-in data replaces it at this scale (named in the caption);
    an unlabelled axis (a table's only group) stays unlabelled: the caption names its stand-in."""
    return axis.label + ("*" if axis.label and s.at(scale, kind, axis.key).get("label") else "")
