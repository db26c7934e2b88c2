"""Pairwise answer judging across a table's runs (MC-indexing Sec. 5.4, Figure 3): the judged
cells and their drawing, read back from the record like every other cell.

:mod:`harness.report.tables.pairwise_judge` judges the pairs: each judged pair is one MLflow run
of the table's experiment, tagged ``table.run = a~b|group|x`` with the two runs' ids, holding the
rates ``<score|round>/<win|tie|loss>`` (from ``a``'s side, over the queries with an outcome),
``n``, ``invalid`` (a round never parsed) and the judge's LLM calls. :func:`cells`,
:func:`markdown_lines` and :func:`plot` read those runs.
"""

from __future__ import annotations

import csv
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

from harness.report.tables.cells import Cell, Rendered, fmt, ours_text, short_label
from harness.report.tables.figure import heading, pyplot, save, write_with_csv
from harness.report.tables.spec import GridRun, TableSpec
from harness.report.tables.spec_blocks import OUTCOMES, show

KIND_NAMES = {"score": "score_based", "round": "round_based"}   # harness.report.judge.summarize's keys
FACTOR, DIGITS = 100.0, 1                                       # rates shown in percent


@dataclass(frozen=True)
class PairCell(Cell):
    n: int | None = None          # queries with an outcome
    invalid: int | None = None    # queries whose judge reply never parsed in a round


def pair_points(spec: TableSpec, scale: str) -> list[tuple[str, str | None, GridRun, GridRun]]:
    """(group, x value, a's grid point, b's grid point) for every judged pair of the layout."""
    pw = spec.pairwise
    by = {(p.row, p.group, p.x): p for p in spec.runs(scale)}
    xs = [show(v) for v in spec.x.values] if spec.x else [None]
    return [(g.key, x, by[(pw.a, g.key, x)], by[(pw.b, g.key, x)])
            for g in spec.groups if not g.missing for x in xs]


def x_point(spec: TableSpec, x: str | None) -> str | None:
    return None if x is None else f"{spec.x.param}={x}"


def cells(spec: TableSpec, scale: str, runs: dict, numbers: dict) -> dict[tuple[str, str], PairCell]:
    """(group, pairwise column) -> its rate in percent, or why there is none. ``runs``: the latest
    recorded run per ``table.run``."""
    pw, out = spec.pairwise, {}
    points = {(g, x): (pa, pb) for g, x, pa, pb in pair_points(spec, scale)}
    for g in spec.groups:
        for col in spec.pair_columns():
            paper = numbers.get((g.key, col.key))
            out[(g.key, col.key)] = _cell(spec, scale, pw, g, col, points.get((g.key, col.x)), runs, paper)
    return out


def _cell(spec, scale, pw, group, col, pair, runs, paper) -> PairCell:
    if group.missing:
        return PairCell(None, paper=paper, note="not built")
    pa, pb = pair
    if pa.skip or pb.skip:
        return PairCell(None, paper=paper, note=f"not run at {scale} scale")
    ra, rb = runs.get(pa.key), runs.get(pb.key)
    for r in (ra, rb):
        if r is not None and r.info.status != "FINISHED":
            return PairCell(None, paper=paper, note=r.data.tags.get("error", "failed").splitlines()[0])
    if ra is None or rb is None:
        return PairCell(None, paper=paper, note="not run yet")
    judged = runs.get(pw.run_key(group.key, x_point(spec, col.x)))
    if judged is None:
        return PairCell(None, paper=paper, note="not judged yet")
    if judged.info.status != "FINISHED":
        return PairCell(None, paper=paper, note=judged.data.tags.get("error", "failed").splitlines()[0])
    if (judged.data.tags.get("table.pair.a_run"), judged.data.tags.get("table.pair.b_run")) != (
            ra.info.run_id, rb.info.run_id):
        return PairCell(None, paper=paper, note="judged older runs of the pair: judge again (tables run)")
    m = judged.data.metrics
    n, invalid = int(m.get("n", 0)), int(m.get("invalid", 0))
    value = m.get(f"{col.kind}/{col.outcome}")
    if value is None:  # NaN is not recorded: no query had an outcome
        return PairCell(None, paper=paper, note=f"no query judged ({invalid} invalid)", n=n, invalid=invalid)
    return PairCell(value * FACTOR, n_runs=1, paper=paper, n=n, invalid=invalid)


def cell_text(c: PairCell) -> str:
    text = ours_text(c, DIGITS)
    if c.ours is not None:
        text += f" (n = {c.n}" + (f", {c.invalid} invalid" if c.invalid else "") + ")"
    if c.paper is not None:
        text += f"<br>paper {fmt(c.paper, DIGITS)}" + (f", Δ {c.diff:+.{DIGITS}f}" if c.diff is not None else "")
    return text


def names(t: Rendered) -> tuple[str, str]:
    rows = {r.key: r.label for r in t.spec.rows}
    return rows[t.spec.pairwise.a], rows[t.spec.pairwise.b]


def markdown_lines(t: Rendered) -> list[str]:

    s, a, b = t.spec, *names(t)
    pw, cols = s.pairwise_at(t.scale), s.pair_columns()
    about = (f"Judge: {pw.label or ', '.join(pw.judge)} (MC-indexing Figure 11 prompt, both answer orders, "
             f"replies up to {pw.max_tokens} tokens, temperature {pw.temperature:g}). Win = {a}'s answer judged "
             f"better, in % of the queries with an outcome (n); invalid: a round whose reply never parsed "
             f"(left out). Score-based: the two rounds' scores summed; round-based: a win needs both rounds.")
    lines = ["", f"## Pairwise judge: {a} against {b}", "", about, "",
             "| | " + " | ".join(c.label for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for g in s.groups:
        lines.append(f"| {short_label(s, g, 'groups', t.scale)} | "
                     + " | ".join(cell_text(t.pairwise[(g.key, c.key)]) for c in cols) + " |")
    return lines


def csv_text(t: Rendered) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row", "column", "ours", "n", "invalid", "paper", "diff", "note"])
    for g in t.spec.groups:
        for col in t.spec.pair_columns():
            c = t.pairwise[(g.key, col.key)]
            w.writerow([g.key, col.key, fmt(c.ours, 6), "" if c.n is None else c.n,
                        "" if c.invalid is None else c.invalid, fmt(c.paper, 6), fmt(c.diff, 6), c.note])
    return buf.getvalue()


COLOURS = {"win": "tab:green", "tie": "0.75", "loss": "tab:red"}


def draw(t: Rendered):
    """Stacked bars, one per group: a's win, tie, b's win; a panel per outcome kind (a column) and
    x value (a row): at most two panels a row, however many x values (``fig.axes`` kind by kind)."""
    plt = pyplot()

    s, (a, b) = t.spec, names(t)
    groups = [g for g in s.groups if not g.missing]
    xs = list(zip([show(v) for v in s.x.values], s.x.names)) if s.x else [(None, "")]
    kinds = s.pairwise.outcomes
    size = (max(6.5, 5.0 * len(kinds)), 1.6 + len(xs) * (0.9 + 0.45 * len(groups)))
    fig = plt.figure(figsize=size, layout="constrained")
    cells = fig.add_gridspec(len(xs), len(kinds))
    legend = {"win": f"{a} wins", "tie": "Tie", "loss": f"{b} wins"}
    kind_names = {"score": "Score-based", "round": "Round-based"}
    ys = list(range(len(groups)))
    for i, kind in enumerate(kinds):
        for j, (x, x_name) in enumerate(xs):
            ax = fig.add_subplot(cells[j, i])
            key = f"{kind}/" + "{}" + ("" if x is None else f"@{x}")
            found = [t.pairwise[(g.key, key.format("win"))] for g in groups]
            left = [0.0] * len(groups)
            for outcome in OUTCOMES:
                vals = [t.pairwise[(g.key, key.format(outcome))].ours or 0.0 for g in groups]
                ax.barh(ys, vals, left=left, color=COLOURS[outcome], label=legend[outcome], height=0.6)
                for y, v, lo in zip(ys, vals, left):
                    if v >= 8:
                        ax.text(lo + v / 2, y, f"{v:.0f}", ha="center", va="center", fontsize=7)
                left = [lo + v for lo, v in zip(left, vals)]
            for y, c in zip(ys, found):
                if c.ours is None:
                    ax.text(2, y, textwrap.shorten(f"n/a ({c.note})", 50), va="center", fontsize=7, color="grey")
                elif c.n is not None:
                    ax.text(101, y, f"n={c.n}" + (f", {c.invalid} inv." if c.invalid else ""), va="center", fontsize=6)
            ax.set_yticks(ys, [short_label(s, g, "groups", t.scale) for g in groups])
            ax.invert_yaxis()
            ax.set_xlim(0, 100)
            ax.set_xlabel("% of judged queries")
            ax.set_title(kind_names[kind] + (f", {x_name}" if x is not None else ""), fontsize=9)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    heading(fig, t)
    return fig


def plot(t: Rendered, path: Path) -> Path:
    return save(draw(t), path)


def applies(spec: TableSpec) -> bool:   # the block protocol (harness.report.tables.blocks)
    return spec.pairwise is not None


def write(t: Rendered, base: Path) -> list[Path]:
    """``<table>_pairwise.csv`` and ``<table>.png`` (the stacked bars)."""
    return write_with_csv(t, base, "pairwise", csv_text, plot)
