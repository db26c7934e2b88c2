"""Every metric's declared keys (harness.metrics.keys) are the keys it produces: each metrics
config runs on the TINY OHR-Bench sample, answered by a scripted model (no real LLM call)."""

import math
from pathlib import Path

import pytest

from harness.metrics.base import DocumentMetric, QueryMetric
from harness.metrics.keys import is_recorded, recorded_keys, row_keys
from harness.pipeline.components import build_components
from harness.pipeline.runner import Pipeline
from harness.pipeline.stages import STAGES
from harness.types import ConfigError
from tests.conftest import CONFIGS, ScriptedLLM

GROUPS = sorted(p.stem for p in (CONFIGS / "metrics").glob("*.yaml"))


def reply(prompt: str) -> str:
    """Fact-Cov's extraction and coverage replies; any other prompt is answered with its last words."""
    if "Extract distinct factual statements" in prompt:
        return '{"facts": ["the first fact", "the second fact"]}'
    if "Reference Facts:" in prompt:
        return '{"classifications": [{"statement": "the first fact", "attributed": 1}, {"statement": "x", "attributed": 0}]}'
    return " ".join(prompt.split()[-12:])


def scripted_llm():
    """The run's ``llm`` (``llm._target_`` points here): answers, Fact-Cov and ChunkScore's LI."""
    return ScriptedLLM(reply=reply)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")  # load, chunk, retrieve and respond run once for every group


def overrides(group: str) -> list[str]:
    return [f"metrics={group}", "llm=none", "llm._target_=tests.metrics.test_keys.scripted_llm", "responder=llm"]


@pytest.mark.parametrize("group", GROUPS)
def test_declared_keys_are_the_keys_a_run_produces(make_cfg, cache_dir, group):
    cfg = make_cfg(*overrides(group), cache=cache_dir)
    c = build_components(cfg)
    recorded_keys(c.metrics)  # declared by every metric, no key written twice
    rows, run_level = {}, {}
    for name, m in c.metrics.items():  # record what each metric returns as the run calls it
        def score_all(*args, _name=name, _inner=m.score_all):
            rows[_name] = _inner(*args)
            return rows[_name]

        def aggregate(r, _name=name, _inner=m.aggregate):
            run_level[_name] = _inner(r)
            return run_level[_name]

        m.score_all, m.aggregate = score_all, aggregate
    result = Pipeline(cfg, components=c, log=lambda *_: None).run()
    assert result.stages["evaluate"] == "computed" and result.per_query[0]["answer"]
    for name, m in c.metrics.items():
        declared = m.keys() | (m.series_keys() if isinstance(m, DocumentMetric) else set())  # + per-chunk lists
        assert rows[name] and all(set(r) == declared for r in rows[name]), name  # every row, as aggregation assumes
        assert set(run_level[name]) == m.aggregate_keys(), name
    metric_names = {k for k in result.metrics if k not in result.dataset_report and not k.startswith("chunker_")}
    assert recorded_keys(c.metrics) <= metric_names
    names = metric_names | {f"stage_seconds/{s}" for s in result.stage_seconds}  # as log_run adds them
    tasks = {r["task"] for r in result.per_query}
    assert [k for k in names if not is_recorded(k, c.metrics, tasks)] == []


def test_every_stages_seconds_are_recorded_names():
    assert all(is_recorded(f"stage_seconds/{s.name}", {}) for s in STAGES)


def test_is_recorded_accepts_derived_names_and_rejects_others():
    from harness.metrics.chunk_points import ChunkPointF1
    from harness.metrics.ranking import AnswerScopeRecall
    from harness.metrics.spans import SpanOverlap

    metrics = {"scope": AnswerScopeRecall(ks=[1.5, 3]), "points": ChunkPointF1(levels=[1]), "spans": SpanOverlap()}
    assert "scope_recall_at_1.5" in recorded_keys(metrics) and "chunk_point_f1_all" in recorded_keys(metrics)
    for name in ["scope_recall_at_3", "n/scope_recall_at_3", "scope_recall_at_3/ci95_high", "news/span_iou",
                 "chunk_point_f1_l1_macro/ci95_low", "chunk_point_f1_l1_macro/std", "span_iou/std",
                 "chunk_point_recall_l1", "chunks_per_doc", "news/context_tokens"]:
        assert is_recorded(name, metrics), name
    for name in ["scope_recall_at_5", "chunk_point_f1_l2", "n/chunk_point_f1_l1", "news/chunk_point_f1_l1_macro",
                 "chunk_point_f1_l1/std", "span_iou/ci95_mid", "evidence_recall"]:
        assert not is_recorded(name, metrics), name
    assert is_recorded("news/span_iou", metrics, tasks=["news"]) and not is_recorded("web/span_iou", metrics, ["news"])


def test_two_metrics_writing_one_key_are_a_config_error():
    from harness.metrics.rouge_l import RougeL

    with pytest.raises(ConfigError, match="metrics.b and metrics.a both write the score 'rouge_l_py'"):
        row_keys({"a": RougeL(), "b": RougeL(tokenizer="whitespace")})
    assert row_keys([RougeL(), RougeL(implementation="google")]) == {"rouge_l_py", "rouge_l_google"}


def test_a_metric_without_declared_keys_says_so():
    class Undeclared(QueryMetric):
        def __call__(self, item):
            return {"x": math.nan}

    with pytest.raises(NotImplementedError, match="Undeclared does not declare its keys"):
        recorded_keys([Undeclared()])
