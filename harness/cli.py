"""ChunkBench's command line for everything but runs (runs and sweeps: ``python -m harness``).

    python -m harness.cli table [--experiment NAME] [--rows COL] [--cols COL] [--metric M]... [--uri URI]
    python -m harness.cli compare RUN_A RUN_B [--metric M]... [--uri URI]
    python -m harness.cli judge RUN_A RUN_B [--llm-config CHOICE] [--set KEY=VALUE]... [--cache DIR] [--out FILE]
    python -m harness.cli ls [GROUP]
    python -m harness.cli tables {validate,explain,run,render,reproduce} [--tables hichunk/table3,lgmgc/*] [--scale smoke]
    python -m harness.cli tables run --tables ... --scale full --set profile=cluster   (a SLURM job array)
    python -m harness.cli tables plan [--tables ...] [--scale full] [--hardware FILE] [--json]
    python -m harness.cli tables calibrate --hardware FILE [--models ID,...] [--seconds N]
    python -m harness.cli challenge CHUNKER [chunker.ARG=VALUE...] [--tables GLOBS] [--scale smoke] [--name NAME]
    python -m harness.cli challenge CHUNKER dataset=local dataset.path=DIR [--with-llm]   (your own data)

Every subcommand reads one config, ``configs/config.yaml`` composed by Hydra as a run
composes it: the MLflow store is its ``tracking.uri`` (``--uri`` overrides it), the cache
its ``cache.dir`` (``$CHUNKBENCH_CACHE``), the judge's model its ``llm`` group.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.report import registry
from harness.types import ConfigError

# The subcommands' own modules (mlflow, pandas, the LLM backends) load when the subcommand runs,
# so `ls` and `--help` stay quick.


def table(args: argparse.Namespace, cfg) -> None:
    from harness.report.runs import DEFAULT_METRICS, report, runs_frame

    experiment = args.experiment or cfg.experiment_name
    print(report(runs_frame(tracking_uri(args, cfg), experiment), experiment, args.rows, args.cols,
                 args.metric or DEFAULT_METRICS))


def compare(args: argparse.Namespace, cfg) -> None:
    from harness.report.compare import DEFAULT_METRICS, per_query, summary_line
    from harness.report.compare import compare as paired

    uri = tracking_uri(args, cfg)
    a, b = per_query(uri, args.run_a), per_query(uri, args.run_b)
    for metric in args.metric or DEFAULT_METRICS:
        print(summary_line(metric, paired(a, b, metric)))


def judge(args: argparse.Namespace, cfg) -> None:
    from harness.report.compare import per_query
    from harness.report.judge import JUDGE_PROMPT, pair_runs, report
    from harness.report.judge import judge as run_judge

    uri = tracking_uri(args, cfg)
    template = Path(args.prompt_file).read_text(encoding="utf-8") if args.prompt_file else JUDGE_PROMPT
    pairs, skipped = pair_runs(per_query(uri, args.run_a), per_query(uri, args.run_b))
    if not pairs:
        raise SystemExit(f"no query has an answer and a gold answer in both runs ({skipped}): "
                         "were both run with a responder, on the same dataset?")
    llm = build_llm(cfg, args.llm_config)
    records = run_judge(pairs, llm, template, args.temperature, args.max_tokens, args.seed, args.retries)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    print(report(args.run_a, args.run_b, llm.model, skipped, records))


def ls(args: argparse.Namespace, cfg) -> None:
    try:
        rows = registry.listing(args.group)
    except KeyError as e:
        raise ConfigError(e.args[0]) from None
    width = [max(len(r[i]) for r in rows) for i in (0, 1)]
    for i, (group, name, text) in enumerate(rows):
        if i and group != rows[i - 1][0]:
            print()
        print(f"{group:{width[0]}}  {name:{width[1]}}  {text}")


def build_llm(cfg, choice: str):
    """The composed config's ``llm``, built like every run component."""
    from harness.llm.base import LLM
    from harness.pipeline.components import build_component

    llm = build_component(cfg.llm, "llm")
    if not isinstance(llm, LLM):
        raise ConfigError(f"--llm-config {choice}: builds {type(llm).__name__}, not a language model")
    return llm  # with the config's `cache: ${cache}`: every judge call goes through the LLM-call cache


def tables(args: argparse.Namespace, cfg) -> None:
    """The papers' tables: validate the table files, run their grids, render from the record."""
    from harness.report.tables import grid, pareto, render, spec

    if args.action == "calibrate":
        return calibrate(args)
    specs = spec.select(args.tables)
    extra = [*args.set, *([f"tracking.uri={args.uri}"] if args.uri else [])]
    if args.action == "explain":
        return explain(specs, args, extra)
    if args.action == "plan":
        return plan(specs, args, extra)
    if args.action in ("validate", "reproduce"):
        check_tables(specs, args.scale, extra)
    if args.action in ("run", "reproduce"):
        from harness.report.tables import submit

        if submit.uses_launcher(extra):  # profile=cluster, hydra/launcher=...: the points as jobs
            submit.submit(specs, args.scale, extra)
        else:
            preflight(extra)
            for s in specs:
                grid.run_table(s, args.scale, extra)
        for s in specs:
            if s.pairwise:  # MC-indexing Figure 3: judge a's answers against b's, once both runs are recorded
                from harness.report.tables import pairwise

                pairwise.judge_table(s, args.scale, extra)
    if args.action in ("render", "reproduce"):
        uri, out = tracking_uri(args, cfg), Path(args.out or render.RESULTS)
        preflight_store(uri)
        built = [render.build(s, uri, args.scale, extra) for s in specs]
        for t in built:
            render.write(t, out)
            print(f"[{t.spec.id}] {t.filled}/{t.total} cells -> {out / t.spec.id}.md (.csv, .tex"
                  + (", .png)" if t.spec.is_figure or t.spec.series or t.spec.pairwise else ")"))
        # the index lists every table; the ones just rendered are not read from the record again
        done = {t.spec.id: t for t in built}
        every = [done.get(s.id) or render.build(s, uri, args.scale, extra) for s in spec.all_specs()]
        plots = pareto.write(uri, args.scale, out)
        print(f"{len(plots)} quality-vs-cost plot(s) -> {out / 'pareto'}")
        print(f"index -> {render.index(every, plots, out)}")


def challenge(args: argparse.Namespace, cfg) -> None:
    """A chunker into every challengeable paper table beside the baselines, with ranks, paired
    tests, cost and its place on the Pareto fronts (harness.report.challenge)."""
    from harness.report.challenge import challenger, run
    from harness.report.tables import spec
    from harness.report.tables.spec_blocks import parse_sweep

    mine = [a for a in args.args if a.lstrip("+").startswith("chunker.")]
    data = [a for a in args.args if a not in mine]
    ch = challenger.parse(args.chunker, mine, args.name)
    if data and not any(a.startswith("dataset=") for a in data):
        raise ConfigError(f"{' '.join(data)}: not the chunker's arguments (chunker.<arg>=<value>); for your own data "
                          f"give dataset=local dataset.path=DIR, for every run --set OVERRIDE")
    sweep = None
    if args.sweep is not None:  # --sweep chunker.size=100,200 (repeatable: their product); --sweep none: no sweep
        pairs = [a.partition("=") for a in args.sweep if a != "none"]
        bad = [k for k, eq, v in pairs if not eq or not k.startswith("chunker.") or not v]
        if bad:
            raise ConfigError(f"--sweep: chunker.<arg>=<value>,<value>... (or none), got {', '.join(bad)}")
        sweep = parse_sweep({k: [yaml_value(x) for x in v.split(",")] for k, _, v in pairs} or None, "--sweep")
    extra = [*args.set, *([f"tracking.uri={args.uri}"] if args.uri else [])]
    preflight(extra)
    out = Path(args.out) if args.out else run.CHALLENGES / ch.name
    if data:  # the user's data: the challenger beside a standard baseline set (harness.report.challenge.own_data)
        from harness.report.challenge.own_data import own_data_table

        specs = [own_data_table(data, args.with_llm)]
    else:
        specs = spec.select(args.tables)
    path = run.challenge(ch, specs, args.scale, extra, tracking_uri(args, cfg), out, sweep)
    print(f"report -> {path}")


def yaml_value(text: str):
    """``200`` as 200, ``0.5`` as 0.5, ``null`` as None, anything else as the string."""
    from omegaconf import OmegaConf

    return OmegaConf.create({"v": text})["v"] if text else text


def preflight(extra: list[str]) -> None:
    """What a sweep checks before it queues anything (the tracking store or server, cache.dir, the
    LLM servers), checked before a table runs in this process: one line, not a traceback mid-grid."""
    from harness.pipeline.preflight import check_submission

    check_submission(registry.compose(extra))


def preflight_store(uri: str) -> None:
    from harness.pipeline.preflight import check_tracking

    check_tracking(uri)  # a server that does not answer: one line, not MLflow's retries


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
    """Points, jobs, shared stages, each role's work and GPU-hours from the hardware file's
    cited throughput (harness.report.tables.plan); at smoke scale also the cache's CPU seconds."""
    from harness.report.tables.hardware import load_hardware
    from harness.report.tables.measure import load_method_work
    from harness.report.tables.plan import plan_tables
    from harness.report.tables.plan_cost import report, to_json
    from harness.report.tables.plan_render import cached_chunk_seconds, text

    hw = load_hardware(args.hardware)
    plans, planner = plan_tables(specs, args.scale, extra, load_method_work())
    cached = cached_chunk_seconds(plans, planner) if args.scale == "smoke" and planner.composed else None
    r = report(plans, planner, hw, cached)
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


def tracking_uri(args: argparse.Namespace, cfg) -> str:
    uri = args.uri or cfg.tracking.uri
    if not uri:
        raise ConfigError("the config records no runs (tracking.uri is null): give --uri")
    return uri


def overrides(args: argparse.Namespace) -> list[str]:
    """The Hydra overrides a subcommand's options stand for."""
    if args.command != "judge":
        return []
    return [*registry.llm_overrides(args.llm_config, args.set), *([f"cache.dir={args.cache}"] if args.cache else [])]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m harness.cli", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="{table,compare,judge,ls,tables,challenge}")
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--uri", default=None, help="MLflow tracking URI (default: the config's tracking.uri)")
    two_runs = argparse.ArgumentParser(add_help=False, parents=[store])
    two_runs.add_argument("run_a")
    two_runs.add_argument("run_b")

    p = sub.add_parser("table", parents=[store], help="tables of recorded runs: one metric per table",
                       description="The latest finished run per cell. A parameter that differs between runs of "
                                   "one cell (dataset, budget, query limit...) joins the row label; under the "
                                   "tables, what varied and what was held fixed (harness.report.runs).")
    p.add_argument("--experiment", default=None, help="MLflow experiment (default: the config's experiment_name)")
    p.add_argument("--rows", default="params.chunker._target_")
    p.add_argument("--cols", default="params.retriever._target_")
    p.add_argument("--metric", action="append", help="repeatable; default: evidence_recall, span_recall")
    p.set_defaults(run=table)

    p = sub.add_parser("compare", parents=[two_runs], help="paired test of two runs' per-query scores",
                       description="B's mean minus A's with a bootstrap 95% interval and a paired permutation "
                                   "p-value, over the queries both runs scored (harness.report.compare). A run "
                                   "id may be any prefix naming one run, e.g. the 8 characters a run prints.")
    p.add_argument("--metric", action="append", help="repeatable; default: evidence_recall")
    p.set_defaults(run=compare)

    p = sub.add_parser("judge", parents=[two_runs], help="pairwise LLM judge of two runs' answers",
                       description="MC-indexing's pairwise judge (harness.report.judge): win/tie/loss of A.")
    p.add_argument("--llm-config", default="transformers", help="a choice of configs/llm (default: transformers)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="llm config override")
    p.add_argument("--prompt-file", help="a string.Template replacing the Figure 11 prompt")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retries", type=int, default=2)
    p.add_argument("--cache", default=None, help="LLM-call cache folder (default: the config's cache.dir, "
                                                 "$CHUNKBENCH_CACHE or .chunkbench-cache)")
    p.add_argument("--out", help="write one JSON line per judged query here")
    p.set_defaults(run=judge)

    p = sub.add_parser("ls", help="every choice of every config group, with its description")
    p.add_argument("group", nargs="?", help="one group only, e.g. chunker")
    p.set_defaults(run=ls)

    p = sub.add_parser("tables", parents=[store], help="the papers' tables: validate, run, render (make reproduce-tables)")
    p.add_argument("action", choices=("validate", "explain", "run", "render", "reproduce", "plan", "calibrate"),
                   help="validate: check every grid point (at full scale against the paper's declared setup); "
                        "explain: per point, the models, data and settings it runs beside the paper's; "
                        "plan: points, jobs, each role's work and GPU-hours (an estimate from cited throughput); "
                        "calibrate: measure throughput on this GPU node into the hardware file")
    p.add_argument("--tables", default="all", help="comma-separated globs over table ids, e.g. hichunk/table3,lgmgc/*")
    p.add_argument("--scale", default="smoke", choices=("smoke", "full"))
    p.add_argument("--set", action="append", default=[], metavar="OVERRIDE",
                   help="a Hydra override for every run; run/reproduce with profile=cluster or hydra/launcher=... "
                        "queue the grid points as the launcher's jobs (a SLURM array) instead of running them here")
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
    p.set_defaults(run=tables)

    p = sub.add_parser("challenge", parents=[store], help="your chunker in the papers' tables, beside the baselines",
                       description="CHUNKER joins every paper table that takes a challenger (each table file's "
                                   "`challenge` block says how), runs through the normal grid, cache and MLflow "
                                   "record (the baselines' recorded runs are reused), and is reported with its rank, "
                                   "paired permutation tests (Holm-corrected per table), cost and Pareto place "
                                   "(harness.report.challenge).")
    p.add_argument("chunker", help="a chunker config (mine, chunker=mine) or a class: package.module:Class, "
                                   "path/to/file.py:Class")
    p.add_argument("args", nargs="*", metavar="chunker.ARG=VALUE", help="the chunker's arguments; with dataset=... "
                   "(dataset=local dataset.path=DIR) the challenge runs on that data against a standard baseline set")
    p.add_argument("--with-llm", action="store_true", help="own data: LumberChunker, HiChunk and LGMGC join the "
                                                           "baselines (each calls the configured LLM)")
    p.add_argument("--tables", default="all", help="comma-separated globs over table ids (default: all)")
    p.add_argument("--scale", default="smoke", choices=("smoke", "full"))
    p.add_argument("--name", default=None, help="the challenger's row key and report folder (default: the "
                                                "config's or class's name)")
    p.add_argument("--out", default=None, help="the report's folder (default: results/challenges/<name>)")
    p.add_argument("--sweep", action="append", default=None, metavar="chunker.ARG=V1,V2",
                   help="sweep the challenger over these values in every table, instead of the tables' own size "
                        "sweep (repeatable: their product); --sweep none: no sweep")
    p.add_argument("--set", action="append", default=[], metavar="OVERRIDE", help="a Hydra override for every run")
    p.set_defaults(run=challenge)
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    from hydra.errors import HydraException

    args = parser().parse_args(argv)
    try:
        cfg = registry.compose(overrides(args)) if args.command != "ls" else None
        args.run(args, cfg)
    except (ConfigError, HydraException) as e:
        print(f"chunkbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:  # `... | head`: the reader left; say nothing more (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
