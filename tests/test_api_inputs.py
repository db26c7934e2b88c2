"""``harness.evaluate`` given what a caller may pass by mistake, and called inside the caller's own
MLflow run (issue 51 item 7): one ConfigError before any work, or a record that leaves the caller's
MLflow state as it was."""

import json
import os

import mlflow
import pytest

import harness
from harness.types import ConfigError


@pytest.mark.parametrize("overrides, message", [
    ("chunker=sentence", r"^evaluate: overrides must be a list of strings, got the string 'chunker=sentence': "
                         r"write \['chunker=sentence'\]"),
    (["chunker=sentence", None], r"^evaluate: overrides\[1\] must be a string such as 'chunker=sentence', got NoneType"),
    ({"chunker": "sentence"}, r"^evaluate: overrides must be a list of strings such as \['chunker=sentence'\], got dict"),
])
def test_overrides_that_are_not_a_list_of_strings(tmp_path, overrides, message):
    """Before: the string was read letter by letter ("override: Error parsing override 'c'"), None a
    TypeError in Hydra's lexer."""
    with pytest.raises(ConfigError, match=message):
        harness.evaluate(overrides)
    assert list(tmp_path.iterdir()) == []


def test_evaluate_inside_the_callers_run_on_another_store(tmp_path):
    """Before: MlflowException "Run with id=... not found" (MLflow looked the caller's open run up in
    the harness's store) after the whole run, and the caller's tracking URI pointed at the harness's."""
    d = tmp_path / "D"
    d.mkdir()
    (d / "documents.jsonl").write_text(json.dumps({"doc_id": "d1", "text": "The Thames flows through London."}) + "\n")
    (d / "queries.jsonl").write_text(json.dumps({"qid": "q1", "question": "Which river?", "doc_ids": ["d1"]}) + "\n")
    theirs, ours = f"sqlite:///{tmp_path / 'theirs.db'}", f"sqlite:///{tmp_path / 'ours.db'}"
    mlflow.set_tracking_uri(theirs)
    try:
        with mlflow.start_run() as run:
            r = harness.evaluate(["dataset=local", f"dataset.path={d}", "retriever=bm25", f"cache.dir={tmp_path / 'cache'}",
                                  f"tracking.uri={ours}"])
            assert mlflow.active_run().info.run_id == run.info.run_id  # still the caller's, still open
            assert mlflow.get_tracking_uri() == theirs
            mlflow.log_metric("mine", 1.0)
        assert mlflow.MlflowClient(ours).get_run(r.run_id).data.metrics["n_queries"] == 1
        assert mlflow.MlflowClient(theirs).get_run(run.info.run_id).data.metrics == {"mine": 1.0}
    finally:
        mlflow.set_tracking_uri(None)


def test_evaluate_leaves_no_experiment_exported_for_the_callers_next_run(tmp_path, monkeypatch):
    """mlflow.set_experiment exports MLFLOW_EXPERIMENT_ID; left behind, a caller's later
    mlflow.start_run() on their own store looked up the harness's experiment id there
    ("No Experiment with id=1 exists", found by the suite's order)."""
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    d = tmp_path / "D"
    d.mkdir()
    (d / "documents.jsonl").write_text(json.dumps({"doc_id": "d1", "text": "The Thames flows through London."}) + "\n")
    (d / "queries.jsonl").write_text(json.dumps({"qid": "q1", "question": "Which river?", "doc_ids": ["d1"]}) + "\n")
    harness.evaluate(["dataset=local", f"dataset.path={d}", "retriever=bm25", f"cache.dir={tmp_path / 'cache'}",
                      f"tracking.uri=sqlite:///{tmp_path / 'ours.db'}"])
    assert "MLFLOW_EXPERIMENT_ID" not in os.environ
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'theirs.db'}")
    try:
        with mlflow.start_run() as run:  # the caller's own store: its default experiment
            mlflow.log_metric("mine", 1.0)
        assert mlflow.MlflowClient().get_run(run.info.run_id).data.metrics == {"mine": 1.0}
    finally:
        mlflow.set_tracking_uri(None)
