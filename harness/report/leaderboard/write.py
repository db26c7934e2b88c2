"""The leaderboard's files (``results/leaderboard/``; columns documented in docs/leaderboard.md):

- ``README.md``: the suite and its version, the ranked table, the datasets with their licences, what
  is left out and why, the win/tie/loss summary and the plot;
- ``leaderboard.csv``: one row per contender at one size, ranked;
- ``matrix.csv``: one row per ordered pair of contenders: on how many datasets the first won, tied,
  lost against the second, or could not tell;
- ``pareto.png``: mean primary score against chunking seconds per MB, the front marked.
"""

from __future__ import annotations

import csv
import io
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from harness.report.leaderboard.measures import VERDICTS, Board, Score, Standing
from harness.report.tables.cells import Rendered
from harness.report.tables.spec import REPO

COLUMNS = ("rank", "contender", "chunker", "label", "family", "size", "mean_rank", "mean_primary", "datasets",
           "wins", "ties", "losses", "inconclusive", "seconds_per_mb", "embed_texts_per_doc", "chunks_per_doc",
           "chunk_tokens_mean", "chunk_tokens_max", "pareto", "status")
COST_KEYS = ("seconds_per_mb", "embed_texts_per_doc", "chunks_per_doc", "chunk_tokens_mean", "chunk_tokens_max")


def _num(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _cell(s: Score) -> str:
    if s.value is None:
        return s.note or "-"
    ci = f" [{s.low:.1f}, {s.high:.1f}]" if s.low is not None and s.high is not None else ""
    return f"{s.value:.1f}{ci}" + (" (saturated)" if s.saturated else "")


def csv_text(board: Board) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    datasets = [d.key for d in board.suite.datasets]
    w.writerow([*COLUMNS, *(f"{d}{part}" for d in datasets for part in ("", "_low", "_high"))])
    for i, s in enumerate(board.standings, 1):
        c = board.suite.contender(s.key)
        status = f"refused: {s.refused}" if s.refused else ("ranked" if len(s.ranks) == len(datasets)
                                                             else f"{len(s.ranks)} of {len(datasets)} datasets")
        row = ["" if s.refused else i, s.key, c.name, c.label, c.family, c.size, _num(s.mean_rank), _num(s.mean_score),
               len(s.ranks), s.wins, s.ties, s.losses, s.inconclusive,
               *(_num(s.cost.get(k), 4 if k == "seconds_per_mb" else 1) for k in COST_KEYS), int(s.pareto), status]
        for d in datasets:
            sc = s.scores[d]
            row += [_num(sc.value), _num(sc.low), _num(sc.high)]
        w.writerow(row)
    return buf.getvalue()


def matrix_csv(board: Board) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["contender", "against", *VERDICTS])
    order = [s.key for s in board.standings]
    for x in order:
        for y in order:
            if (x, y) in board.matrix:
                w.writerow([x, y, *(board.matrix[(x, y)][v] for v in VERDICTS)])
    return buf.getvalue()


def matrix_markdown(board: Board, limit: int = 16) -> list[str]:
    """The matrix as a table (``w/t/l``, inconclusive left out) for the first ``limit`` contenders."""
    keys = [s.key for s in board.standings if not s.refused][:limit]
    if len(keys) < 2:
        return []
    lines = ["| row against column (w/t/l) | " + " | ".join(f"`{k}`" for k in keys) + " |",
             "|---|" + "---|" * len(keys)]
    for x in keys:
        cells = []
        for y in keys:
            m = board.matrix.get((x, y))
            cells.append("" if x == y or m is None else f"{m['win']}/{m['tie']}/{m['loss']}")
        lines.append(f"| `{x}` | " + " | ".join(cells) + " |")
    return lines


def plot(board: Board, path: Path) -> bool:
    """Mean primary score against seconds per MB (log), every ranked contender; the front in red."""
    from harness.report.tables.figure import pyplot, save

    pts = [s for s in board.standings if s.mean_score is not None and "seconds_per_mb" in s.cost
           and len(s.ranks) == len(board.suite.datasets)]
    if len(pts) < 2:
        return False
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), layout="constrained")
    for s in pts:
        x = max(s.cost["seconds_per_mb"], 1e-4)
        ax.scatter([x], [s.mean_score], s=30 if s.pareto else 16, color="C3" if s.pareto else "0.5", zorder=3)
        if s.pareto:
            ax.annotate(s.key, (x, s.mean_score), xytext=(4, 4), textcoords="offset points", fontsize=7, color="C3")
    front = sorted((s for s in pts if s.pareto), key=lambda s: s.cost["seconds_per_mb"])
    ax.step([max(s.cost["seconds_per_mb"], 1e-4) for s in front], [s.mean_score for s in front], where="post",
            color="C3", alpha=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("chunking seconds per MB of documents (log scale)")
    ax.set_ylabel("mean primary score over the datasets (points)")
    ax.grid(alpha=0.3)
    fig.suptitle(f"{board.suite.title} ({board.suite.id}): quality against chunking cost; Pareto front in red",
                 fontsize=10)
    save(fig, path)
    return True


def _commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def _ranked_table(board: Board) -> list[str]:
    ds = board.suite.datasets
    head = ["#", "contender", "size", "mean rank", "mean score", *(d.label for d in ds), "w/t/l/i",
            "s/MB", "embeds/doc", "chunks/doc", "tokens mean/max", "front"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, s in enumerate(board.standings, 1):
        c = board.suite.contender(s.key)
        if s.refused:
            rank, scores = "-", [f"refused: {s.refused[:120]}"] + [""] * (len(ds) - 1)
        else:
            rank, scores = str(i), [_cell(s.scores[d.key]) for d in ds]
        cost = s.cost
        tokens = f"{_num(cost.get('chunk_tokens_mean'), 0)}/{_num(cost.get('chunk_tokens_max'), 0)}"
        lines.append("| " + " | ".join([rank, f"{c.label} (`{c.name}`)", str(c.size), _num(s.mean_rank),
                                        _num(s.mean_score, 1), *scores,
                                        f"{s.wins}/{s.ties}/{s.losses}/{s.inconclusive}",
                                        _num(cost.get("seconds_per_mb"), 3), _num(cost.get("embed_texts_per_doc"), 1),
                                        _num(cost.get("chunks_per_doc"), 1), tokens, "★" if s.pareto else ""]) + " |")
    return lines


def readme(board: Board, rendered: Rendered, overrides: Sequence[str], seconds: float, computed: int) -> str:
    su = board.suite
    lines = [f"# {su.title}", "",
             f"Suite **{su.id}** (`{su.path.relative_to(REPO) if su.path and su.path.is_relative_to(REPO) else su.path}`), "
             f"commit {_commit()}, {time.strftime('%Y-%m-%d')}. Generated by `chunkbench leaderboard`: do not edit.", "",
             f"Every run: {', '.join(f'`{o}`' for o in su.shared)}; context budget {su.budget}. "
             f"Overrides in force (`--set`): {', '.join(f'`{o}`' for o in overrides) or 'none'}. "
             f"{len(su.contenders)} contenders (chunkers at target sizes {', '.join(map(str, su.sizes))} embedder tokens) "
             f"on {len(su.datasets)} datasets; {computed} runs computed by this call, in {seconds:.0f} s.", "",
             "Ranked by the mean of each dataset's rank (1 = best primary score; ties share a rank). Each dataset's "
             "score is its primary metric in points with its bootstrap 95% interval. w/t/l/i: over every other "
             "contender and dataset, paired permutation tests Holm-corrected per dataset (win, tie within "
             f"±{board.margin:g} points, loss, inconclusive). Cost: chunking seconds per MB of documents, texts the "
             "chunker embedded per document, chunks per document, chunk size in embedder tokens; ★ on the "
             "quality-vs-cost Pareto front (`pareto.png`). Columns: docs/leaderboard.md.", ""]
    lines += _ranked_table(board)
    lines += ["", "## Datasets", "", "| dataset | primary metric | also recorded | licence | source |", "|---|---|---|---|---|"]
    lines += [f"| {d.label} (`{d.key}`) | `{d.primary}` | {', '.join(f'`{m}`' for m in d.secondary)} | {d.licence} | {d.source} |"
              for d in su.datasets]
    if su.pending:
        lines += ["", "Not in this version of the suite:", ""] + [f"- {p.label} (`{p.key}`): {p.why}" for p in su.pending]
    refused = [s for s in board.standings if s.refused]
    if su.refused or refused:
        lines += ["", "## Refused or left out", ""]
        lines += [f"- `{s.key}`: refused: {s.refused}" for s in refused]
        lines += [f"- {r.label} (`{r.key}`): {r.why}" for r in su.refused]
    if m := matrix_markdown(board):
        lines += ["", "## Win/tie/loss", "", "Datasets on which the row won/tied/lost against the column "
                  "(inconclusive not shown; every pair in `matrix.csv`).", "", *m]
    lines += ["", "![quality against cost](pareto.png)", ""]
    return "\n".join(lines)


def write(board: Board, rendered: Rendered, out: Path, overrides: Sequence[str], seconds: float, computed: int) -> Path:
    """The leaderboard's files into ``out``; returns the README's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "leaderboard.csv").write_text(csv_text(board), encoding="utf-8")
    (out / "matrix.csv").write_text(matrix_csv(board), encoding="utf-8")
    if not plot(board, out / "pareto.png"):
        (out / "pareto.png").unlink(missing_ok=True)
    path = out / "README.md"
    path.write_text(readme(board, rendered, overrides, seconds, computed), encoding="utf-8")
    return path


__all__ = ["write", "csv_text", "matrix_csv", "Standing"]
