"""API keys never recorded (issue 16, item 2): a planted key, given on the command line or in
the environment, reaches the server and nowhere else -- not the MLflow store, Hydra's output
folders, the cache (nor its keys: a rotated key keeps the cache) or what the run prints."""

import json
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.cache import without_services
from harness.llm.base import LLMError
from harness.secrets import MASK, is_secret_name, mask, mask_text, secret_values
from tests.conftest import CONFIGS, TINY_LEXICAL
from tests.http_fake import JSONHandler, LocalServer
from tests.test_cli import ENV

# The subprocess runs in a temp folder: this checkout's package, not whichever one is installed.
ENV = {**ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


class KeyEchoServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that records the Authorization header of
    every request; with ``reject``, it answers 401 quoting the key back (as hosted APIs do); with
    ``echo``, its answer quotes the header."""

    def __init__(self, reject: bool = False, echo: bool = False):
        self.auth: list[str] = []
        outer = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.auth.append(self.headers.get("Authorization", ""))
                if reject:
                    payload = {"error": {"message": f"Incorrect API key provided: {self.headers['Authorization']}",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}}
                    return self._send(401, payload)
                said = f"Paris (you sent {self.headers.get('Authorization', '')})" if echo else "Paris"
                msg = {"role": "assistant", "content": said}
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()


@pytest.fixture
def server():
    s = KeyEchoServer()
    yield s
    s.close()


def planted() -> str:
    return f"sk-planted-{uuid.uuid4().hex}"


# --- what is secret -------------------------------------------------------------------------

def _keys(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(str(k))
            _keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _keys(v, out)


def test_only_key_fields_of_the_real_configs_are_secret():
    names: set[str] = set()
    for path in CONFIGS.rglob("*.yaml"):
        _keys(OmegaConf.to_container(OmegaConf.load(path)), names)
    # max_tokens, tokenizer, passages, n_keywords... are settings that must stay in the record
    assert {n for n in names if is_secret_name(n)} == {"api_key"}
    assert all(is_secret_name(n) for n in ("OPENAI_API_KEY", "HF_TOKEN", "hf_token", "password", "secret_key",
                                           "MLFLOW_TRACKING_PASSWORD", "aws_access_key"))


def test_mask_keys_values_overrides_environment_and_url_passwords(monkeypatch):
    monkeypatch.setenv("MY_SERVER_URL_PART", "sk-env-7890ab")  # not secret-named: found through the config
    cfg = OmegaConf.create({"llm": {"api_key": "${oc.env:MY_SERVER_URL_PART}", "max_tokens": 5, "tokenizer": "x"},
                            "judge": {"api_key": None}, "tracking": {"uri": "https://me:pa55word@mlflow.example"}})
    values = secret_values(cfg, ["llm.api_key=sk-typed-123456"], environ={"HF_TOKEN": "hf_abcdefgh",
                                                                            "PATH": "/usr/bin:/bin"})
    # the interpolation resolved, the override's value, the secret-named variable, the URL's password
    # (masked wherever it appears, not only in the URL); PATH is no secret
    assert values == {"sk-typed-123456", "sk-env-7890ab", "hf_abcdefgh", "pa55word"}
    out = mask(OmegaConf.to_container(cfg, resolve=False),
               values | {"never-there"})
    assert out["llm"] == {"api_key": MASK, "max_tokens": 5, "tokenizer": "x"}
    assert out["judge"]["api_key"] is None  # "no key given" stays visible
    assert out["tracking"]["uri"] == "https://me:***@mlflow.example"
    assert mask_text("override llm.api_key=sk-typed-123456 failed", values) == "override llm.api_key=*** failed"
    # A rotated key is no part of a stage's cache key.
    assert without_services({"llm": {"api_key": "a", "model": "m"}}) == without_services({"llm": {"api_key": "b",
                                                                                                "model": "m"}})


def test_a_variable_unset_while_the_environment_is_read_is_skipped():
    class Unsetting(Mapping):
        """os.environ as another thread changes it: a listed variable is gone when it is read."""

        def __init__(self, **variables):
            self.variables = variables

        def __getitem__(self, key):
            return self.variables[key]

        def __iter__(self):
            yield from ("GONE_TOKEN", *self.variables)

        def __len__(self):
            return len(self.variables)

    assert secret_values(environ=Unsetting(HF_TOKEN="hf_abcdefgh")) == {"hf_abcdefgh"}


def test_mlflow_telemetry_is_off_unless_the_user_turns_it_on():
    probe = "import harness; from mlflow.environment_variables import MLFLOW_DISABLE_TELEMETRY as v; print(v.get())"
    env = {k: v for k, v in ENV.items() if k != "MLFLOW_DISABLE_TELEMETRY"}
    said = [subprocess.run([sys.executable, "-c", probe], env={**env, **extra}, capture_output=True, text=True,
                           check=True).stdout.strip() for extra in ({}, {"MLFLOW_DISABLE_TELEMETRY": "false"})]
    assert said == ["True", "False"]


def test_a_server_quoting_the_key_back_is_masked_in_the_error():
    from harness.llm.openai_llm import OpenAILLM

    s, key = KeyEchoServer(reject=True), planted()
    try:
        llm = OpenAILLM(model="m", base_url=s.url, api_key=key, max_retries=0, timeout=10)
        with pytest.raises(LLMError) as e:
            llm.chat([[{"role": "user", "content": "hi"}]])
    finally:
        s.close()
    assert s.auth == [f"Bearer {key}"]
    assert "answered 401" in str(e.value) and "Incorrect API key provided: Bearer ***" in str(e.value)
    assert key not in str(e.value) and e.value.__cause__ is None and e.value.__suppress_context__


# --- end to end: the planted key is found nowhere -------------------------------------------

def run_cli(tmp_path: Path, server: KeyEchoServer, *args: str, env: dict | None = None, sweep: bool = False,
            fails: bool = False, url: str | None = None) -> str:
    p = subprocess.run([sys.executable, "-m", "harness", *(["-m"] if sweep else []), *TINY_LEXICAL, "dataset.limit_queries=3", "llm=openai",
                        f"llm.base_url={url or server.url}", "llm.max_retries=0", "responder=llm",
                        "responder.max_context_tokens=256", f"cache.dir={tmp_path / 'cache'}",
                        f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}", *args],
                       cwd=tmp_path, env={**ENV, **(env or {})}, capture_output=True, text=True, timeout=600)
    assert p.returncode == (2 if fails else 0), p.stderr[-3000:]
    return p.stdout + p.stderr


def assert_nowhere(key: str, root: Path, printed: str) -> None:
    """No byte of any file under ``root`` (SQLite store, its WAL, artifacts, outputs/, multirun/,
    the cache) nor of what the runs printed holds the key."""
    assert key not in printed
    files = [f for f in root.rglob("*") if f.is_file()]
    assert len(files) > 20
    leaks = [str(f.relative_to(root)) for f in files if key.encode() in f.read_bytes()]
    assert not leaks, leaks


def recorded(tmp_path: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlruns.db'}")
    return mlflow.search_runs(experiment_names=["chunkbench"], output_format="list")


@pytest.mark.slow
def test_key_on_the_command_line_is_recorded_nowhere_and_rotating_it_keeps_the_cache(tmp_path, server):
    import mlflow

    first, rotated = planted(), planted()
    printed = run_cli(tmp_path, server, f"llm.api_key={first}")
    # A sweep with another key: its multirun.yaml and each job's .hydra/ are masked too, and
    # every stage (the answers included) comes from the cache; the same run otherwise, it is
    # logged again only because tracking.rerun=new says so (the key is no part of its identity).
    printed += (swept := run_cli(tmp_path, server, f"llm.api_key={rotated}", "hydra.sweep.dir=sweep",
                                    "tracking.rerun=new", sweep=True))
    assert "[respond] cached" in swept and "[respond] computed" not in swept
    assert server.auth and set(server.auth) == {f"Bearer {first}"}  # the key reached the server
    assert_nowhere(first, tmp_path, printed)
    assert_nowhere(rotated, tmp_path, printed)
    runs = recorded(tmp_path)
    assert len(runs) == 2 and all(r.data.params["llm.api_key"] == MASK for r in runs)
    assert all(r.data.metrics["n/evidence_recall"] == 3 for r in runs)
    config = mlflow.artifacts.load_dict(f"{runs[0].info.artifact_uri}/config.json")
    assert config["llm"]["api_key"] == MASK and config["responder"]["llm"]["api_key"] == MASK
    saved = [*(tmp_path / "outputs").rglob("overrides.yaml"), *(tmp_path / "sweep").rglob("*.yaml")]
    assert {p.name for p in saved} == {"overrides.yaml", "config.yaml", "hydra.yaml", "multirun.yaml"}
    assert all(f"llm.api_key={MASK}" in p.read_text() for p in saved if p.name == "overrides.yaml")


@pytest.mark.slow
def test_key_in_the_environment_is_recorded_nowhere(tmp_path, server):
    key = planted()
    printed = run_cli(tmp_path, server, env={"OPENAI_API_KEY": key})
    assert server.auth and set(server.auth) == {f"Bearer {key}"}
    assert_nowhere(key, tmp_path, printed)
    (run,) = recorded(tmp_path)
    assert run.data.params["llm.api_key"] == "None" and run.data.metrics["n/evidence_recall"] == 3


class FailingServer:
    """An OpenAI-compatible server that answers every request 500."""

    def __init__(self):
        class Handler(JSONHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self._send(500, {"error": {"message": "the model crashed", "type": "server_error"}})

        self.local = LocalServer(Handler)
        self.url = self.local.url


@pytest.mark.slow
@pytest.mark.parametrize("sweep", [False, True])
def test_a_failing_run_prints_no_key_given_on_the_command_line(tmp_path, sweep):
    """Hydra prints a failed job's overrides to stderr itself (`Error executing job with overrides`);
    what reaches the terminal is masked all the same."""
    s, key = FailingServer(), planted()
    try:
        p = subprocess.run([sys.executable, "-m", "harness", *(["-m"] if sweep else []), *TINY_LEXICAL,
                            "dataset.limit_queries=1", "llm=openai", f"llm.base_url={s.url}", "llm.max_retries=0",
                            "responder=llm", f"llm.api_key={key}", f"cache.dir={tmp_path / 'cache'}",
                            f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}", "hydra.sweep.dir=sweep"],
                           cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
    finally:
        s.local.close()
    printed = p.stdout + p.stderr
    assert p.returncode != 0 and "answered 500" in printed
    assert key not in printed, printed[-2000:]
    leaks = [str(f) for f in tmp_path.rglob("*") if f.is_file() and key.encode() in f.read_bytes()]
    assert not leaks, leaks


def test_a_tracking_password_is_printed_nowhere(tmp_path):
    password = planted()
    p = subprocess.run([sys.executable, "-m", "harness.cli", "table", "--uri", f"http://user:{password}@127.0.0.1:9"],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    printed = p.stdout + p.stderr
    assert p.returncode == 2 and password not in printed and "user:***@127.0.0.1:9" in printed, printed[-2000:]


# --- issue 51, item 5: four more ways a key leaked -------------------------------------------

def test_each_value_of_a_sweep_shaped_keys_and_url_tokens_are_secret():
    a, b, c, d, e = (planted() for _ in range(5))
    values = secret_values(overrides=[f"llm.api_key={a},{b}", f"+llm.openai_key={c}",
                                      f"+llm.headers={{Authorization: Bearer {d}}}",
                                      f"llm.base_url=http://{e}@127.0.0.1:8000/v1"], environ={})
    assert {a, b, c, d, e} <= values  # each job's key, not only the sweep's whole text
    assert mask_text(f"#1 : llm.api_key={b}", values) == "#1 : llm.api_key=***"
    cfg = OmegaConf.create({"llm": {"headers": {"Authorization": f"Bearer {d}"}, "openai_key": c,
                                    "base_url": "http://TOKEN1234@host/v1"}})
    assert {c, d, "TOKEN1234"} <= secret_values(cfg, environ={})
    assert mask(OmegaConf.to_container(cfg), ())["llm"] == {"headers": {"Authorization": MASK}, "openai_key": MASK,
                                                             "base_url": "http://***@host/v1"}
    # token-style userinfo, a password, and a key by its shape, in any text; words that merely contain sk- stay
    assert (mask_text(f"http://{e}@host/v1 http://TOKEN@host https://me:pw@x.org {a} task-force risk-free", ())
            == "http://***@host/v1 http://***@host https://me:***@x.org *** task-force risk-free")


@pytest.mark.slow
def test_a_sweep_over_keys_and_a_server_echoing_the_key_leave_it_nowhere(tmp_path):
    """(a) `-m 'llm.api_key=sk-A,sk-B'` printed each job's key (only the sweep's whole text was
    masked); (d) a server echoing the key put it in the cache and per_query.jsonl."""
    s, first, second = KeyEchoServer(echo=True), planted(), planted()
    try:
        printed = run_cli(tmp_path, s, f"llm.api_key={first},{second}", "hydra.sweep.dir=sweep", sweep=True)
    finally:
        s.close()
    assert set(s.auth) == {f"Bearer {first}"}  # the second job's answers come from the cache: a key is no key of it
    assert "#0 : " in printed and "llm.api_key=***" in printed
    assert_nowhere(first, tmp_path, printed)
    assert_nowhere(second, tmp_path, printed)
    per_query = [f for f in tmp_path.rglob("per_query.jsonl")]
    # one run recorded: the second job is the same run (a key is no part of its identity)
    assert len(per_query) == 1 and "Paris (you sent Bearer ***)" in per_query[0].read_text()


@pytest.mark.slow
def test_a_token_in_the_servers_address_is_printed_nowhere_and_the_server_is_reached(tmp_path, server):
    """(b) `http://TOKEN@host/v1`: printed as given, and the preflight looked the host up as
    `TOKEN@host` (no server answers)."""
    token = planted()
    url = server.url.replace("http://", f"http://{token}@")
    printed = run_cli(tmp_path, server, url=url)
    assert server.auth  # reached: the client sends the token as the URL's Basic credentials
    assert_nowhere(token, tmp_path, printed)


@pytest.mark.slow
@pytest.mark.parametrize("override", ["+llm.openai_key={key}", "+llm.headers={{Authorization: Bearer {key}}}"],
                         ids=["openai_key", "headers"])
def test_a_key_under_another_name_is_refused_and_saved_nowhere(tmp_path, server, override):
    """(c) A key under a name that is not secret-shaped was written to outputs/.../.hydra/*.yaml
    before the run refused the unknown parameter."""
    key = planted()
    printed = run_cli(tmp_path, server, override.format(key=key), fails=True)
    assert "got an unexpected keyword argument" in printed
    saved = list((tmp_path / "outputs").rglob("*.yaml"))
    assert {p.name for p in saved} == {"config.yaml", "hydra.yaml", "overrides.yaml"}
    assert key not in printed
    leaks = [str(f) for f in tmp_path.rglob("*") if f.is_file() and key.encode() in f.read_bytes()]
    assert not leaks, leaks
