"""``chunkbench leaderboard``: every chunker that needs no LLM on the suite's datasets, run where the
record lacks it, ranked with intervals, paired tests and cost (harness.report.leaderboard)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.common import preflight, store_options, tracking_uri, verb
from harness.report.challenge.significance import MARGIN
from harness.types import ConfigError


def add(sub) -> None:
    p = verb(sub, "leaderboard", "the chunking leaderboard: every non-LLM chunker on a fixed suite of datasets",
             "chunkbench leaderboard --suite leaderboard --chunkers 'fixed*,chonkie_*@128' --out /tmp/board",
             [store_options()],
             description="Runs the suite's grid points the record lacks (configs/suite/<name>.yaml: its datasets x "
                         "its contenders at each size) through the normal pipeline, cache and MLflow record, then "
                         "writes the ranked leaderboard, its csv, the win/tie/loss matrix and the quality-vs-cost "
                         "plot (docs/leaderboard.md).")
    p.add_argument("--suite", default="leaderboard", help="a suite's name (configs/suite/NAME.yaml) or a .yaml path")
    p.add_argument("--chunkers", default=None, metavar="GLOBS",
                   help="comma-separated globs over contenders, NAME or NAME@SIZE (default: all)")
    p.add_argument("--datasets", default=None, metavar="GLOBS",
                   help="comma-separated globs over the suite's dataset keys (default: all): a part of the leaderboard")
    p.add_argument("--out", default=None, help="the output folder (default: results/leaderboard)")
    p.add_argument("--render-only", action="store_true", help="run nothing: write the leaderboard from the record")
    p.add_argument("--margin", type=float, default=MARGIN, metavar="POINTS",
                   help=f"the equivalence margin of a tie, in points (default: {MARGIN:g})")
    p.add_argument("--set", action="append", default=[], metavar="OVERRIDE", help="a Hydra override for every run")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, cfg) -> None:
    from harness.report.leaderboard import run as board, suite

    if not args.margin >= 0:
        raise ConfigError(f"--margin: a number of points, 0 or more, got {args.margin}")
    chosen = suite.select(suite.load(args.suite), args.chunkers, args.datasets)
    extra = [*args.set, *([f"tracking.uri={args.uri}"] if args.uri else [])]
    if not args.render_only:
        preflight(extra)
    uri = tracking_uri(args, cfg, extra, reads_only=args.render_only)
    path = board.leaderboard(chosen, uri, Path(args.out) if args.out else board.OUT, extra,
                             run=not args.render_only, margin=args.margin)
    print(f"leaderboard -> {path}")
