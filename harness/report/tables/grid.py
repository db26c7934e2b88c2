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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.report import registry
from harness.report.tables.spec import GridRun, TableSpec
from harness.types import ConfigError, DataError


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


def tags(spec: TableSpec, point: GridRun, scale: str) -> dict[str, str]:
    return {"table": spec.id, "table.run": point.key, "table.row": point.row, "table.group": point.group,
            "table.scale": scale}


def paper_rows(spec: TableSpec) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """The paper's (value, ±) by (row, column), from ``row,column,value[,std]``; None where the
    paper prints none ("-" or empty)."""
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


def run_table(spec: TableSpec, scale: str, extra: Sequence[str] = (), log: Callable[[str], None] = print
              ) -> list[Outcome]:
    """Every grid point of ``spec`` at ``scale``, recorded in MLflow; one progress line each."""
    from harness.pipeline.record import IDENTITY_TAG, code_state, find_recorded, log_failure, log_run, run_identity
    from harness.pipeline.runner import Pipeline

    points = spec.runs(scale)
    skipped = [p for p in points if p.skip]
    if skipped:  # known from the table file alone: nothing to compose or record (the caption says why)
        log(f"[{spec.id}] {len(skipped)} grid point(s) not run at {scale} scale")
    outcomes = [Outcome(p, "skipped", 0.0, p.skip) for p in skipped]
    todo = [p for p in points if not p.skip]
    code = code_state()  # once per table: the code does not change under a running table
    for i, point in enumerate(todo, 1):
        cfg = compose(spec, point, scale, extra)
        t0 = time.perf_counter()
        point_tags = tags(spec, point, scale)
        # the same config, code and grid point already recorded (tracking.rerun=skip): nothing to do
        point_tags[IDENTITY_TAG] = run_identity(cfg, sorted(point_tags.items()), code)
        if recorded := find_recorded(cfg, point_tags[IDENTITY_TAG]):
            outcomes.append(Outcome(point, "finished", time.perf_counter() - t0, f"recorded as run {recorded[:8]}"))
            log(f"[{spec.id}] {i}/{len(todo)} {point.key}: already recorded as run {recorded[:8]}")
            continue
        try:
            result = Pipeline(cfg, log=lambda *_: None).run()
        except (ConfigError, DataError, OSError) as e:  # OSError: a model or file that cannot be had
            log_failure(cfg, point.key, unavailable(e), point_tags)
            outcome = Outcome(point, "failed", time.perf_counter() - t0, unavailable(e))
        else:
            log_run(cfg, result, point.key, point_tags)
            cached = sum(v == "cached" for v in result.stages.values())
            outcome = Outcome(point, "finished", time.perf_counter() - t0, f"{cached}/{len(result.stages)} stages cached")
        outcomes.append(outcome)
        log(f"[{spec.id}] {i}/{len(todo)} {point.key}: {outcome.status} in {outcome.seconds:.1f}s"
            + (f" ({outcome.note.splitlines()[0][:160]})" if outcome.note else ""))
    done = [o for o in outcomes if o.status == "finished"]
    log(f"[{spec.id}] {len(done)} finished, {sum(o.status == 'failed' for o in outcomes)} failed, {len(skipped)} "
        f"not run at this scale, in {sum(o.seconds for o in outcomes):.0f}s")
    return outcomes
