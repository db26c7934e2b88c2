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
                    "SectionChunker            0.5000            NaN")
