"""Tables from recorded runs: a query over MLflow runs, pivoted for reading.

    python -m harness.cli table --uri sqlite:///mlruns.db --experiment chunkbench \
        --rows params.chunker._target_ --cols params.retriever._target_ --metric evidence_recall
"""

from __future__ import annotations

from collections.abc import Sequence

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



DEFAULT_METRICS = ("evidence_recall", "span_recall")


def report(df: pd.DataFrame, experiment: str, rows: str, cols: str, metrics: Sequence[str] = DEFAULT_METRICS) -> str:
    """One titled table per metric, each after a blank line."""
    scales = ", ".join(sorted(df["tags.scale"].dropna().unique()))
    return "".join(f"\n{metric}  ({experiment}, scale={scales})\n"
                   f"{pivot(df, rows, cols, metric).to_string(float_format='{:.4f}'.format)}\n"
                   for metric in metrics).removesuffix("\n")
