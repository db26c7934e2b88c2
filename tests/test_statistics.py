"""Bootstrap intervals and paired tests over per-query scores."""

import math

import numpy as np
import pytest

from harness.statistics import bootstrap_ci, paired_test, population_std
from harness.aggregation import aggregate, aggregate_documents
from harness.report.compare import compare


def test_bootstrap_interval_brackets_the_mean_and_matches_the_normal_approximation():
    x = np.random.default_rng(3).normal(0.6, 0.2, 2000)
    low, high = bootstrap_ci(x)
    assert low < x.mean() < high
    half = 1.96 * x.std(ddof=1) / math.sqrt(len(x))  # large-sample normal interval
    assert (high - low) / 2 == pytest.approx(half, rel=0.15)


def test_bootstrap_is_seeded_and_leaves_nan_out():
    x = [0.0, 1.0, 1.0, 0.5, float("nan"), 0.25]
    assert bootstrap_ci(x) == bootstrap_ci(x)
    y = np.random.default_rng(5).random(100)
    assert bootstrap_ci(y, seed=1) == bootstrap_ci(y, seed=1) != bootstrap_ci(y, seed=2)
    low, high = bootstrap_ci(x)
    assert 0.0 <= low <= np.nanmean(x) <= high <= 1.0


def test_bootstrap_degenerate_inputs():
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([0.3, float("nan")]))
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_paired_test_finds_a_real_shift_and_no_shift():
    rng = np.random.default_rng(0)
    a = rng.random(80)
    b = a + 0.1 + rng.normal(0, 0.05, 80)
    r = paired_test(a, b)
    assert r["mean_diff"] == pytest.approx(np.mean(b - a)) and r["n"] == 80
    assert 0 < r["ci_low"] < r["mean_diff"] < r["ci_high"] and r["p_value"] < 0.01
    same = paired_test(a, a)
    assert same["mean_diff"] == 0 and same["p_value"] == 1.0
    noise = paired_test(a, a + rng.normal(0, 0.05, 80))
    assert noise["ci_low"] < 0 < noise["ci_high"] or noise["p_value"] > 0.05


def test_paired_test_keeps_only_queries_both_runs_scored():
    r = paired_test([1.0, float("nan"), 0.0, 1.0], [1.0, 1.0, float("nan"), 0.0])
    assert r["n"] == 2 and r["mean_a"] == 1.0 and r["mean_b"] == 0.5
    with pytest.raises(ValueError, match="same length"):
        paired_test([1.0], [1.0, 0.0])


def test_aggregate_logs_an_interval_per_score():
    rows = [{"qid": f"q{i}", "task": "", "question": "", "doc_ids": [], "n_evidence_spans": 1,
             "context_chunk_ids": [], "context_tokens": 10, "context_merges": 0, "retrieval_seconds": 0.0,
             "evidence_recall": float(i % 2)} for i in range(50)]
    m = aggregate(rows)
    assert m["evidence_recall/ci95_low"] < m["evidence_recall"] == 0.5 < m["evidence_recall/ci95_high"]
    assert "context_tokens/ci95_low" not in m
    assert m["evidence_recall/std"] == 0.5 and "context_tokens/std" not in m  # population std of 0/1 halves


def test_population_std_beside_every_interval():
    # scores 0, 1, 1 and a NaN: mean 2/3, population variance ((2/3)^2 + 2 (1/3)^2) / 3 = 2/9
    assert population_std([0.0, 1.0, 1.0, float("nan")]) == pytest.approx(math.sqrt(2 / 9))  # ddof=1 gives 0.577
    assert population_std([0.3]) == 0.0 and math.isnan(population_std([float("nan")]))
    m = aggregate_documents([{"f1": 0.0}, {"f1": 1.0}, {"f1": 1.0}, {"f1": float("nan")}])
    assert m["f1/std"] == pytest.approx(math.sqrt(2 / 9)) and m["n/f1"] == 3


def test_compare_pairs_runs_by_query_id():
    a = {f"q{i}": {"qid": f"q{i}", "evidence_recall": 0.0} for i in range(30)}
    b = {f"q{i}": {"qid": f"q{i}", "evidence_recall": 1.0} for i in range(1, 31)}
    r = compare(a, b, "evidence_recall")
    assert r["n"] == 29 and r["mean_diff"] == 1.0 and r["queries_only_in_one_run"] == 2
    with pytest.raises(SystemExit, match="no per-query metric"):
        compare(a, b, "rouge_l")
    with pytest.raises(SystemExit, match="share no query ids"):
        compare(a, {"x": {"qid": "x", "evidence_recall": 1.0}}, "evidence_recall")
