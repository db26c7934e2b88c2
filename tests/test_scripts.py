"""Every script under scripts/ answers ``--help`` before it loads the harness's heavy parts; the benchmarks
that embed run end to end on a few texts."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPTS = sorted((REPO / "scripts").glob("*.py"))
HEAVY = ("torch", "mlflow", "pandas", "transformers", "sentence_transformers", "harness.pipeline",
         "harness.data", "harness.llm")

# Runs the script as `python SCRIPT --help` would, then reports what it had imported.
PROBE = """
import json, runpy, sys
sys.argv = [sys.argv[1], "--help"]
code = None
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_every_script_is_probed():
    assert {p.name for p in SCRIPTS} >= {"bench_warm_cold.py", "bench_chunkers.py", "bench_llm.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_answers_before_heavy_imports(script):
    out = subprocess.run([sys.executable, "-c", PROBE, str(script)], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    usage, report = out.stdout, json.loads(out.stdout.splitlines()[-1])
    assert report["code"] == 0 and "usage:" in usage  # argparse printed the help and exited
    loaded = [m for m in report["modules"] if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]
    assert not loaded, f"{script.name} --help imported {loaded[:5]}"


def run_script(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([python, *args], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow  # the bundled model, end to end
def test_batch_sweep_times_the_runs_embedder_at_each_batch(tmp_path):
    """`bench_embed.py --batch-sweep` reads the embedder (and its batch) from the run's config with
    its overrides, and writes one row a text kind with a cell a batch size, and the cheapest batch."""
    out = tmp_path / "embed_batch.md"
    done = run_script("scripts/bench_embed.py", "--batch-sweep", "--texts", "2", "--rounds", "1",
                      "--batches", "1,2", "--set", "embedder.batch_size=2", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text(encoding="utf-8")
    assert "configured batch_size 2" in text  # the override's, not configs/embedder/bundled.yaml's 1
    assert "| texts | mean tokens | batch 1 | batch 2 |" in text
    rows = [line for line in text.splitlines() if line.startswith(("| sentences", "| paragraphs", "| six", "| all"))]
    assert len(rows) == 4 and all(len(r.strip("|").split("|")) == 4 for r in rows)
    assert re.search(r"Cheapest batch on this device \(CPU seconds, all three\): [12]\b", text)


@pytest.mark.parametrize("args, line", [
    (("--batches", "1,0"), "bench_embed.py: error: --batches: each batch size must be > 0, got '1,0'"),
    (("--set", "embedder.batchsize=3"), "bench_embed.py: error: --set: embedder.batchsize: no such key in embedder; "
                                        "did you mean batch_size?"),
    (("--set", "embedder.batch_size=0"), "bench_embed.py: error: --set: embedder: embedder.batch_size must be > 0")])
def test_batch_sweep_refuses_bad_input_in_one_line(args, line):
    done = run_script("scripts/bench_embed.py", "--batch-sweep", *args)
    assert done.returncode == 2 and line in done.stderr.splitlines()[-1]
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # the bundled model, end to end
def test_bench_speed_times_the_semantic_chunkers_at_the_runs_batch(tmp_path):
    """make bench's semantic table states the run's batch (configs/embedder), labels the published
    breakpoint method as what it is, and with --compare-batch adds a labelled column."""
    pytest.importorskip("langchain_experimental", reason="the `bench` extra (make bench's .venv-bench)")
    pytest.importorskip("chonkie")
    out = tmp_path / "performance.md"
    done = run_script("scripts/bench_speed.py", "--skip-rule", "--semantic-kb", "2", "--rounds", "1",
                      "--compare-batch", "4", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text(encoding="utf-8")
    assert "**batch_size 1**" in text
    assert "| method | CPU s | wall s | floor / method (CPU) | CPU s at batch 4 |" in text
    assert "window_embedding=text (the published method: encodes every 3-sentence window)" in text
    windows, floor = re.search(r"encodes each sentence's 3-sentence window, ([\d,]+) tokens against the floor's "
                               r"([\d,]+)", text).groups()
    assert int(windows.replace(",", "")) > int(floor.replace(",", ""))
