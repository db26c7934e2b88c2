"""Ranking metrics at top-k, read from the retriever's ranking (not the assembled context).

- Answer-scope recall@k (MC-indexing, Sec. 5.2): "the proportion of the ground truth answer
  scope that is successfully retrieved": each of the top k chunks scores the share of the
  scope it overlaps, and the recall is their sum ("overlaps with 10%, 50% and 0% ... the
  recall is ... 0.6"). k may be fractional: top 1.5 is k = 1 for half of the queries and 2
  for the others (App. C and E), drawn per query with :func:`harness.retrieval.assemblers.k_for`
  (use the context's ``seed`` to draw the same halves as ``context=topk``). The scope is the
  query's evidence spans. Summing equals the covered share for chunks that do not overlap
  (MC-indexing's chunkings); ``count=union`` measures the covered share instead, which stays
  <= 1 for overlapping chunkers (sliding windows). ``selection=multi_view`` takes MC-indexing's
  multi-view top k (App. E: top k' ~ 2k/3 content chunks per view, deduplicated union), the
  same chunks ``context=multi_view`` gives; ``view_k=k`` takes k per view instead, which with one
  view in ``views`` is App. C.4's single-view baseline ("we utilize only a single view from
  raw-text, keywords, and summary views for retrieval"): the top k sections by their keyword or
  summary view alone. ``selection=tree_traversal`` takes the k leaves of
  RAPTOR's tree traversal at each k (App. C.2; chunker=raptor, as ``context=raptor`` gives them).
  ``k_factor`` takes that many chunks per unit of k (k drawn first), as ``context=atomic_plus``
  does for MC-indexing's "Atomic Unit: Plus" (App. C.3: 4 times the atomic chunks on WikiWeb2M,
  2 times on NQ); the name keeps the k.
- Document-level P/R/F1@k (Qu et al., Sec. 3.1 and App. D): each top-k chunk is mapped to
  its document; with D the documents retrieved and G the relevant ones (the query's
  ``doc_ids``), P = |D & G| / |D| and R = |D & G| / |G|.
- Evidence-sentence-level P/R/F1@k (Qu et al., Sec. 3.2 and App. D): "Recall@k: fraction of
  retrieved evidence sentences over all evidence sentences. Precision@k: fraction of retrieved
  evidence sentences over all retrieved sentences." The evidence sentences are the query's
  evidence spans (RAGBench's labelled sentences, aligned by the loader); the other sentences
  are :func:`harness.text.sentence_spans` sentences that touch no evidence span. A sentence is
  retrieved when at least ``min_coverage`` of its characters lie in the top-k chunks: Qu et
  al.'s chunks are whole sentences, so any threshold agrees with them there; 0.5 (default)
  puts a sentence cut by a chunk boundary in the chunk holding most of it and absorbs small
  differences between sentence splitters (the paper used spaCy).

Shared conventions. The ranking is the one the context was built from, resolved once by the
assemble stage (:func:`harness.hierarchy.rank`): a view chunk (summary, keywords) stands for
the content chunk named by its ``parent_id``; the context's ``expand`` (none | parent | root)
maps a hit to its parent or root (``root`` for LGMGC's parent scoring); a chunk already
ranked, or inside one that is, is skipped. The top k are the first k of that list, where a
chunk longer than the context's budget is a miss (``credit=held``, :meth:`QueryEval.credited`;
``credit=any`` counts it, as the papers' retrieval-only metrics do). NaN means not scorable (no
evidence / no relevant documents); an empty ranking scores 0. F1 is 0 when P + R = 0.
Names use ``_at_<k>`` (MLflow rejects "@").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from harness.hierarchy import check_k, check_k_factor, dedupe_contained, k_for, merge_views
from harness.metrics.base import QueryEval, QueryMetric
from harness.metrics.spans import covered, intersection_length, union
from harness.text import sentence_spans
from harness.tree_search import TopLayers, tree_traversal
from harness.types import Chunk, ConfigError, Span

SELECTION = ("rank", "multi_view", "tree_traversal")
VIEW_K = ("two_thirds", "k")   # multi_view: k' = round(2k/3) per view (App. E), or k (one view alone, App. C.4)
COUNT = ("sum", "union")
CREDIT = ("held", "any")


def check_ks(ks: Sequence[float], name: str = "ks", fractional: bool = False) -> tuple[float, ...]:
    """A non-empty list of k values (whole numbers >= 1, or half numbers when ``fractional``)."""
    if isinstance(ks, (str, int, float)) or not ks:
        raise ConfigError(f"{name} must be a non-empty list of numbers >= 1; got {ks!r}")
    for k in ks:
        if fractional:
            check_k(k, name)
        elif isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"{name} must hold whole numbers >= 1; got {k!r}")
    return tuple(ks)


def k_name(k: float) -> str:
    return f"{k:g}"


class RankedMetric(QueryMetric):
    """Base: metrics at each k of ``ks``, read from the recorded ranking; ``credit``: which
    ranked chunks can count (:meth:`QueryEval.credited`: ``held`` or ``any``)."""

    def __init__(self, ks: Sequence[float], fractional: bool = False, credit: str = "held"):
        self.ks = check_ks(ks, fractional=fractional)
        if credit not in CREDIT:
            raise ConfigError(f"credit must be one of {', '.join(CREDIT)}; got {credit!r}")
        self.credit = credit


def prf(hit: float, n_retrieved: float, n_relevant: float) -> tuple[float, float, float]:
    p = hit / n_retrieved if n_retrieved else 0.0
    r = hit / n_relevant
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


class AnswerScopeRecall(RankedMetric):
    """MC-indexing's recall of the answer scope at top k: ``scope_recall_at_<k>``."""

    def __init__(self, ks: Sequence[float] = (1.5, 3, 5, 10), seed: int = 0,
                 count: str = "sum", selection: str = "rank", views: Sequence[str] | None = None,
                 k_factor: int = 1, credit: str = "held", view_k: str = "two_thirds"):
        super().__init__(ks, fractional=True, credit=credit)
        if view_k not in VIEW_K:
            raise ConfigError(f"view_k must be one of {', '.join(VIEW_K)}; got {view_k!r}")
        if view_k == "k" and selection != "multi_view":
            raise ConfigError(f"view_k=k applies to selection=multi_view only; got selection={selection!r}")
        self.k_factor = check_k_factor(k_factor, "k_factor")
        if count not in COUNT:
            raise ConfigError(f"count must be one of {', '.join(COUNT)}; got {count!r}")
        if selection not in SELECTION:
            raise ConfigError(f"selection must be one of {', '.join(SELECTION)}; got {selection!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"seed must be an integer; got {seed!r}")
        if views is not None and (isinstance(views, str) or not views or not all(isinstance(v, str) for v in views)):
            raise ConfigError(f"views must be null (every view present) or a non-empty list of view names; "
                              f"got {views!r}")
        if self.k_factor > 1 and selection != "rank":
            raise ConfigError(f"k_factor applies to selection=rank only; got k_factor={k_factor} with "
                              f"selection={selection!r}")
        self.seed, self.count, self.selection, self.view_k = seed, count, selection, view_k
        self.views = tuple(views) if views is not None else None
        self._top: tuple[int, TopLayers] | None = None

    def keys(self) -> set[str]:
        return {f"scope_recall_at_{k_name(k)}" for k in self.ks}

    def top(self, item: QueryEval, k: float, ranked: list[Chunk]) -> list[Chunk]:
        if self.selection == "multi_view":  # k' ~ 2k/3 per view, as context=multi_view takes them
            k_view = k_for(k if self.view_k == "k" else max(1, round(2 * k / 3)), item.query.qid, self.seed)
            return item.credited(dedupe_contained(merge_views(item.context.ranking, k_view, self.views),
                                                  item.chunks_by_id), self.credit)
        if self.selection == "tree_traversal":
            if self._top is None or self._top[0] != id(item.chunks_by_id):
                self._top = (id(item.chunks_by_id), TopLayers(item.chunks_by_id))
            return item.credited(tree_traversal(item.retrieved, item.chunks_by_id, k_for(k, item.query.qid, self.seed),
                                                self._top[1]), self.credit)
        return ranked[:k_for(k, item.query.qid, self.seed) * self.k_factor]

    def __call__(self, item: QueryEval) -> dict[str, float]:
        scope = item.query.evidence
        names = [f"scope_recall_at_{k_name(k)}" for k in self.ks]
        if not scope:
            return dict.fromkeys(names, math.nan)
        ranked = item.ranked(math.ceil(max(self.ks)) * self.k_factor, self.credit)
        return {name: scope_recall(scope, self.top(item, k, ranked), self.count) for name, k in zip(names, self.ks)}


def scope_recall(scope: Sequence[Span], chunks: Sequence[Chunk], count: str = "sum") -> float:
    """Share of the (merged) ``scope`` the chunks cover: summed per chunk, or as their union."""
    if count == "union":
        hit, total = covered(scope, [s for c in chunks for s in c.spans])
        return hit / total if total else math.nan
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for s in scope:
        by_doc[s.doc_id].append((s.start, s.end))
    merged = {d: union(v) for d, v in by_doc.items()}
    total = sum(e - s for v in merged.values() for s, e in v)
    if not total:
        return math.nan
    hit = sum(intersection_length(merged[c.doc_id], union((s.start, s.end) for s in c.spans))
              for c in chunks if c.doc_id in merged)
    return hit / total


class DocumentPRF(RankedMetric):
    """Qu et al.'s document retrieval: ``doc_{precision,recall,f1}_at_<k>``."""

    def __init__(self, ks: Sequence[int] = (1, 3, 5, 10), credit: str = "held"):
        super().__init__(ks, credit=credit)

    def keys(self) -> set[str]:
        return {f"doc_{m}_at_{k}" for k in self.ks for m in ("precision", "recall", "f1")}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        relevant = set(item.query.doc_ids)
        out = {}
        ranked = item.ranked(max(self.ks), self.credit) if relevant else []
        for k in self.ks:
            names = [f"doc_{m}_at_{k}" for m in ("precision", "recall", "f1")]
            if not relevant:
                out.update(dict.fromkeys(names, math.nan))
                continue
            got = {c.doc_id for c in ranked[:k]}
            out.update(zip(names, prf(len(got & relevant), len(got), len(relevant))))
        return out


class EvidenceSentencePRF(RankedMetric):
    """Qu et al.'s evidence retrieval: ``evidence_sentence_{precision,recall,f1}_at_<k>``."""

    def __init__(self, ks: Sequence[int] = (1, 3, 5, 10), min_coverage: float = 0.5, credit: str = "held"):
        super().__init__(ks, credit=credit)
        if isinstance(min_coverage, bool) or not isinstance(min_coverage, (int, float)) \
                or not 0 < min_coverage <= 1:
            raise ConfigError(f"min_coverage must be a number in (0, 1]; got {min_coverage!r}")
        self.min_coverage = float(min_coverage)
        self._sentences: dict[tuple[str, str, str], list[tuple[int, int]]] = {}  # document -> sentence spans

    def keys(self) -> set[str]:
        return {f"evidence_sentence_{m}_at_{k}" for k in self.ks for m in ("precision", "recall", "f1")}

    def sentences(self, item: QueryEval, doc_id: str) -> list[tuple[int, int]]:
        doc = item.documents[doc_id]
        key = (doc.doc_id, doc.language, doc.text)
        if key not in self._sentences:
            self._sentences[key] = sentence_spans(doc.text, doc.language)
        return self._sentences[key]

    def __call__(self, item: QueryEval) -> dict[str, float]:
        evidence = list(dict.fromkeys(s for s in item.query.evidence if s.start < s.end))
        if not evidence:
            return {f"evidence_sentence_{m}_at_{k}": math.nan
                    for k in self.ks for m in ("precision", "recall", "f1")}
        ranked = item.ranked(max(self.ks), self.credit)
        ev_by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for s in evidence:
            ev_by_doc[s.doc_id].append((s.start, s.end))
        ev_union = {d: union(v) for d, v in ev_by_doc.items()}
        out = {}
        for k in self.ks:
            got: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for s in (s for c in ranked[:k] for s in c.spans if s.start < s.end):  # an uncredited slot has none
                got[s.doc_id].append((s.start, s.end))
            got_union = {d: union(v) for d, v in got.items()}
            hit = sum(self._retrieved((s.start, s.end), got_union.get(s.doc_id, [])) for s in evidence)
            others = sum(self._retrieved(sent, spans)
                         for d, spans in got_union.items() for sent in self.sentences(item, d)
                         if intersection_length([sent], ev_union.get(d, [])) == 0)
            names = [f"evidence_sentence_{m}_at_{k}" for m in ("precision", "recall", "f1")]
            out.update(zip(names, prf(hit, hit + others, len(evidence))))
        return out

    def _retrieved(self, sentence: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
        n = sentence[1] - sentence[0]
        return n > 0 and intersection_length([sentence], spans) >= self.min_coverage * n
