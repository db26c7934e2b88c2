"""A challenge on the user's own data: ``challenge CHUNKER dataset=local dataset.path=DIR``.

No paper table holds the user's data, so the challenge builds one: the challenger beside a
standard baseline set (fixed, sentence, recursive, paragraph, semantic breakpoints, semantic
clustering, Chroma's ClusterSemantic and KamradtModified; with ``--with-llm`` also LumberChunker,
HiChunk, LGMGC and Chroma's LLMSemantic, each with the context
assembler it is meant for), on one group that is the user's dataset overrides, scored by the
retrieval metrics. It runs, renders and reports exactly as a paper table does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.report.challenge.rows import override_value
from harness.registry import CONTEXT_FOR
from harness.report.tables.spec import Axis, Metric, TableSpec
from harness.report.tables.spec_blocks import Challenge

BASELINES = ("fixed", "sentence", "recursive", "paragraph", "semantic_breakpoint", "semantic_cluster",
             "cluster_semantic", "kamradt_modified")
WITH_LLM = ("lumber", "hichunk", "lgmgc", "llm_semantic")
METRICS = (Metric("erec", "evidence_recall", "ERec", 100.0, 1), Metric("span_recall", "span_recall", "Span recall", 100.0, 1),
           Metric("span_precision", "span_precision", "Span precision", 100.0, 1))


def own_data_table(overrides: Sequence[str], with_llm: bool = False) -> TableSpec:
    """A table of the baseline set on the data ``overrides`` name (``dataset=local dataset.path=DIR``)."""
    name = override_value(tuple(overrides), "dataset.path") or override_value(tuple(overrides), "dataset") or "data"
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "data"
    rows = tuple(Axis(c, c, (f"chunker={c}", *((f"context={CONTEXT_FOR[c]}",) if c in CONTEXT_FOR else ())))
                 for c in (*BASELINES, *(WITH_LLM if with_llm else ())))
    group = Axis("data", "", tuple(overrides))
    return TableSpec(f"own/{slug}", f"Your data: {name}", "your own data (chunkbench challenge)", None,
                     "", ("responder=none", "metrics=retrieval"), rows, (group,), METRICS, {},
                     challenge=Challenge(drop=("chunker", "context"), add=("context=budget",)))
