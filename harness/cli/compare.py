"""``chunkbench compare RUN_A RUN_B``: a paired test of two runs' per-query scores."""

from __future__ import annotations

import argparse

from harness.cli.common import store_options, tracking_uri, verb


def two_runs() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, parents=[store_options()])
    p.add_argument("run_a")
    p.add_argument("run_b")
    return p


def add(sub) -> None:
    p = verb(sub, "compare", "paired test of two runs' per-query scores", "chunkbench compare 3f2a91c0 77b0e4d1",
             [two_runs()],
             description="B's mean minus A's with a bootstrap 95% interval and a paired permutation p-value, over "
                         "the queries both runs scored (harness.report.compare). A run id may be any prefix naming "
                         "one run, e.g. the 8 characters a run prints.")
    p.add_argument("--metric", action="append", help="repeatable; default: evidence_recall")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, cfg) -> None:
    from harness.report.compare import DEFAULT_METRICS, compare, per_query, summary_line

    uri = tracking_uri(args, cfg)
    a, b = per_query(uri, args.run_a), per_query(uri, args.run_b)
    for metric in args.metric or DEFAULT_METRICS:
        print(summary_line(metric, compare(a, b, metric)))
