"""A correlation figure over a table's rows (QChunker's Figure 2): how well a weighted mix of two
metrics tracks a downstream one across methods, for every weight λ.

For each group (dataset) and each λ, the Pearson correlation across the rows that have all three
values between ``λ·a + (1-λ)·b`` and the target: QChunker Sec. 4.5 sweeps ChunkScore's λ from 0
to 1 in steps of 0.01 and correlates the ChunkScore of several chunkers' chunk sets with their
ROUGE-L. The mix is of the run-level means of ``a`` and ``b``, which is the run's mean of the
per-document mix wherever a document has both (a one-chunk document has no LI). Read from the
rendered cells, i.e. from the MLflow record.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from harness.report.tables.cells import Rendered, short_label
from harness.report.tables.figure import coinciding, heading, note, pyplot, said, save, write_with_csv

MIN_ROWS = 3  # a correlation over two points is always ±1
STYLES = ("-", "--", "-.", ":")


def row_values(t: Rendered, group: str) -> list[tuple[str, float, float, float]]:
    """(row, a, b, target) for every row of ``group`` with all three values, unscaled."""
    corr, metrics = t.spec.correlation, {m.key: m for m in t.spec.metrics}
    out = []
    for row in t.spec.rows:
        cells = [t.cells[(row.key, f"{group}/{k}")] for k in (*corr.mix, corr.target)]
        if all(c.ours is not None for c in cells):
            a, b, y = (c.ours / metrics[k].factor for c, k in zip(cells, (*corr.mix, corr.target)))
            out.append((row.key, a, b, y))
    return out


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < MIN_ROWS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def curves(t: Rendered) -> dict[str, list[tuple[float, float | None]]]:
    """Per group (not missing): (λ, r) for every λ, r None where it is undefined."""
    out = {}
    for g in t.spec.groups:
        if g.missing:
            continue
        vals = row_values(t, g.key)
        a, b, y = (np.array([v[i] for v in vals], dtype=float) for i in (1, 2, 3))
        out[g.key] = [(lam, pearson(lam * a + (1 - lam) * b, y)) for lam in t.spec.correlation.lambdas]
    return out


def best(curve: list[tuple[float, float | None]]) -> tuple[float, float] | None:
    defined = [(lam, r) for lam, r in curve if r is not None]
    return max(defined, key=lambda p: p[1]) if defined else None


def markdown_lines(t: Rendered) -> list[str]:
    """The curve at every tenth of the λ range, and its maximum, per group."""
    corr, cs = t.spec.correlation, curves(t)
    groups = [g for g in t.spec.groups if g.key in cs]
    a, b = corr.mix
    lines = ["", f"## Pearson r across rows: λ·{a} + (1-λ)·{b} against {corr.target}", "",
             "Rows with all three values: " + "; ".join(
                 f"{t.spec.label(g, 'groups', t.scale)}: {len(row_values(t, g.key))}" for g in groups)
             + f" (r is undefined below {MIN_ROWS} rows or without spread).", "",
             "| λ | " + " | ".join(g.label for g in groups) + " |", "|---|" + "---|" * len(groups)]
    lams = corr.lambdas
    shown = sorted({lams[round(i * (len(lams) - 1) / 10)] for i in range(11)})
    for lam in shown:
        rs = [dict(cs[g.key])[lam] for g in groups]
        lines.append(f"| {lam:g} | " + " | ".join("n/a" if r is None else f"{r:.3f}" for r in rs) + " |")
    tops = [best(cs[g.key]) for g in groups]
    lines.append("| best | " + " | ".join("n/a" if p is None else f"r = {p[1]:.3f} at λ = {p[0]:g}" for p in tops)
                 + " |")
    return lines


def csv_text(t: Rendered) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["group", "lambda", "pearson_r", "n_rows"])
    for group, curve in curves(t).items():
        n = len(row_values(t, group))
        for lam, r in curve:
            w.writerow([group, f"{lam:g}", "" if r is None else f"{r:.6f}", n])
    return buf.getvalue()


def plot(t: Rendered, path: Path) -> Path:
    plt = pyplot()
    corr, cs = t.spec.correlation, curves(t)
    fig, ax = plt.subplots(figsize=(7.0, 4.4), layout="constrained")
    drawn = {}
    for i, (group, curve) in enumerate(cs.items()):
        pts = [(lam, r) for lam, r in curve if r is not None]
        axis = next(g for g in t.spec.groups if g.key == group)
        label = f"{short_label(t.spec, axis, 'groups', t.scale) or group} ({len(row_values(t, group))} rows)"
        if pts:  # a line style per group too: a curve on top of another still shows
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=f"C{i % 10}", linestyle=STYLES[i % len(STYLES)],
                    linewidth=2.4 - 1.6 * i / max(len(cs) - 1, 1), label=label)
            drawn[label] = [r for _, r in curve]
    if not ax.lines:
        ax.text(0.5, 0.5, f"fewer than {MIN_ROWS} rows with values in every group", ha="center", va="center",
                transform=ax.transAxes, color="grey")
    note(ax, [said(labels, len(drawn)) for labels in coinciding(drawn)])
    ax.set_xlabel("λ")
    ax.set_ylabel(f"Pearson r with {corr.target}")
    ax.set_ylim(-1.05, 1.05)
    ax.grid(alpha=0.3)
    if ax.lines:
        fig.legend(loc="outside lower center", ncol=min(len(ax.lines), 3), fontsize=8, frameon=False)
    heading(fig, t)
    return save(fig, path)


def applies(spec) -> bool:   # the block protocol (harness.report.tables.blocks)
    return spec.correlation is not None


def write(t: Rendered, base: Path) -> list[Path]:
    """``<table>_correlation.csv`` (every λ) and ``<table>.png``."""
    return write_with_csv(t, base, "correlation", csv_text, plot)
