"""The Python API: ``harness.evaluate`` runs what ``python -m harness`` runs (a chunker object in
place of a config included), ``harness.load_runs`` reads the record as a DataFrame."""

import math
import subprocess
import sys

import pytest

import harness
from harness.api import describe
from harness.chunking.fixed import FixedSizeChunker
from harness.types import ConfigError
from tests.conftest import TINY

# the timings and costs of two runs differ; everything the chunks and the scores give does not
TIMED = ("seconds", "cost_", "cache_")


def scores(result) -> dict[str, float]:
    return {k: v for k, v in result.metrics.items() if not any(t in k for t in TIMED)}


def test_the_package_exports_the_api_lazily():
    code = ("import sys, harness; assert 'harness.api' not in sys.modules and 'torch' not in sys.modules; "
            "assert harness.evaluate.__module__ == 'harness.api'; "
            "print(sorted(harness.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(sorted(["Chunk", "Chunker", "Document", "Query", "Result", "check_chunks",
                                      "evaluate", "load_runs"]))
    with pytest.raises(AttributeError, match="no attribute 'evalute'"):
        harness.evalute  # noqa: B018


def test_evaluate_returns_the_runs_numbers_with_intervals(tmp_path):
    r = harness.evaluate([*TINY, "dataset.limit_docs=1", f"cache.dir={tmp_path}"], record=False)
    assert 0 <= r.metrics["evidence_recall"] <= 1 and r.metrics["n_docs"] == 1
    low, high = r.intervals["evidence_recall"]
    assert low <= r.metrics["evidence_recall"] <= high
    assert len(r.per_query) == r.metrics["n_queries"] > 0 and r.run_id is None
    assert set(r.stages) == {"load", "chunk", "retrieve", "assemble", "evaluate"}  # no responder: no respond stage
    assert not any("/" in k for k in r.metrics)


def test_a_chunker_object_scores_as_the_same_chunker_by_config(tmp_path):
    base = [*TINY, f"cache.dir={tmp_path}"]
    by_config = harness.evaluate([*base, "chunker=fixed", "chunker.size=120"], record=False)
    by_object = harness.evaluate(base, chunker=FixedSizeChunker(size=120), record=False)
    assert by_object.stages["chunk"] == "computed"  # its own cache entries, not the config's
    assert scores(by_object) == scores(by_config) and by_config.metrics["n_chunks"] > 0
    assert by_object.config.chunker.size == 120
    assert by_object.config.chunker._target_ == "harness.chunking.fixed.FixedSizeChunker"
    # another object of the class with other parameters is another run, not a cache hit
    other = harness.evaluate(base, chunker=FixedSizeChunker(size=60), record=False)
    assert other.stages["chunk"] == "computed" and other.metrics["n_chunks"] > by_object.metrics["n_chunks"]


def test_a_chunker_object_is_described_by_its_plain_attributes():
    class Odd(FixedSizeChunker):
        def __init__(self):
            super().__init__(size=50)
            self.marks = ("a", "b")
            self.model = object()
            self._private = 1

    node = describe(Odd())
    assert node["_target_"].endswith("Odd") and node["size"] == 50 and node["marks"] == ["a", "b"]
    assert "_private" not in node and "model" not in node and len(node["object_state"]) >= 16
    with pytest.raises(ConfigError, match="chunker: a harness.Chunker instance, got str"):
        describe("fixed")


def test_a_recorded_run_comes_back_from_load_runs(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    with pytest.raises(ConfigError, match="load_runs uri=.*: no store at"):
        harness.load_runs(uri)
    run = [*TINY, "dataset.limit_docs=1", f"cache.dir={tmp_path / 'cache'}", f"tracking.uri={uri}",
           "chunker=sentence"]
    first = harness.evaluate(run)
    assert first.run_id and harness.evaluate(run).run_id == first.run_id  # recorded once (tracking.rerun=skip)
    runs = harness.load_runs(uri)
    assert list(runs["run_id"]) == [first.run_id]
    assert math.isclose(runs["metrics.evidence_recall"][0], first.metrics["evidence_recall"])
    assert runs["params.chunker._target_"][0] == "harness.chunking.sentence.SentenceChunker"
    assert str(runs["tags.mlflow.runName"][0]).startswith("ohrbench/sentence")
    with pytest.raises(ConfigError, match="no experiment 'nope'"):
        harness.load_runs(uri, experiment="nope")


@pytest.fixture
def silent_server():
    """A port that accepts connections and never answers (an MLflow server that hangs)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def closed_port() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("given, message", [
    ("", r"^load_runs: uri must name a store \(e.g. sqlite:///mlruns.db\), got ''$"),
    ("file:///", r"^load_runs uri=file:///: a file store, which MLflow 3 refuses; use a SQLite store"),
    ("runs.db", r"^load_runs uri=runs.db: a file store, which MLflow 3 refuses"),  # a plain path: MLflow's file store
    ("bogus://x", r"^load_runs uri=bogus://x: not a tracking store MLflow opens \(scheme 'bogus'\)"),
    ("sqlite:///missing.db", r"^load_runs uri=sqlite:///missing.db: no store at .*missing.db \(no such file\)"),
    (42, r"^load_runs: uri must name a store \(e.g. sqlite:///mlruns.db\), got 42$")])
def test_load_runs_of_what_is_no_store_is_one_line(tmp_path, monkeypatch, given, message):
    """Issue 51, item 7: each was an MLflow exception or an AttributeError (a Path), and none may leave
    a file behind."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        harness.load_runs(given)
    assert list(tmp_path.iterdir()) == []


def test_load_runs_of_a_path_reads_that_sqlite_file(tmp_path, monkeypatch):
    from harness.pipeline.store import open_store

    monkeypatch.chdir(tmp_path)
    open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    assert harness.load_runs(tmp_path / "runs.db").empty  # a Path names the SQLite store; a new one holds no run
    with pytest.raises(ConfigError, match=r"no store at .*other.db \(no such file\)"):
        harness.load_runs(tmp_path / "other.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db", "runs.db.lock"]  # no ./mlflow.db


def test_load_runs_of_a_server_that_is_down_or_silent_is_one_line(silent_server):
    """Issue 51, item 7: an unreachable server gave no answer in 100 s (MLflow's own retries)."""
    for uri in (closed_port(), silent_server):
        with pytest.raises(ConfigError, match=rf"^load_runs uri={uri}: no MLflow server answers within 5 s"):
            harness.load_runs(uri)


def test_load_runs_of_a_database_without_its_driver_is_one_line():
    import importlib.util

    if any(importlib.util.find_spec(m) for m in ("psycopg2", "psycopg")):
        pytest.skip("a postgresql driver is installed here")
    with pytest.raises(ConfigError, match=r"^load_runs uri=postgresql://u:\*\*\*@localhost/db: the database driver "
                                          r"psycopg2? is not installed in this environment"):
        harness.load_runs("postgresql://u:secret-pw@localhost/db")
