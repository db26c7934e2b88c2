"""``chunkbench site``: everything results/ publishes as static HTML that opens from disk
(harness.report.site): an index, a page per paper table, plot, challenge report and the leaderboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.common import verb


def add(sub) -> None:
    p = verb(sub, "site", "a browsable static site of results/ (tables, plots, challenges, leaderboard)",
             "chunkbench site --results results --out results/site")
    p.add_argument("--results", type=Path, default=Path("results"), help="the results folder read (default: results)")
    p.add_argument("--out", type=Path, default=None, help="the site's folder, replaced whole "
                                                          "(default: <results>/site)")
    p.set_defaults(run=run, needs_config=False)


def run(args: argparse.Namespace, cfg) -> None:
    from harness.report.site import build

    built = build(args.results, args.out)
    print(f"{len(built.pages)} pages and {len(built.assets)} files in {built.out}; open "
          f"{(built.out / 'index.html').resolve().as_uri()}")
    if built.broken:
        for b in built.broken:
            print(f"broken link: {b}", file=sys.stderr)
        sys.exit(f"chunkbench site: {len(built.broken)} links do not resolve")
