"""``chunkbench table``: tables of recorded runs, one metric per table."""

from __future__ import annotations

import argparse

from harness.cli.common import store_options, tracking_uri, verb


def add(sub) -> None:
    p = verb(sub, "table", "tables of recorded runs: one metric per table",
             "chunkbench table --metric evidence_recall --rows params.chunker._target_", [store_options()],
             description="The latest finished run per cell. A parameter that differs between runs of one cell "
                         "(dataset, budget, query limit...) joins the row label; under the tables, what varied "
                         "and what was held fixed (harness.report.runs).")
    p.add_argument("--experiment", default=None, help="MLflow experiment (default: the config's experiment_name)")
    p.add_argument("--rows", default="params.chunker._target_")
    p.add_argument("--cols", default="params.retriever._target_")
    p.add_argument("--metric", action="append", help="repeatable; default: evidence_recall, span_recall")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, cfg) -> None:
    from harness.report.runs import DEFAULT_METRICS, report, runs_frame

    experiment = args.experiment or cfg.experiment_name
    print(report(runs_frame(tracking_uri(args, cfg), experiment), experiment, args.rows, args.cols,
                 args.metric or DEFAULT_METRICS))
