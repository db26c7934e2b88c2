"""``chunkbench challenge CHUNKER``: a chunker beside the papers' baselines in every table that takes
one, with ranks, paired tests, cost and its place on the Pareto fronts (harness.report.challenge)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.common import preflight, store_options, tracking_uri, verb, yaml_value
from harness.report.challenge.significance import MARGIN
from harness.types import ConfigError


def add(sub) -> None:
    p = verb(sub, "challenge", "your chunker in the papers' tables, beside the baselines",
             "chunkbench challenge ~/mine/packer.py:SentencePacker chunker.size=200 --tables 'lgmgc/*'",
             [store_options()],
             description="CHUNKER joins every paper table that takes a challenger (each table file's `challenge` "
                         "block says how), runs through the normal grid, cache and MLflow record (the baselines' "
                         "recorded runs are reused), and is reported with its rank, paired permutation tests "
                         "(Holm-corrected per table), cost and Pareto place (harness.report.challenge).")
    p.add_argument("chunker", help="a chunker config (mine, chunker=mine) or a class: package.module:Class, "
                                   "path/to/file.py:Class")
    p.add_argument("args", nargs="*", metavar="chunker.ARG=VALUE", help="the chunker's arguments; with dataset=... "
                   "(dataset=local dataset.path=DIR) the challenge runs on that data against a standard baseline set")
    p.add_argument("--with-llm", action="store_true", help="own data: LumberChunker, HiChunk and LGMGC join the "
                                                           "baselines (each calls the configured LLM)")
    p.add_argument("--tables", default="all", help="comma-separated globs over table ids (default: all)")
    p.add_argument("--scale", default="smoke", choices=("smoke", "full"))
    p.add_argument("--no-llm-baselines", action="store_true", help="leave out the baseline rows whose chunker calls "
                                                                   "an LLM (the costliest by far); the report says so")
    p.add_argument("--margin", type=float, default=None, metavar="POINTS",
                   help="the equivalence margin: a comparison is a tie when the 95%% interval of the difference lies "
                        "within ±POINTS (hundredths of the metric's scale), inconclusive when it reaches past "
                        f"(default: {MARGIN:g}; docs/metrics.md)")
    p.add_argument("--name", default=None, help="the challenger's row key and report folder (default: the "
                                                "config's or class's name)")
    p.add_argument("--out", default=None, help="the reports' folder (default: results/challenges): a report goes "
                                               "to <out>/<name>/<version>/, every version kept")
    p.add_argument("--sweep", action="append", default=None, metavar="chunker.ARG=V1,V2",
                   help="sweep the challenger over these values in every table, instead of the tables' own size "
                        "sweep (repeatable: their product); --sweep none: no sweep")
    p.add_argument("--set", action="append", default=[], metavar="OVERRIDE", help="a Hydra override for every run")
    p.set_defaults(run=run, more_positionals="args")


def run(args: argparse.Namespace, cfg) -> None:
    """A chunker into every challengeable paper table beside the baselines, with ranks, paired
    tests, cost and its place on the Pareto fronts (harness.report.challenge)."""
    from harness.report.challenge import run as challenge
    from harness.report.challenge.cluster import Given
    from harness.report.tables.spec_blocks import parse_sweep

    mine = [a for a in args.args if a.lstrip("+").startswith("chunker.")]
    data = [a for a in args.args if a not in mine]
    ch = Given(args.chunker, tuple(mine), args.name).challenger()  # a bad challenger stops here, in one line
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
    if args.with_llm and args.no_llm_baselines:
        raise ConfigError("--with-llm adds the LLM baselines, --no-llm-baselines leaves them out: give one")
    margin = MARGIN if args.margin is None else args.margin
    if not margin >= 0:
        raise ConfigError(f"--margin: a number of points, 0 or more, got {args.margin}")
    extra = [*args.set, *([f"tracking.uri={args.uri}"] if args.uri else [])]
    preflight(extra)
    # the user's data: the challenger beside a standard baseline set (harness.report.challenge.own_data)
    given = Given(args.chunker, tuple(mine), ch.name, sweep, tuple(data), args.with_llm, args.no_llm_baselines)
    path = challenge.challenge(given, given.specs(args.tables), args.scale, extra,
                                tracking_uri(args, cfg, extra, reads_only=False),
                                Path(args.out) if args.out else challenge.CHALLENGES, margin=margin)
    print(f"report -> {path}")
