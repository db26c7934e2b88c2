"""``refresh=[STAGE]``: a cached stage computed again, with every stage that reads it; the run's
identity stays the config's, and a recorded run of it is run again rather than skipped."""

import pytest

from harness.pipeline.record import config_identity, find_recorded, run_identity
from harness.pipeline.runner import Pipeline, forced_stages
from harness.types import ConfigError


def run(make_cfg, cache, *overrides):
    return Pipeline(make_cfg(*overrides, cache=cache), log=lambda *_: None).run()


def test_a_refreshed_stage_and_what_reads_it_are_computed_again(make_cfg, tmp_path):
    cache = tmp_path / "cache"
    first = run(make_cfg, cache)
    assert set(run(make_cfg, cache).stages.values()) == {"cached"}
    again = run(make_cfg, cache, "refresh=[chunk]")
    assert again.stages["load"] == "cached"
    assert {again.stages[s] for s in ("chunk", "retrieve", "assemble", "evaluate")} == {"computed"}
    def scores(r):
        return {k: v for k, v in r.metrics.items() if "seconds" not in k}
    assert scores(again) == scores(first)  # the same computation: the same numbers (timings aside)
    assert set(run(make_cfg, cache).stages.values()) == {"cached"}  # and stored under the same keys


def test_forced_stages_follow_the_declared_reads():
    assert forced_stages([]) == set()
    assert forced_stages(["assemble"]) == {"assemble", "respond", "evaluate"}
    assert forced_stages("load") == {"load", "chunk", "retrieve", "assemble", "respond", "evaluate"}
    with pytest.raises(ConfigError, match="refresh: no stage 'chunks' .*stages: load chunk"):
        forced_stages(["chunks"])


def test_refresh_is_no_part_of_a_runs_identity_and_is_not_skipped_as_recorded(make_cfg, monkeypatch):
    from harness.pipeline import record

    plain, fresh = make_cfg(), make_cfg("refresh=[chunk]")
    assert config_identity(plain) == config_identity(fresh)
    assert run_identity(plain, code="c") == run_identity(fresh, code="c")
    looked = []
    monkeypatch.setattr(record, "sqlite_path", lambda uri: looked.append(uri))  # the store look-up
    for cfg in (plain, fresh):
        cfg.tracking = {"uri": "sqlite:///mlruns.db", "rerun": "skip"}
    find_recorded(plain, "id")
    assert looked == ["sqlite:///mlruns.db"]
    assert find_recorded(fresh, "id") is None and len(looked) == 1  # a refresh never looks
