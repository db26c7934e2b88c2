"""A paper table's grid through `tables run --set profile=cluster` on the real SLURM cluster:
one job array (a task per grid point), each run tagged with its table, point and SLURM task, the
table rendered from the tracking server with the numbers of the same table run in one process,
and resubmitted with nothing queued. With the server down, one line before anything is queued.

MC-indexing Table 6 (chunking error, BM25 on the bundled OHR-Bench paper): 7 grid points at smoke
scale, seconds each."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[1]
TABLE = "mc_indexing/table6"
POINTS = 7  # the table's points at smoke scale (the other 7 are not run at this scale)


def tables(action: str, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "tables", action, "--tables", TABLE, *args],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and proc.returncode:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def ours(results: Path) -> dict[tuple[str, str], str]:
    """The rendered table's own values by (row, column), from its CSV."""
    with open(results / f"{TABLE}.csv", encoding="utf-8") as fh:
        return {(r["row"], r["column"]): r["ours"] for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def cluster_env(slurm, mlflow_server, tmp_path_factory):
    shared = tmp_path_factory.mktemp("shared")
    return shared, {"CHUNKBENCH_SHARED": str(shared), "MLFLOW_TRACKING_URI": mlflow_server}


def submit(launcher: list[str], sweep_dir: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    sets = [a for o in ["profile=cluster", *launcher, f"hydra.sweep.dir={sweep_dir}"] for a in ("--set", o)]
    return tables("run", *sets, env=env, check=check)


def test_a_table_grid_runs_as_one_slurm_array_and_renders(cluster_env, mlflow_server, launcher, sacct, tmp_path):
    shared, env = cluster_env
    out = submit(launcher, shared / "first", env).stdout
    assert f"{POINTS} point(s) at smoke scale: 0 already recorded, {POINTS} to queue" in out
    states = sacct(shared / "first")
    assert len(states) == POINTS and set(states.values()) == {"COMPLETED"}, states
    assert len({job.split("_")[0] for job in states}) == 1  # one array, a task per point

    client = MlflowClient(mlflow_server)
    exp = client.get_experiment_by_name(f"tables/{TABLE}")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == POINTS and {r.info.status for r in runs} == {"FINISHED"}
    assert {r.data.tags["slurm.job_id"] for r in runs} == set(states)  # each run names its array task
    assert {r.data.tags["table"] for r in runs} == {TABLE} and len({r.data.tags["table.run"] for r in runs}) == POINTS

    # the profile's embedder batch size is part of each point's config: render under the same --set
    plain = tables("render", "--uri", mlflow_server, "--out", str(tmp_path / "plain")).stdout
    assert f"[{TABLE}] 0/14 cells" in plain and "runs made with --set profile=cluster: render with the same" in plain
    rendered = tables("render", "--uri", mlflow_server, "--out", str(tmp_path / "cluster"),
                      "--set", "profile=cluster", env=env).stdout
    assert f"[{TABLE}] {POINTS}/14 cells" in rendered
    # the same table run in one process, into a store of its own, renders the same numbers
    local = tmp_path / "local"
    tables("run", "--uri", f"sqlite:///{local}/mlruns.db", "--set", f"cache.dir={local}/cache")
    tables("render", "--uri", f"sqlite:///{local}/mlruns.db", "--out", str(tmp_path / "local_results"))
    assert ours(tmp_path / "cluster") == ours(tmp_path / "local_results")

    # resubmitted: every point is recorded (same config, code and point), so nothing is queued
    again = submit(launcher, shared / "second", env).stdout
    assert f"{POINTS} already recorded, 0 to queue" in again and "nothing to queue" in again
    assert not (shared / "second" / ".submitit").exists()
    assert len(client.search_runs([exp.experiment_id])) == POINTS


def test_a_tracking_server_that_is_down_stops_the_submission_in_one_line(cluster_env, launcher):
    shared, env = cluster_env
    proc = submit(launcher, shared / "down", {**env, "MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "chunkbench: error: tracking.uri=http://127.0.0.1:9: no MLflow server answers within 5 s ([Errno 111] Connection "
        "refused); start one with `make mlflow-server` or fix the address"]
    assert not (shared / "down").exists()  # nothing queued
