"""Checks before a run or a sweep starts: each bad input is one line naming it, before any work
or any job is queued. (The partition check against a real SLURM: tests_cluster.)"""

import os
import socket
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from harness.pipeline import preflight
from harness.types import ConfigError
from tests.conftest import REPO


def test_unwritable_cache_dir_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=r"cache.dir=.*a-file/cache is not writable"):
        preflight.check_cache_dir(str(blocker / "cache"))
    preflight.check_cache_dir(str(tmp_path / "new" / "cache"))  # a folder to be made: its parent is checked
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing made, no probe left


def test_unreachable_tracking_server_is_named():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match=rf"tracking.uri=http://127.0.0.1:{port}: no MLflow server answers"):
        preflight.check_tracking(f"http://127.0.0.1:{port}", timeout=2)
    preflight.check_tracking("sqlite:///mlruns.db")  # local stores need no server


def test_missing_sbatch_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="SLURM's sbatch, which is not on PATH"):
        preflight.check_slurm(OmegaConf.create({"partition": "gpu"}))


def test_unknown_partition_lists_the_known_ones(monkeypatch, tmp_path):
    # sbatch present, sinfo answers with the cluster's partitions (stand-ins for the real tools)
    for tool, out in (("sbatch", ""), ("sinfo", "debug\ngpu\n")):
        (tmp_path / tool).write_text(f"#!/bin/sh\nprintf '{out}'\n")
        (tmp_path / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(ConfigError, match=r"partition=a100: no such SLURM partition \(this cluster has: debug, gpu\)"):
        preflight.check_slurm(OmegaConf.create({"partition": "a100"}))
    preflight.check_slurm(OmegaConf.create({"partition": "gpu"}))


def test_a_job_that_asks_for_a_gpu_and_has_none_stops(make_cfg):
    if preflight.gpus_visible():
        pytest.skip("this machine has a GPU")
    cfg = make_cfg("embedder.device=cuda")
    with pytest.raises(ConfigError, match="embedder.device=cuda asks for a GPU, but this job sees none"):
        preflight.check_job(cfg)
    with pytest.raises(ConfigError, match=r"hydra.launcher.gpus_per_task=1 asks for a GPU"):
        preflight.check_job(make_cfg(), OmegaConf.create({"gpus_per_task": 1}))
    preflight.check_job(make_cfg(), OmegaConf.create({"gpus_per_task": None}))
    with pytest.raises(ConfigError, match=r"^llm.device=cuda:1 asks for a GPU, but this job sees none"):
        preflight.check_job(make_cfg("responder=llm", "llm.device=cuda:1"))


def test_a_gpu_past_those_the_job_sees_is_named(make_cfg, monkeypatch):
    monkeypatch.setattr(preflight, "gpus_visible", lambda: 2)
    cfg = make_cfg("embedder.device=cuda:1", "llm@roles.chunker.llm=transformers", "roles.chunker.llm.device=cuda:7")
    assert preflight.cuda_devices(cfg) == {"embedder.device": ("cuda:1", 1), "roles.chunker.llm.device": ("cuda:7", 7)}
    with pytest.raises(ConfigError, match=r"^roles.chunker.llm.device=cuda:7: this job sees 2 GPU\(s\), cuda:0 to "
                                          r"cuda:1 \(host "):
        preflight.check_job(cfg)
    preflight.check_job(make_cfg("embedder.device=cuda:1"))
    with pytest.raises(ConfigError, match=r"^embedder.device=cuda:one: not a GPU torch can name \(cuda or cuda:N\)$"):
        preflight.check_job(make_cfg("embedder.device=cuda:one"))


def test_slurm_sweep_without_sbatch_stops_before_submitting(tmp_path):
    """The command line a user types: one line on stderr, exit status 2, nothing queued."""
    env = {**os.environ, "PATH": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-m", "harness", "-m", "hydra/launcher=slurm", "chunker=fixed,sentence",
                        f"cache.dir={tmp_path / 'cache'}", "tracking=none", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].startswith("chunkbench: error: hydra/launcher=slurm submits with")
    assert not (tmp_path / "sweep" / ".submitit").exists()


def test_cluster_profile_without_its_environment_names_the_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CHUNKBENCH_SHARED", "MLFLOW_TRACKING_URI")}
    p = subprocess.run([sys.executable, "-m", "harness", "profile=cluster", "hydra/launcher=basic"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert "CHUNKBENCH_SHARED" in p.stderr.strip().splitlines()[-1]


def test_a_scale_no_table_describes_is_refused(make_cfg):
    with pytest.raises(ConfigError, match=r"^scale must be one of smoke, full, got 'huge'$"):
        preflight.check_job(make_cfg("scale=huge"))
    preflight.check_job(make_cfg("scale=full"))


def test_a_tracking_uri_with_credentials_is_asked_with_basic_auth_at_the_bare_address(monkeypatch):
    import base64

    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    request = preflight.health_request("https://ann:p%40ss@mlflow.example:5000/base/")
    assert request.full_url == "https://mlflow.example:5000/base/health"
    assert request.get_header("Authorization") == "Basic " + base64.b64encode(b"ann:p@ss").decode()
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "bob")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "secret")
    request = preflight.health_request("http://mlflow.example:5000")
    assert request.get_header("Authorization") == "Basic " + base64.b64encode(b"bob:secret").decode()
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
    assert preflight.health_request("http://mlflow.example:5000").get_header("Authorization") is None
