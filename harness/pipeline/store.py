"""The local MLflow store: created crash-safely, checked before a run does any work.

MLflow creates and migrates a SQLite store in place on first use; a run killed in the middle
leaves a store every later migration fails on. Here a new store is migrated under a temporary
name and renamed into place under a file lock, an existing one is checked (by its schema
revision, read with sqlite3, else by opening it through MLflow), and one that cannot be used
is reported in one line with its repair. A server URI is left to MLflow.
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import os
import re
import sqlite3
from contextlib import closing, contextmanager
from functools import lru_cache
from pathlib import Path

from harness.types import ConfigError

IDENTITY_TAG = "run_identity"  # record.run_identity(cfg): equal for runs of the same config and code
CONFIG_TAG = "config_identity"  # record.config_identity(cfg): equal for runs of the same config, any code
_HELD: set[str] = set()  # the stores whose lock this process holds (flock is per open file, not reentrant)


def sqlite_path(uri: str | None) -> Path | None:
    """The file of a local SQLite store (``sqlite:///rel.db``, ``sqlite:////abs.db``), else None."""
    return Path(uri[len("sqlite:///"):]) if uri and uri.startswith("sqlite:///") else None


@contextmanager
def store_lock(uri: str):
    """Serialise writers of one local SQLite store: two runs creating it at once would
    race on its schema migration."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    key = str(db.absolute())
    if key in _HELD:  # this process holds it already (record_run -> log_run)
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        _HELD.add(key)
        try:
            yield
        finally:
            _HELD.discard(key)
            fcntl.flock(fh, fcntl.LOCK_UN)


class StoreError(ConfigError):
    """A local MLflow store that exists but cannot be used; the message is one line naming the
    file and what repairs it."""


def _quiet_mlflow() -> None:
    """MLflow logs every schema migration step and experiment creation at INFO."""
    for name in ("mlflow.store.db.utils", "mlflow.tracking.fluent", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _initialise(uri: str, close: bool = False) -> None:
    """Open the store at ``uri`` with MLflow's own code, which creates and migrates its schema as on
    first use; ``close``: then drop the connections MLflow keeps per database URI (a temporary
    name's, before the file is renamed)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    if close and (engine := SqlAlchemyStore._engine_map.pop(uri, None)) is not None:
        engine.dispose()


@lru_cache(maxsize=1)
def mlflow_schema_head() -> str | None:
    """The newest schema revision of the installed MLflow, read from its migration files
    (``revision`` no other ``down_revision`` names) without importing MLflow."""
    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    revisions, parents = set(), set()
    for f in (Path(spec.submodule_search_locations[0]) / "store" / "db_migrations" / "versions").glob("*.py"):
        text = f.read_text(encoding="utf-8")
        if m := re.search(r"^revision\s*=\s*['\"](\w+)['\"]", text, re.M):
            revisions.add(m.group(1))
        if m := re.search(r"^down_revision\s*=\s*(.+)$", text, re.M):
            parents.update(re.findall(r"['\"](\w+)['\"]", m.group(1)))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def store_is_current(db: Path) -> bool:
    """Whether the SQLite store ``db`` is at the installed MLflow's schema, read with sqlite3:
    then it was created whole (creation is atomic, and a migration records its revision only
    once done), and opening it through MLflow to check it would only cost a second."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            row = con.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == mlflow_schema_head()


def recorded_in_sqlite(db: Path, experiment: str, identity: str) -> str | None:
    """A FINISHED, active run with this identity in ``experiment`` of the SQLite store ``db``,
    found with sqlite3 (no MLflow import on a rerun that logs nothing); None if there is none."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            row = con.execute(
                "SELECT r.run_uuid FROM runs r JOIN experiments e ON r.experiment_id = e.experiment_id "
                "JOIN tags t ON t.run_uuid = r.run_uuid WHERE e.name = ? AND t.key = ? AND t.value = ? "
                "AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active' LIMIT 1",
                (experiment, IDENTITY_TAG, identity)).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def _runs_in(db: Path) -> str:
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            return f"{con.execute('SELECT count(*) FROM runs').fetchone()[0]} runs"
    except sqlite3.Error:
        return "no readable runs"


def _unusable(db: Path, uri: str, why: str) -> StoreError:
    first = why.strip().splitlines()[0] if why.strip() else "unknown error"
    if "out-of-date database schema" in why:  # an older MLflow's store, complete: MLflow migrates it
        first = "its schema is an older MLflow's (" + why.split("(", 1)[-1].split(")")[0] + ")"
        fix = f"back it up, then run `mlflow db upgrade {uri}`"
    else:  # a creation or migration cut short: MLflow cannot finish it (`mlflow db upgrade` fails the same way)
        fix = (f"move it aside (`mv {db} {db}.broken`; it holds {_runs_in(db)}) and rerun: "
               f"a new store is created")
    return StoreError(f"the MLflow store {db} (tracking.uri={uri}) is unusable ({first[:300]}): {fix}")


def open_store(uri: str | None, create: bool = True) -> None:
    """Make the local SQLite store at ``uri`` ready, under :func:`store_lock`. A new store is
    created and migrated under a temporary name in its folder and renamed into place, so a run
    killed at any point leaves either no store or a complete one (MLflow migrates in place, and a
    migration cut short leaves tables that make every later migration fail). An existing store
    that does not open raises :class:`StoreError`. ``create=False``: check an existing store
    only. Other URIs (a server) are left to MLflow."""
    db = sqlite_path(uri)
    if db is None or (not create and not db.exists()):
        return
    _quiet_mlflow()
    try:
        with store_lock(uri):
            for stale in db.parent.glob(f".{db.name}.creating-*"):  # a killed creator's (we hold the lock)
                stale.unlink(missing_ok=True)
            if not db.exists() or db.stat().st_size == 0:
                if create:
                    _create(db)
                return
            with open(db, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise _unusable(db, uri, "not an SQLite database")
            if store_is_current(db):
                return
    except OSError as e:
        raise StoreError(f"the MLflow store {db} (tracking.uri={uri}) cannot be created or locked "
                         f"({e.strerror or e}: {e.filename or db}): point tracking.uri at a writable folder") from None
    try:
        with store_lock(uri):
            _initialise(uri)
    except Exception as e:  # SQLAlchemy's or MLflow's error: the store is unusable either way
        raise _unusable(db, uri, f"{type(e).__name__}: {e}") from None


def _create(db: Path) -> None:
    tmp = db.with_name(f".{db.name}.creating-{os.getpid()}")
    try:
        _initialise(f"sqlite:///{tmp}", close=True)
        os.replace(tmp, db)
    finally:
        for leftover in db.parent.glob(f"{tmp.name}*"):  # its -journal, or all of it after an error
            leftover.unlink(missing_ok=True)
