"""Is one run's gain over another real? A paired test on the queries both runs scored.

    python -m harness.cli compare RUN_ID_A RUN_ID_B --metric evidence_recall [--uri sqlite:///mlruns.db]

Reads each run's ``per_query.jsonl`` artifact from MLflow, pairs queries by id, and prints both
means, the mean difference (B - A) with its bootstrap 95% interval, and the p-value of a paired
permutation test (``harness.statistics.paired_test``). The runs must share a dataset
configuration; queries present in only one run are counted and left out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.statistics import paired_test


def per_query(uri: str, run_id: str) -> dict[str, dict]:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    mlflow.set_tracking_uri(uri)
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
