"""What the evaluation sets of QChunker (github.com/Robot2050/QChunker) share. Each set is read
from its publisher's own layout by its own module: ``hchemsafety``, ``omnieval``,
``multifieldqa_zh`` and ``crud``.

QChunker's protocol decides the mapping (paper Section 4.1 "Datasets and Metrics", Section 4.3
"Implementation Details", Appendix B):

- End-to-end QA over one chunked corpus. Every document of a set is chunked and put into ONE
  vector index (Milvus, bge-base-zh-v1.5), and each question retrieves its top_k=8 chunks from
  the whole index (1424 tokens of context). Retrieval is corpus-wide, so run these sets with
  ``retriever.scope=corpus``. QChunker's ``retrieval.py`` builds the index from one chunk file
  per set and queries it with every question.
- Answers are scored against the single reference answer with BLEU, ROUGE-L and METEOR
  (Table 1). HChemSafety and QChunker's copies of OmniEval / MultiFieldQA_zh are bare
  ``{question, answer}`` pairs with no gold document and no evidence. Such queries get an
  empty ``doc_ids`` (no document is known; ``retriever.scope=document`` then refuses them)
  and evidence only where the publisher's own rows give it (OmniEval's ``relevant_passage``)
  or a gold document (LongBench's per-question ``context``).
- Everything is Chinese: ``language="zh"``, and sizes are reported in characters
  (``chars_per_doc``), since whitespace words mean nothing in Chinese.

The bundled samples hold the real QA pairs but not the corpora (the upstream files are 4 MiB
or more). A retrieval run without documents would score nothing, so ``load()`` then raises a
ConfigError that names the missing file and how to get it. The QA pairs alone load only when
asked for explicitly with ``qa_only=True``, which is useful for responder-only (closed-book)
baselines.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any, Iterable, Sequence

from harness.data.align import (FUZZY_MIN_SCORE, AlignmentReport, align_evidence,
                                check_fuzzy_min_score, configured_matchers)
from harness.data.base import DatasetLoader, Read, mean, query_doc_ids
from harness.data.rows import RowFields
from harness.types import ConfigError, Document, Query, Span

QCHUNKER_REPO = "github.com/Robot2050/QChunker"
LANGUAGE = "zh"


def str_or_list(f: RowFields, name: str, required: bool) -> tuple[str, ...]:
    """A field the publishers store as one string or a list of strings, as a tuple."""
    value = f.raw.get(name)
    if value is None:
        if required:
            raise f.error(name, "missing required field")
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise f.error(name, f"must be a string or a list of strings, got {type(value).__name__}")


def qa_pair(f: RowFields, qid: str, task: str) -> Query:
    """A QChunker ``{question, answer}`` row (``evaldata/*.json``, ``HChemSafety/QA_*.json``)."""
    question, answer = f.get("question", str), f.get("answer", str)
    if not question.strip():
        raise f.error("question", "empty question")
    if not answer.strip():
        raise f.error("answer", "empty answer: nothing to score a response against")
    return Query(qid=qid, question=question, answers=(answer,), task=task,
                 meta={"source_row": f.location})


# -- locating passages in a large corpus -------------------------------------------------------

def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


class CorpusLocator:
    """Which documents of a corpus may hold a passage, so that it is aligned in a few candidate
    documents instead of in all of them (CRUD's corpus has 80k news articles).

    Every document contributes one ``SHINGLE``-character shingle every ``STEP`` characters of
    its NFKC, whitespace-free text; a passage looks up the shingle at each of its positions, and
    documents are ranked by hits. A verbatim passage of at least ``SHINGLE + STEP`` characters
    always hits its document; a shorter one is looked up by plain containment instead.
    """

    SHINGLE = 16
    STEP = 48

    def __init__(self, texts: Sequence[str]):
        self.texts = texts
        self._index: dict[int, int | list[int]] = {}
        for i, text in enumerate(texts):
            s = _squeeze(text)
            for p in range(0, len(s) - self.SHINGLE + 1, self.STEP):
                key = hash(s[p:p + self.SHINGLE])
                prev = self._index.get(key)
                if prev is None:
                    self._index[key] = i
                elif isinstance(prev, int):
                    if prev != i:
                        self._index[key] = [prev, i]
                elif prev[-1] != i and len(prev) < 16:  # boilerplate shared by many docs
                    prev.append(i)

    def candidates(self, passage: str, limit: int = 3) -> list[int]:
        s = _squeeze(passage)
        if len(s) < self.SHINGLE + self.STEP:
            needle = passage.strip()
            return [i for i, t in enumerate(self.texts) if needle and needle in t][:limit]
        hits: Counter = Counter()
        for p in range(len(s) - self.SHINGLE + 1):
            found = self._index.get(hash(s[p:p + self.SHINGLE]))
            if found is None:
                continue
            for i in (found,) if isinstance(found, int) else found:
                hits[i] += 1
        return [i for i, _ in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def align_in_corpus(documents: Sequence[Document], locator: CorpusLocator, snippet: str,
                    matchers, preferred: Sequence[int] = ()) -> tuple[int, int, int, str] | None:
    """``(doc index, start, end, method)`` of ``snippet`` in the first candidate document that
    holds it (the ``preferred`` ones first, e.g. the publisher's own gold node), or None."""
    order = list(dict.fromkeys([*preferred, *locator.candidates(snippet)]))
    for i in order:
        found = align_evidence(documents[i].text, snippet, matchers=matchers)
        if found:
            return (i, *found)
    return None


def add_evidence(meta: dict[str, Any], documents: Sequence[Document], locator: CorpusLocator,
                 snippets: Sequence[str], matchers, preferred: Sequence[int] = ()
                 ) -> tuple[list[str], list[Span], list[str]]:
    """Aligns each snippet in the corpus; the method of each span goes to
    ``meta["evidence_method"]``. Returns the documents holding evidence (in order), the spans
    and the snippets that could not be aligned (kept, never dropped)."""
    doc_ids, spans, unaligned = [], [], []
    meta["evidence_method"] = []
    for snippet in snippets:
        found = align_in_corpus(documents, locator, snippet, matchers, preferred) \
            if snippet.strip() else None
        if found is None:
            unaligned.append(snippet)
            continue
        i, start, end, method = found
        doc = documents[i]
        spans.append(Span(doc.doc_id, start, end))
        doc_ids.append(doc.doc_id)
        meta["evidence_method"].append(method)
    return list(dict.fromkeys(doc_ids)), spans, unaligned


def alignment_of(queries: Iterable[Query]) -> AlignmentReport:
    """The alignment counts of exactly these queries (after limits)."""
    report = AlignmentReport()
    for q in queries:
        for method in q.meta.get("evidence_method", ()):
            report.counts[method] += 1
        report.counts["unaligned"] += len(q.unaligned_evidence)
    if not report.counts["unaligned"]:
        del report.counts["unaligned"]
    return report


# -- the shared loader shape -------------------------------------------------------------------

class QChunkerLoader(DatasetLoader):
    """What the four sets share: ``qa_only``, the fuzzy threshold, the limits and the report.

    ``limit_docs`` keeps N documents (the first, or a seeded draw); a query whose known documents
    (``doc_ids``, evidence) were not all kept is dropped and counted, while a query with no known
    document stays (it retrieves from whatever corpus is kept). ``limit_queries`` then keeps N.
    """

    def __init__(self, name: str, limit_docs: int | None, limit_queries: int | None,
                 seed: int | None, qa_only: bool, fuzzy_min_score: float | None = FUZZY_MIN_SCORE):
        super().__init__(name, limit_docs, limit_queries, seed)
        if not isinstance(qa_only, bool):
            raise ConfigError(f"qa_only must be true or false, got {qa_only!r}")
        self.qa_only = qa_only
        self.fuzzy_min_score = check_fuzzy_min_score(fuzzy_min_score)

    @property
    def matchers(self):
        return configured_matchers(self.fuzzy_min_score)

    def params(self) -> dict[str, Any]:
        return {"qa_only": self.qa_only, "fuzzy_min_score": self.fuzzy_min_score}

    def _finish(self, documents: list[Document], queries: list[Query],
                counters: dict[str, float]) -> Read:
        kept_docs = self.keep_docs(documents)
        on_kept = self.on_kept_docs(queries, {d.doc_id for d in kept_docs}, query_doc_ids)
        limited = self.keep_queries(on_kept)
        return kept_docs, limited, {
            "chars_per_doc": mean([len(d.text) for d in kept_docs]),
            "qa_only": float(self.qa_only),
            "queries_without_doc": sum(1 for q in limited if not q.doc_ids),
            **alignment_of(limited).as_report("evidence"), **counters}
