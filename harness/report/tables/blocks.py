"""A table's blocks: what a table file adds beyond its cells (``pairwise:``, a figure's ``x:`` or
``series:``, ``correlation:``), each a module behind one small protocol that rendering loops over.
A block reads the rendered table (:mod:`harness.report.tables.cells`) and imports nothing of
rendering back."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from harness.report.tables import correlation, figure, pairwise
from harness.report.tables.cells import Rendered
from harness.report.tables.spec import TableSpec


class Block(Protocol):
    def applies(self, spec: TableSpec) -> bool:
        """Whether the table file has this block."""

    def markdown_lines(self, t: Rendered) -> list[str]:
        """What the block adds under the table's markdown (a section of its own, or nothing)."""

    def write(self, t: Rendered, base: Path) -> list[Path]:
        """Its files beside ``base`` (``results/<paper>/<table>``): a PNG, the CSV it plots."""


# In order: a later block's PNG is the table's (a correlation figure's x axis is its lambda).
BLOCKS: tuple[Block, ...] = (pairwise, figure, correlation)


def of(spec: TableSpec) -> list[Block]:
    return [b for b in BLOCKS if b.applies(spec)]
