"""A paper figure as a PNG: one panel per group and metric, one line per row over the x axis;
or, for a table with ``series``, one panel per row and group with a line per recorded
per-chunk series (chunk index on x: QChunker's Figure 3, perplexity before and after rewriting).

Our points carry their bootstrap 95% interval as error bars; the paper's points, where the
paper prints them, are drawn as open markers on a dashed line of the same colour, so a reader
sees at a glance where the reproduction departs. Drawn from a :class:`Rendered` table, i.e.
from the MLflow record, like the md/csv/tex files.

What a reader needs from it: the table's own labels (a stand-in starred, named under the title as
the table's caption names it), the table's title in words, panels in rows of at most three, every
line visible where lines coincide (distinct markers, a small sideways offset, the earlier line
drawn wider, and a note naming them), and a note where a metric is saturated.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from pathlib import Path

from harness.report.tables.cells import Rendered, saturation, short_label
from harness.report.tables.spec import Metric

MAX_COLUMNS = 3   # panels per row: wider rows shrink each panel below reading size
PANEL = (4.6, 3.3)   # inches per panel
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<")


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display on a cluster node)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: Path) -> Path:
    """``fig`` as a PNG at ``path`` (its folder made), then closed; the saved area grows to hold
    every title and legend, so nothing is clipped."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.15)
    pyplot().close(fig)
    return path


def write_with_csv(t: Rendered, base: Path, kind: str, csv_text: Callable[[Rendered], str],
                   plot: Callable[[Rendered, Path], Path]) -> list[Path]:
    """``<table>_<kind>.csv`` (what the figure plots) and ``<table>.png``."""
    csv_path = base.with_name(f"{base.name}_{kind}.csv")
    csv_path.write_text(csv_text(t), encoding="utf-8")
    return [csv_path, plot(t, base.with_suffix(".png"))]


def panel_grid(plt, n: int, size: tuple[float, float] = PANEL, extra_height: float = 1.2):
    """A figure of ``n`` panels in rows of at most :data:`MAX_COLUMNS` (constrained layout); the
    grid's unused cells are removed, so ``fig.axes`` is the panels in reading order."""
    n = max(n, 1)
    cols = min(n, MAX_COLUMNS)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(7.0, size[0] * cols), size[1] * rows + extra_height),
                             squeeze=False, layout="constrained")
    flat = list(axes.flat)
    for ax in flat[n:]:
        fig.delaxes(ax)
    return fig, flat[:n]


def heading(fig, t: Rendered) -> None:
    """The table's title in words and, under it, which table and scale, and what a starred label
    stands for at this scale (as the table's caption says); wrapped to the figure's width. One
    suptitle, so the layout keeps it clear of the panels and the legend under them."""
    chars = max(40, int(fig.get_figwidth() * 11))
    under = f"({t.spec.id}, {t.scale} scale)"
    stand_ins = t.spec.stand_ins(t.scale)
    if stand_ins:
        under += " * Stand-in data at this scale: " + "; ".join(stand_ins) + "."
    fig.suptitle(textwrap.fill(t.spec.title, chars) + "\n" + textwrap.fill(under, chars), fontsize=10)


def note(ax, lines: list[str]) -> None:
    """``lines`` in a box where the panel's data leaves room (a legend's "best" placement)."""
    if lines:
        from matplotlib.legend import Legend

        box = Legend(ax, [], [], title="\n".join(lines), loc="best", title_fontsize=7, framealpha=0.9)
        box.get_title().set_color("0.25")
        ax.add_artist(box)


def notes(ax) -> list[str]:
    """The notes :func:`note` put in a panel (what a test reads back)."""
    from matplotlib.legend import Legend

    return [line for a in ax.artists if isinstance(a, Legend) for line in a.get_title().get_text().split("\n")]


def coinciding(lines: dict[str, list[float | None]]) -> list[list[str]]:
    """The sets of two or more labels whose lines are the same points (in ``lines``' order)."""
    def key(ys: list[float | None]) -> tuple:
        return tuple(None if y is None else round(y, 9) for y in ys)

    sets: dict[tuple, list[str]] = {}
    for label, ys in lines.items():
        if any(y is not None for y in ys):
            sets.setdefault(key(ys), []).append(label)
    return [labels for labels in sets.values() if len(labels) > 1]


def said(labels: list[str], total: int) -> str:
    """The note for coinciding lines ``labels`` of ``total`` drawn."""
    if len(labels) == total:
        return "both lines coincide" if total == 2 else f"all {total} lines coincide"
    return "lines " + ", ".join(labels[:-1]) + f" and {labels[-1]} coincide"


def panel_notes(ax, ours: dict[str, list[float | None]], metric: Metric) -> None:
    """A panel's notes: a saturated metric (the axis stops at the bound it sits on) and coinciding lines."""
    shown = [v for ys in ours.values() for v in ys if v is not None]
    saturated = saturation(shown, metric.factor, metric.digits)
    if saturated and all(v == 0 for v in shown):
        ax.set_ylim(bottom=-0.02 * metric.factor)
    elif saturated and all(math.isclose(v, metric.factor) for v in shown):
        ax.set_ylim(top=1.02 * metric.factor)
    drawn = sum(any(v is not None for v in ys) for ys in ours.values())
    note(ax, [n for n in (saturated, *(said(labels, drawn) for labels in coinciding(ours))) if n])


def draw(t: Rendered):
    """The figure (a matplotlib Figure; the caller closes it)."""
    plt = pyplot()
    s = t.spec
    if s.series is not None:
        return draw_series(t, plt)
    assert s.x is not None, f"{s.id} has no x axis"
    panels = [(g, m) for g in s.groups if not g.missing for m in s.metrics]
    fig, axes = panel_grid(plt, len(panels))
    xs = list(range(len(s.x.values)))
    labels = {row.key: short_label(s, row, "rows", t.scale) for row in s.rows}
    entries: dict[str, object] = {}   # the legend's, one per label (a plain line: not a wide coinciding one)
    step = min(0.06, 0.3 / max(len(s.rows), 1))  # sideways offset per row: equal points' markers stay apart
    for ax, (group, metric) in zip(axes, panels):
        columns = [c for c in s.columns() if c.group.key == group.key and c.metric.key == metric.key]
        cells = {row.key: [t.cells[(row.key, c.key)] for c in columns] for row in s.rows}
        ours = {labels[r]: [c.ours for c in cs] for r, cs in cells.items()}
        same = coinciding(ours)
        # the earlier of coinciding lines is drawn wider, so the later, narrower one leaves it showing
        width = {label: 1.4 + 1.3 * (len(group_) - 1 - j) for group_ in same for j, label in enumerate(group_)}
        for i, row in enumerate(s.rows):
            colour, marker, label = f"C{i % 10}", MARKERS[i % len(MARKERS)], labels[row.key]
            dx = (i - (len(s.rows) - 1) / 2) * step
            drawn = [(x + dx, c) for x, c in zip(xs, cells[row.key]) if c.ours is not None]
            if drawn:
                err = [[c.ours - c.low if c.low is not None else 0 for _, c in drawn],
                       [c.high - c.ours if c.high is not None else 0 for _, c in drawn]]
                ax.errorbar([x for x, _ in drawn], [c.ours for _, c in drawn], yerr=err, color=colour, marker=marker,
                            markersize=5, capsize=3, linewidth=width.get(label, 1.5), elinewidth=1, label=label)
                entries.setdefault(label, plt.Line2D([], [], color=colour, marker=marker, markersize=5))
            paper = [(x + dx, c.paper) for x, c in zip(xs, cells[row.key]) if c.paper is not None]
            if paper:
                ax.plot([x for x, _ in paper], [v for _, v in paper], color=colour, linestyle="--", marker=marker,
                        markerfacecolor="none", label=f"{label} (paper)")
                entries.setdefault(f"{label} (paper)", ax.lines[-1])
        if not ax.lines and not ax.collections:  # nothing to draw: say why, as the table's cells do
            why = {c.note for cs in cells.values() for c in cs} - {""}
            ax.text(0.5, 0.5, textwrap.fill("; ".join(sorted(why)) or "no value", 30), ha="center",
                    va="center", transform=ax.transAxes, fontsize=9, color="grey")
        panel_notes(ax, ours, metric)
        ax.set_xticks(xs, list(s.x.names))
        ax.set_xlabel(s.x.label)
        ax.set_ylabel(metric.label)
        ax.set_title(textwrap.fill(f"{short_label(s, group, 'groups', t.scale)} {metric.label}".strip(), 45),
                     fontsize=9)
        ax.grid(alpha=0.3)
    legend(fig, entries)
    heading(fig, t)
    return fig


def legend(fig, entries: dict[str, object], ncol: int = 2 * MAX_COLUMNS) -> None:
    """One legend for every panel, under them."""
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=min(len(entries), ncol),
                   fontsize=8, frameon=False)


def draw_series(t: Rendered, plt):
    """One panel per (row, group), one line per series of ``spec.series`` over the chunk index."""
    s = t.spec
    panels = [(r, g) for g in s.groups if not g.missing for r in s.rows if not r.missing]
    fig, axes = panel_grid(plt, len(panels), size=(5.0, 3.3))
    for ax, (row, group) in zip(axes, panels):
        values = t.series.get((row.key, group.key), {})
        for i, line in enumerate(s.series.lines):
            ys = values.get(line.key) or []
            if ys:
                ax.plot(range(1, len(ys) + 1), ys, color=f"C{i % 10}", marker=MARKERS[i % len(MARKERS)],
                        markersize=3, linewidth=1, label=line.label)
        if not ax.lines:  # nothing recorded: say why, as the table's cells do
            why = {t.cells[(row.key, c.key)].note for c in s.columns() if c.group.key == group.key} - {""}
            ax.text(0.5, 0.5, textwrap.fill("; ".join(sorted(why)) or "no rewritten chunk", 30), ha="center",
                    va="center", transform=ax.transAxes, fontsize=9, color="grey")
        same = coinciding({ln.get_label(): list(ln.get_ydata()) for ln in ax.lines})
        note(ax, [said(g, len(ax.lines)) for g in same])
        ax.set_xlabel(s.series.label)
        ax.set_ylabel(s.series.y_label)
        title = short_label(s, group, "groups", t.scale)
        if len(s.rows) > 1:
            title += f" ({short_label(s, row, 'rows', t.scale)})"
        ax.set_title(textwrap.fill(title.strip(), 45), fontsize=9)
        ax.grid(alpha=0.3)
    legend(fig, {ln.label: plt.Line2D([], [], color=f"C{i % 10}", marker=MARKERS[i % len(MARKERS)], markersize=3)
                 for i, ln in enumerate(s.series.lines)}, ncol=4)
    heading(fig, t)
    return fig


def plot(t: Rendered, path: Path) -> Path:
    return save(draw(t), path)


# the block protocol (harness.report.tables.blocks)
def applies(spec) -> bool:
    return (spec.is_figure or spec.series is not None) and spec.pairwise is None  # a pairwise figure draws its own


def markdown_lines(t: Rendered) -> list[str]:
    return []


def write(t: Rendered, base: Path) -> list[Path]:
    return [plot(t, base.with_suffix(".png"))]
