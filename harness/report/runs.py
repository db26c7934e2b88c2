"""Tables from recorded runs: a query over MLflow runs, pivoted for reading.

    chunkbench table --uri sqlite:///mlruns.db --experiment chunkbench \
        --rows params.chunker._target_ --cols params.retriever._target_ --metric evidence_recall

A cell holds one setting: besides the row and column parameters, every parameter that differs
between the runs shown and would otherwise put two settings in one cell (a dataset, a budget,
a query limit) becomes part of the row label. The latest run stands for each setting (a rerun
replaces it). Under the tables, what varied and what was held fixed.
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Sequence

import pandas as pd

from harness.types import ConfigError

# Where a run's cache and record live, and what it optimises, change no result: never a setting.
SERVICE_SUFFIXES = ("cache.dir", "cache._target_")
SERVICE_PARAMS = ("params.tracking.uri", "params.tracking.enabled", "params.experiment_name", "params.objective")
MISSING = "-"  # a parameter a run's components do not have (another chunker's knobs)


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


def setting_params(df: pd.DataFrame) -> list[str]:
    """The ``params.*`` columns that describe what was run (not where it was stored)."""
    return sorted(c for c in df.columns if c.startswith("params.") and c not in SERVICE_PARAMS
                  and not c.endswith(SERVICE_SUFFIXES))


def with_missing(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Absent parameters as MISSING: a key of the grouping like any other value."""
    out = df.copy()
    for c in columns:
        out[c] = out[c].astype(object).where(out[c].notna(), MISSING).astype(str)
    return out


def splitting(df: pd.DataFrame, rows: str, cols: str) -> list[str]:
    """The parameters that must join the row label so that no cell mixes settings: taken in
    name order, each one that still takes two values inside a group of the keys so far (a
    parameter that follows from the keys, e.g. a chunker's own knobs, adds nothing)."""
    keys, params = [rows, cols], setting_params(df)
    df = with_missing(df, {rows, cols, *params})
    for p in params:
        if p not in keys and (df.groupby(keys)[p].nunique() > 1).any():
            keys.append(p)
    return keys[2:]


def label(name: str, value: str) -> str:
    value = short_name(value) if name.endswith("_target_") else value
    value = value if value and value.isprintable() else repr(value)  # an empty prefix, a "\n\n" separator
    return f"{name.removeprefix('params.')}={value}"


def pivot(df: pd.DataFrame, rows: str, cols: str, metric: str) -> pd.DataFrame:
    """Latest run per cell, a cell per (row, column, splitting parameters)."""
    extra = splitting(df, rows, cols)
    df = with_missing(df, [rows, cols, *extra])
    latest = df.sort_values("start_time").drop_duplicates([rows, cols, *extra], keep="last")
    latest["_row"] = [" ".join([short_name(r[rows]), *(label(p, r[p]) for p in extra)])
                      for _, r in latest.iterrows()]
    order = list(dict.fromkeys(latest.sort_values([rows, *extra])["_row"]))
    table = latest.pivot(index="_row", columns=cols, values=f"metrics.{metric}").reindex(order)
    table.index = list(table.index)
    table.columns = [short_name(c) for c in table.columns]
    return table


def settings_lines(df: pd.DataFrame, width: int = 110) -> list[str]:
    """``varied:`` every setting parameter with more than one value among the runs (with its
    values), ``held fixed:`` every other one, group by group."""
    params = setting_params(df)
    df = with_missing(df, params)
    varied = [p for p in params if df[p].nunique() > 1]
    lines = ["varied: " + (", ".join(f"{p.removeprefix('params.')} ({', '.join(sorted(set(map(_short, df[p]))))})"
                                     for p in varied) or "nothing")]
    fixed: dict[str, list[str]] = {}
    for p in params:
        if p not in varied and df[p].iloc[0] != MISSING:
            group, _, key = p.removeprefix("params.").partition(".")
            value = df[p].iloc[0]
            fixed.setdefault(group if key else "", []).append(
                short_name(value) if key == "_target_" else label(key or group, value))
    lines.append("held fixed:" + ("" if fixed else " nothing"))
    lines += [textwrap.fill(" ".join(v), width, initial_indent=f"  {g + ': ' if g else ''}",
                            subsequent_indent="    ") for g, v in sorted(fixed.items())]
    return lines


def _short(value: str) -> str:
    return short_name(value) if value.startswith("harness.") else value


DEFAULT_METRICS = ("evidence_recall", "span_recall")


def report(df: pd.DataFrame, experiment: str, rows: str, cols: str, metrics: Sequence[str] = DEFAULT_METRICS) -> str:
    """One titled table per metric, each after a blank line, then what varied and what was held fixed."""
    recorded = sorted(c.removeprefix("metrics.") for c in df.columns if c.startswith("metrics.") and "/" not in c)
    for name in (rows, cols):
        if name not in df.columns:
            raise ConfigError(f"{name}: no run of {experiment} records it (parameters: "
                              f"{', '.join(sorted(c for c in df.columns if c.startswith('params.')))})")
    if unknown := [m for m in metrics if f"metrics.{m}" not in df.columns]:
        named = [m + "".join(f" (did you mean {c}?)" for c in difflib.get_close_matches(m, recorded, 1))
                 for m in unknown]
        raise ConfigError(f"--metric {', '.join(named)}: no run of {experiment} records it; recorded: "
                          f"{', '.join(recorded)}")
    scales = ", ".join(sorted(df["tags.scale"].dropna().unique()))
    tables = "".join(f"\n{metric}  ({experiment}, scale={scales})\n"
                     f"{pivot(df, rows, cols, metric).to_string(float_format='{:.4f}'.format)}\n"
                     for metric in metrics)
    return tables + "\n" + "\n".join(settings_lines(df))

