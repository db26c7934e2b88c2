"""Run names and titles (issue 16, item 5; item 15's counts): runs named by what differs from
the defaults, the title printed as text, counts as integers."""

import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from harness.pipeline.naming import default_choices, run_name
from harness.pipeline.runner import RunResult
from harness.report.summary import summary_table
from tests.conftest import TINY_LEXICAL
from tests.test_cli import ENV

# The subprocess runs in a temp folder: this checkout's package, not whichever one is installed.
ENV = {**ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

DEFAULT_CHOICES = {"dataset": "ohrbench", "chunker": "fixed", "embedder": "bundled", "retriever": "dense",
                   "context": "budget", "llm": "transformers", "responder": "none", "metrics": "retrieval",
                   "tracking": "local", "profile": None, "experiment": None, "hydra/launcher": "basic"}


ROLES = {"llm@roles.chunker.llm": None, "embedder@roles.chunker.embedder": None, "llm@roles.metrics.fact_cov.llm": None,
         "llm@roles.metrics.chunkscore.llm": None, "embedder@roles.metrics.chunkscore.embedder": None,
         "llm@roles.synth.llm": None, "embedder@roles.synth.embedder": None}


def test_defaults_come_from_the_primary_config():
    # the model roles' package defaults (null: the run's llm / embedder) are choices of their own
    assert default_choices() == {**{k: v for k, v in DEFAULT_CHOICES.items() if not k.startswith("hydra/")}, **ROLES}


def test_a_role_set_apart_is_named():
    choices = {**DEFAULT_CHOICES, **ROLES, "chunker": "lumber", "llm@roles.chunker.llm": "vllm"}
    name = run_name(choices, ["chunker=lumber", "llm@roles.chunker.llm=vllm", "roles.chunker.llm.model=m/x"])
    assert name == "ohrbench/lumber/dense/budget llm@roles.chunker.llm=vllm roles.chunker.llm.model=m/x"


def test_name_has_the_changed_groups_values_and_experiment_but_no_service_or_secret():
    choices = {**DEFAULT_CHOICES, "chunker": "sentence", "responder": "llm", "experiment": "hichunk_table2",
               "tracking": "none"}
    overrides = ["chunker=sentence", "responder=llm", "experiment=hichunk_table2", "retriever.scope=corpus",
                 "dataset.limit_queries=10", "+chunker.extra=1", "cache.dir=/tmp/c", "tracking=none", "tracking.uri=x",
                 "hydra.run.dir=out", "scale=full", "llm.api_key=sk-do-not-name-me"]
    assert run_name(choices, overrides) == ("ohrbench/sentence/dense/budget experiment=hichunk_table2 responder=llm "
                                            "chunker.extra=1 dataset.limit_queries=10 retriever.scope=corpus")
    assert run_name(DEFAULT_CHOICES, []) == "ohrbench/fixed/dense/budget"
    # Override order does not change the name; a different value does.
    assert run_name(DEFAULT_CHOICES, ["a.b=1", "c.d=2"]) == run_name(DEFAULT_CHOICES, ["c.d=2", "a.b=1"])
    assert run_name(DEFAULT_CHOICES, ["chunker.size=400"]) != run_name(DEFAULT_CHOICES, ["chunker.size=300"])


def test_counts_print_as_integers_and_the_title_as_text():
    result = RunResult({"n_docs": 0, "chunker_fallback_split": 0.0, "chunker_cost_llm_calls": 12.0,
                        "span_iou": 0.0}, [], {"evidence_missing": 0, "evidence_exact_share": 0.0})
    console = Console(record=True, width=200)
    console.print(summary_table(result, "ohrbench/fixed/dense/budget [scale=smoke]"))
    text = console.export_text()
    assert "ohrbench/fixed/dense/budget [scale=smoke]" in text
    rows = {line.split("│")[2].strip(): line.split("│")[3].strip() for line in text.splitlines()
            if line.count("│") > 3}
    assert rows["n_docs"] == "0" and rows["chunker_fallback_split"] == "0" and rows["evidence_missing"] == "0"
    assert rows["chunker_cost_llm_calls"] == "12"
    assert rows["span_iou"] == "0.0000" and rows["evidence_exact_share"] == "0.0000"  # scores keep decimals


@pytest.mark.slow
def test_runs_differing_by_one_value_get_different_names(tmp_path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    p = subprocess.run([sys.executable, "-m", "harness", "-m", "chunker.size=150,250", *TINY_LEXICAL,
                        "dataset.limit_queries=3", f"cache.dir={tmp_path / 'cache'}", f"tracking.uri={uri}"],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = " ".join(p.stdout.split())  # rich wraps the title to the table's width
    assert out.count("[scale=smoke] mlflow run ") == 2, out  # printed as text, not read as markup
    mlflow.set_tracking_uri(uri)
    names = sorted(r.info.run_name for r in mlflow.search_runs(experiment_names=["chunkbench"], output_format="list"))
    assert names == [f"ohrbench/fixed/bm25/budget chunker.size={n} dataset.domains=[news,textbook] "
                     f"dataset.limit_queries=3" for n in (150, 250)]


def test_the_summary_printed_to_a_pipe_keeps_every_metric_name_whole(capsys):
    from harness.report.summary import print_summary

    long = "answer_scope_recall_multi_view_traversal_at_10_with_a_very_long_name"
    result = RunResult({long: 0.5, f"{long}/ci95_low": 0.4, f"{long}/ci95_high": 0.6, f"n/{long}": 30}, [], {})
    print_summary(result, "ohrbench/fixed/dense/budget [scale=smoke]")   # captured: no terminal
    out = capsys.readouterr().out
    assert any(long in line and "0.5000" in line for line in out.splitlines())
