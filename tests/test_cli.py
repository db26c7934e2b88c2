"""The command lines as a user runs them. `python -m harness`: MLflow record, concurrency,
sweeps, errors. `chunkbench` (`python -m harness.cli`): parsing, and table/compare/judge/ls on real runs
and the real configs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli
from harness.cli import judge
from harness import registry
from harness.cache import HEADER_BYTES
from harness.cache_packs import pack_keys
from tests.conftest import CONFIGS, TINY, TINY_LEXICAL, ScriptedLLM
from tests.report.test_judge import RUN_A, RUN_B, judge_reply

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def harness(*args: str, cwd: Path, module: str = "harness") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p: subprocess.Popen) -> str:
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    return out


def runs(uri: str):
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=["chunkbench"], output_format="list")


@pytest.mark.slow
def test_two_processes_one_cache_both_finish_identically(tmp_path):
    args = [*TINY_LEXICAL, f"cache.dir={tmp_path / 'cache'}", f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}",
            "tracking.rerun=new"]
    procs = [harness(*args, cwd=tmp_path) for _ in range(2)]
    outs = [finish(p) for p in procs]
    assert all("evidence_recall" in o for o in outs)
    for stage in ("load", "chunk", "retrieve", "assemble", "evaluate"):  # one computes, the other waits and reads
        assert sum(f"[{stage}] computed" in o for o in outs) == 1, stage
    recorded = runs(f"sqlite:///{tmp_path / 'mlruns.db'}")
    assert len(recorded) == 2
    quality = [{k: v for k, v in r.data.metrics.items() if "seconds" not in k} for r in recorded]
    assert quality[0] == quality[1]
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # no half-written entry left behind


@pytest.mark.slow
def test_run_record_in_mlflow(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    args = [*TINY_LEXICAL, f"cache.dir={tmp_path / 'cache'}", f"tracking.uri={uri}", "tracking.rerun=new"]
    finish(harness(*args, cwd=tmp_path))
    finish(harness(*args, cwd=tmp_path))
    import mlflow

    cold, warm = sorted(runs(uri), key=lambda r: r.info.start_time)
    assert cold.data.params["chunker.size"] == "200" and cold.data.params["context.budget"] == "4096"
    assert 0 <= cold.data.metrics["evidence_recall"] <= 1
    assert "task" not in cold.data.metrics and cold.data.metrics["evidence_exact_share"] > 0
    tags = warm.data.tags
    assert tags["scale"] == "smoke" and tags["git_sha"] and "torch" in tags["package_versions"]
    assert tags["stage/chunk"] == "cached" and tags["stage/retrieve"] == "cached"
    assert tags["cache/retrieve"] == "1 hits, 0 misses"
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(warm.info.run_id)}
    assert {"config.json", "per_query.jsonl", "dataset_report.json"} <= artifacts
    low, high = cold.data.metrics["evidence_recall/ci95_low"], cold.data.metrics["evidence_recall/ci95_high"]
    assert low <= cold.data.metrics["evidence_recall"] <= high
    # The paired comparison reads both runs' per-query artifacts: identical runs, no difference.
    out = finish(harness("compare", cold.info.run_id, warm.info.run_id, "--uri", uri, cwd=tmp_path,
                         module="harness.cli"))
    assert "B-A +0.0000" in out and "p = 1" in out and "n = 20 queries" in out


@pytest.mark.slow
def test_sweep_runs_every_chunker(tmp_path):
    out = finish(harness("-m", "chunker=fixed,sentence", *TINY_LEXICAL, "tracking=none",
                         f"cache.dir={tmp_path / 'cache'}", "hydra.sweep.dir=sweep", cwd=tmp_path))
    assert out.count("evidence_recall") == 2
    assert "/fixed/" in out and "/sentence/" in out


@pytest.mark.parametrize("override, message", [
    ("chunker=nope", "chunker=nope: no such choice; the choices: atomic_units, "),
    ("context.budget=0", "context.budget must be an integer > 0"),
    ("retriever.scope=everything", "retriever.scope must be one of document, corpus"),
    ("dataset=local", "dataset.path"),
])
def test_bad_config_is_a_clear_error(tmp_path, override, message):
    p = harness(override, "tracking=none", f"cache.dir={tmp_path / 'cache'}", cwd=tmp_path)
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0 and message in err, err[-2000:]
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_killed_run_resumes_from_its_cache(tmp_path):
    """SIGKILL a real run while it embeds the bundled sample (all but its 10-K, 60% of the text),
    then rerun: documents chunked and vectors written before the kill are reused, and the rerun
    completes."""
    import signal
    import time

    cache = tmp_path / "cache"

    def vectors() -> int:  # stored in packs, a file per batch of texts (harness/cache_packs.py)
        return sum(len(pack_keys(f, HEADER_BYTES)) for f in (cache / "embeddings").rglob("*")
                   if f.is_file() and not f.name.startswith("."))

    args = ("dataset.domains=[law,manual,news,paper,textbook]", "tracking=none", f"cache.dir={cache}")
    p = harness(*args, cwd=tmp_path)
    deadline = time.time() + 300
    while time.time() < deadline and p.poll() is None:
        if vectors():  # a batch of vectors written, not all
            break
        time.sleep(0.2)
    assert p.poll() is None, "the run finished before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    written = vectors()
    out = finish(harness(*args, cwd=tmp_path))
    assert "[chunk] cached" in out and "7/7 documents from cache" in out
    assert vectors() > written > 0
    assert "evidence_recall" in out


# --- python -m harness.cli -----------------------------------------------------------------------

def test_cli_parsing():
    p = cli.parser()
    a = p.parse_args(["table"])
    assert (a.uri, a.experiment, a.rows, a.cols, a.metric) == (None, None, "params.chunker._target_",
                                                               "params.retriever._target_", None)
    a = p.parse_args(["compare", "A", "B", "--metric", "m1", "--metric", "m2", "--uri", "sqlite:///x.db"])
    assert (a.run_a, a.run_b, a.metric, a.uri, cli.overrides(a)) == ("A", "B", ["m1", "m2"], "sqlite:///x.db", [])
    a = p.parse_args(["judge", "A", "B", "--llm-config", "vllm", "--set", "model=Qwen/Qwen3-8B", "--set",
                      "dtype=float32", "--cache", "/c"])
    assert cli.overrides(a) == ["llm=vllm", "llm.model=Qwen/Qwen3-8B", "llm.dtype=float32", "cache.dir=/c"]
    a = p.parse_args(["judge", "A", "B"])
    assert cli.overrides(a) == ["llm=transformers"]
    assert (a.temperature, a.max_tokens, a.seed, a.retries, a.out, a.prompt_file) == (0.0, 512, 0, 2, None, None)
    assert p.parse_args(["ls"]).group is None and p.parse_args(["ls", "chunker"]).group == "chunker"
    for bad in ([], ["nope"], ["compare", "A"], ["table", "--nope"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)


def test_ls_lists_the_real_configs(capsys):
    cli.main(["ls"])
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line]
    files = [p for p in CONFIGS.rglob("*.yaml") if p.relative_to(CONFIGS).parts[0] not in registry.NOT_GROUPS]
    assert len(rows) == len(files) - 1  # every file but configs/config.yaml, the paper tables and hardware files
    assert lines.count("") == len({line.split()[0] for line in rows}) - 1  # a blank line between groups
    assert len({len(line) - len(line.split(maxsplit=2)[2]) for line in rows}) == 1  # descriptions aligned
    assert "experiment" in {line.split()[0] for line in rows}
    assert any(line.split()[:2] == ["chunker", "fixed"] and line.endswith("windows share `overlap` units.")
               for line in rows)
    cli.main(["ls", "tracking"])
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()] == [["tracking", "local"],
                                                                                   ["tracking", "none"]]


def test_ls_chunker_shows_whole_sentences_parameters_and_the_models_taken(capsys):
    cli.main(["ls", "chunker"])
    text = capsys.readouterr().out
    paragraphs = {p.split()[0]: p for p in text.strip().split("\n\n")}
    assert set(paragraphs) == set(registry.choices("chunker", templates=True))
    assert paragraphs["fixed"].splitlines()[1].split() == ["parameters:", "size=200,", "overlap=0,", "unit=tokens,",
                                                           "tokenizer=bundled"]
    # a sentence over two comment lines, whole; the model it calls as a flag, not an interpolation
    assert "[calls an LLM] LumberChunker (Duarte et al. 2024; HiChunk's \"LC\" baseline): paragraphs grouped up to " \
           "`threshold` tokens; the model names the first paragraph" in paragraphs["lumber"]
    assert "${" not in paragraphs["lumber"] and "parameters: threshold=550," in paragraphs["lumber"]
    assert "[embeds] Breakpoint-based" in paragraphs["semantic_breakpoint"]
    assert "[embeds, calls an LLM]" in paragraphs["raptor"] and "[" not in paragraphs["fixed"]


def test_a_first_sentence_ends_at_a_full_stop_outside_brackets_and_abbreviations():
    assert registry.first_sentence("A (Sec. 2. B) cut, e.g. here. Not this.") == "A (Sec. 2. B) cut, e.g. here."
    assert registry.first_sentence("Lu et al. 2025 say `a. b` so! Then") == "Lu et al. 2025 say `a. b` so!"
    assert registry.first_sentence("no stop at all") == "no stop at all"


def test_version_names_the_checkout_it_runs(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith("chunkbench ")
    assert f" from {Path(cli.__file__).resolve().parents[2]} (commit " in out  # the checkout, not the working directory


@pytest.mark.parametrize("argv, message", [
    (["ls", "nope"], "no config group 'nope' (groups: chunker,"),
    (["judge", "A", "B", "--llm-config", "gpt5"], "Could not find 'llm/gpt5'"),
    (["judge", "A", "B", "--set", "no_such_key=1"], "no_such_key"),
    (["judge", "A", "B", "--llm-config", "none"], "--llm-config none: builds NoneType, not a language model"),
])
def test_cli_errors_are_one_line(argv, message, capsys, monkeypatch):
    import harness.report.compare as compare_module

    monkeypatch.setattr(compare_module, "per_query", lambda uri, run: {"A": RUN_A, "B": RUN_B}[run])
    monkeypatch.setattr(judge, "tracking_uri", lambda args, cfg: "sqlite:///runs.db")  # the runs are stand-ins
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("chunkbench: error: ") and message in err, err


def test_judge_llm_from_the_composed_config(tmp_path):
    args = cli.parser().parse_args(["judge", "A", "B", "--set", "batch_size=3", "--cache", str(tmp_path)])
    llm = judge.build_llm(registry.compose(cli.overrides(args)), args.llm_config)
    assert type(llm).__name__ == "TransformersLLM" and llm.batch_size == 3
    assert llm.cache.dir.absolute() == tmp_path.absolute()  # the judge's model calls are cached there


def test_judge_command(monkeypatch, tmp_path, capsys):
    import harness.pipeline.components as components
    import harness.report.compare as compare_module

    read, built = [], []
    monkeypatch.setattr(compare_module, "per_query", lambda uri, run: read.append(uri) or {"A": RUN_A, "B": RUN_B}[run])

    def build(node, where):
        built.append((where, node.model, node.batch_size))
        return ScriptedLLM(reply=judge_reply)

    monkeypatch.setattr(components, "build_component", build)
    monkeypatch.chdir(tmp_path)
    from harness.pipeline.store import open_store

    open_store("sqlite:///mlruns.db")  # the store the runs are read from must be one (they are stand-ins)
    out = tmp_path / "judged.jsonl"
    cli.main(["judge", "A", "B", "--set", "batch_size=3", "--out", str(out), "--cache", str(tmp_path / "cache")])
    assert built == [("llm", "bundled", 3)] and read == ["sqlite:///mlruns.db"] * 2  # tracking.uri of the config
    printed = capsys.readouterr().out
    assert printed.startswith("A = A, B = B; judge scripted; 4 queries judged, left out: ")
    assert "score_based  A win 0.333  tie 0.333  A loss 0.333  (n = 3, invalid = 1)" in printed
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score_based"] for r in records] == ["win", "tie", "loss", None]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A real MLflow store: two runs on OHR-Bench's news documents (6 questions), BM25 and TF-IDF."""
    d = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{d / 'mlruns.db'}"
    for retriever in ("bm25", "tfidf"):
        finish(harness("dataset.domains=[news]", f"retriever={retriever}", f"cache.dir={d / 'cache'}",
                       f"tracking.uri={uri}", cwd=d))
    return d, [r.info.run_id for r in sorted(runs(uri), key=lambda r: r.info.start_time)]


@pytest.mark.slow
def test_table_command(store):
    d, _ = store
    out = finish(harness("table", "--uri", f"sqlite:///{d / 'mlruns.db'}", cwd=d, module="harness.cli"))
    lines = out.splitlines()
    assert lines[:3] == ["", "evidence_recall  (chunkbench, scale=smoke)", "                  BM25Retriever  TfidfRetriever"]
    assert lines[3].split()[0] == "FixedSizeChunker" and all(0 <= float(v) <= 1 for v in lines[3].split()[1:])
    assert lines[4:6] == ["", "span_recall  (chunkbench, scale=smoke)"] and lines[8] == ""
    assert "retriever._target_ (BM25Retriever, TfidfRetriever)" in lines[9] and lines[10] == "held fixed:"
    # the store of the config's tracking.uri (sqlite:///mlruns.db in the working directory) by default
    out = finish(harness("table", "--metric", "span_recall", "--rows", "params.retriever._target_",
                         "--cols", "params.chunker._target_", cwd=d, module="harness.cli"))
    lines = out.splitlines()
    assert lines[1] == "span_recall  (chunkbench, scale=smoke)" and lines[2].split() == ["FixedSizeChunker"]
    assert [line.split()[0] for line in lines[3:5]] == ["BM25Retriever", "TfidfRetriever"] and lines[5] == ""
    p = harness("table", "--experiment", "nope", cwd=d, module="harness.cli")
    assert p.communicate(timeout=120)[1].endswith("no finished runs in experiment 'nope' at sqlite:///mlruns.db\n")
    assert p.returncode == 1
    # a metric no run records: one line, the nearest name and the recorded ones
    p = harness("table", "--metric", "evidence_recal", cwd=d, module="harness.cli")
    err = p.communicate(timeout=120)[1].splitlines()
    assert p.returncode == 2 and len(err) == 1, err
    assert err[0].startswith("chunkbench: error: --metric evidence_recal (did you mean evidence_recall?): no run "
                             "of chunkbench records it; recorded: ") and "span_recall" in err[0]


@pytest.mark.slow
def test_compare_command(store):
    d, (a, b) = store
    out = finish(harness("compare", a, b, "--metric", "evidence_recall", "--metric", "span_recall", cwd=d,
                         module="harness.cli"))
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["evidence_recall", "span_recall"]
    assert all("paired permutation p = " in line and "n = 6 queries (0 only in one run)" in line for line in lines)
    p = harness("compare", a, b, "--metric", "nope", cwd=d, module="harness.cli")
    assert "has no per-query metric 'nope'" in p.communicate(timeout=120)[1] and p.returncode == 1


@pytest.mark.slow
def test_run_whose_recording_fails_keeps_its_results_and_rerun_records_them(tmp_path, monkeypatch):
    """The tracking server answers its health check (so the run starts) but fails every API call
    (a store that cannot be used at all is refused before any stage: tests/pipeline/test_bad_inputs.py):
    the run exits 3 with one line, its stages stay cached, and the same command against a working
    store only records them."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class HealthyButBroken(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 503)
            self.end_headers()
            self.wfile.write(b"OK" if self.path == "/health" else b"down")

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), HealthyButBroken)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setitem(ENV, "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # the client gives up at once
    args = [*TINY_LEXICAL, f"cache.dir={tmp_path / 'cache'}"]
    try:
        p = harness(*args, f"tracking.uri=http://127.0.0.1:{server.server_port}", cwd=tmp_path)
        out, err = p.communicate(timeout=600)
    finally:
        server.shutdown()
    assert p.returncode == 3, err[-2000:]
    assert "the run is computed and cached, but recording it in http://127.0.0.1" in err.strip().splitlines()[-1]
    out = finish(harness(*args, f"tracking.uri=sqlite:///{tmp_path / 'mlruns.db'}", cwd=tmp_path))
    assert "] computed in" not in out  # every stage read back from the cache
    (run,) = runs(f"sqlite:///{tmp_path / 'mlruns.db'}")
    assert {v for k, v in run.data.tags.items() if k.startswith("stage/")} == {"cached"}


# --- chunkbench (the console script) ---------------------------------------------------------------

def test_every_verb_has_help_with_an_example(capsys):
    for verb in ("ls", "table", "compare", "judge", "tables", "challenge", "models", "site"):
        with pytest.raises(SystemExit) as e:
            cli.main([verb, "--help"])
        assert e.value.code == 0 and "example:\n  chunkbench " in capsys.readouterr().out, verb


@pytest.mark.slow
def test_the_chunkbench_script_runs_what_python_m_harness_runs(tmp_path):
    script = str(Path(sys.executable).parent / "chunkbench")
    helped = subprocess.run([script, "run", "--help"], cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert helped.returncode == 0 and "example:\n  chunkbench run " in helped.stdout
    assert "== Config groups (GROUP=CHOICE) ==" in helped.stdout  # then Hydra's help of the app
    args = [*TINY_LEXICAL, "dataset.limit_docs=1", "tracking=none", f"cache.dir={tmp_path / 'cache'}"]
    by_script = subprocess.run([script, "run", *args], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                               timeout=600)
    by_module = finish(harness(*args, cwd=tmp_path))
    assert by_script.returncode == 0, by_script.stderr[-2000:]

    def scores(out: str) -> list[str]:
        return [line for line in out.splitlines() if "evidence_recall" in line or "n_chunks" in line]

    assert scores(by_script.stdout) == scores(by_module) and scores(by_module)


def test_a_misspelt_key_ends_a_run_in_one_line_before_any_work(tmp_path):
    script = str(Path(sys.executable).parent / "chunkbench")
    p = subprocess.run([script, "run", "chunker.sise=100", f"cache.dir={tmp_path / 'cache'}"], cwd=tmp_path, env=ENV,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "chunkbench: error: chunker.sise: no such key in chunker; did you mean size? (a new key: +chunker.sise=...)"]
    assert not (tmp_path / "cache").exists() and not (tmp_path / "mlruns.db").exists()


@pytest.mark.slow
def test_ctrl_c_ends_a_run_in_one_line_and_the_rerun_resumes(tmp_path):
    import signal

    args = [*TINY, "tracking=none", f"cache.dir={tmp_path / 'cache'}"]
    # as a terminal's Ctrl-C: a suite started in the background (nohup, `&`) ignores SIGINT, and the
    # child would inherit that
    p = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=tmp_path, text=True,
                         env={**ENV, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in p.stdout:  # the first stage is cached, the next ones are under way
        if line.startswith("[load] computed"):
            break
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == ("chunkbench: interrupted; rerun the same command to resume (what "
                                           "finished is cached)") and "Traceback" not in err
    again = finish(harness(*args, cwd=tmp_path))
    assert "[load] cached" in again
