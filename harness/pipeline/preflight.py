"""Checks made before work starts, each failing with one line that names what is wrong.

Before a sweep is submitted (a Hydra callback, :class:`Preflight`, run by the submitting
process): SLURM's ``sbatch`` and the partition when the launcher is ``submitit_slurm``, the
tracking server when ``tracking.uri`` is one, and that ``cache.dir`` is writable. A cluster
sweep that would fail in every job fails here instead, before any job is queued.

At the start of each job (:func:`check_job`, on the node that runs it): a job whose config asks
for a GPU (the launcher's ``gpus_per_task``/``gpus_per_node``, or ``embedder.device=cuda...``)
and sees none stops at once rather than running on the CPU for hours.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from harness.types import ConfigError

SLURM_LAUNCHER = "SlurmLauncher"  # the tail of hydra-submitit-launcher's `_target_`


def check_cache_dir(dir: str) -> None:
    """The folder, or the nearest existing folder above it (where it will be made), must take a
    file; nothing is left behind, so a run that fails later has created nothing."""
    path = Path(dir).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(20, "Not a directory", str(existing))
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-check-"):
            pass
    except OSError as e:
        raise ConfigError(f"cache.dir={dir} is not writable ({e.strerror or e}): every job stores its "
                          f"stages there; point cache.dir at a shared folder this user can write") from None


def check_tracking(uri: str | None, timeout: float = 5.0) -> None:
    """An http(s) tracking URI must answer MLflow's /health; local stores need no check."""
    if not uri or not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout) as r:
            if r.status == 200:
                return
            reason = f"HTTP {r.status}"
    except urllib.error.HTTPError as e:
        reason = f"HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        reason = str(getattr(e, "reason", e))
    raise ConfigError(f"tracking.uri={uri}: no MLflow server answers ({reason}); start one with "
                      f"`make mlflow-server` or fix the address")


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


def check_submission(cfg: DictConfig) -> None:
    """Everything a sweep's jobs will need that can be checked from the submitting host."""
    launcher = cfg.get("hydra", {}).get("launcher", {}) or {}
    if str(launcher.get("_target_", "")).endswith(SLURM_LAUNCHER):
        check_slurm(launcher)
    check_cache_dir(str(cfg.cache.dir))
    if cfg.tracking.enabled:
        check_tracking(cfg.tracking.uri)


def gpus_visible() -> int:
    import torch  # only asked when a config wants a GPU

    return torch.cuda.device_count()


def check_job(cfg: DictConfig, launcher: Any = None) -> None:
    """A job that asks for a GPU and has none fails at start; ``launcher`` is the job's
    ``hydra.launcher`` node (None outside Hydra)."""
    asked = []
    for field in ("gpus_per_task", "gpus_per_node"):
        if launcher is not None and (launcher.get(field) or 0) > 0:
            asked.append(f"hydra.launcher.{field}={launcher.get(field)}")
    device = str(cfg.get("embedder", {}).get("device") or "")
    if device.startswith("cuda"):
        asked.append(f"embedder.device={device}")
    if asked and gpus_visible() == 0:
        raise ConfigError(f"{', '.join(asked)} asks for a GPU, but this job sees none "
                          f"(host {os.uname().nodename}, CUDA_VISIBLE_DEVICES="
                          f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")


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
