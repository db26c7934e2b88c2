"""Tables from recorded runs: a query over MLflow runs, pivoted for reading.

    python -m harness.report.runs --uri sqlite:///mlruns.db --experiment chunkbench \
        --rows params.chunker._target_ --cols params.retriever._target_ --metric evidence_recall
"""

from __future__ import annotations

import argparse

import pandas as pd


def runs_frame(uri: str, experiment: str) -> pd.DataFrame:
    """One row per finished run: ``params.*``, ``metrics.*`` and ``tags.*`` columns."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    df = mlflow.search_runs(experiment_names=[experiment], filter_string="attributes.status = 'FINISHED'")
    if df.empty:
        raise SystemExit(f"no finished runs in experiment {experiment!r} at {uri}")
    return df


def short_name(target: str) -> str:
    """harness.chunking.fixed.FixedSizeChunker -> FixedSizeChunker"""
    return str(target).rsplit(".", 1)[-1]


def pivot(df: pd.DataFrame, rows: str, cols: str, metric: str) -> pd.DataFrame:
    """Latest run per (rows, cols) cell."""
    latest = df.sort_values("start_time").groupby([rows, cols], as_index=False).last()
    table = latest.pivot(index=rows, columns=cols, values=f"metrics.{metric}")
    table.index = [short_name(i) for i in table.index]
    table.columns = [short_name(c) for c in table.columns]
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uri", default="sqlite:///mlruns.db")
    ap.add_argument("--experiment", default="chunkbench")
    ap.add_argument("--rows", default="params.chunker._target_")
    ap.add_argument("--cols", default="params.retriever._target_")
    ap.add_argument("--metric", action="append", help="repeatable; default: evidence_recall, span_recall")
    args = ap.parse_args()
    df = runs_frame(args.uri, args.experiment)
    for metric in args.metric or ["evidence_recall", "span_recall"]:
        print(f"\n{metric}  ({args.experiment}, scale={', '.join(sorted(df['tags.scale'].dropna().unique()))})")
        print(pivot(df, args.rows, args.cols, metric).to_string(float_format="{:.4f}".format))


if __name__ == "__main__":
    main()
