"""A paper figure as a PNG: one panel per group and metric, one line per row over the x axis;
or, for a table with ``series``, one panel per row and group with a line per recorded
per-chunk series (chunk index on x: QChunker's Figure 3, perplexity before and after rewriting).

Our points carry their bootstrap 95% interval as error bars; the paper's points, where the
paper prints them, are drawn as open markers on a dashed line of the same colour, so a reader
sees at a glance where the reproduction departs. Drawn from a :class:`Rendered` table, i.e.
from the MLflow record, like the md/csv/tex files.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from harness.report.tables.cells import Rendered


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display on a cluster node)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: Path) -> Path:
    """``fig`` as a PNG at ``path`` (its folder made), then closed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path


def write_with_csv(t: Rendered, base: Path, kind: str, csv_text: Callable[[Rendered], str],
                   plot: Callable[[Rendered, Path], Path]) -> list[Path]:
    """``<table>_<kind>.csv`` (what the figure plots) and ``<table>.png``."""
    csv_path = base.with_name(f"{base.name}_{kind}.csv")
    csv_path.write_text(csv_text(t), encoding="utf-8")
    return [csv_path, plot(t, base.with_suffix(".png"))]


def draw(t: Rendered):
    """The figure (a matplotlib Figure; the caller closes it)."""
    plt = pyplot()
    s = t.spec
    if s.series is not None:
        return draw_series(t, plt)
    assert s.x is not None, f"{s.id} has no x axis"
    panels = [(g, m) for g in s.groups if not g.missing for m in s.metrics]
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6.0, 4.2 * len(panels)), 4.0), squeeze=False)
    xs = list(range(len(s.x.values)))
    for ax, (group, metric) in zip(axes[0], panels):
        columns = [c for c in s.columns() if c.group.key == group.key and c.metric.key == metric.key]
        for i, row in enumerate(s.rows):
            colour = f"C{i % 10}"
            cells = [t.cells[(row.key, c.key)] for c in columns]
            ours = [(x, c) for x, c in zip(xs, cells) if c.ours is not None]
            if ours:
                err = [[c.ours - c.low if c.low is not None else 0 for _, c in ours],
                       [c.high - c.ours if c.high is not None else 0 for _, c in ours]]
                ax.errorbar([x for x, _ in ours], [c.ours for _, c in ours], yerr=err, color=colour,
                            marker="o", capsize=3, label=row.label)
            paper = [(x, c.paper) for x, c in zip(xs, cells) if c.paper is not None]
            if paper:
                ax.plot([x for x, _ in paper], [v for _, v in paper], color=colour, linestyle="--",
                        marker="o", markerfacecolor="none", label=f"{row.label} (paper)")
        if not ax.lines and not ax.collections:  # nothing to draw: say why, as the table's cells do
            notes = {t.cells[(row.key, c.key)].note for row in s.rows for c in columns} - {""}
            ax.text(0.5, 0.5, textwrap.fill("; ".join(sorted(notes)) or "no value", 30), ha="center",
                    va="center", transform=ax.transAxes, fontsize=9, color="grey")
        ax.set_xticks(xs, list(s.x.names))
        ax.set_xlabel(s.x.label)
        ax.set_ylabel(metric.label)
        ax.set_title(textwrap.fill(t.spec.label(group, "groups", t.scale), 45), fontsize=8)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(f"{s.id}: {s.title} ({t.scale} scale)", 50 * len(panels)), fontsize=10)
    fig.tight_layout(rect=(0, 0.12 if handles else 0, 1, 0.93))
    return fig


def draw_series(t: Rendered, plt):
    """One panel per (row, group), one line per series of ``spec.series`` over the chunk index."""
    s = t.spec
    panels = [(r, g) for g in s.groups if not g.missing for r in s.rows if not r.missing]
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6.0, 5.0 * len(panels)), 4.0), squeeze=False)
    for ax, (row, group) in zip(axes[0], panels):
        values = t.series.get((row.key, group.key), {})
        for i, line in enumerate(s.series.lines):
            ys = values.get(line.key) or []
            if ys:
                ax.plot(range(1, len(ys) + 1), ys, color=f"C{i % 10}", marker="o", markersize=3, linewidth=1,
                        label=line.label)
        if not ax.lines:  # nothing recorded: say why, as the table's cells do
            notes = {t.cells[(row.key, c.key)].note for c in s.columns() if c.group.key == group.key} - {""}
            ax.text(0.5, 0.5, textwrap.fill("; ".join(sorted(notes)) or "no rewritten chunk", 30), ha="center",
                    va="center", transform=ax.transAxes, fontsize=9, color="grey")
        ax.set_xlabel(s.series.label)
        ax.set_ylabel(s.series.y_label)
        title = t.spec.label(group, "groups", t.scale) + (f" ({row.label})" if len(s.rows) > 1 else "")
        ax.set_title(textwrap.fill(title, 45), fontsize=8)
        ax.grid(alpha=0.3)
    labels = [ln.label for ln in s.series.lines]
    handles = [plt.Line2D([], [], color=f"C{i % 10}", marker="o", markersize=3) for i in range(len(labels))]
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(f"{s.id}: {s.title} ({t.scale} scale)", 50 * len(panels)), fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 0.93))
    return fig


def plot(t: Rendered, path: Path) -> Path:
    return save(draw(t), path)
