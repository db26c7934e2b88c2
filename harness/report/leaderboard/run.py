"""``chunkbench leaderboard``, end to end: the suite's grid points the record lacks are run (through
the normal pipeline, stage cache and MLflow record, as ``tables run`` runs a paper table's), then the
leaderboard is read from the record and written to ``results/leaderboard/``.

A point already recorded under the same overrides is read, never run again: a second call with a
larger ``--chunkers`` selection runs only the new contenders' points. The suite runs at the ``smoke``
scale in the config's sense (the bundled CPU embedder, bundled data): it is its own benchmark, not a
paper's setup, and the README says which suite version and settings it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.report.challenge.significance import MARGIN
from harness.report.leaderboard import measures, suite as suites
from harness.report.leaderboard.write import write
from harness.report.tables.spec import REPO

OUT = REPO / "results" / "leaderboard"
SCALE = "smoke"   # the bundled embedder and data: what a run's `scale` allows them under


def document_mb(suite: suites.Suite, spec, extra: Sequence[str]) -> dict[str, float]:
    """Each dataset's document text in MB (10^6 characters), the denominator of seconds per MB:
    loaded with the first contender's config of that dataset (the loader's own limits applied)."""
    from hydra.utils import instantiate

    from harness.report.tables import grid

    out = {}
    for d in suite.datasets:
        point = next((p for p in spec.runs(SCALE) if p.group == d.key), None)
        if point is None:
            continue
        cfg = grid.compose(spec, point, SCALE, extra)
        docs = instantiate(cfg.dataset).load().documents
        out[d.key] = sum(len(doc.text) for doc in docs) / 1e6
    return out


def leaderboard(suite: suites.Suite, uri: str, out: Path = OUT, extra: Sequence[str] = (), run: bool = True,
                margin: float = MARGIN, log: Callable[[str], None] = print) -> Path:
    """Runs what the record lacks (``run``), then writes the leaderboard into ``out``; returns its README."""
    from harness.report.tables import grid, render

    t0 = time.perf_counter()
    spec = suites.table(suite)
    outcomes = grid.run_table(spec, SCALE, extra, log) if run else []
    rendered = render.build(spec, uri, SCALE, extra)
    board = measures.board(suite, rendered, uri, document_mb(suite, spec, extra), margin, log)
    path = write(board, rendered, out, grid.config_overrides(extra), time.perf_counter() - t0,
                 sum(o.status == "finished" and not o.note.startswith("already") for o in outcomes))
    log(f"[leaderboard] {suite.id}: {len(board.standings)} contenders on {len(suite.datasets)} datasets -> {path}")
    return path
