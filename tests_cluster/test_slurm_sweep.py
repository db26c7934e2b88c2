"""A sweep submitted through Hydra's submitit launcher to a real SLURM cluster, recorded in a real
MLflow server, sharing one cache: the same numbers as the sweep run locally, computed once,
served from the cache when resubmitted, and resumed after a job is cancelled mid-run.

Set CLUSTER_REPORT=<file> to write the measured wall times and embedding counts there (JSON).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[1]
# Four jobs that share everything up to retrieval (same chunks, same embeddings), on the four
# one-page OHR-Bench documents: the shared stages must be computed once, by one job.
SWEEP = ["dataset.domains=[news,textbook]", "chunker=fixed", "context=topk", "context.k=1,2,3,5"]
REPORT: dict = {}


def harness(*overrides: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "harness", "-m", *overrides], cwd=REPO, capture_output=True,
                          text=True, **kwargs)
    if check and proc.returncode:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def runs(uri: str, experiment: str) -> dict[str, object]:
    """The experiment's finished runs, by their context.k."""
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return {}
    found = client.search_runs([exp.experiment_id], "attributes.status = 'FINISHED'")
    return {r.data.params["context.k"]: r for r in found}


def quality(run) -> dict[str, float]:
    """The run's metrics without its timings (which differ between any two runs)."""
    return {k: v for k, v in run.data.metrics.items() if "seconds" not in k}


def embedding_misses(run) -> int:
    tag = run.data.tags.get("cache/embeddings", "0 hits, 0 misses")
    return int(re.search(r"(\d+) misses", tag).group(1))


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    uri = f"sqlite:///{root}/mlruns.db"
    t0 = time.perf_counter()
    harness(*SWEEP, f"cache.dir={root}/cache", f"tracking.uri={uri}", "experiment_name=local",
            f"hydra.sweep.dir={root}/multirun")
    REPORT["local_sweep_seconds"] = time.perf_counter() - t0
    return runs(uri, "local")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return tmp_path_factory.mktemp("shared")


def submit(shared: Path, mlflow_server: str, launcher: list[str], name: str, *extra: str, check: bool = True):
    return harness(*SWEEP, *launcher, *extra, f"cache.dir={shared}/cache", f"tracking.uri={mlflow_server}",
                   "experiment_name=cluster", f"hydra.sweep.dir={shared}/{name}", check=check)


def test_slurm_sweep_matches_local_and_computes_shared_stages_once(slurm, mlflow_server, shared, local_sweep, sacct, launcher):
    t0 = time.perf_counter()
    submit(shared, mlflow_server, launcher, "first")
    REPORT["slurm_sweep_seconds"] = time.perf_counter() - t0
    states = sacct(shared / "first")
    assert len(states) == 4 and set(states.values()) == {"COMPLETED"}, states
    remote = runs(mlflow_server, "cluster")
    assert sorted(remote) == sorted(local_sweep) == ["1", "2", "3", "5"]
    for k, run in remote.items():
        assert quality(run) == quality(local_sweep[k]), k
    # every shared stage was computed by one job and read by the three others
    assert sorted(r.data.tags["stage/chunk"] for r in remote.values()) == ["cached"] * 3 + ["computed"]
    assert sorted(r.data.tags["stage/retrieve"] for r in remote.values()) == ["cached"] * 3 + ["computed"]
    # embedding work: the local sweep (one process) embeds each distinct text once
    unique = sum(embedding_misses(r) for r in local_sweep.values())
    REPORT.update(embedding_calls=sum(embedding_misses(r) for r in remote.values()), unique_texts=unique)
    assert unique > 0 and REPORT["embedding_calls"] == unique


def test_resubmitted_sweep_is_served_from_the_cache(slurm, mlflow_server, shared, launcher):
    before = {r.info.run_id for r in runs(mlflow_server, "cluster").values()}
    t0 = time.perf_counter()
    submit(shared, mlflow_server, launcher, "second", "tracking.rerun=new")  # logged again, to show where its stages came from
    REPORT["slurm_resubmission_seconds"] = time.perf_counter() - t0
    client = MlflowClient(mlflow_server)
    exp = client.get_experiment_by_name("cluster")
    new = [r for r in client.search_runs([exp.experiment_id]) if r.info.run_id not in before]
    assert len(new) == 4
    for r in new:
        stages = {k: v for k, v in r.data.tags.items() if k.startswith("stage/")}
        assert stages and set(stages.values()) == {"cached"}, stages


def test_cancelled_job_resumes_from_the_cache_with_identical_metrics(slurm, mlflow_server, tmp_path, sacct, launcher):
    """scancel while the job chunks (a semantic chunker, whose sentence vectors go through the cache
    batch by batch, on a 10-K filing), then the same submission again: it reads what the killed job
    stored and ends with the metrics of an uninterrupted local run."""
    one = ["dataset.domains=[finance,paper]", "chunker=semantic_breakpoint", "context=topk", "context.k=3"]
    args = [*one, *launcher, f"cache.dir={tmp_path}/cache", f"tracking.uri={mlflow_server}",
            "experiment_name=cancelled"]
    first = subprocess.Popen([sys.executable, "-m", "harness", "-m", *args, f"hydra.sweep.dir={tmp_path}/a"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    vectors = tmp_path / "cache" / "embeddings"
    deadline = time.time() + 600
    while not (vectors.exists() and any(p.is_file() for p in vectors.rglob("*"))):  # chunking has begun
        assert first.poll() is None and time.time() < deadline, "the job ended before it began chunking"
        time.sleep(0.2)
    task = sorted(p.name for p in (tmp_path / "a" / ".submitit").iterdir() if p.is_dir())[0]  # <array id>_0
    subprocess.run(["scancel", task.split("_")[0]], check=True)
    assert first.wait(timeout=600) != 0  # the launcher reports the cancelled job
    assert sacct(tmp_path / "a")[task].startswith("CANCELLED")
    assert not runs(mlflow_server, "cancelled")  # nothing recorded for the killed job

    harness(*args, f"hydra.sweep.dir={tmp_path}/b")
    (resumed,) = runs(mlflow_server, "cancelled").values()
    assert resumed.data.tags["stage/load"] == "cached"
    reused = int(re.search(r"(\d+) hits", resumed.data.tags["cache/embeddings"]).group(1))
    assert reused >= 1  # sentence vectors the killed job had stored
    REPORT["resumed_embedding_hits"] = resumed.data.tags["cache/embeddings"]

    local = tmp_path / "local"
    harness(*one, f"cache.dir={local}/cache", f"tracking.uri=sqlite:///{local}/mlruns.db",
            "experiment_name=reference", f"hydra.sweep.dir={local}/multirun")
    assert quality(resumed) == quality(runs(f"sqlite:///{local}/mlruns.db", "reference")["3"])


def teardown_module():
    if path := os.environ.get("CLUSTER_REPORT"):
        Path(path).write_text(json.dumps(REPORT, indent=2))
