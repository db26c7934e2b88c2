"""Running a paper table's grid: every grid point through the normal pipeline, cache and MLflow.

Each table is one MLflow experiment (``tables/<paper>/<table>``); each run is tagged with its
grid point (``table.run`` = ``row|group[|param=value]``), so :mod:`harness.report.tables.render`
finds it again in the record, also after a cluster sweep filled the record elsewhere. A point
that cannot be computed (data not available) is recorded as a FAILED run with its reason, and
the rendered cell prints that reason; a point the table file skips at this scale is not run or
recorded at all (its reason is in the file, and the caption prints it).
"""

from __future__ import annotations

import csv
import fnmatch
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness import registry
from harness.report.tables.spec import GridRun, TableSpec
from harness.types import ChunkerFailed, ConfigError, DataError


@dataclass(frozen=True)
class Outcome:
    run: GridRun
    status: str          # "finished" | "failed" | "skipped"
    seconds: float
    note: str = ""


def compose(spec: TableSpec, point: GridRun, scale: str, extra: Sequence[str] = ()):
    """A grid point's config (validate() and run_table() each ask; the registry reads YAML once
    per set of group choices)."""
    return registry.compose([*point.overrides, f"scale={scale}", f"experiment_name={spec.experiment}", *extra])


# The overrides a grid point's run was run with beyond its table file (``--set``), as
# :func:`set_tag` writes them: what ``point_runs`` matches first (harness.report.tables.records).
SET_TAG = "table.set"


def config_overrides(extra: Sequence[str]) -> list[str]:
    """The overrides of ``extra`` that can change what a run computes, sorted, each key's last one,
    ``+``/``++`` dropped: not where it is recorded or cached, Hydra's own (a launcher), the scale
    (the ``table.scale`` tag says it) or a secret (what :func:`harness.pipeline.record.config_identity`
    leaves out too)."""
    from harness.pipeline.record import NOT_CONFIG
    from harness.secrets import is_secret_name

    found: dict[str, str] = {}
    for o in extra:
        key, eq, value = o.lstrip("+").partition("=")
        top = key.lstrip("~").split(".")[0].split("/")[0].split("@")[0]
        if top in (*NOT_CONFIG, "cache", "scale") or is_secret_name(key.rsplit(".", 1)[-1]):
            continue
        found[key] = f"{key}{eq}{value}"
    return sorted(found.values())


def set_tag(extra: Sequence[str]) -> str:
    return json.dumps(config_overrides(extra))


def tags(spec: TableSpec, point: GridRun, scale: str) -> dict[str, str]:
    return {"table": spec.id, "table.run": point.key, "table.row": point.row, "table.group": point.group,
            "table.scale": scale}


def paper_rows(spec: TableSpec) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """The paper's (value, ±) by (row, column), from ``row,column,value[,std]``; None where the
    paper prints none ("-" or empty). A table of no paper (a challenge on the user's own data) has none."""
    if spec.numbers is None:
        return {}
    if not spec.numbers.is_file():
        raise ConfigError(f"table {spec.id}: the paper's numbers file {spec.numbers} does not exist")
    lines = [ln for ln in spec.numbers.read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.startswith("#")]
    reader = csv.DictReader(lines)
    if reader.fieldnames is not None and set(reader.fieldnames) not in ({"row", "column", "value"},
                                                                        {"row", "column", "value", "std"}):
        raise ConfigError(f"{spec.numbers}: columns must be row,column,value or row,column,value,std "
                          f"(got {','.join(reader.fieldnames)})")

    def number(text: str | None, line: int, what: str) -> float | None:
        text = (text or "").strip()
        if text in ("", "-"):
            return None
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{spec.numbers}: line {line}: {what} {text!r} is not a number") from None

    out = {}
    for i, row in enumerate(reader, 2):
        if None in row or row.get("column") is None:
            raise ConfigError(f"{spec.numbers}: line {i} does not have the header's {len(reader.fieldnames)} fields")
        out[(row["row"], row["column"])] = (number(row["value"], i, "value"), number(row.get("std"), i, "std"))
    return out


def paper_numbers(spec: TableSpec) -> dict[tuple[str, str], float | None]:
    """The paper's values by (row, column); None where the paper prints none ("-")."""
    return {k: v for k, (v, _) in paper_rows(spec).items()}


def paper_stds(spec: TableSpec) -> dict[tuple[str, str], float]:
    """The paper's ± by (row, column), where the numbers file transcribes one (its ``std`` column)."""
    return {k: std for k, (_, std) in paper_rows(spec).items() if std is not None}


def unavailable(e: Exception) -> str:
    """A failed point's one line: the error's own text, the first line of an OSError's (e.g. the
    Hub's "cannot find the requested files" for a model that is neither cached nor reachable)."""
    if isinstance(e, OSError):
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else 'unavailable'}"
    return str(e)


def point_tags(spec: TableSpec, point: GridRun, scale: str, cfg, code: str,
               extra: dict[str, str] | None = None) -> dict[str, str]:
    """The tags a grid point's run is recorded with, its identity among them: the same config, code
    and grid point is the same run, whether ``tables run`` computed it here or a cluster job did.
    ``extra``: more that tells it apart (a challenger's name and the digest of its code outside
    the repository)."""
    from harness.pipeline.record import IDENTITY_TAG, run_identity

    found = {**tags(spec, point, scale), **(extra or {})}
    return {**found, IDENTITY_TAG: run_identity(cfg, sorted(found.items()), code)}


def run_point(spec: TableSpec, point: GridRun, scale: str, cfg, code: str,
              extra_tags: dict[str, str] | None = None, overrides: Sequence[str] = ()) -> Outcome:
    """One grid point through the pipeline, recorded (a FAILED run with its one-line reason when a
    model or data cannot be had, or the chunker raised on a document); nothing runs when the same
    point is recorded already (``tracking.rerun=skip``). ``cfg``: the point's composed config;
    ``overrides``: the ``--set`` overrides it was composed with (recorded as :data:`SET_TAG`)."""
    from harness.pipeline.record import IDENTITY_TAG, find_recorded, log_failure, log_once, log_run
    from harness.pipeline.runner import Pipeline

    t0 = time.perf_counter()
    found = point_tags(spec, point, scale, cfg, code, extra_tags)
    if recorded := find_recorded(cfg, found[IDENTITY_TAG]):
        return Outcome(point, "finished", time.perf_counter() - t0, f"already recorded as run {recorded[:8]}")
    # where it ran, and the overrides as given (cfg holds their effect): no part of what it is
    found.update({**job_tags(), SET_TAG: set_tag(overrides)})
    try:
        result = Pipeline(cfg, log=lambda *_: None).run()
    except (ConfigError, DataError, OSError, ChunkerFailed) as e:  # OSError: a model or file that cannot be had
        log_failure(cfg, point.key, unavailable(e), found)
        return Outcome(point, "failed", time.perf_counter() - t0, unavailable(e))
    run_id, logged = log_once(cfg, found[IDENTITY_TAG], lambda: log_run(cfg, result, point.key, found))
    if not logged:  # another process running the same table logged this point while it computed
        return Outcome(point, "finished", time.perf_counter() - t0, f"already recorded as run {run_id[:8]}")
    cached = sum(v == "cached" for v in result.stages.values())
    return Outcome(point, "finished", time.perf_counter() - t0, f"{cached}/{len(result.stages)} stages cached")


def job_tags() -> dict[str, str]:
    """The SLURM job a point ran in (``<array id>_<task>`` for an array's task), else nothing."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return {"slurm.job_id": f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"}
    return {"slurm.job_id": env["SLURM_JOB_ID"]} if env.get("SLURM_JOB_ID") else {}


def progress_line(spec: TableSpec, i: int, n: int, outcome: Outcome) -> str:
    if outcome.note.startswith("already recorded"):
        return f"[{spec.id}] {i}/{n} {outcome.run.key}: {outcome.note}"
    return (f"[{spec.id}] {i}/{n} {outcome.run.key}: {outcome.status} in {outcome.seconds:.1f}s"
            + (f" ({outcome.note.splitlines()[0][:160]})" if outcome.note else ""))


def selected(points: Sequence[GridRun], only: Sequence[str] = ()) -> list[GridRun]:
    """The points whose ``row|group`` matches one of the globs ``only`` (all when empty): a
    table's grid run a row or a column at a time (``tables run --only 'fixed|delucionqa'``)."""
    if not only:
        return list(points)
    return [p for p in points if any(fnmatch.fnmatchcase(f"{p.row}|{p.group}", g) for g in only)]


def run_table(spec: TableSpec, scale: str, extra: Sequence[str] = (), log: Callable[[str], None] = print,
              only: Sequence[str] = ()) -> list[Outcome]:
    """Every grid point of ``spec`` at ``scale`` (those ``only`` selects), one after another in this
    process, recorded in MLflow; one progress line each. (With a launcher,
    :mod:`harness.report.tables.submit` queues them as jobs instead.)"""
    from harness.pipeline.record import code_state

    points = selected(spec.runs(scale), only)
    skipped = [p for p in points if p.skip]
    if skipped:  # known from the table file alone: nothing to compose or record (the caption says why)
        log(f"[{spec.id}] {len(skipped)} grid point(s) not run at {scale} scale")
    outcomes = [Outcome(p, "skipped", 0.0, p.skip) for p in skipped]
    todo = [p for p in points if not p.skip]
    code = code_state()  # once per table: the code does not change under a running table
    for i, point in enumerate(todo, 1):
        outcomes.append(run_point(spec, point, scale, compose(spec, point, scale, extra), code, overrides=extra))
        log(progress_line(spec, i, len(todo), outcomes[-1]))
    log(summary_line(spec, outcomes))
    return outcomes


def summary_line(spec: TableSpec, outcomes: Sequence[Outcome]) -> str:
    count = {s: sum(o.status == s for o in outcomes) for s in ("finished", "failed", "skipped")}
    return (f"[{spec.id}] {count['finished']} finished, {count['failed']} failed, {count['skipped']} "
            f"not run at this scale, in {sum(o.seconds for o in outcomes):.0f}s")
