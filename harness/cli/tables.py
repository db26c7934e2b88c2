"""``chunkbench tables ACTION``: the papers' tables (``configs/tables/<paper>/<table>.yaml``):
validate the table files, explain and plan their grids, run them (here, or as a launcher's jobs),
render them from the record."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path

from harness.cli.common import preflight, store_options, tracking_uri, verb
from harness.types import ConfigError


def add(sub) -> None:
    p = verb(sub, "tables", "the papers' tables: validate, run, render (make reproduce-tables)",
             "chunkbench tables reproduce --tables hichunk/table3,lgmgc/* --scale smoke", [store_options()])
    p.add_argument("action", choices=("validate", "explain", "run", "render", "reproduce", "plan", "calibrate",
                                      "sensitivity"),
                   help="validate: check every grid point (at full scale against the paper's declared setup); "
                        "explain: per point, the models, data and settings it runs beside the paper's; "
                        "plan: points, jobs, each role's work and GPU-hours (an estimate from cited throughput); "
                        "calibrate: measure throughput on this GPU node into the hardware file; "
                        "sensitivity: run the table's other protocol readings (its sensitivity: block) and "
                        "write each cell beside them")
    p.add_argument("--tables", default="all", help="comma-separated globs over table ids, e.g. hichunk/table3,lgmgc/*")
    p.add_argument("--scale", default="smoke", choices=("smoke", "full"))
    p.add_argument("--set", action="append", default=[], metavar="OVERRIDE",
                   help="a Hydra override for every run; run/reproduce with profile=cluster or hydra/launcher=... "
                        "queue the grid points as the launcher's jobs (a SLURM array) instead of running them here")
    p.add_argument("--only", default=None, help="run, reproduce, sensitivity: comma-separated globs over a point's "
                   "row|group, e.g. 'fixed|delucionqa' or '*|delucionqa' (default: every point)")
    p.add_argument("--out", default=None, help="where the rendered files go (default: the repository's results/)")
    p.add_argument("--json", action="store_true", help="explain: a JSON list, one object per grid point; "
                                                       "plan: the plan as JSON, with every point's work")
    p.add_argument("--points", action="store_true", help="plan: a line per grid point as well")
    p.add_argument("--hardware", default="h100", help="plan, calibrate: a hardware file (configs/hardware/<name>.yaml "
                                                      "or a path; default h100)")
    p.add_argument("--models", default=None, help="calibrate: comma-separated [llm:|encoder:]<model id>[@tp<n>] "
                                                  "(llm is the default kind); their figures are written into the "
                                                  "--hardware file (calibrate a copy of h100.yaml)")
    p.add_argument("--seconds", type=float, default=60.0, help="calibrate: time limit per model probe (default 60)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, cfg) -> None:
    """The papers' tables: validate the table files, run their grids, render from the record."""
    from harness.report.tables import grid, spec

    if args.action == "calibrate":
        return calibrate(args)
    specs = spec.select(args.tables)
    extra = [*args.set, *([f"tracking.uri={args.uri}"] if args.uri else [])]
    if args.action == "explain":
        return explain(specs, args, extra)
    if args.action == "plan":
        return plan(specs, args, extra)
    if args.action == "sensitivity":
        return sensitivity(specs, args, cfg, extra)
    if args.action in ("validate", "run", "reproduce"):  # `run` too: a point that records no metric the
        check_tables(specs, args.scale, extra)  # table needs would run for nothing; checking composes, builds no model
    if args.action in ("run", "reproduce"):
        from harness.report.tables import submit

        if submit.uses_launcher(extra):  # profile=cluster, hydra/launcher=...: the points as jobs
            if args.only:
                raise ConfigError("--only selects points run here; a launcher's sweep runs every point")
            submit.submit(specs, args.scale, extra)
        else:
            preflight(extra)
            for s in specs:
                grid.run_table(s, args.scale, extra, only=only_globs(args, specs))
        for s in specs:
            if s.pairwise:  # MC-indexing Figure 3: judge a's answers against b's, once both runs are recorded
                from harness.report.tables import pairwise_judge

                pairwise_judge.judge_table(s, args.scale, extra)
    if args.action in ("render", "reproduce"):
        render_tables(specs, args, cfg, extra)


def only_globs(args: argparse.Namespace, specs) -> list[str]:
    """``--only``'s comma-separated ``row|group`` globs (none: every point); one that matches no
    point of the chosen tables at this scale is refused, not run as nothing."""
    import fnmatch

    globs = [g for g in (args.only or "").split(",") if g]
    keys = {f"{p.row}|{p.group}" for s in specs for p in s.runs(args.scale)}
    if unmatched := [g for g in globs if not any(fnmatch.fnmatchcase(k, g) for k in keys)]:
        raise ConfigError(f"--only {','.join(unmatched)}: no point of the chosen tables at {args.scale} scale has a "
                          f"matching row|group (e.g. {min(keys) if keys else 'none'})")
    return globs


def sensitivity(specs, args: argparse.Namespace, cfg, extra: list[str]) -> None:
    """Each table's readings (its sensitivity: block) run, then written beside the table's cells."""
    from harness.report.tables import render
    from harness.report.tables import sensitivity as readings

    out = Path(args.out or render.RESULTS)
    check_out(out, "--out" if args.out else "the results folder")
    preflight(extra)
    for s in specs:
        readings.run(s, args.scale, extra, only_globs(args, specs))
    uri = tracking_uri(args, cfg, extra)
    with writing(out):
        for s in specs:
            print(f"[{s.id}] sensitivity -> {readings.write(readings.build(s, uri, args.scale, extra), out)}")


def render_tables(specs, args: argparse.Namespace, cfg, extra: list[str]) -> None:
    """Each table's files, the quality-vs-cost plots and the index, from the record; ``--out`` is
    checked before anything is read or written, so a bad one costs nothing."""
    from harness.report.tables import costs, index, pareto, render, spec
    from harness.report.tables.records import table_runs

    out = Path(args.out or render.RESULTS)
    check_out(out, "--out" if args.out else "the results folder")
    uri = tracking_uri(args, cfg, extra)
    built = [render.build(s, uri, args.scale, extra) for s in specs]
    with writing(out):
        for t in built:
            render.write(t, out)
            print(f"[{t.spec.id}] {t.filled}/{t.total} cells -> {out / t.spec.id}.md (.csv, .tex"
                  + (", .png)" if t.spec.is_figure or t.spec.series or t.spec.pairwise else ")"))
            for tag in t.elsewhere:  # the cells are empty under these overrides, not unrun
                sets = " ".join(f"--set {o}" for o in json.loads(tag)) or "no --set"
                print(f"  empty cells have runs made with {sets}: render with the same to read them")
        # the index keeps the rows of the tables not rendered now as it holds them (a new table: from the record)
        held = index.load(out, args.scale)
        done = {t.spec.id for t in built}
        for s in spec.all_specs(skip_broken=warn):
            if s.id not in done and s.id not in held:
                try:
                    built.append(render.build(s, uri, args.scale, extra))
                except ConfigError as e:  # another table's points need not compose under this --set
                    warn(str(e))
        plots = pareto.write(uri, args.scale, out)
        print(f"{len(plots)} quality-vs-cost plot(s) -> {out / 'pareto'}")
        everyone = costs.computed(table_runs(uri, args.scale))
        print(f"index -> {index.write(built, everyone, spec.table_ids(), plots, out)}")


def warn(problem: str) -> None:
    """A table file that does not load is left out of the index, said in one line: the tables
    asked for are rendered all the same (asking for it, or `tables validate`, fails on it)."""
    print(f"chunkbench: warning: {problem.rstrip('.')}; left out of the index", file=sys.stderr)


def check_out(out: Path, name: str) -> None:
    from harness.pipeline.preflight import folder_takes_files

    try:
        folder_takes_files(out)
    except OSError as e:
        raise ConfigError(f"{name}={out} cannot be written ({e.strerror or e}): give a folder this user "
                          f"can write (made if missing)") from None


@contextmanager
def writing(out: Path):
    """A write that fails after the check (a full disk, a file put in the way) in one line naming
    the file; what was written before it stays."""
    try:
        yield
    except OSError as e:
        raise ConfigError(f"writing {e.filename or out} failed ({e.strerror or e}); the files listed above "
                          f"were written") from None


def check_tables(specs, scale: str, extra: list[str]) -> None:
    """Every point of every table checked (never stopping at the first), a summary per table;
    a config error, or at full scale an undeclared difference from the paper, fails."""
    from harness.report.tables.checks import check_table

    checks = [check_table(s, scale, extra) for s in specs]
    for c in checks:
        print("\n".join(c.summary()))
    failed = [c for c in checks if c.failed]
    total = sum(len(c.points) for c in checks)
    if failed:
        raise ConfigError(f"{sum(len(c.failed) for c in failed)} of {total} point(s) in {len(failed)} table(s) fail "
                          f"at {scale} scale: {', '.join(c.spec.id for c in failed)} (see above)")
    print(f"{len(specs)} table file(s) valid at {scale} scale ({total} points): {', '.join(s.id for s in specs)}")


def explain(specs, args: argparse.Namespace, extra: list[str]) -> None:
    """Per grid point: each role's model, the dataset's source, the declared settings, beside the
    paper's setup and the deviations (``--json``: a list of objects)."""
    from harness.report.tables.checks import check_table, explain as records, explain_text

    found = [r for s in specs for r in records(check_table(s, args.scale, extra))]
    print(json.dumps(found, indent=1, default=str) if args.json else explain_text(found))


def plan(specs, args: argparse.Namespace, extra: list[str]) -> None:
    """Points, jobs, shared stages, each role's work, GPU-hours (throughput derived from the
    hardware file's cited constants, or cited, or measured), API dollars and the array's
    wall-clock (harness.report.tables.plan); at smoke scale the CPU seconds the cache recorded,
    else the committed results index's."""
    from harness.report.tables.hardware import load_hardware
    from harness.report.tables.measure import load_method_work
    from harness.report.tables.plan import plan_tables
    from harness.report.tables.plan_cost import report, to_json
    from harness.report.tables.plan_render import cached_chunk_seconds, indexed_cpu_seconds, text

    hw = load_hardware(args.hardware)
    plans, planner = plan_tables(specs, args.scale, extra, load_method_work())
    cached = cached_chunk_seconds(plans, planner) if args.scale == "smoke" and planner.composed else None
    r = report(plans, planner, hw, cached)
    if args.scale == "smoke":
        indexed_cpu_seconds(r)
    if not (args.json or args.points):
        for t in r["tables"]:
            del t["points_detail"]
    print(to_json(r) if args.json else text(r))


def calibrate(args: argparse.Namespace) -> None:
    """A short, bounded throughput probe per model on this machine's GPU, written into the
    hardware file as measured figures (harness.report.tables.calibrate)."""
    from harness.report.tables.calibrate import calibrate as probe

    for line in probe(args.hardware, [m for m in (args.models or "").split(",") if m], args.seconds):
        print(line)
