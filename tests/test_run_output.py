"""What a user sees: a run's output holds no library chatter, `--help` is ChunkBench's usage,
`make mlflow-ui` is one process tree that one signal stops (issue 16, items 13-15)."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.cache import HEADER_BYTES
from harness.cache_packs import pack_keys
from harness.quiet import hub_names
from tests.conftest import CONFIGS, REPO, TINY

# as a user runs it: no HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE from the shell or the Makefile
ENV = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")} | {"PYTHONPATH": str(REPO)}
NOISE = {
    "MLflow's migration lines": re.compile(r"INFO mlflow|alembic|Creating initial MLflow|Updating database tables"),
    "sentence-transformers INFO lines": re.compile(r"sentence_transformers"),
    "tqdm's cursor-up codes": re.compile(re.escape("\x1b[A")),
    "transformers' weight-loading bar": re.compile(r"Loading weights"),
    "jieba's DEBUG lines": re.compile(r"prefix dict|Loading model"),
    "Hub retries": re.compile(r"huggingface\.co|Retrying|HF_HUB_OFFLINE"),
}


def harness(*args: str, cwd: Path, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-m", "harness", *args], cwd=cwd, env=ENV, text=True,
                          capture_output=True, timeout=600)


@pytest.mark.slow
def test_run_output_is_quiet_and_a_rerun_is_not_logged_again(tmp_path):
    args = [*TINY, f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}"]
    cold = harness(*args, cwd=tmp_path)  # embeds with the bundled model: nested progress bars
    assert cold.returncode == 0, cold.stderr[-2000:]
    for what, pattern in NOISE.items():
        assert not pattern.search(cold.stdout + cold.stderr), what
    run_id = re.search(r"mlflow\s+run\s+([0-9a-f]{8})", cold.stdout).group(1)  # the title may wrap
    # every chunk's and question's vector, and every document's chunks, in a file per batch
    cached = {ns: [p for p in (tmp_path / "cache" / ns).rglob("*") if p.is_file()] for ns in ("embeddings", "chunk_doc")}
    vectors = sum(len(pack_keys(p, HEADER_BYTES)) for p in cached["embeddings"])
    assert all(p.parent.name == "packs" for ps in cached.values() for p in ps), cached
    assert vectors > 2 * len(cached["embeddings"]) and len(cached["chunk_doc"]) == 1, (vectors, cached)
    warm = harness(*args, cwd=tmp_path, flags=("-X", "importtime"))
    assert warm.returncode == 0, warm.stderr[-2000:]
    said = " ".join(warm.stdout.split())  # the title may wrap
    assert f"already recorded as mlflow run {run_id}" in said and "evidence_recall" in said
    imported = {line.split("|")[-1].strip() for line in warm.stderr.splitlines() if line.startswith("import time:")}
    heavy = {m for m in imported if m.split(".")[0] in ("mlflow", "scipy", "torch", "nltk", "sentence_transformers")}
    assert "harness.pipeline.runner" in imported and not heavy, sorted(heavy)[:10]  # nothing heavy on a warm rerun
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns.db'}")
    assert len(client.search_runs([client.get_experiment_by_name("chunkbench").experiment_id])) == 1


def test_jieba_is_quiet():
    code = ("import logging; logging.basicConfig(level=logging.DEBUG); {quiet}"
            "from harness.metrics.tokenizers import jieba_tokens; print(jieba_tokens('我们在北京学习中文'))")
    loud = subprocess.run([sys.executable, "-c", code.format(quiet="")], env=ENV, text=True, capture_output=True)
    assert "prefix dict" in loud.stderr  # what the fix removes: jieba logs at DEBUG, twice
    quiet = subprocess.run([sys.executable, "-c", code.format(quiet="from harness.quiet import quiet_logs; "
                                                               "quiet_logs(); ")],
                           env=ENV, text=True, capture_output=True)
    assert quiet.returncode == 0 and "北京" in quiet.stdout and quiet.stderr == ""


def test_no_mlflow_import_when_nothing_is_recorded(tmp_path):
    out = harness(*TINY, "retriever=bm25", "tracking=none", f"cache.dir={tmp_path / 'cache'}", cwd=tmp_path,
                  flags=("-X", "importtime"))
    assert out.returncode == 0, out.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "harness.pipeline.runner" in imported and not {m for m in imported if m.startswith("mlflow")}


def test_help_is_chunkbench_usage(tmp_path):
    out = harness("--help", cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout.startswith("ChunkBench: one run = dataset x chunker")
    assert "usage: chunkbench run [GROUP=CHOICE]..." in out.stdout
    groups = dict(line.split(": ", 1) for line in out.stdout.splitlines() if re.match(r"^[a-z/_]+: \w", line))
    assert "fixed" in groups["chunker"].split(", ") and "bm25" in groups["retriever"].split(", ")
    assert "chunkbench run -m chunker=fixed,sentence,recursive" in out.stdout  # the README's examples
    assert "powered by Hydra" not in out.stdout


@pytest.mark.parametrize("overrides, hub", [
    ((), []),
    (("chunker=sentence_splitter", "chunker.tokenizer=cl100k"), []),
    (("retriever=bge",), ["BAAI/bge-large-en-v1.5"]),
    (("dataset=qasper",), ["hub_id=allenai/qasper", "hub_config=qasper"]),
    (("llm.model=Qwen/Qwen3-8B",), ["Qwen/Qwen3-8B"]),
])
def test_hub_names(overrides, hub):
    """The entry point sets HF_HUB_OFFLINE only for a config that names nothing on the Hub."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    assert hub_names(OmegaConf.to_container(cfg, resolve=True)) == hub


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_processes(sid: int) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "sid=,pid=,args="], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if line.split()[0] == str(sid)]


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["ctrl-c", "kill"])
def test_mlflow_ui_is_one_process_that_one_signal_stops(tmp_path, stop):
    """`make mlflow-ui` (the repository's Makefile, this environment's mlflow): make, mlflow and one
    uvicorn server; Ctrl-C (SIGINT to the terminal's process group) or `kill PID` (the PID it
    prints) leaves no process behind."""
    port = free_port()
    p = subprocess.Popen(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "-o", ".venv/.stamp-setup",
                          "mlflow-ui",
                          f"BIN={Path(sys.executable).parent}", f"MLFLOW_UI_PORT={port}"],
                         cwd=tmp_path, env={k: v for k, v in ENV.items() if not k.startswith(("MAKE", "MFLAGS"))},
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        pid = int(re.search(r"kill (\d+)\)", p.stdout.readline()).group(1))
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow ui did not answer")
        procs = session_processes(p.pid)
        assert len(procs) <= 3, procs  # make, mlflow, uvicorn: no workers, no job consumers
        if stop == "ctrl-c":
            os.killpg(p.pid, signal.SIGINT)
        else:
            os.kill(pid, signal.SIGTERM)
        p.wait(timeout=60)
        deadline = time.time() + 30
        while session_processes(p.pid) and time.time() < deadline:
            time.sleep(0.5)
        assert session_processes(p.pid) == []
    finally:
        if session_processes(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
