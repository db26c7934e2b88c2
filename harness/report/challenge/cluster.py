"""A challenge's points as a cluster's jobs: ``challenge CHUNKER ... --set profile=cluster``.

The challenge hands the table sweeper (``hydra/sweeper=table``, as ``tables run`` does) one more
parameter, ``challenge``: the challenger as the command line gave it (:class:`Given`, as JSON).
The sweeper asks :func:`pending` for the jobs: each challenged table's baseline points the record
lacks (whatever code recorded the others: a challenge run here reads those too) and the
challenger's points the record does not hold (its code included). A job finds its point from
``table_point`` and rebuilds the challenged table from the same JSON (:func:`run_job`). The
launcher waits for the jobs; the challenge then reads every point from the record, as it does
after running them itself, and nothing runs on the submitting machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.report.challenge.challenger import Challenger, parse
from harness.report.challenge.rows import Challenged, challenged
from harness.report.tables import grid
from harness.report.tables.spec import REPO, TableSpec, select
from harness.report.tables.spec_blocks import Sweep
from harness.report.tables.submit import SWEEPER, Job, job_arguments, job_overrides, quoted
from harness.types import ConfigError


@dataclass(frozen=True)
class Given:
    """A challenge as its command line gives it: what a job needs to rebuild the challenged tables
    (paths made absolute: a job runs in the repository)."""

    chunker: str
    args: tuple[str, ...] = ()
    name: str | None = None
    sweep: Sweep | None = None            # --sweep (None: the tables' own; (): none)
    data: tuple[str, ...] = ()            # dataset=local dataset.path=DIR: the user's data
    with_llm: bool = False
    no_llm: bool = False                  # --no-llm-baselines

    def challenger(self) -> Challenger:
        return parse(self.chunker, self.args, self.name)

    def specs(self, tables: str | None = None) -> list[TableSpec]:
        """The tables it challenges: the own-data table, or the paper tables ``tables`` selects."""
        from harness.report.challenge.own_data import own_data_table

        return [own_data_table(self.data, self.with_llm)] if self.data else select(tables)

    def for_jobs(self, name: str) -> Given:
        module, colon, cls = self.chunker.rpartition(":")
        chunker = f"{Path(module).expanduser().resolve()}:{cls}" if colon and module.endswith(".py") else self.chunker
        data = tuple(f"dataset.path={Path(a.partition('=')[2]).expanduser().resolve()}"
                     if a.startswith("dataset.path=") else a for a in self.data)
        return Given(chunker, self.args, name, self.sweep, data, self.with_llm, self.no_llm)

    def to_json(self) -> str:
        return json.dumps({"chunker": self.chunker, "args": list(self.args), "name": self.name,
                           "sweep": None if self.sweep is None else [[[p, list(v)] for p, v in product]
                                                                    for product in self.sweep],
                           "data": list(self.data), "with_llm": self.with_llm, "no_llm": self.no_llm},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Given:
        d = json.loads(text)
        sweep = None if d["sweep"] is None else tuple(tuple((p, tuple(v)) for p, v in product)
                                                      for product in d["sweep"])
        return cls(d["chunker"], tuple(d["args"]), d["name"], sweep, tuple(d["data"]), bool(d["with_llm"]),
                   bool(d.get("no_llm")))


def tables_of(given: Given, ids: Sequence[str], ch: Challenger, scale: str) -> list[Challenged]:
    specs = given.specs(",".join(ids))
    return [challenged(s, ch, scale, given.sweep, given.no_llm) for s in specs if s.id in ids]


def pending(ids: Sequence[str], given_json: str, scale: str, arguments: Sequence[str],
            compose: Callable[[list[str]], object], log: Callable[[str], None] = print) -> list[Job]:
    """The jobs of a challenge of tables ``ids`` at ``scale``: the baseline points no run records,
    then the challenger's points not recorded with this code. ``compose``: as the launcher will."""
    from harness.pipeline.record import IDENTITY_TAG, code_state, find_recorded

    given = Given.from_json(given_json)
    ch, code, jobs = given.challenger(), code_state(), []
    arg, tags = quoted(given_json), ch.tags()

    def job(spec: TableSpec, point) -> Job:
        return Job(spec, point, [*job_overrides(spec, point, scale, arguments), f"+table_point.challenge={arg}"])

    for t in tables_of(given, ids, ch, scale):
        mine = [(j, compose(j.overrides)) for j in (job(t.spec, p) for p in t.mine(scale))]
        if not mine:
            continue
        uri = mine[0][1].tracking.uri  # the record the jobs write to, as they compose it
        missing = [job(t.base, p) for p in t.baselines_missing(uri, scale, arguments)]
        queued = [j for j, cfg in mine
                  if not find_recorded(cfg, grid.point_tags(t.spec, j.point, scale, cfg, code, tags)[IDENTITY_TAG])]
        log(f"[{t.spec.id}] challenge {ch.name}: {len(missing)} baseline point(s) and {len(queued)} of the "
            f"challenger's to queue")
        jobs += missing + queued
    return jobs


def run_job(cfg) -> dict:
    """A challenge job's work (``python -m harness`` with ``table_point.challenge`` set): the
    challenged table rebuilt from the JSON (an own-data table exists nowhere else), its point run and
    recorded, with the challenger's tags where it is the challenger's."""
    from harness.pipeline.record import code_state

    where = cfg.table_point
    given = Given.from_json(str(where.challenge))
    ch = given.challenger()
    t = next(iter(tables_of(given, [str(where.table)], ch, cfg.scale)), None)
    point = t and next((p for p in t.spec.runs(cfg.scale) if p.key == where.key), None)
    if point is None:
        raise ConfigError(f"table_point: challenged table {where.table} has no grid point {where.key!r} "
                          f"at {cfg.scale} scale")
    mine = point.row in {f.row for f in t.families}
    spec = t.spec if mine else t.base
    outcome = grid.run_point(spec, point, cfg.scale, cfg, code_state(), ch.tags() if mine else None,
                             job_arguments(where))
    print(grid.progress_line(spec, 1, 1, outcome))
    return {"status": outcome.status, "seconds": outcome.seconds, "note": outcome.note}


def submit(given: Given, ids: Sequence[str], scale: str, extra: Sequence[str]) -> None:
    """The challenge's jobs as one sweep through the launcher ``extra`` selects; returns when
    every job has ended."""
    tables = ",".join(quoted(i) for i in ids)
    cmd = [sys.executable, "-m", "harness", "-m", SWEEPER, f"hydra.sweeper.tables=[{tables}]",
           f"hydra.sweeper.challenge={quoted(given.to_json())}", f"scale={scale}", *extra]
    code = subprocess.run(cmd, cwd=REPO).returncode
    if code == 2:
        raise SystemExit(2)
    if code:
        raise ConfigError(f"the challenge's sweep of {', '.join(ids)} ended with exit status {code} (see above)")
