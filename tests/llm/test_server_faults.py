"""A model server that fails (issue 34, item 3): each fault ends a run in one line naming the
server, what it answered and what to do (exit 2, no traceback, no hang); a retry is spent only
where it can help (429, 5xx, no connection, a timeout), and a stuck server costs at most
``llm.deadline``. By hand against a fake server, then each fault through the real command line."""

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.llm.base import LLMError
from harness.llm.openai_llm import OpenAILLM
from tests.conftest import TINY_LEXICAL
from tests.http_fake import JSONHandler, LocalServer
from tests.pipeline.test_bad_inputs import closed_port
from tests.test_cli import ENV

ENV = {**ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
KEY = "sk-fault-0123456789abcdef"
HI = [[{"role": "user", "content": "hi"}]]


def completion(model: str, choices: list | None = None) -> dict:
    msg = {"role": "assistant", "content": "Paris"}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}] if choices is None else choices,
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


# What the fake server answers a POST with: (status, body, headers); None = never answer.
FAULTS = {
    "500": lambda n, key: (500, {"error": {"message": "CUDA out of memory"}}, {}),
    "429 then OK": lambda n, key: (429, {"error": {"message": "slow down"}}, {}) if n == 1 else (200, None, {}),
    "401": lambda n, key: (401, {"error": {"message": f"Incorrect API key provided: {key}"}}, {}),
    "404": lambda n, key: (404, {"object": "error", "message": "The model `bundled` does not exist."}, {}),
    "garbage": lambda n, key: (200, "<html><body>Welcome to nginx!</body></html>", {"Content-Type": "text/html"}),
    "no choices": lambda n, key: (200, {"choices": []}, {}),
    "never answers": lambda n, key: None,
}


class FaultServer:
    """An OpenAI-compatible server on 127.0.0.1 that lists its model (GET /v1/models, as vLLM's
    does: the preflight passes) and answers the n-th POST with ``fault(n, authorization)``."""

    def __init__(self, fault):
        self.posts, self.release = 0, threading.Event()
        outer = self

        class Handler(JSONHandler):
            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "bundled", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.posts += 1
                answer = fault(outer.posts, self.headers.get("Authorization", ""))
                if answer is None:  # accepted, never answered (until the test ends)
                    outer.release.wait(120)
                    return
                status, payload, headers = answer
                data = (payload if isinstance(payload, str) else
                        json.dumps(completion(body["model"]) if payload is None else payload)).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.release.set()
        self.local.close()


@pytest.fixture
def fast_backoff(monkeypatch):
    monkeypatch.setattr("harness.llm.server.FIRST_WAIT", 0.01)
    monkeypatch.setattr("harness.llm.server.MAX_WAIT", 0.02)


def serve(fault):
    return FaultServer(fault if callable(fault) else FAULTS[fault])


def ask(url: str, **kw) -> list[str]:
    llm = OpenAILLM(model="bundled", base_url=url, api_key=KEY, **{"max_retries": 2, "timeout": 10, **kw})
    return llm.chat(HI)


# --- the retry policy, by hand ----------------------------------------------------------------

@pytest.mark.parametrize("status, tries", [(429, 3), (500, 3), (502, 3), (503, 3), (408, 3),
                                           (400, 1), (401, 1), (403, 1), (404, 1), (422, 1)])
def test_retried_only_where_a_retry_can_help(fast_backoff, status, tries):
    s = serve(lambda n, key: (status, {"error": {"message": "no"}}, {}))
    try:
        with pytest.raises(LLMError, match=rf"answered {status} for model 'bundled'") as e:
            ask(s.url)
    finally:
        s.close()
    assert s.posts == tries
    assert "\n" not in str(e.value) and e.value.__cause__ is None


def test_no_connection_is_retried_and_named(fast_backoff):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(LLMError, match=rf"^llm=openai: no answer from {url} \(\[Errno 111\] Connection refused; "
                                       r"3 tries in \d+ s\): is the server running\? e\.g\. `vllm serve <model>`$"):
        ask(url)


class TrickleServer:
    """Answers a POST with headers at once, then one byte of its body every ``every`` seconds:
    never silent as long as httpx's read timeout, never done."""

    def __init__(self, every: float = 0.2):
        self.posts, self.release = 0, threading.Event()
        outer = self

        class Handler(JSONHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                while not outer.release.wait(every):
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:  # the client gave up
                        return

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.release.set()
        self.local.close()


@pytest.mark.parametrize("server, bound", [(lambda: serve("never answers"), 8), (TrickleServer, 6)],
                         ids=["never answers", "trickles"])
def test_a_stuck_server_costs_the_deadline_not_an_hour(server, bound):
    """Silent, or sending a byte every 0.2 s (httpx's timeout counts only silence between reads, so
    that would pass a 1 s timeout for ever): each try is cut at its timeout, the call at the deadline."""
    s = server()
    t0 = time.monotonic()
    try:
        with pytest.raises(LLMError, match=r"gave no answer within llm\.timeout=1 s \(\d tr(y|ies) in \d s, "
                                           r"llm\.deadline=3 s\): is the server stuck or overloaded\?"):
            ask(s.url, timeout=1, deadline=3, max_retries=100)
    finally:
        s.close()
    assert time.monotonic() - t0 < bound and 1 <= s.posts <= 3  # how many fit in 3 s depends on the backoff's jitter


def test_a_retry_after_past_the_deadline_gives_up_at_once():
    s = serve(lambda n, key: (429, {"error": {"message": "quota"}}, {"Retry-After": "30"}))
    t0 = time.monotonic()
    try:
        with pytest.raises(LLMError, match=r"answered 429 .*rate limited still after 1 try in \d+ s: lower "
                                           r"llm\.max_concurrency or raise llm\.deadline"):
            ask(s.url, deadline=5)
    finally:
        s.close()
    assert s.posts == 1 and time.monotonic() - t0 < 3


def test_a_retry_after_within_the_deadline_is_waited():
    s = serve(lambda n, key: (429, {}, {"Retry-After": "0.3"}) if n == 1 else (200, None, {}))
    t0 = time.monotonic()
    try:
        assert ask(s.url) == ["Paris"]
    finally:
        s.close()
    assert s.posts == 2 and time.monotonic() - t0 >= 0.3


def test_the_first_failure_ends_the_map(fast_backoff):
    """Requests not yet sent are dropped: 20 prompts to a failing server cost one request, not 20."""
    s = serve("401")
    try:
        llm = OpenAILLM(model="bundled", base_url=s.url, api_key=KEY, max_concurrency=1)
        with pytest.raises(LLMError, match="answered 401"):
            llm.chat([[{"role": "user", "content": f"q{i}"}] for i in range(20)])
    finally:
        s.close()
    assert s.posts == 1


@pytest.mark.parametrize("fault, said", [
    ("garbage", r"answered model 'bundled' with a body that is no OpenAI answer: <html><body>Welcome to nginx!"),
    ("no choices", r"answered model 'bundled' with a completion with no choices \(`choices: \[\]`\)"),
], ids=["garbage", "no choices"])
def test_an_answer_that_is_no_completion_is_named_not_retried(fault, said):
    s = serve(fault)
    try:
        with pytest.raises(LLMError, match=said + r".*; is llm\.base_url an OpenAI-compatible API \(ending in /v1\)\?"):
            ask(s.url)
    finally:
        s.close()
    assert s.posts == 1


def test_bad_settings_are_refused_by_name():
    from harness.types import ConfigError

    for bad, match in (({"timeout": 0}, "llm.timeout must be > 0"), ({"deadline": -1}, "llm.deadline must be > 0"),
                       ({"max_retries": -1}, "llm.max_retries must be an integer >= 0"),
                       ({"max_concurrency": 0}, "llm.max_concurrency must be an integer >= 1"),
                       ({"base_url": "nonsense"}, r"llm.base_url=nonsense: not an http\(s\) URL")):
        with pytest.raises(ConfigError, match=match):
            OpenAILLM(model="bundled", **bad)


# --- each fault through the command line ------------------------------------------------------

def run_cli(tmp_path: Path, url: str, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *TINY_LEXICAL, "dataset.limit_docs=1", "dataset.limit_queries=1", "llm=openai",
                           f"llm.base_url={url}", f"llm.api_key={KEY}", "responder=llm",
                           "responder.max_context_tokens=256", f"cache.dir={tmp_path / 'cache'}", "tracking=none",
                           *overrides], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)


def one_error_line(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 2, p.stderr[-3000:]
    assert "Traceback" not in p.stderr and KEY not in p.stdout + p.stderr, p.stderr[-3000:]
    errors = [line for line in p.stderr.splitlines() if line.startswith("chunkbench: error:")]
    assert len(errors) == 1 and p.stderr.strip().splitlines()[-1] == errors[0], p.stderr[-3000:]
    return errors[0]


SERVED = "chunkbench: error: llm=openai: {url} "


@pytest.mark.slow
@pytest.mark.parametrize("fault, overrides, said", [
    ("500", ["llm.max_retries=1"],
     "answered 500 for model 'bundled': CUDA out of memory; a server error still after 2 tries in {n} s: "
     "see the server's log"),
    ("401", [],
     "answered 401 for model 'bundled': Incorrect API key provided: Bearer ***; the key was refused: "
     "check llm.api_key or OPENAI_API_KEY"),
    ("404", [],
     "answered 404 for model 'bundled': The model `bundled` does not exist.; check llm.served_model "
     "(the names the server serves: GET {url}/models) and that llm.base_url ends in /v1"),
    ("garbage", [],
     "answered model 'bundled' with a body that is no OpenAI answer: <html><body>Welcome to nginx!</body></html>; "
     "is llm.base_url an OpenAI-compatible API (ending in /v1)?"),
    ("no choices", [],
     "answered model 'bundled' with a completion with no choices (`choices: []`); "
     "is llm.base_url an OpenAI-compatible API (ending in /v1)?"),
    ("never answers", ["llm.timeout=1", "llm.deadline=3"],
     "gave no answer within llm.timeout=1 s ({n} tries in {n} s, llm.deadline=3 s): is the server stuck or "
     "overloaded? A slow one needs a larger llm.timeout"),
], ids=["500", "401", "404", "garbage", "no choices", "never answers"])
def test_a_server_fault_ends_the_run_in_one_line(tmp_path, fault, overrides, said):
    s = serve(fault)
    t0 = time.monotonic()
    try:
        line = one_error_line(run_cli(tmp_path, s.url, *overrides))
    finally:
        s.close()
    want = re.escape((SERVED + said).format(url=s.url, n="{n}")).replace(r"\{n\}\ tries", r"\d+\ tr(y|ies)")
    assert re.fullmatch(want.replace(r"\{n\}", r"\d+"), line), line
    if fault == "never answers":
        assert time.monotonic() - t0 < 60


@pytest.mark.slow
def test_a_429_is_retried_and_the_run_succeeds(tmp_path):
    s = serve("429 then OK")
    try:
        p = run_cli(tmp_path, s.url)
    finally:
        s.close()
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert s.posts == 2  # the 429, then the answer


@pytest.mark.parametrize("url, said", [
    ("nonsense", "responder.llm.base_url=nonsense: not an http(s) URL; give the server's address in llm.base_url, "
                 "e.g. http://127.0.0.1:8000/v1"),
    ("http://127.0.0.1:{port}/v1", "responder.llm.base_url=http://127.0.0.1:{port}/v1: no OpenAI-compatible "
                                   "server answers ([Errno 111] Connection refused); start it "
                                   "(e.g. `vllm serve MODEL --port PORT`)"),
], ids=["nonsense", "connection refused"])
def test_the_preflight_fails_in_one_line(tmp_path, url, said):
    port = closed_port()
    line = one_error_line(run_cli(tmp_path, url.format(port=port)))
    assert line.startswith("chunkbench: error: " + said.format(port=port)), line
    assert not (tmp_path / "cache").exists()  # refused before any stage ran
