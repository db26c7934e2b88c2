"""`make test-cluster`: a real single-node SLURM cluster (scripts/slurm_local.sh) and a real MLflow
tracking server on 127.0.0.1, started for the session and stopped at its end."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SLURM = REPO / "scripts" / "slurm_local.sh"
# The local SLURM node has 2 CPUs and no GPU: jobs ask for what it has.
LAUNCHER = ["hydra/launcher=slurm", "hydra.launcher.partition=debug", "hydra.launcher.gpus_per_task=null",
            "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2", "hydra.launcher.timeout_min=20",
            "hydra.launcher.setup=[]"]


@pytest.fixture(scope="session")
def launcher() -> list[str]:
    """The overrides that send a sweep's jobs to the local cluster's one partition."""
    return LAUNCHER


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """The cluster's SLURM_CONF, exported to this process (sbatch, sacct and submitit read it)."""
    env = {**os.environ, "SLURM_LOCAL_DIR": str(tmp_path_factory.mktemp("slurm"))}
    subprocess.run(["bash", str(SLURM), "up"], env=env, check=True)
    conf = subprocess.run(["bash", str(SLURM), "env"], env=env, check=True, capture_output=True,
                          text=True).stdout.strip().split("=", 1)[1]
    os.environ["SLURM_CONF"] = conf
    yield conf
    subprocess.run(["bash", str(SLURM), "down"], env=env, check=False)


def slurm_states(sweep_dir: Path, timeout: float = 120) -> dict[str, str]:
    """sacct's final state of every job submitit submitted for a sweep (its folder names the ids).
    A job whose result is written may still be ending in SLURM: wait for it."""
    ids = sorted({p.name.split("_")[0] for p in (sweep_dir / ".submitit").iterdir() if p.is_dir()})
    deadline = time.time() + timeout
    while True:
        out = subprocess.run(["sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State",
                              *[f"--jobs={i}" for i in ids]], capture_output=True, text=True, check=True).stdout
        states = dict(line.split("|")[:2] for line in out.splitlines() if line)
        if time.time() > deadline or not {"PENDING", "RUNNING", "COMPLETING"} & set(states.values()):
            return states
        time.sleep(1)


@pytest.fixture(scope="session")
def sacct():
    return slurm_states


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """`mlflow server` with a SQLite backend and a proxied artifact root, as `make mlflow-server`."""
    root = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([str(Path(sys.executable).with_name("mlflow")), "server",
                             "--backend-store-uri", f"sqlite:///{root}/mlflow.db",
                             "--artifacts-destination", str(root / "artifacts"),
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT)
    uri = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(1)
    else:
        raise RuntimeError("mlflow server did not answer /health in 120 s")
    yield uri
    proc.terminate()
    proc.wait(timeout=30)
