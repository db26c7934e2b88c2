"""A challenge on the user's own data: ``challenge CHUNKER dataset=local dataset.path=DIR``.

No paper table holds the user's data, so the challenge builds one: the challenger beside a
standard baseline set (fixed, sentence, recursive, paragraph, semantic breakpoints, semantic
clustering, Chroma's ClusterSemantic and KamradtModified; with ``--with-llm`` also LumberChunker,
HiChunk, LGMGC and Chroma's LLMSemantic, each with the context
assembler it is meant for), on one group that is the user's dataset overrides, scored by the
retrieval metrics. It runs, renders and reports exactly as a paper table does.

The group starts from :data:`DEFAULTS`, settings where chunking can change the scores; the
user's own overrides (and ``--set``) come after them and win. The run defaults (each question
searches its own documents, a 4,096-token context) hand back any document shorter than the
budget whole, whatever the chunker: on a set of short documents every row scores 100 and the
table ranks nothing. So the questions search the pooled corpus (``retriever.scope=corpus``: the
retriever must find the right document's chunks among every document's) and the context holds
512 tokens (a few chunks of the usual 100 to 250 tokens; below a typical report, manual or paper,
where chunking is what the user is choosing). The budget is fixed rather than derived from the
documents, so the table's settings are known before the data is read, are the same in every
cluster job and rerun, and name one setting in the record. A corpus that fits 512 tokens whole
still saturates: the report and the table cells say so (``contexts_whole_documents``).
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
# before the user's own data overrides, which win (the module docstring says why these)
DEFAULTS = ("retriever.scope=corpus", "context.budget=512", "context.unit=tokens")
# The budget context cuts the chunk that overflows it to fit (HiChunk's retrieval_algo.py does so):
# every chunker gets the whole budget, and a chunker whose chunks run past 512 tokens (Chroma's
# KamradtModified averages 400 cl100k tokens) still gets a context instead of none.
TRUNCATE = ("context.overflow=truncate",)
METRICS = (Metric("erec", "evidence_recall", "ERec", 100.0, 1), Metric("span_recall", "span_recall", "Span recall", 100.0, 1),
           Metric("span_precision", "span_precision", "Span precision", 100.0, 1))


def own_data_table(overrides: Sequence[str], with_llm: bool = False) -> TableSpec:
    """A table of the baseline set on the data ``overrides`` name (``dataset=local dataset.path=DIR``)."""
    name = override_value(tuple(overrides), "dataset.path") or override_value(tuple(overrides), "dataset") or "data"
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "data"
    rows = tuple(Axis(c, c, (f"chunker={c}", *((f"context={CONTEXT_FOR[c]}",) if c in CONTEXT_FOR else TRUNCATE)))
                 for c in (*BASELINES, *(WITH_LLM if with_llm else ())))
    group = Axis("data", "", (*DEFAULTS, *overrides))
    return TableSpec(f"own/{slug}", f"Your data: {name}", "your own data (chunkbench challenge)", None,
                     "", ("responder=none", "metrics=retrieval"), rows, (group,), METRICS, {},
                     challenge=Challenge(drop=("chunker", "context"), add=("context=budget", *TRUNCATE)))
