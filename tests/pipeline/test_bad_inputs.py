"""Bad input that is no data: each one line `chunkbench: error: ...` naming the culprit and what to
do, exit 2, before any stage runs (nothing is cached). Checks by hand, then through the real
command line."""

import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.pipeline import preflight
from harness.types import ConfigError
from tests.conftest import TINY
from tests.test_cli import ENV


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def models_server():
    """A stand-in OpenAI-compatible server: answers GET /v1/models (401 without the right key)."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path == "/v1/models" and self.headers.get("Authorization") == "Bearer sk-right"
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(b'{"data": []}')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.mark.parametrize("uri, message", [
    ("nope://x", "not a tracking store MLflow opens (scheme 'nope')"),
    (":::garbage", "a file store, which MLflow 3 refuses; use a SQLite store (tracking.uri=sqlite:///mlruns.db"),
    ("file:///tmp/mlruns", "a file store, which MLflow 3 refuses"),
    ("mlruns", "a file store, which MLflow 3 refuses"),
    ("sqlite:////proc/x.db", "the store /proc/x.db cannot be written"),
    ("sqlite://", "a SQLite store is a file, sqlite:///relative/path.db"),
    ("", "tracking.uri is empty"),
])
def test_tracking_uris_that_cannot_record(uri, message):
    with pytest.raises(ConfigError, match=f"^(tracking.uri={uri}: )?" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        preflight.check_tracking(uri)


def test_sqlite_store_checks_create_nothing(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ConfigError, match="a-file/x.db cannot be written .Not a directory."):
        preflight.check_tracking(f"sqlite:///{tmp_path / 'a-file' / 'x.db'}")
    (tmp_path / "folder.db").mkdir()
    with pytest.raises(ConfigError, match="Is a directory"):
        preflight.check_tracking(f"sqlite:///{tmp_path / 'folder.db'}")
    preflight.check_tracking(f"sqlite:///{tmp_path / 'new' / 'mlruns.db'}")  # a folder to be made
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "folder.db"]


def test_file_store_allowed_where_mlflow_is_told_to(monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    preflight.check_tracking("file:///tmp/mlruns")


def test_bad_interpolation_names_its_key(make_cfg):
    with pytest.raises(ConfigError, match=r"^chunker.size: Interpolation key 'nope' not found; an interpolation"):
        preflight.check_interpolations(make_cfg("chunker.size=${nope}"))
    assert preflight.check_interpolations(make_cfg("chunker.size=${context.budget}"))["chunker"]["size"] == 4096


def test_llm_server_checked_only_where_a_stage_uses_it(make_cfg, models_server):
    port = closed_port()
    down = f"http://127.0.0.1:{port}/v1"
    for overrides, where in ((["responder=llm"], "responder.llm"), (["chunker=lumber"], "chunker.llm")):
        cfg = preflight.check_interpolations(make_cfg("llm=openai", f"llm.base_url={down}", *overrides))
        with pytest.raises(ConfigError, match=rf"^{where}.base_url={down}: no OpenAI-compatible server answers"):
            preflight.check_llm_servers(cfg, timeout=2)
    # llm=openai chosen, but no stage calls a model: nothing to reach
    preflight.check_llm_servers(preflight.check_interpolations(make_cfg("llm=openai", f"llm.base_url={down}")))
    for key in ("sk-right", "sk-wrong"):  # a server that answers, even "401", is there
        cfg = make_cfg("llm=openai", f"llm.base_url={models_server}", f"llm.api_key={key}", "responder=llm")
        preflight.check_llm_servers(preflight.check_interpolations(cfg), timeout=2)


def test_objective_must_be_recorded_when_given(make_cfg):
    from harness.pipeline.components import build_components

    metrics = build_components(make_cfg()).metrics
    with pytest.raises(ConfigError, match=r"^objective=no_such_metric: the run's metrics record no such value; "
                                          r"they record evidence_recall, "):
        preflight.check_objective("no_such_metric", metrics, ["chunker=fixed", "objective=no_such_metric"])
    preflight.check_objective("span_recall/ci95_low", metrics, ["objective=span_recall/ci95_low"])
    preflight.check_objective("rouge_l", metrics, [])  # the default objective is not the user's choice


# --- through the command line ---------------------------------------------------------------------

def run(tmp_path, *overrides):
    cache = [] if any(o.startswith("cache.dir=") for o in overrides) else [f"cache.dir={tmp_path / 'cache'}"]
    p = subprocess.run([sys.executable, "-m", "harness", *TINY, *cache, *overrides],
                       cwd=tmp_path, env=ENV, text=True, capture_output=True, timeout=300)
    return p.returncode, p.stderr


@pytest.mark.parametrize("overrides, message", [
    (["chunker.size=${nope}"], "chunker.size: Interpolation key 'nope' not found"),
    (["tracking.uri=nope://x"], "tracking.uri=nope://x: not a tracking store MLflow opens"),
    (["tracking.uri=file:./mlruns"], "tracking.uri=file:./mlruns: a file store, which MLflow 3 refuses; "
                                     "use a SQLite store (tracking.uri=sqlite:///mlruns.db"),
    (["tracking.uri=sqlite:////proc/x.db"], "tracking.uri=sqlite:////proc/x.db: the store /proc/x.db cannot be written"),
    (["tracking.uri=sqlite:///a-file/mlruns.db"], "tracking.uri=sqlite:///a-file/mlruns.db: the store a-file/mlruns.db cannot be written (Not a directory)"),
    (["tracking.uri=http://127.0.0.1:{port}"], "tracking.uri=http://127.0.0.1:{port}: no MLflow server answers"),
    (["cache.dir=a-file/cache"], "cache.dir=a-file/cache is not writable (Not a directory)"),
    (["llm=openai", "llm.base_url=http://127.0.0.1:{port}/v1", "responder=llm", "tracking=none"],
     "responder.llm.base_url=http://127.0.0.1:{port}/v1: no OpenAI-compatible server answers"),
    (["llm=openai", "llm.base_url=http://127.0.0.1:{port}/v1", "chunker=lumber", "tracking=none"],
     "chunker.llm.base_url=http://127.0.0.1:{port}/v1: no OpenAI-compatible server answers"),
    (["objective=no_such_metric", "tracking=none"], "objective=no_such_metric: the run's metrics record no such value"),
], ids=lambda v: v[0] if isinstance(v, list) else None)
def test_refused_before_any_stage(tmp_path, overrides, message):
    (tmp_path / "a-file").write_text("")
    port = closed_port()
    code, err = run(tmp_path, *(o.replace("{port}", str(port)) for o in overrides))
    assert code == 2 and err.count("\n") == 1, err[-3000:]
    assert err.startswith("chunkbench: error: " + message.replace("{port}", str(port))), err
    assert not (tmp_path / "cache").exists() and not (tmp_path / "mlruns.db").exists()  # nothing ran


def test_unknown_experiment_is_refused_with_the_known_ones(tmp_path):
    code, err = run(tmp_path, "experiment=nope")
    assert code != 0 and "experiment=nope: no such choice; the choices: " in err, err[-3000:]
    assert "hichunk_fc200" in err and "qchunker_controlled" in err  # the available experiments
    assert not (tmp_path / "cache").exists()


def one_line_error(p: subprocess.CompletedProcess, *named: str) -> str:
    """Exit 2, one stderr line `chunkbench: error: ...` naming each of ``named``, no traceback."""
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr[-3000:]
    assert p.stderr.startswith("chunkbench: error: ") and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert all(n in p.stderr for n in named), p.stderr
    return p.stderr


def command(tmp_path, *argv, module="harness"):
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=tmp_path, env=ENV, text=True,
                          capture_output=True, timeout=300)


def test_unknown_embedder_device_is_one_line(tmp_path):
    one_line_error(command(tmp_path, *TINY, f"cache.dir={tmp_path / 'cache'}", "tracking=none", "embedder.device=tpu9"),
                   "embedder.device=tpu9: not a device torch knows")
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("folder", ["/proc/nope", "a-file/out", "/proc/x/${now:%H}"])
def test_unwritable_hydra_run_dir_is_one_line(tmp_path, folder):
    (tmp_path / "a-file").write_text("")
    one_line_error(command(tmp_path, *TINY, f"cache.dir={tmp_path / 'cache'}", "tracking=none",
                           f"hydra.run.dir={folder}"), f"hydra.run.dir={folder} cannot be made or written")
    assert not (tmp_path / "cache").exists()


def test_corrupt_parquet_dataset_is_one_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "documents.parquet").write_bytes(b"PAR1 not really parquet" * 50)
    (data / "queries.jsonl").write_text('{"qid": "q1", "question": "x"}\n')
    one_line_error(command(tmp_path, "dataset=local", f"dataset.path={data}", "tracking=none",
                           f"cache.dir={tmp_path / 'cache'}"),
                   f"{data / 'documents.parquet'} is not a readable Parquet file")


@pytest.mark.parametrize("argv, named", [
    (["table", "--uri", "bogus://x"], ["--uri=bogus://x", "scheme 'bogus'", "sqlite:///", "http(s)://"]),
    (["table", "--uri", "sqlite:///typo.db"], ["--uri=sqlite:///typo.db: no store at", "typo.db (no such file)"]),
    (["compare", "a", "b", "--uri", "sqlite:///typo.db"], ["no store at"]),
    (["tables", "render", "--tables", "lgmgc/table1", "--uri", "sqlite:///typo.db"], ["no store at"]),
], ids=lambda v: " ".join(v) if isinstance(v, list) and v[0] in ("table", "compare", "tables") else None)
def test_verbs_that_read_the_record_refuse_a_store_that_is_not_there(tmp_path, argv, named):
    one_line_error(command(tmp_path, *argv, module="harness.cli"), *named)
    assert list(tmp_path.iterdir()) == []  # no store, no lock file, no results


def test_reading_a_store_checks_it_exists_and_creates_nothing(tmp_path):
    with pytest.raises(ConfigError, match=r"^--uri=sqlite:///.*: no store at .*nope.db \(no such file\)"):
        preflight.check_record(f"sqlite:///{tmp_path / 'nope.db'}", "--uri")
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(ConfigError, match=r"dir.db \(a folder\)"):
        preflight.check_record(f"sqlite:///{tmp_path / 'dir.db'}")
    with pytest.raises(ConfigError, match=r"^tracking.uri=bogus://x: not a tracking store MLflow opens"):
        preflight.check_record("bogus://x")
    (tmp_path / "empty.db").write_bytes(b"")  # MLflow would create a store in it: a reader refuses it
    with pytest.raises(ConfigError, match=r"^tracking.uri=sqlite:///.*: .*empty.db is an empty file, no MLflow store"):
        preflight.check_record(f"sqlite:///{tmp_path / 'empty.db'}")
    from harness.pipeline.store import open_store

    open_store(f"sqlite:///{tmp_path / 'real.db'}")
    preflight.check_record(f"sqlite:///{tmp_path / 'real.db'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.db", "empty.db", "real.db", "real.db.lock"]
