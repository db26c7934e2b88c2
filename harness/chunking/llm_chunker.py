"""What chunkers driven by a language model share: the model, and the repair counts.

An LLM chunker's config carries ``llm: ${llm}``, so it uses the run's model unless told
otherwise, and the model's settings are part of the chunk cache key. The pipeline gives
the model the run's LLM-call cache. A small model produces output that does not parse;
a chunker never crashes on it: it applies its documented fallback rule and counts the
event with ``count(doc_id, name)``. The pipeline stores the counts with each document's
chunks and logs their sums as ``chunker_<name>`` (e.g. ``chunker_parse_failures``).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from harness.chunking.base import Chunker, require
from harness.llm.base import LLM


class RepairCounts:
    """Per-document counts of fallbacks taken on model output (``Chunker.take_counts``)."""

    def __init__(self):
        self.doc_counts: dict[str, Counter[str]] = defaultdict(Counter)

    def count(self, doc_id: str, name: str, n: int = 1) -> None:
        self.doc_counts[doc_id][name] += n

    def take_counts(self, doc_id: str) -> dict[str, int]:
        return dict(self.doc_counts.pop(doc_id, {}))


class LLMChunker(RepairCounts, Chunker):
    def __init__(self, llm: LLM):
        require(isinstance(llm, LLM), "chunker.llm must build a language model (llm: ${llm} with "
                                      f"llm=transformers, vllm or openai); got {llm!r}")
        super().__init__()
        self.llm = llm
