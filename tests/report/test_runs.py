"""Tables from recorded runs: the latest run per cell, short class names, the printed text.
On a real MLflow store through the command line: tests/test_cli.py."""

import pandas as pd

from harness.report.runs import pivot, report, short_name

ROWS, COLS = "params.chunker._target_", "params.retriever._target_"


def frame() -> pd.DataFrame:
    def run(start, chunker, retriever, recall, scale="smoke"):
        return {"start_time": pd.Timestamp(start), ROWS: f"harness.chunking.{chunker}",
                COLS: f"harness.retrieval.{retriever}", "metrics.evidence_recall": recall, "metrics.span_recall": recall / 2, "tags.scale": scale}

    return pd.DataFrame([run("2026-01-02", "fixed.FixedSizeChunker", "lexical.BM25Retriever", 0.5),
                         run("2026-01-01", "fixed.FixedSizeChunker", "lexical.BM25Retriever", 0.1),  # older: not shown
                         run("2026-01-01", "fixed.FixedSizeChunker", "dense.DenseRetriever", 0.25, scale="full"),
                         run("2026-01-03", "section.SectionChunker", "dense.DenseRetriever", 1.0)])


def test_short_name():
    assert short_name("harness.chunking.fixed.FixedSizeChunker") == "FixedSizeChunker"
    assert short_name("plain") == "plain"


def test_pivot_keeps_the_latest_run_per_cell():
    table = pivot(frame(), ROWS, COLS, "evidence_recall")
    assert list(table.index) == ["FixedSizeChunker", "SectionChunker"]
    assert list(table.columns) == ["DenseRetriever", "BM25Retriever"]  # in the order of the full names
    assert table.loc["FixedSizeChunker", "BM25Retriever"] == 0.5
    assert pd.isna(table.loc["SectionChunker", "BM25Retriever"])


def test_report_text():
    text = report(frame(), "chunkbench", ROWS, COLS, ["evidence_recall", "span_recall"])
    assert text == ("\nevidence_recall  (chunkbench, scale=full, smoke)\n"
                    "                  DenseRetriever  BM25Retriever\n"
                    "FixedSizeChunker          0.2500         0.5000\n"
                    "SectionChunker            1.0000            NaN\n"
                    "\nspan_recall  (chunkbench, scale=full, smoke)\n"
                    "                  DenseRetriever  BM25Retriever\n"
                    "FixedSizeChunker          0.1250         0.2500\n"
                    "SectionChunker            0.5000            NaN\n"
                    "\nvaried: chunker._target_ (FixedSizeChunker, SectionChunker), "
                    "retriever._target_ (BM25Retriever, DenseRetriever)\n"
                    "held fixed: nothing")


def test_cells_never_mix_settings():
    """Two budgets and two query limits of one chunker: a row per setting, never one cell for both;
    a parameter that follows from the row (the section chunker has no size) splits nothing."""
    def run(start, chunker, budget, limit, recall, size="200"):
        return {"start_time": pd.Timestamp(start), ROWS: f"harness.chunking.{chunker}",
                COLS: "harness.retrieval.dense.DenseRetriever", "params.context.budget": budget,
                "params.dataset.limit_queries": limit, "params.dataset.name": "ohrbench",
                "params.chunker.size": size if chunker.startswith("fixed") else None,
                "params.cache.dir": f"/tmp/{start}", "params.tracking.uri": f"sqlite:///{start}.db",
                "metrics.evidence_recall": recall, "tags.scale": "smoke"}

    df = pd.DataFrame([run("2026-01-01", "fixed.FixedSizeChunker", "4096", "None", 0.9),
                       run("2026-01-02", "fixed.FixedSizeChunker", "1024", "None", 0.5),
                       run("2026-01-03", "fixed.FixedSizeChunker", "1024", "10", 0.4),
                       run("2026-01-04", "fixed.FixedSizeChunker", "1024", "10", 0.3),  # a rerun: replaces 0.4
                       run("2026-01-05", "section.SectionChunker", "4096", "None", 0.7)])
    table = pivot(df, ROWS, COLS, "evidence_recall")
    assert table["DenseRetriever"].to_dict() == {
        "FixedSizeChunker context.budget=1024 dataset.limit_queries=10": 0.3,
        "FixedSizeChunker context.budget=1024 dataset.limit_queries=None": 0.5,
        "FixedSizeChunker context.budget=4096 dataset.limit_queries=None": 0.9,
        "SectionChunker context.budget=4096 dataset.limit_queries=None": 0.7}
    lines = report(df, "chunkbench", ROWS, COLS, ["evidence_recall"]).splitlines()
    assert lines[-4:] == ["varied: chunker._target_ (FixedSizeChunker, SectionChunker), chunker.size (-, 200), "
                          "context.budget (1024, 4096), dataset.limit_queries (10, None)",
                          "held fixed:", "  dataset: name=ohrbench", "  retriever: DenseRetriever"]  # where runs were stored is no setting
