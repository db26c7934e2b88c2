"""Is one run's gain over another real? A paired test on the queries both runs scored.

    chunkbench compare RUN_ID_A RUN_ID_B --metric evidence_recall [--uri sqlite:///mlruns.db]

A run id may be shortened to any prefix that names one run of the store (the 8 characters a
run's summary prints).

Reads each run's ``per_query.jsonl`` artifact from MLflow, pairs queries by id, and prints both
means, the mean difference (B - A) with its bootstrap 95% interval, and the p-value of a paired
permutation test (``harness.statistics.paired_test``). The runs must share a dataset
configuration; queries present in only one run are counted and left out.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from harness.statistics import paired_test
from harness.types import ConfigError


def resolve_run_id(uri: str, given: str) -> str:
    """The full id of the one run of the store whose id starts with ``given``."""
    if re.fullmatch(r"[0-9a-f]{32}", given):  # a whole id: nothing to search
        return given
    import mlflow

    client = mlflow.MlflowClient(uri)
    experiments = [e.experiment_id for e in client.search_experiments(view_type=mlflow.entities.ViewType.ALL)]
    found, token = [], None
    while experiments:  # every run of every experiment, page by page (ids are not searchable by prefix)
        page = client.search_runs(experiments, run_view_type=mlflow.entities.ViewType.ALL, max_results=50000,
                                  page_token=token)
        found += [r.info.run_id for r in page if r.info.run_id.startswith(given.lower())]
        token = page.token
        if not token:
            break
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(f"run {given!r}: no run of {uri} has an id starting so; "
                          f"list the runs with `chunkbench table --uri {uri}`")
    raise ConfigError(f"run {given!r} is ambiguous: {len(found)} runs of {uri} start so "
                      f"({', '.join(sorted(f[:12] for f in found)[:5])}...); give more characters")


def per_query(uri: str, run_id: str) -> dict[str, dict]:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    mlflow.set_tracking_uri(uri)
    run_id = resolve_run_id(uri, run_id)
    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="per_query.jsonl")
    return {row["qid"]: row for row in map(json.loads, Path(path).read_text(encoding="utf-8").splitlines())}


def compare(a: dict[str, dict], b: dict[str, dict], metric: str) -> dict[str, float]:
    shared = [q for q in a if q in b]
    if not shared:
        raise SystemExit("the two runs share no query ids: were they run on the same dataset?")
    missing = [name for name, rows in (("A", a), ("B", b)) if metric not in rows[shared[0]]]
    if missing:
        raise SystemExit(f"run {' and '.join(missing)} has no per-query metric {metric!r}")
    out = paired_test([a[q][metric] for q in shared], [b[q][metric] for q in shared])
    out["queries_only_in_one_run"] = float(len(set(a) ^ set(b)))
    return out



DEFAULT_METRICS = ("evidence_recall",)


def summary_line(metric: str, r: dict[str, float]) -> str:
    return (f"{metric}: A {r['mean_a']:.4f}  B {r['mean_b']:.4f}  B-A {r['mean_diff']:+.4f} "
            f"(95% CI {r['ci_low']:+.4f} to {r['ci_high']:+.4f}), paired permutation p = {r['p_value']:.4g}, "
            f"n = {int(r['n'])} queries ({int(r['queries_only_in_one_run'])} only in one run)")
