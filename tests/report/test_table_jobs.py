"""A table's grid points as a sweep's jobs (``hydra/sweeper=table``, Hydra's in-process launcher
here; SLURM in tests_cluster/test_slurm_tables.py), and a plain run found by its config.

MC-indexing Table 1 has one grid point at smoke scale (dataset statistics of the bundled OHR-Bench
paper): a job costs a process start, not a model."""

import os
import subprocess
import sys

import pytest

from harness.pipeline.record import config_identity, record_run, run_identity
from harness.pipeline.runner import Pipeline
from harness.report.tables import grid, render, spec, submit
from harness.report.tables.records import point_runs

REPO = spec.REPO
TABLE = "mc_indexing/table1"


def test_a_point_key_is_quoted_for_hydra():
    assert submit.quoted("fixed|news|chunker.size=100") == "'fixed|news|chunker.size=100'"
    assert submit.quoted("it's") == "'it\\'s'"
    t = spec.select(TABLE)[0]
    (point,) = [p for p in t.runs("smoke") if not p.skip]
    overrides = submit.job_overrides(t, point, "smoke", ["scale=smoke", "cache.dir=/c"])
    assert overrides == [*point.overrides, "scale=smoke", f"experiment_name={t.experiment}", "cache.dir=/c",
                         f"+table_point.table='{TABLE}'", f"+table_point.key='{point.key}'", "+table_point.set='[]'"]
    with_set = submit.job_overrides(t, point, "smoke", ["retriever=bm25", "tracking.uri=sqlite:///x.db"])
    assert with_set[-1] == """+table_point.set='["retriever=bm25"]'"""


def test_the_overrides_a_run_is_tagged_with_are_those_that_change_its_config():
    assert grid.config_overrides(["tracking.uri=sqlite:///x.db", "cache.dir=/c", "hydra/launcher=local", "scale=full",
                                  "hydra.sweep.dir=/s", "llm.api_key=k", "experiment_name=e", "refresh=[chunk]"]) == []
    # sorted, each key's last value, `+` and `++` the same key
    assert grid.config_overrides(["retriever=bm25", "context.budget=256", "++context.budget=512", "profile=cluster"]) \
        == ["context.budget=512", "profile=cluster", "retriever=bm25"]


def test_which_overrides_send_the_points_to_a_launcher():
    assert not submit.uses_launcher([])
    assert not submit.uses_launcher(["cache.dir=/tmp/x"])
    assert submit.uses_launcher(["hydra/launcher=local"])
    assert submit.uses_launcher(["profile=cluster"])  # its launcher is SLURM's


def test_the_identity_of_a_run_is_its_config_not_where_it_is_recorded(tmp_path):
    t = spec.select(TABLE)[0]
    (point,) = [p for p in t.runs("smoke") if not p.skip]
    cfg = grid.compose(t, point, "smoke", [f"cache.dir={tmp_path}"])
    plain = grid.compose(t, point, "smoke", ["experiment_name=mine", "tracking.uri=sqlite:///elsewhere.db",
                                             f"cache.dir={tmp_path / 'other'}"])
    assert config_identity(plain) == config_identity(cfg) and run_identity(plain, code="c") == run_identity(cfg, code="c")
    other = grid.compose(t, point, "smoke", ["dataset.domains=[news]"])
    assert config_identity(other) != config_identity(cfg)


@pytest.mark.slow
def test_a_tables_sweep_records_what_tables_run_would_and_queues_nothing_twice(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    sweep = [sys.executable, "-m", "harness", "-m", "hydra/sweeper=table", f"hydra.sweeper.tables=[{TABLE}]",
             "scale=smoke", f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}", f"hydra.sweep.dir={tmp_path / 'm'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    first = subprocess.run(sweep, cwd=REPO, capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "1 point(s) at smoke scale: 0 already recorded, 1 to queue" in first.stdout
    assert f"[{TABLE}] 1 finished, 0 failed" in first.stdout
    # the job's run is the one `tables run` would record: same identity, so it is not run again
    t = spec.select(TABLE)[0]
    said = []
    again = grid.run_table(t, "smoke", [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"], log=said.append)
    assert [o.note for o in again if o.status == "finished"][0].startswith("already recorded as run")
    second = subprocess.run(sweep, cwd=REPO, capture_output=True, text=True, env=env)
    assert second.returncode == 0 and "nothing to queue: every point is recorded" in second.stdout
    assert render.build(t, uri, "smoke").filled == 5  # the table's five statistics of its one point


@pytest.mark.slow
def test_a_plain_run_of_a_points_settings_fills_its_cell(tmp_path):
    """No ``table.run`` tag, another experiment name: the run is found by its config."""
    t = spec.select(TABLE)[0]
    (point,) = [p for p in t.runs("smoke") if not p.skip]
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    where = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    assert point_runs(t, uri, "smoke", where) == {}
    from harness import registry

    cfg = registry.compose([*point.overrides, "scale=smoke", *where])  # experiment_name: chunkbench
    record_run(cfg, Pipeline(cfg, log=lambda *_: None).run(), "by hand")
    assert list(point_runs(t, uri, "smoke", where)) == [point.key]
    assert render.build(t, uri, "smoke", where).filled == 5
    assert cfg.experiment_name == "chunkbench"
    # a point of other settings finds nothing
    assert list(point_runs(t, uri, "smoke", [*where, "dataset.domains=[news]"])) == []


@pytest.mark.slow
def test_a_point_recorded_under_other_overrides_is_not_the_points_run(tmp_path):
    """``tables render --set``: a run recorded without the override is "not run yet" under it, and
    one recorded under it is not the point's without it; an override that restates the default is
    the same config (found by composing the point)."""
    t = spec.select(TABLE)[0]
    (point,) = [p for p in t.runs("smoke") if not p.skip]
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    where = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    fewer = [*where, "dataset.limit_queries=5"]
    grid.run_table(t, "smoke", fewer, log=lambda *_: None)
    plain, limited = render.build(t, uri, "smoke", where), render.build(t, uri, "smoke", fewer)
    assert plain.filled == 0 and "not run yet" in {c.note for c in plain.cells.values()}
    assert plain.elsewhere == ('["dataset.limit_queries=5"]',) and limited.elsewhere == ()  # render says where they are
    assert limited.filled == 5 and "Every run under the overrides `dataset.limit_queries=5`" in render.markdown(limited)
    assert "Every run under" not in render.markdown(plain)
    grid.run_table(t, "smoke", where, log=lambda *_: None)
    runs = {k: point_runs(t, uri, "smoke", extra)[point.key] for k, extra in (("plain", where), ("limited", fewer))}
    assert [r.data.tags["table.set"] for r in runs["plain"]] == ["[]"]
    assert [r.data.tags["table.set"] for r in runs["limited"]] == ['["dataset.limit_queries=5"]']
    assert [r.info.run_id for r in point_runs(t, uri, "smoke", [*where, "context.budget=4096"])[point.key]] \
        == [r.info.run_id for r in runs["plain"]]
