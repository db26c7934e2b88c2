"""A paper table's grid through a Hydra launcher: each grid point one job (on SLURM, one task of
a job array), recorded with its table's tags as ``tables run`` records it in-process.

``tables run --set profile=cluster`` (or any ``hydra/launcher=``) starts ``python -m harness -m
hydra/sweeper=table hydra.sweeper.tables=[...]``: the same command, launcher, callbacks (the
pre-queue :class:`harness.pipeline.preflight.Preflight`) and job entry point as any sweep.
The sweeper (``hydra_plugins/chunkbench/table_sweeper.py``) asks :func:`pending` for the jobs:
points the record already holds (same config, code and grid point) are not queued again. A job
finds its point from ``table_point`` (its table id and key, no part of the run's identity) and
runs it with :func:`harness.report.tables.grid.run_point`. Stages two jobs share are computed
once: the cache's per-key lock makes the second job wait and read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.report.tables import grid
from harness.report.tables.spec import REPO, GridRun, TableSpec, select
from harness.types import ConfigError

SWEEPER = "hydra/sweeper=table"
BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


def quoted(text: str) -> str:
    """``text`` as a quoted Hydra override value (a grid point's key holds ``|`` and ``=``)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Job:
    spec: TableSpec
    point: GridRun
    overrides: list[str]


def job_overrides(spec: TableSpec, point: GridRun, scale: str, arguments: Sequence[str]) -> list[str]:
    """A point's overrides as :func:`grid.compose` gives them, then the point it is and the
    ``--set`` overrides it runs under (its run's ``table.set`` tag: :func:`job_arguments`)."""
    rest = [a for a in arguments if a.split("=", 1)[0] != "scale"]  # said once, as the point's scale
    return [*point.overrides, f"scale={scale}", f"experiment_name={spec.experiment}", *rest,
            f"+table_point.table={quoted(spec.id)}", f"+table_point.key={quoted(point.key)}",
            f"+table_point.set={quoted(grid.set_tag(rest))}"]


def job_arguments(where) -> list[str]:
    """The ``--set`` overrides a job's point runs under (``table_point.set``, :func:`job_overrides`)."""
    return json.loads(str(where.get("set") or "[]"))


def pending(tables: Sequence[str], scale: str, arguments: Sequence[str], compose: Callable[[list[str]], object],
            log: Callable[[str], None] = print) -> list[Job]:
    """The jobs to queue for ``tables`` at ``scale``: every point the table file runs at that scale
    and the record does not hold yet. ``compose``: a job's overrides to its config, as the launcher
    will compose it (Hydra's ``load_sweep_config``)."""
    from harness.pipeline.record import IDENTITY_TAG, code_state, find_recorded

    code, jobs = code_state(), []
    for spec in select(",".join(tables)):
        points = [p for p in spec.runs(scale) if not p.skip]
        queued = recorded = 0
        for point in points:
            overrides = job_overrides(spec, point, scale, arguments)
            cfg = compose(overrides)
            if find_recorded(cfg, grid.point_tags(spec, point, scale, cfg, code)[IDENTITY_TAG]):
                recorded += 1
            else:
                jobs.append(Job(spec, point, overrides))
                queued += 1
        skipped = len(spec.runs(scale)) - len(points)
        log(f"[{spec.id}] {len(points)} point(s) at {scale} scale: {recorded} already recorded, {queued} to queue"
            + (f" ({skipped} not run at this scale)" if skipped else ""))
    return jobs


def report(jobs: Sequence[Job], returns: Sequence, log: Callable[[str], None] = print) -> int:
    """A line per job and per table from the launcher's returns; the number of failed points."""
    from hydra.core.utils import JobStatus

    by_table: dict[str, list[grid.Outcome]] = {}
    for i, (job, ret) in enumerate(zip(jobs, returns, strict=True), 1):
        if ret.status == JobStatus.COMPLETED and isinstance(ret.return_value, dict):
            outcome = grid.Outcome(job.point, **ret.return_value)
        else:  # the job raised before or after its point was recorded
            error = getattr(ret, "_return_value", None)
            outcome = grid.Outcome(job.point, "failed", 0.0, f"job failed: {type(error).__name__}: {error}")
        by_table.setdefault(job.spec.id, []).append(outcome)
        log(grid.progress_line(job.spec, i, len(jobs), outcome))
    specs = {job.spec.id: job.spec for job in jobs}
    for table, outcomes in by_table.items():
        log(grid.summary_line(specs[table], outcomes))
    return sum(o.status == "failed" for outcomes in by_table.values() for o in outcomes)


def run_job(cfg) -> dict:
    """A table job's work (``python -m harness`` with ``table_point`` set): its point, recorded."""
    from harness.pipeline.record import code_state

    where = cfg.table_point
    if not cfg.tracking.enabled:
        raise ConfigError(f"table_point={where.table}|{where.key}: a table's grid point is recorded in MLflow; "
                          f"tracking must be enabled (tracking=local or a server)")
    spec = next((s for s in select(str(where.table)) if s.id == where.table), None)
    point = spec and next((p for p in spec.runs(cfg.scale) if p.key == where.key), None)
    if point is None:
        raise ConfigError(f"table_point: table {where.table} has no grid point {where.key!r} at {cfg.scale} scale")
    outcome = grid.run_point(spec, point, cfg.scale, cfg, code_state(), overrides=job_arguments(where))
    print(grid.progress_line(spec, 1, 1, outcome))
    return {"status": outcome.status, "seconds": outcome.seconds, "note": outcome.note}


def uses_launcher(extra: Sequence[str]) -> bool:
    """Whether ``extra`` (``tables run --set ...``) selects a launcher other than Hydra's in-process
    one: the cluster profile, ``hydra/launcher=slurm`` or ``=local``."""
    from harness.registry import launcher_target

    return launcher_target(extra) != BASIC_LAUNCHER


def submit(specs: Sequence[TableSpec], scale: str, extra: Sequence[str]) -> None:
    """The tables' grids as one sweep through the launcher ``extra`` selects; returns when every job
    has ended (the launcher waits), so a render can follow."""
    ids = ",".join(quoted(s.id) for s in specs)
    cmd = [sys.executable, "-m", "harness", "-m", SWEEPER, f"hydra.sweeper.tables=[{ids}]", f"scale={scale}", *extra]
    code = subprocess.run(cmd, cwd=REPO).returncode
    if code == 2:  # the preflight (or a config error) said why, in one line
        raise SystemExit(2)
    if code:
        raise ConfigError(f"the sweep of {', '.join(s.id for s in specs)} ended with exit status {code} (see above)")
