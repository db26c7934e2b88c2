"""Checks made before work starts, each failing with one line that names what is wrong.

Before a sweep is submitted (a Hydra callback, :class:`Preflight`, run by the submitting
process): SLURM's ``sbatch`` and the partition when the launcher is ``submitit_slurm``, the
tracking server when ``tracking.uri`` is one, and that ``cache.dir`` is writable. A cluster
sweep that would fail in every job fails here instead, before any job is queued.

Also before anything runs: every interpolation of the config resolves (an override's
``${...}``), a local tracking store (``sqlite:///...``) can be created and written, and every
OpenAI-compatible server a stage's model is served by answers (:func:`check_llm_servers`).

At the start of each job (:func:`check_job`, on the node that runs it): a job whose config asks
for a GPU (the launcher's ``gpus_per_task``/``gpus_per_node``, or ``embedder.device=cuda...``)
and sees none stops at once rather than running on the CPU for hours. Once its components are
built: a sweep objective the run's metrics do not record (:func:`check_objective`).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.secrets import mask_text
from harness.types import ConfigError

SCALES = ("smoke", "full")   # the scales a table file describes (harness.report.tables.schema.Scale)
SLURM_LAUNCHER = "SlurmLauncher"  # the tail of hydra-submitit-launcher's `_target_`


def folder_takes_files(path: Path) -> None:
    """``path``, or the nearest existing folder above it (where it will be made), takes a file;
    the probe is removed. Raises OSError saying why not."""
    path = path.absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(existing))
    with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-check-") as probe:
        probe.write(bytes(8192))  # a full disk still makes an empty file: only a write fails there
        probe.flush()


def check_cache_dir(dir: str) -> None:
    """The folder, or the nearest existing folder above it (where it will be made), must take a
    file; nothing is left behind, so a run that fails later has created nothing."""
    try:
        folder_takes_files(Path(dir))
    except OSError as e:
        raise ConfigError(f"cache.dir={dir} is not writable ({e.strerror or e}): every job stores its "
                          f"stages there; point cache.dir at a shared folder this user can write") from None


# The stores MLflow 3 opens; a file store (`file:`, a bare folder) it refuses.
DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
SERVER_SCHEMES = ("http", "https", "databricks")


def store_scheme(uri: str, name: str = "tracking.uri") -> str:
    """The scheme of a tracking URI MLflow 3 opens (``sqlite``, ``http``...); any other, or a file
    store, is refused in one line naming ``name`` (the config key or the option) and the schemes."""
    scheme = urllib.parse.urlsplit(uri).scheme.split("+")[0].lower() if "://" in uri or ":" in uri else ""
    if scheme in ("", "file") or len(scheme) == 1:  # a bare path (or a Windows drive letter): a file store
        if os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() == "true":
            return "file"
        raise ConfigError(f"{name}={uri}: a file store, which MLflow 3 refuses; use a SQLite store "
                          f"(tracking.uri=sqlite:///mlruns.db, the default) or a server (http://host:5000)")
    if scheme not in DATABASE_SCHEMES + SERVER_SCHEMES:
        raise ConfigError(f"{name}={uri}: not a tracking store MLflow opens (scheme {scheme!r}); use "
                          f"sqlite:///PATH.db (the default: sqlite:///mlruns.db), http(s)://HOST:PORT, or a database "
                          f"URL ({', '.join(DATABASE_SCHEMES[1:])})")
    if scheme == "sqlite" and (not uri.startswith("sqlite:///") or uri in ("sqlite:///", "sqlite:///:memory:")):
        raise ConfigError(f"{name}={uri}: a SQLite store is a file, sqlite:///relative/path.db or "
                          f"sqlite:////absolute/path.db (the default: sqlite:///mlruns.db)")
    return scheme


def sqlite_file(uri: str) -> Path:
    return Path(uri[len("sqlite:///"):].split("?", 1)[0])


def check_local_store(uri: str) -> None:
    """A tracking URI that is no store MLflow 3 opens, or a SQLite file that cannot be created or
    written, is refused before any stage runs (not after all of them)."""
    if store_scheme(uri) != "sqlite":
        return
    db = sqlite_file(uri)
    try:
        if db.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(db))
        if db.exists():
            if not os.access(db, os.R_OK | os.W_OK):
                raise PermissionError(13, "Permission denied", str(db))
        folder_takes_files(db.parent)
    except OSError as e:
        raise ConfigError(f"tracking.uri={uri}: the store {db} cannot be written ({e.strerror or e}); point "
                          f"tracking.uri at a file in a folder this user can write, or tracking=none") from None


def check_record(uri: str, name: str = "tracking.uri") -> None:
    """The store a verb only reads (table, compare, judge, tables render, ``harness.load_runs``): a
    server must answer, a database's driver must be installed, a local SQLite file must be an MLflow
    store at this MLflow's schema; MLflow would create an empty store at a typo'd path, and create
    or migrate its tables in another program's file."""
    if uri.startswith(("http://", "https://")):
        check_tracking(uri, name=name)
        return
    scheme = store_scheme(uri, name)
    if scheme in DATABASE_SCHEMES[1:]:
        check_driver(uri, name)
    if scheme != "sqlite":
        return
    from harness.pipeline.store import check_readable

    check_readable(uri, name)


def check_driver(uri: str, name: str) -> None:
    """A database URL whose SQLAlchemy driver is not installed: one line naming it (MLflow's is a
    ModuleNotFoundError traceback)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        make_url(uri).get_dialect().import_dbapi()
    except ImportError as e:
        raise ConfigError(f"{name}={mask_text(uri, ())}: the database driver {e.name or 'for it'} is not "
                          f"installed in this environment; install it (e.g. psycopg2-binary for postgresql, "
                          f"pymysql for mysql+pymysql) or use sqlite:///mlruns.db") from None
    except (ArgumentError, NoSuchModuleError) as e:
        raise ConfigError(f"{name}={mask_text(uri, ())}: not a database URL SQLAlchemy opens "
                          f"({str(e).splitlines()[0]})") from None


def check_tracking(uri: str | None, timeout: float = 5.0, name: str = "tracking.uri") -> None:
    """An http(s) tracking URI must answer MLflow's /health; a local store must be one MLflow
    opens and can write (:func:`check_local_store`)."""
    if not uri or not str(uri).strip():
        raise ConfigError("tracking.uri is empty: give a store (sqlite:///mlruns.db, the default), "
                          "or tracking=none to record nothing")
    if not uri.startswith(("http://", "https://")):
        check_local_store(uri)
        return
    request = health_request(uri)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            if r.status == 200:
                return
            reason = f"HTTP {r.status}"
    except urllib.error.HTTPError as e:
        reason = f"HTTP {e.code}" + (" (the server wants a user and password: MLFLOW_TRACKING_USERNAME and "
                                      "MLFLOW_TRACKING_PASSWORD, or http://user:password@host)"
                                      if e.code == 401 else "")
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = str(getattr(e, "reason", e))
    raise ConfigError(f"{name}={mask_text(uri, ())}: no MLflow server answers within {timeout:g} s ({reason}); start one with "
                      f"`make mlflow-server` or fix the address")


def health_request(uri: str) -> urllib.request.Request:
    """The request for the server's ``/health``, with Basic auth as MLflow's client sends it: the
    URI's ``user:password@`` (taken out of the address), else MLFLOW_TRACKING_USERNAME and
    MLFLOW_TRACKING_PASSWORD."""
    parts = urllib.parse.urlsplit(uri)
    user, password = parts.username, parts.password
    if user is None:
        user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    host = parts.netloc.rpartition("@")[2]
    url = urllib.parse.urlunsplit((parts.scheme, host, f"{parts.path.rstrip('/')}/health", "", ""))
    request = urllib.request.Request(url)
    if user is not None:
        token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
    return request


def slurm_partitions() -> list[str]:
    out = subprocess.run(["sinfo", "--noheader", "--format=%R"], capture_output=True, text=True, timeout=30)
    if out.returncode:
        raise ConfigError(f"hydra/launcher=slurm: `sinfo` failed ({out.stderr.strip() or out.returncode}): "
                          f"is slurmctld reachable from this host?")
    return sorted({p.strip() for p in out.stdout.split() if p.strip()})


def check_slurm(launcher: Any) -> None:
    if shutil.which("sbatch") is None:
        raise ConfigError("hydra/launcher=slurm submits with SLURM's sbatch, which is not on PATH: run the sweep "
                          "on a SLURM login node, or use hydra/launcher=local to run its jobs on this machine")
    partition = launcher.get("partition")
    if partition:
        known = slurm_partitions()
        if partition not in known:
            raise ConfigError(f"hydra.launcher.partition={partition}: no such SLURM partition "
                              f"(this cluster has: {', '.join(known) or 'none'})")


def check_interpolations(cfg: DictConfig) -> dict[str, Any]:
    """The run's config (without Hydra's own node) resolved: an interpolation naming no key,
    e.g. ``chunker.size=${nope}``, is named here, before any component is built."""
    try:
        return {k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
                for k in cfg if k != "hydra"}
    except OmegaConfBaseException as e:
        key = getattr(e, "full_key", None) or "the config"
        message = str(e).splitlines()[0]
        if "oc.env" in message or "Environment variable" in message:
            raise ConfigError(f"{key}: {message}; set it in the environment, or override {key}") from None
        raise ConfigError(f"{key}: {message}; an interpolation ${{...}} must name a key of the config "
                          f"(e.g. ${{context.budget}}); quote an override whose value is text with '$'") from None


OPENAI_TARGET = "harness.llm.openai_llm.OpenAILLM"


def served_models(resolved: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(base_url, served model name) -> (the first config key whose model is served there, its
    api_key) for every OpenAI-compatible model a stage will call: the top-level ``llm`` node only
    counts where a component takes it (``llm: ${llm}`` in a chunker, the responder, a metric)."""
    found: dict[tuple[str, str], tuple[str, str | None]] = {}

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("_target_") == OPENAI_TARGET and node.get("base_url"):
                served = str(node.get("served_model") or node.get("model"))
                found.setdefault((str(node["base_url"]), served), (where, node.get("api_key")))
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    for group, node in resolved.items():
        if group != "llm":
            walk(node, group)
    return found


def check_llm_servers(resolved: dict[str, Any], timeout: float = 5.0) -> None:
    """Every OpenAI-compatible server a stage's model is served by answers, and serves that model
    when it lists what it serves (:func:`harness.llm.server.probe`)."""
    from harness.llm.server import probe

    for (base_url, served), (where, api_key) in served_models(resolved).items():
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        if urllib.parse.urlsplit(base_url).scheme not in ("http", "https") or "://" not in base_url:
            raise ConfigError(f"{where}.base_url={base_url}: not an http(s) URL; give the server's address "
                              f"in llm.base_url, e.g. http://127.0.0.1:8000/v1")
        reason, listed = probe(base_url, key, timeout)
        if reason:
            raise ConfigError(f"{where}.base_url={base_url}: no OpenAI-compatible server answers ({reason}); start "
                              f"it (e.g. `vllm serve MODEL --port PORT`) or fix llm.base_url, or use llm=transformers")
        if listed and served not in listed:
            shown = ", ".join(repr(m) for m in listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
            raise ConfigError(f"{where}.served_model={served}: the server at {base_url} serves {shown}, not it; "
                              f"set {where}.served_model to the name it serves (llm.model names the weights)")


def check_objective(objective: str, metrics: Any, overrides: Sequence[str] = ()) -> None:
    """An objective given on the command line (``overrides``: the job's, Hydra's
    ``overrides.task``) must be a name the run's metrics record; the default one is left alone
    (a run of other metrics simply has no objective value)."""
    from harness.metrics.keys import is_recorded, recorded_keys

    explicit = any(o.split("=", 1)[0].lstrip("+~") == "objective" for o in overrides)
    if explicit and not is_recorded(str(objective), metrics):
        raise ConfigError(f"objective={objective}: the run's metrics record no such value; they record "
                          f"{', '.join(sorted(recorded_keys(metrics)))} (and run statistics such as n_chunks)")


def check_submission(cfg: DictConfig) -> None:
    """Everything a sweep's jobs will need that can be checked from the submitting host."""
    resolved = check_interpolations(cfg)
    launcher = cfg.get("hydra", {}).get("launcher", {}) or {}
    if str(launcher.get("_target_", "")).endswith(SLURM_LAUNCHER):
        check_slurm(launcher)
    check_cache_dir(str(cfg.cache.dir))
    if cfg.tracking.enabled:
        check_tracking(cfg.tracking.uri)
    check_llm_servers(resolved)


def gpus_visible() -> int:
    import torch  # only asked when a config wants a GPU

    return torch.cuda.device_count()


def check_job(cfg: DictConfig, launcher: Any = None) -> None:
    """A job that asks for a GPU and has none fails at start; ``launcher`` is the job's
    ``hydra.launcher`` node (None outside Hydra)."""
    if cfg.get("scale") not in SCALES:  # a table's cells are read by it: any other value matches no table
        raise ConfigError(f"scale must be one of {', '.join(SCALES)}, got {cfg.get('scale')!r}")
    asked = []
    for field in ("gpus_per_task", "gpus_per_node"):
        if launcher is not None and (launcher.get(field) or 0) > 0:
            asked.append(f"hydra.launcher.{field}={launcher.get(field)}")
    devices = cuda_devices(cfg)
    asked += [f"{key}={value}" for key, (value, _) in devices.items()]
    if not asked:
        return
    seen = gpus_visible()
    where = f"host {os.uname().nodename}, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}"
    if seen == 0:
        raise ConfigError(f"{', '.join(asked)} asks for a GPU, but this job sees none ({where})")
    beyond = [f"{key}={value}" for key, (value, index) in devices.items() if index >= seen]
    if beyond:
        raise ConfigError(f"{', '.join(beyond)}: this job sees {seen} GPU(s), cuda:0 to cuda:{seen - 1} ({where})")


def cuda_devices(cfg: DictConfig) -> dict[str, tuple[str, int]]:
    """Each ``device`` setting of the run (the embedder's, an LLM's, a role's, a metric's) that
    names a GPU: its path, its value and the GPU's index, one path per value (an interpolation
    repeats the value it points at). ``cuda:x`` is refused by name."""
    try:
        tree = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException:  # a bad interpolation: reported by the stage that reads it
        tree = OmegaConf.to_container(cfg)
    found: dict[str, tuple[str, int]] = {}

    def walk(node: Any, path: str) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            at = f"{path}.{key}" if path else str(key)
            if key == "device" and isinstance(value, str) and value.startswith("cuda"):
                index = value.partition(":")[2] or "0"
                if not index.isdigit():
                    raise ConfigError(f"{at}={value}: not a GPU torch can name (cuda or cuda:N)")
                if all(value != v for v, _ in found.values()):
                    found[at] = (value, int(index))
            elif key != "hydra":
                walk(value, at)

    walk(tree, "")
    return found


class Preflight(Callback):
    """Hydra callback (configs/config.yaml, ``hydra.callbacks.preflight``): checks a run or a
    sweep before it starts; a failed check prints one line and exits with status 2."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    @staticmethod
    def _check(config: DictConfig) -> None:
        try:
            check_submission(config)
        except (ConfigError, OmegaConfBaseException) as e:  # an unset ${oc.env:...} of a profile, too
            print(f"chunkbench: error: {e}".splitlines()[0], file=sys.stderr)
            sys.exit(2)
        except Exception as e:  # Hydra would make it a warning and run with no preflight at all
            print(f"chunkbench: error: the preflight check failed: {type(e).__name__}: {e}".splitlines()[0],
                  file=sys.stderr)
            sys.exit(2)
