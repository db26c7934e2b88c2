"""Chunkings that a score would flatter: counted in the run's metrics and said in one warning.

A chunk longer than the passage encoder's input is embedded by its head alone; one longer than
the context budget is never handed to the reader whole; and a long document left as one chunk
makes retrieval trivial (a blank-line splitter on GutenQA, which has no blank lines, made each
book one 157,317-word chunk and scored DCG@k = Recall@k = 1.0 on every question). None of these
stops a run: a chunker may mean them, and a run on the data it was given is still a record. Ranking
metrics score a chunk over the context budget as a miss (:meth:`harness.metrics.base.QueryEval.credited`).
A run whose every context is empty does stop (:func:`check_contexts`): it measures nothing.
A context that holds its documents whole is counted too (:func:`whole_document_contexts`): there
no chunking can change a span score (reports mark a column saturated where every row is alike).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.aggregation import text_chunks
from harness.types import ConfigError, Context, DocChunks, Document, Query


def chunk_checks(docs: Sequence[Document], chunked: Mapping[str, DocChunks], sizes: Sequence[int],
                 budget: int | None, encoder: tuple[int, list[int]] | None) -> dict[str, float]:
    """Counts over the text chunks (:func:`text_chunks`, in order, ``sizes`` in context units):
    ``chunks_over_context_budget`` (None budget: not counted), ``chunks_over_embedder_input``
    (``encoder``: the input limit and each chunk's length in the encoder's tokens; None: not
    counted), ``docs_single_chunk``, and ``docs_single_chunk_over_limit``: those whose one chunk is
    over the budget or the encoder's input."""
    per_doc = [len(text_chunks([d], chunked)) for d in docs]
    over = [False] * len(sizes)
    out: dict[str, float] = {"docs_single_chunk": float(sum(n == 1 for n in per_doc))}
    if budget is not None:
        over_budget = [s > budget for s in sizes]
        out["chunks_over_context_budget"] = float(sum(over_budget))
        over = [a or b for a, b in zip(over, over_budget)]
    if encoder is not None:
        limit, lengths = encoder
        over_input = [n > limit for n in lengths]
        out["chunks_over_embedder_input"] = float(sum(over_input))
        over = [a or b for a, b in zip(over, over_input)]
    first, single_over = 0, 0
    for n in per_doc:  # text_chunks lists each document's chunks together, in document order
        single_over += n == 1 and over[first]
        first += n
    out["docs_single_chunk_over_limit"] = float(single_over)
    return out


def whole_document_contexts(queries: Sequence[Query], contexts: Sequence[Context], docs: Sequence[Document],
                            doc_sizes: Mapping[str, int], budget: int, scope: str) -> float:
    """The share of queries whose context holds every document they search whole: their
    ``doc_ids`` under ``retriever.scope=document``, the whole corpus otherwise. Measured, not
    predicted: the documents must fit the budget together (``doc_sizes`` in context units) and the
    context's spans (as included: a truncated chunk counts as cut) must cover all their text but
    whitespace (a retriever may rank only the chunks that share a word with the question). There span metrics are the same for any chunker
    (``contexts_whole_documents``; reports mark a column saturated where it is 1.0 and every row
    scores alike)."""
    if not queries:
        return 0.0
    by_id = {d.doc_id: d for d in docs}
    if scope == "corpus" and sum(doc_sizes.get(d, 0) for d in by_id) > budget:
        return 0.0  # the pooled corpus never fits: no query's context can hold it whole
    whole = 0
    for q, ctx in zip(queries, contexts):
        searched = list(by_id) if scope == "corpus" else [d for d in q.doc_ids if d in by_id]
        if not searched or sum(doc_sizes.get(d, 0) for d in searched) > budget:
            continue
        spans: dict[str, list[tuple[int, int]]] = {}
        for sp in ctx.spans:
            spans.setdefault(sp.doc_id, []).append((sp.start, sp.end))
        whole += all(_covered(by_id[d].text, spans.get(d, [])) for d in searched)
    return whole / len(queries)


def _covered(text: str, spans: list[tuple[int, int]]) -> bool:
    """Whether ``spans`` leave out nothing of ``text`` but whitespace."""
    end = 0
    for s, e in sorted(spans):
        if s > end and text[end:s].strip():
            return False
        end = max(end, e)
    return not text[end:].strip()


def warning(metrics: Mapping[str, float], budget: int | None, limit: int | None) -> str | None:
    """The run's one warning line, or None when nothing is flagged."""
    n_chunks, n_docs = int(metrics.get("n_chunks", 0)), int(metrics.get("n_docs", 0))
    parts = []
    if over := int(metrics.get("chunks_over_context_budget", 0)):
        parts.append(f"{over} of {n_chunks} chunks exceed the context budget ({budget}; "
                     f"largest {int(metrics.get('chunk_size_max', 0))}): the reader never sees them whole and "
                     f"ranking metrics score them as misses")
    if over := int(metrics.get("chunks_over_embedder_input", 0)):
        parts.append(f"{over} of {n_chunks} chunks exceed the passage encoder's input ({int(limit)} tokens): "
                     f"only their heads are embedded")
    if single := int(metrics.get("docs_single_chunk_over_limit", 0)):
        parts.append(f"{single} of {n_docs} documents are one chunk over those limits: retrieval is trivial there")
    return "chunks the scores may flatter: " + "; ".join(parts) if parts else None


def encoder_lengths(retriever, docs: Sequence[Document], chunked: Mapping[str, DocChunks]):
    """The retriever's passage-encoder limit and each text chunk's length in its tokens, or None
    where the retriever says none (lexical retrievers, encoders without a tokenizer)."""
    lengths = getattr(retriever, "input_lengths", None)
    return lengths([c.text for c in text_chunks(docs, chunked)]) if lengths else None


def check_contexts(contexts: Sequence[Context], budget: int | None, unit: str,
                   sizes: Callable[[], Sequence[int]]) -> None:
    """Fail when every context came out empty (a budget smaller than any chunk ranked first, a
    retriever that ranks nothing). Unlike the chunkings above, this fails the run: such a run
    measures nothing, yet it would record every metric as 0, a score a table or a sweep would
    then compare as the method's (and exit 0, so a script never notices). ``sizes``: the text
    chunks' sizes in ``unit``, asked for only when failing."""
    if not contexts or any(ctx.chunk_ids for ctx in contexts):
        return
    if budget is None:
        raise ConfigError(f"every context is empty: the retriever ranked no chunk for any of the "
                          f"{len(contexts)} queries")
    n = sizes()
    if n and min(n) <= budget:  # chunks that fit exist: each query's first-ranked one did not
        raise ConfigError(f"context.budget={budget} {unit} holds no query's first-ranked chunk (chunks of {min(n)} to "
                          f"{max(n)} {unit}; context.overflow=stop leaves out the chunk that does not fit, and what "
                          f"ranks below it): every context of the {len(contexts)} queries is empty; use "
                          f"context.overflow=truncate, smaller chunks or a larger context.budget")
    smallest = f" (the smallest chunk is {min(n)} {unit})" if n else ""
    raise ConfigError(f"context.budget={budget} {unit} holds no chunk{smallest}: every context of the "
                      f"{len(contexts)} queries is empty; raise context.budget, use smaller chunks or "
                      f"context.overflow=truncate")
