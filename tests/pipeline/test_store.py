"""The MLflow store (harness.pipeline.record): created crash-safely, an unusable one refused in one
line with its repair, a rerun of a recorded run not logged again (tracking.rerun)."""

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import harness
from harness.pipeline.record import code_state, record_run, run_identity
from harness.pipeline.runner import Pipeline
from harness.pipeline.store import OWNER_TAG, StoreError, mlflow_schema_revisions, open_store
from harness.types import ConfigError
from tests.conftest import CONFIGS, REPO, TINY

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
CREATE = "import sys; from harness.pipeline.store import open_store; open_store(sys.argv[1])"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=ENV, text=True,
                          capture_output=True, timeout=600)


def config(tmp_path: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("config", overrides=[*TINY, "retriever=bm25", f"cache.dir={tmp_path / 'cache'}",
                                            f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}", *overrides])


def recorded(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def half_migrated(db: Path) -> None:
    """A store as a kill during its first migration leaves it: tables of later migrations made,
    their version not stamped (MLflow then re-runs a migration whose column exists)."""
    open_store(f"sqlite:///{db}")
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM alembic_version")
        con.execute("DROP TABLE trace_info")


@pytest.mark.slow
def test_store_creation_killed_at_any_point_then_rerun_records(tmp_path):
    """SIGKILL a process while it creates the store, at staggered points: each kill leaves no store
    or a complete one (never a half-migrated one), and a rerun records the run."""
    interrupted = 0
    for i, delay in enumerate((0.0, 0.1, 0.3, 0.8)):
        db = tmp_path / f"s{i}" / "mlruns.db"
        db.parent.mkdir()
        p = subprocess.Popen([sys.executable, "-c", CREATE, f"sqlite:///{db}"], env=ENV,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while not list(db.parent.glob(".mlruns.db.creating-*")) and p.poll() is None and time.time() < deadline:
            time.sleep(0.005)  # until the schema is being written
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if not db.exists():
            interrupted += bool(list(db.parent.glob(".mlruns.db.creating-*")))
        open_store(f"sqlite:///{db}")  # the rerun: a store left by the kill opens, a missing one is made
        assert not list(db.parent.glob(".mlruns.db.creating-*"))
    assert interrupted, "no kill landed while the store was being created"
    # the last one, through the command line: the run is recorded
    out = cli(*TINY, "retriever=bm25", f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{db}",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(recorded(f"sqlite:///{db}")) == 1


@pytest.mark.parametrize("broken, reason", [
    ("garbage", "not an SQLite database"),
    pytest.param("half", "duplicate column name", marks=pytest.mark.slow)])  # then a whole run
def test_unusable_store_is_one_line_before_any_work(tmp_path, broken, reason):
    db = tmp_path / "mlruns.db"
    if broken == "garbage":
        db.write_text("not a database\n")
    else:
        half_migrated(db)
    args = [*TINY, "retriever=bm25", f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{db}"]
    out = cli(*args, cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line, = out.stderr.strip().splitlines()
    assert line.startswith(f"chunkbench: error: the MLflow store {db} (tracking.uri=sqlite:///{db}) is unusable (")
    assert reason in line and f"move it aside (`mv {db} {db}.broken`; it holds " in line
    assert not (tmp_path / "cache").exists()  # refused before any stage ran
    if broken == "half":  # the repair it names works
        db.rename(f"{db}.broken")
        out = cli(*args, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        assert len(recorded(f"sqlite:///{db}")) == 1


def test_store_in_a_folder_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match=r"cannot be created or locked .*point tracking.uri at a writable folder"):
        open_store(f"sqlite:///{tmp_path / 'file' / 'mlruns.db'}")


def test_rerun_of_a_recorded_run_is_not_logged_again(tmp_path):
    cfg = config(tmp_path)
    result = Pipeline(cfg, log=lambda *_: None).run()
    first, new = record_run(cfg, result, "a")
    assert new
    assert record_run(cfg, result, "a") == (first, False)  # identical config and code: the recorded run
    # where the cache lives and where the run is recorded are not what a run is
    moved = config(tmp_path, f"cache.dir={tmp_path / 'elsewhere'}")
    assert run_identity(moved) == run_identity(cfg)
    other = config(tmp_path, "chunker.size=120")
    assert run_identity(other) != run_identity(cfg)
    again, new = record_run(config(tmp_path, "tracking.rerun=new"), result, "a")
    assert new and again != first
    runs = recorded(cfg.tracking.uri)
    assert len(runs) == 2 and {r.data.tags["run_identity"] for r in runs} == {run_identity(cfg)}


def test_bad_rerun_option_is_refused(tmp_path):
    out = cli(*TINY, "tracking.rerun=sometimes", f"cache.dir={tmp_path / 'cache'}",
              f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == "chunkbench: error: tracking.rerun must be one of skip, new, got 'sometimes'"


def test_code_state_counts_edits_and_untracked_files(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("ignored/\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    clean = code_state(tmp_path)
    assert len(clean) == 40  # the commit alone
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "big.bin").write_text("data")
    assert code_state(tmp_path) == clean  # ignored files are no code
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "table.md").write_text("| a table a run rendered |")
    (tmp_path / "NOTES.md").write_text("notes")
    assert code_state(tmp_path) == clean  # nor are rendered results and prose
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    assert code_state(tmp_path) == clean  # committing them changes no code
    (tmp_path / "new_chunker.py").write_text("y = 2\n")
    untracked = code_state(tmp_path)
    assert untracked.startswith(clean + "+")
    (tmp_path / "new_chunker.py").write_text("y = 3\n")
    assert code_state(tmp_path) not in (untracked, clean)  # its content counts, not only its name
    (tmp_path / "new_chunker.py").unlink()
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_state(tmp_path) not in (untracked, clean)


def test_a_run_whose_process_died_while_logging_is_marked_killed_by_the_next_log(tmp_path):
    cfg = config(tmp_path)
    uri = cfg.tracking.uri
    open_store(uri)
    ghost = subprocess.run([sys.executable, "-c", "import os, sys, mlflow; from harness.pipeline.store import owner_tags; "
                            "mlflow.set_tracking_uri(sys.argv[1]); mlflow.set_experiment('chunkbench'); "
                            "print(mlflow.start_run(tags=owner_tags()).info.run_id, flush=True); os._exit(9)", uri],
                           env=ENV, capture_output=True, text=True, timeout=300)
    ghost_id = ghost.stdout.strip()
    assert ghost.returncode == 9 and [r.info.status for r in recorded(uri)] == ["RUNNING"]
    result = Pipeline(cfg, log=lambda *_: None).run()
    run_id, new = record_run(cfg, result, "a")
    status = {r.info.run_id: r.info.status for r in recorded(uri)}
    assert new and status == {ghost_id: "KILLED", run_id: "FINISHED"}


def test_of_two_processes_logging_the_same_run_one_logs_it(tmp_path, monkeypatch):
    """The check and the log under the store's lock: a process that finds the run logged by
    another while it computed (two `tables run` of one table) records nothing more."""
    from harness.pipeline import record
    from harness.pipeline.record import log_once

    cfg = config(tmp_path)
    result = Pipeline(cfg, log=lambda *_: None).run()
    identity = run_identity(cfg)
    assert record.find_recorded(cfg, identity) is None   # checked before computing: nothing yet
    other, _ = record_run(cfg, result, "the other process")   # ... which logs it meanwhile
    logged = []
    assert log_once(cfg, identity, lambda: logged.append(1) or "x") == (other, False)
    assert not logged and len(recorded(cfg.tracking.uri)) == 1


def other_programs_db(path: Path) -> Path:
    with closing(sqlite3.connect(path)) as con, con:
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        con.execute("INSERT INTO notes (body) VALUES ('mine')")
    return path


def tables_of(db: Path) -> set[str]:
    with closing(sqlite3.connect(db)) as con:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_another_programs_sqlite_file_is_refused_by_a_run_and_by_load_runs(tmp_path):
    """Issue 51, 1a: MLflow migrated its 66 tables into any SQLite file it was pointed at."""
    db = other_programs_db(tmp_path / "their.db")
    out = cli(*TINY, "retriever=bm25", f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{db}",
              cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        f"chunkbench: error: {db} (tracking.uri=sqlite:///{db}) is not an MLflow store (its tables: notes): "
        "ChunkBench neither records into nor converts another program's database; point tracking.uri at an "
        "MLflow store or a new file (e.g. sqlite:///mlruns.db)")
    with pytest.raises(ConfigError, match=rf"^{db} \(load_runs uri=sqlite:///{db}\) is not an MLflow store"):
        harness.load_runs(f"sqlite:///{db}")
    with pytest.raises(StoreError, match="is not an MLflow store"):
        open_store(f"sqlite:///{db}")
    assert tables_of(db) == {"notes"} and not (tmp_path / "cache").exists()


def test_load_runs_never_creates_or_migrates_a_store(tmp_path, monkeypatch):
    """Issue 51, 1a: `load_runs(None)` made ./mlflow.db; a reader migrated an older MLflow's store."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^load_runs uri=sqlite:///mlruns.db: no store at .*mlruns.db \(no such file\)"):
        harness.load_runs(None)
    assert list(tmp_path.iterdir()) == []
    older = tmp_path / "older.db"
    open_store(f"sqlite:///{older}")
    revisions, parents = mlflow_schema_revisions()
    previous = sorted(parents)[0]  # a revision some later one follows: an older MLflow's schema
    with closing(sqlite3.connect(older)) as con, con:
        con.execute("UPDATE alembic_version SET version_num = ?", (previous,))
    with pytest.raises(ConfigError, match=rf"is an older MLflow's \(schema {previous}, .*`mlflow db upgrade sqlite:///{older}`"):
        harness.load_runs(f"sqlite:///{older}")
    with closing(sqlite3.connect(older)) as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchone()[0] == previous
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(ConfigError, match="is an empty file, no MLflow store"):
        harness.load_runs(empty)  # a Path is the SQLite file
    assert empty.stat().st_size == 0


def test_a_run_the_user_has_open_is_no_ghost(tmp_path):
    """Issue 51, 1b: the ghost sweep marked KILLED a run a user had open with MlflowClient; only a run
    ChunkBench started (tagged with its owner) whose owner process is dead is one."""
    from mlflow.tracking import MlflowClient

    cfg = config(tmp_path)
    uri = cfg.tracking.uri
    open_store(uri)
    client = MlflowClient(tracking_uri=uri)
    users = client.create_run(client.create_experiment("notebook")).info.run_id
    mine = client.create_run(client.get_experiment_by_name("notebook").experiment_id,
                             tags={OWNER_TAG: f"{socket.gethostname()}:{os.getpid()}"}).info.run_id  # alive
    result = Pipeline(cfg, log=lambda *_: None).run()
    run_id, _ = record_run(cfg, result, "a")
    status = {r.info.run_id: r.info.status for r in recorded(uri)}
    assert status == {users: "RUNNING", mine: "RUNNING", run_id: "FINISHED"}


def test_two_processes_reading_a_new_store_at_once_both_succeed(tmp_path):
    """Issue 51, 1c: two `challenge` processes on one new store: one died with `duplicate column name:
    step` (MLflow created the store in place, unlocked, when the challenge first read it)."""
    uri = f"sqlite:///{tmp_path / 'new.db'}"
    read = "import sys; from harness.report.tables.records import table_runs; print(len(table_runs(sys.argv[1], 'smoke')))"
    procs = [subprocess.Popen([sys.executable, "-c", read, uri], env=ENV, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-800:] for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["0", "0", "0"]


def test_a_store_missing_a_table_is_one_line_before_any_work(tmp_path):
    """Issue 51, 1d: a store whose `metrics` table was dropped: a 90-line MLflow traceback after the
    whole run, then an error."""
    db = tmp_path / "mlruns.db"
    open_store(f"sqlite:///{db}")
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("DROP TABLE metrics")
    out = cli(*TINY, "retriever=bm25", f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{db}",
              cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        f"chunkbench: error: the MLflow store {db} (tracking.uri=sqlite:///{db}) is unusable (its table metrics "
        f"is missing): move it aside (`mv {db} {db}.broken`; it holds 0 runs) and rerun: a new store is created")
    assert not (tmp_path / "cache").exists()
    with pytest.raises(ConfigError, match=r"is unusable \(its table metrics is missing\)"):
        harness.load_runs(f"sqlite:///{db}")
