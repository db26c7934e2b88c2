"""`harness.cli table` and `compare` on a real MLflow store: three tiny runs of the bundled sample
that differ in dataset (domains), context budget and query limit (BM25: the table is the subject)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import ENV, finish, harness, runs


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{d / 'mlruns.db'}"
    for extra in (["dataset.domains=[news]"], ["dataset.domains=[news]", "context.budget=256"],
                  ["dataset.domains=[textbook]", "dataset.limit_queries=3"]):
        finish(harness(*extra, "retriever=bm25", f"cache.dir={d / 'cache'}", f"tracking.uri={uri}", cwd=d))
    return d, uri, sorted(runs(uri), key=lambda r: r.info.start_time)


def cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=ENV, text=True,
                          capture_output=True, timeout=300)


@pytest.mark.slow
def test_table_keeps_every_setting_apart_and_says_what_it_held_fixed(store):
    d, uri, recorded = store
    out = cli("table", "--uri", uri, "--metric", "evidence_recall", cwd=d)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[1] == "evidence_recall  (chunkbench, scale=smoke)"
    rows = {line.rsplit(None, 1)[0]: float(line.rsplit(None, 1)[1]) for line in lines[3:6]}
    expected = {f"FixedSizeChunker context.budget={r.data.params['context.budget']} "
                f"dataset.domains={r.data.params['dataset.domains']}": r.data.metrics["evidence_recall"]
                for r in recorded}
    assert len(expected) == 3 and rows.keys() == expected.keys()  # three runs, three cells
    assert all(rows[k] == pytest.approx(v, abs=5e-5) for k, v in expected.items())
    varied = next(line for line in lines if line.startswith("varied: "))
    assert "context.budget (256, 4096)" in varied and "dataset.limit_queries (3, None)" in varied
    assert "dataset.domains (['news'], ['textbook'])" in varied and "cache.dir" not in out.stdout
    fixed = lines[lines.index("held fixed:") + 1:]
    assert any(line.startswith("  chunker: FixedSizeChunker") and "size=200" in line for line in fixed)
    assert any(line.startswith("  retriever: BM25Retriever") for line in fixed)
    # the console script prints the same (make setup installs it beside the venv's python)
    same = subprocess.run([str(Path(sys.executable).parent / "chunkbench"), "table", "--uri", uri, "--metric",
                           "evidence_recall"], cwd=d, env=ENV, text=True, capture_output=True, timeout=300)
    assert same.returncode == 0 and same.stdout == out.stdout


@pytest.mark.slow
def test_compare_takes_the_short_run_ids_the_summary_prints(store):
    d, uri, (a, b, _) = store
    full = cli("compare", a.info.run_id, b.info.run_id, "--uri", uri, cwd=d)
    short = cli("compare", a.info.run_id[:8], b.info.run_id[:8], "--uri", uri, cwd=d)
    assert full.returncode == 0 and short.returncode == 0, short.stderr[-2000:]
    assert short.stdout == full.stdout and short.stdout.startswith("evidence_recall: A ")
    for prefix in ("zzzz", "0123456789abcdef"):  # no run id has it
        out = cli("compare", prefix, b.info.run_id[:8], "--uri", uri, cwd=d)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith(f"chunkbench: error: run '{prefix}': no run of {uri} has an id starting so")


@pytest.mark.slow
def test_compare_says_when_a_prefix_names_several_runs(store):
    import mlflow

    d, uri, recorded = store
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment("prefix-clash")
    ids = [r.info.run_id for r in recorded]
    while len({i[0] for i in ids}) == len(ids):  # until two runs share a first character (at most 16 more)
        ids.append(client.create_run(exp).info.run_id)
    clash = next(i[0] for i in ids if sum(j[0] == i[0] for j in ids) > 1)
    out = cli("compare", clash, ids[0], "--uri", uri, cwd=d)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"chunkbench: error: run '{clash}' is ambiguous: ") and "give more characters" in out.stderr
