"""Perplexity of rewritten chunks before and after the rewrite (QChunker Sec. 4.6, Figure 3).

QChunker's knowledge completion replaces a chunk's text and keeps its source span
(``Chunk.rewritten``), so for every rewritten content chunk the original is the document text
of its spans, ``doc.text[start:end]``. Both texts are scored on their own by the metric's
scorer model (``LLM.perplexity``: exp of the mean negative token log-probability, the same
cached ``token_logprobs`` as every other perplexity of the harness); the paper's figure plots
the two per chunk for a 1.5B and a 7B scorer and reads a lower mean and less volatility after
completion.

Per document (its rewritten chunks; NaN when it has none, and then ``rewrite_ppl_chunks`` is 0):

- ``rewrite_ppl_original_macro``, ``rewrite_ppl_rewritten_macro``: the mean perplexity;
- ``rewrite_ppl_original_std_macro``, ``rewrite_ppl_rewritten_std_macro``: its population std;
- ``rewrite_ppl_fell_macro``: the share of chunks whose perplexity fell;
- ``rewrite_ppl_chunks``: how many rewritten chunks were scored;
- the per-chunk series ``rewrite_ppl_original_chunks`` / ``rewrite_ppl_rewritten_chunks``
  (``series_keys``: lists, in text order, recorded in the run's ``per_document.jsonl``).

Per run (``aggregate``, over every scored rewritten chunk of the run, as the figure pools them):
``rewrite_ppl_original``, ``rewrite_ppl_rewritten``, ``rewrite_ppl_original_std``,
``rewrite_ppl_rewritten_std``, ``rewrite_ppl_fell`` and ``rewrite_ppl_chunks_total``.

A pair where either text has no scored token (NaN) stays in the series and is left out of the
numbers and the count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.metrics.base import DocumentMetric
from harness.types import PART_SEPARATOR, Chunk, ConfigError, Document

PREFIX = "rewrite_ppl"
SERIES = (f"{PREFIX}_original_chunks", f"{PREFIX}_rewritten_chunks")


def rewritten_pairs(doc: Document, chunks: Sequence[Chunk]) -> list[tuple[str, str]]:
    """(original source text, rewritten text) for each rewritten content chunk, in text order."""
    done = sorted((c for c in chunks if c.rewritten and c.view == "text"), key=lambda c: (c.start, c.end))
    return [(PART_SEPARATOR.join(doc.text[s.start:s.end] for s in c.spans), c.text) for c in done]


def summary(original: Sequence[float], rewritten: Sequence[float], suffix: str = "") -> dict[str, float]:
    """Mean, population std and share fallen of the pairs that both have a perplexity."""
    pairs = [(a, b) for a, b in zip(original, rewritten) if not (math.isnan(a) or math.isnan(b))]
    nan = math.nan
    out = {f"{PREFIX}_original{suffix}": nan, f"{PREFIX}_rewritten{suffix}": nan,
           f"{PREFIX}_original_std{suffix}": nan, f"{PREFIX}_rewritten_std{suffix}": nan,
           f"{PREFIX}_fell{suffix}": nan}
    if pairs:
        a, b = np.array(pairs, dtype=float).T
        out.update({f"{PREFIX}_original{suffix}": float(a.mean()), f"{PREFIX}_rewritten{suffix}": float(b.mean()),
                    f"{PREFIX}_original_std{suffix}": float(a.std()), f"{PREFIX}_rewritten_std{suffix}": float(b.std()),
                    f"{PREFIX}_fell{suffix}": float(np.mean(b < a))})
    return out


class RewritePerplexity(DocumentMetric):
    """Document metric: perplexity of each rewritten chunk's source text and of its rewrite."""

    def __init__(self, llm: Any):
        if not callable(getattr(llm, "perplexity", None)):  # the LLM interface's scoring
            raise ConfigError(f"llm must build a language model to score perplexity (llm: ${{llm}}); "
                              f"got {type(llm).__name__}")
        self.llm = llm

    def keys(self) -> set[str]:
        return set(summary((), (), "_macro")) | {f"{PREFIX}_chunks"}

    def series_keys(self) -> set[str]:
        return set(SERIES)

    def aggregate_keys(self) -> set[str]:
        return set(summary((), ())) | {f"{PREFIX}_chunks_total"}

    def __call__(self, doc: Document, chunks: Sequence[Chunk]) -> dict[str, Any]:
        return self.score_all([doc], {doc.doc_id: chunks})[0]

    def score_all(self, docs: Sequence[Document], chunks_by_doc: Mapping[str, Sequence[Chunk]]) -> list[dict[str, Any]]:
        pairs = [rewritten_pairs(d, chunks_by_doc[d.doc_id]) for d in docs]
        texts = [t for doc_pairs in pairs for pair in doc_pairs for t in pair]
        scores = iter(self.llm.perplexity(texts) if texts else [])  # one batch for the whole run
        rows = []
        for doc_pairs in pairs:
            original, rewritten = [], []
            for _ in doc_pairs:
                original.append(next(scores))
                rewritten.append(next(scores))
            row: dict[str, Any] = summary(original, rewritten, "_macro")
            row[f"{PREFIX}_chunks"] = float(sum(not (math.isnan(a) or math.isnan(b))
                                                for a, b in zip(original, rewritten)))
            row[SERIES[0]], row[SERIES[1]] = original, rewritten
            rows.append(row)
        return rows

    def aggregate(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        original = [v for r in rows for v in r.get(SERIES[0], ())]
        rewritten = [v for r in rows for v in r.get(SERIES[1], ())]
        out = summary(original, rewritten)
        out[f"{PREFIX}_chunks_total"] = float(sum(r.get(f"{PREFIX}_chunks", 0.0) for r in rows))
        return out
