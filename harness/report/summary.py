"""The readable table printed at the end of a run."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.pipeline.runner import RunResult

SECTIONS = {
    "retrieval": ("evidence_recall", "evidence_span_recall", "span_recall", "span_precision", "span_iou",
                  "span_precision_omega", "context_tokens", "context_merges", "queries_without_terms"),
    "chunks": ("n_docs", "n_chunks", "n_nodes", "chunks_per_doc", "chunk_size_mean", "chunk_size_median",
               "chunk_size_max", "chunk_chars_mean"),
    "time": ("chunk_seconds_per_doc", "retrieval_seconds_per_query", "index_seconds"),
}


COUNTS = ("n_docs", "n_chunks", "n_nodes", "n_queries", "context_merges_total", "queries_without_terms")  # and chunker_*: repairs, calls


def is_count(name: str, v: float) -> bool:
    return isinstance(v, int) or name in COUNTS or name.startswith("chunker_")


def _fmt(v: float, count: bool = False) -> str:
    """A count as an integer (``0``, not ``0.0000``); a score with four decimals."""
    if isinstance(v, float) and math.isnan(v):
        return "n/a"
    return f"{v:,.0f}" if count or (float(v).is_integer() and abs(v) >= 1) else f"{v:.4f}"


def summary_table(result: RunResult, title: str) -> Table:
    m = result.metrics
    table = Table(title=escape(title), show_lines=False)  # `[scale=smoke]` is text, not rich markup
    table.add_column("section", style="dim")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right", style="dim")
    table.add_column("std", justify="right", style="dim")  # population std over queries (documents)
    table.add_column("scored", justify="right", style="dim")  # queries (documents for chunking metrics)
    known = {n for names in SECTIONS.values() for n in names}
    # Every other scored metric (answer, ranking, chunking sets), then the LLM chunkers' repairs.
    sections = {**SECTIONS,
                "scores": tuple(sorted(k for k in m if f"{k}/ci95_low" in m and k not in known)),
                "run-level": tuple(result.run_level),
                "answers": ("answer_prompt_tokens", "answer_seconds"),
                "chunker": tuple(sorted(k for k in m if k.startswith("chunker_")))}
    for section, names in sections.items():
        for name in names:
            if name in m:
                n = m.get(f"n/{name}")
                ci = (f"{_fmt(m[f'{name}/ci95_low'])}–{_fmt(m[f'{name}/ci95_high'])}"
                      if f"{name}/ci95_low" in m else "")
                std = _fmt(m[f"{name}/std"]) if f"{name}/std" in m else ""
                table.add_row(section, name, _fmt(m[name], is_count(name, m[name])), ci, std,
                              "" if n is None else f"{int(n)}")
    for key in sorted(result.dataset_report):
        if key.startswith("evidence_"):
            v = result.dataset_report[key]
            table.add_row("data", key, _fmt(v, is_count(key, v)), "", "", "")
    stages = ", ".join(f"{k}={v}" for k, v in result.stages.items())
    table.caption = f"stages: {stages}"
    return table


def print_summary(result: RunResult, title: str) -> None:
    table, console = summary_table(result, title), Console()
    if not console.is_terminal:  # a log or a pipe has no width of its own: the whole table, not 80 columns
        need = console.measure(table, options=console.options.update_width(10_000)).maximum
        console = Console(width=max(console.width, need))
    console.print(table)
