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
import socket
import sqlite3
from contextlib import closing, contextmanager
from functools import lru_cache
from pathlib import Path

from harness.types import ConfigError

IDENTITY_TAG = "run_identity"  # record.run_identity(cfg): equal for runs of the same config and code
CONFIG_TAG = "config_identity"  # record.config_identity(cfg): equal for runs of the same config, any code
OWNER_TAG = "chunkbench.owner"  # host:pid of the process that started a run (the ghost sweep reads it)
# In every MLflow store since its first schema: without them a file is no store (with some of them
# missing, a broken one).
CORE_TABLES = ("experiments", "runs", "metrics", "params", "tags")
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


def owner_tags() -> dict[str, str]:
    """The tag every run ChunkBench starts carries from its first moment: a run left RUNNING by a
    dead owner is a ghost (:func:`harness.pipeline.record.end_ghosts`), any other is someone's."""
    return {OWNER_TAG: f"{socket.gethostname()}:{os.getpid()}"}


def owner_is_dead(owner: str) -> bool:
    """Whether the process of an :data:`OWNER_TAG` value is gone. Another host's: every writer logs
    under the store's lock, which the caller holds, so its run is no longer being logged."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):  # not a pid of ours to judge, or alive under another user
        return False
    return False


@lru_cache(maxsize=1)
def mlflow_schema_head() -> str | None:
    """The newest schema revision of the installed MLflow (``revision`` no other
    ``down_revision`` names)."""
    revisions, parents = mlflow_schema_revisions()
    heads = revisions - parents
    return next(iter(heads)) if len(heads) == 1 else None


@lru_cache(maxsize=1)
def mlflow_schema_revisions() -> tuple[frozenset[str], frozenset[str]]:
    """Every schema revision the installed MLflow knows and those a later one follows, read from
    its migration files without importing MLflow."""
    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        return frozenset(), frozenset()
    revisions, parents = set(), set()
    for f in (Path(spec.submodule_search_locations[0]) / "store" / "db_migrations" / "versions").glob("*.py"):
        text = f.read_text(encoding="utf-8")
        if m := re.search(r"^revision\s*=\s*['\"](\w+)['\"]", text, re.M):
            revisions.add(m.group(1))
        if m := re.search(r"^down_revision\s*=\s*(.+)$", text, re.M):
            parents.update(re.findall(r"['\"](\w+)['\"]", m.group(1)))
    return frozenset(revisions), frozenset(parents)


def _tables(db: Path) -> set[str] | None:
    """The tables of the SQLite file ``db``, read with sqlite3; None when it cannot be read."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return None


def _revision(db: Path) -> str | None:
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            row = con.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def store_is_current(db: Path) -> bool:
    """Whether the SQLite store ``db`` is at the installed MLflow's schema, read with sqlite3:
    then it was created whole (creation is atomic, and a migration records its revision only
    once done), and opening it through MLflow to check it would only cost a second."""
    tables = _tables(db)
    return tables is not None and set(CORE_TABLES) <= tables and _revision(db) == mlflow_schema_head()


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


def _unusable(db: Path, uri: str, why: str, name: str = "tracking.uri") -> StoreError:
    first = why.strip().splitlines()[0] if why.strip() else "unknown error"
    if "out-of-date database schema" in why:  # an older MLflow's store, complete: MLflow migrates it
        first = "its schema is an older MLflow's (" + why.split("(", 1)[-1].split(")")[0] + ")"
        fix = f"back it up, then run `mlflow db upgrade {uri}`"
    else:  # a creation or migration cut short: MLflow cannot finish it (`mlflow db upgrade` fails the same way)
        fix = (f"move it aside (`mv {db} {db}.broken`; it holds {_runs_in(db)}) and rerun: "
               f"a new store is created")
    return StoreError(f"the MLflow store {db} ({name}={uri}) is unusable ({first[:300]}): {fix}")


def _refusal(db: Path, uri: str, name: str = "tracking.uri") -> StoreError | None:
    """Why the existing, non-empty file ``db`` is no store to open, read with sqlite3 (never
    through MLflow, which would migrate any SQLite file into one); None when it is an MLflow store
    of any version with its core tables, or an SQLite file with no tables (nothing to lose)."""
    with open(db, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            return _unusable(db, uri, "not an SQLite database", name)
    tables = _tables(db)
    if tables is None:
        return _unusable(db, uri, "an SQLite file sqlite3 cannot read", name)
    if not tables:
        return None
    if not ({"experiments", "runs"} <= tables or _revision(db) in mlflow_schema_revisions()[0]):
        names = sorted(tables)
        held = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return StoreError(f"{db} ({name}={uri}) is not an MLflow store (its tables: {held}): ChunkBench neither "
                          f"records into nor converts another program's database; point {name} at an MLflow "
                          f"store or a new file (e.g. sqlite:///mlruns.db)")
    if missing := [t for t in CORE_TABLES if t not in tables]:
        return _unusable(db, uri, f"its table{'s' * (len(missing) > 1)} {', '.join(missing)} "
                                  f"{'are' if len(missing) > 1 else 'is'} missing", name)
    return None


def open_store(uri: str | None, create: bool = True) -> None:
    """Make the local SQLite store at ``uri`` ready, under :func:`store_lock`. A new store is
    created and migrated under a temporary name in its folder and renamed into place, so a run
    killed at any point leaves either no store or a complete one (MLflow migrates in place, and a
    migration cut short leaves tables that make every later migration fail). An existing store
    that does not open, or a file that is no MLflow store, raises :class:`StoreError`.
    ``create=False``: check an existing store only. Other URIs (a server) are left to MLflow."""
    db = sqlite_path(uri)
    if db is None or (not create and not db.exists()):
        return
    _quiet_mlflow()
    try:
        with store_lock(uri):
            for stale in db.parent.glob(f".{db.name}.creating-*"):  # a killed creator's (we hold the lock)
                stale.unlink(missing_ok=True)
            if not db.exists() or db.stat().st_size == 0 or _tables(db) == set():
                if create:
                    _create(db)
                return
            if (refused := _refusal(db, uri)) is not None:
                raise refused
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


def check_readable(uri: str, name: str) -> None:
    """Refuse, in one line naming the setting ``name`` (``--uri``, ``load_runs uri``), a local SQLite
    store that MLflow could read only by creating or migrating it: a missing or empty file, another
    program's, a broken store, or one at another MLflow's schema. A server URI is left to MLflow."""
    db = sqlite_path(uri)
    if db is None:
        return
    if not db.is_file():
        raise StoreError(f"{name}={uri}: no store at {db.absolute()} ({'a folder' if db.is_dir() else 'no such file'});"
                         f" give the store the runs were recorded in (make runs with `chunkbench run`)")
    if db.stat().st_size == 0 or _tables(db) == set():
        raise StoreError(f"{name}={uri}: {db} is an empty file, no MLflow store: no run was recorded there")
    if (refused := _refusal(db, uri, name)) is not None:
        raise refused
    revision, head = _revision(db), mlflow_schema_head()
    if revision != head:
        import mlflow

        if revision in mlflow_schema_revisions()[0]:
            raise StoreError(f"the MLflow store {db} ({name}={uri}) is an older MLflow's (schema {revision}, this "
                             f"MLflow's is {head}) and reading it would migrate it: back it up, then run "
                             f"`mlflow db upgrade {uri}`")
        raise StoreError(f"the MLflow store {db} ({name}={uri}) has the schema revision {revision}, which MLflow "
                         f"{mlflow.__version__} does not know (a newer MLflow's store?): read it with that MLflow")


def _create(db: Path) -> None:
    tmp = db.with_name(f".{db.name}.creating-{os.getpid()}")
    try:
        _initialise(f"sqlite:///{tmp}", close=True)
        os.replace(tmp, db)
    finally:
        for leftover in db.parent.glob(f"{tmp.name}*"):  # its -journal, or all of it after an error
            leftover.unlink(missing_ok=True)
