"""The retriever interface, with retrieval scope handled once for every index kind.

Scope ``document``: a query searches only the chunks of its own ``doc_ids`` (HiChunk,
MC-indexing). Scope ``corpus``: all chunks of the dataset are pooled (Chroma's
evaluation, Qu et al.'s document retrieval). Either way the searchable collection is
a group of chunks; queries that share a collection are searched together, and each
index kind only implements build/search over one collection.

Ties: a collection is searched in document position order (documents in the order the
scope lists them, chunks by start offset), and equal scores rank the earlier chunk first,
so of two identical passages the first copy wins, whatever the index returns.

``view_index`` (multi-view chunks): ``pooled`` indexes every view of a collection together;
``per_view`` builds one index per view (lexical retrievers then take IDF and average
length per view, as MC-indexing ranks "the sections using each view"), each view giving
its own ``top_k``, the hits merged by score.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from harness.progress import tqdm
from harness.types import Chunk, ConfigError, Query, Retrieved

SCOPES = ("document", "corpus")
VIEW_INDEXES = ("per_view", "pooled")


class Retriever(ABC):
    def __init__(self, scope: str = "document", top_k: int = 100, view_index: str = "pooled"):
        if scope not in SCOPES:
            raise ConfigError(f"retriever.scope must be one of {', '.join(SCOPES)}; got {scope!r}")
        if top_k <= 0:
            raise ConfigError(f"retriever.top_k must be > 0, got {top_k}")
        if view_index not in VIEW_INDEXES:
            raise ConfigError(f"retriever.view_index must be one of {', '.join(VIEW_INDEXES)}; got {view_index!r}")
        self.scope, self.top_k, self.view_index = scope, top_k, view_index

    @abstractmethod
    def build(self, chunks: Sequence[Chunk]):
        """An index over one collection of chunks (opaque to the caller)."""

    @abstractmethod
    def search(self, index, queries: Sequence[Query], k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, scores) into the built chunks, one row per query: the k best and at
        least every chunk tied with the k-th (position -1 pads a row), in any order of ties."""

    def retrieve(self, queries: Sequence[Query], chunks: Sequence[Chunk]) -> tuple[list[Retrieved], float]:
        """Ranked chunks for every query (in query order) and the total index-build seconds."""
        groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i, q in enumerate(queries):
            if self.scope == "document":
                if not q.doc_ids:
                    raise ConfigError(f"retriever.scope=document needs each query's doc_ids; query "
                                      f"{q.qid!r} has none (use retriever.scope=corpus)")
                groups[tuple(sorted(q.doc_ids))].append(i)
            else:
                groups[()].append(i)
        by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for c in chunks:
            by_doc[c.doc_id].append(c)

        results: list[Retrieved | None] = [None] * len(queries)
        build_seconds = 0.0
        for doc_ids, members in tqdm(groups.items(), desc="retrieve", unit="collection"):
            pool = document_order(list(chunks) if not doc_ids else [c for d in doc_ids for c in by_doc.get(d, ())])
            group = [queries[i] for i in members]
            hits: list[list[tuple[int, float]]] = [[] for _ in group]
            search_seconds = 0.0
            for part in self._indexes(pool):
                t0 = time.perf_counter()
                index = self.build([pool[p] for p in part])
                t1 = time.perf_counter()
                k = min(self.top_k, len(part))
                positions, scores = self.search(index, group, k)
                search_seconds += time.perf_counter() - t1
                build_seconds += t1 - t0
                for row, pos, sc in zip(hits, positions, scores):
                    best = sorted((-float(s), part[p]) for p, s in zip(pos, sc) if p >= 0)[:k]
                    row.extend((p, -s) for s, p in best)
            for i, q, row in zip(members, group, hits):
                row.sort(key=lambda h: (-h[1], h[0]))  # equal scores: earlier in the document first
                ranked = tuple((pool[p].chunk_id, s) for p, s in row)
                results[i] = Retrieved(q.qid, ranked, search_seconds / len(group))
        return results, build_seconds

    def _indexes(self, pool: Sequence[Chunk]) -> list[list[int]]:
        """Positions in ``pool`` of each index to build: all, or one index per view."""
        if not pool:
            return []
        if self.view_index == "pooled":
            return [list(range(len(pool)))]
        views = dict.fromkeys(c.view for c in pool)
        return [[p for p, c in enumerate(pool) if c.view == v] for v in views]


def unsearched_evidence(queries: Sequence[Query]) -> str | None:
    """Under ``scope=document`` a query searches only its ``doc_ids``: evidence in another
    document can never be retrieved, and every evidence metric counts it missed, which reads as
    the chunker's failure. One warning line with the counts, or None (queries without doc_ids
    are refused by :meth:`Retriever.retrieve`)."""
    outside = [sum(e.doc_id not in q.doc_ids for e in q.evidence) for q in queries if q.doc_ids]
    if not any(outside):
        return None
    return (f"retriever.scope=document: {sum(n > 0 for n in outside)} of {len(queries)} queries have evidence in "
            f"a document they do not search ({sum(outside)} spans): it is never retrieved and counts as missed; "
            f"use retriever.scope=corpus or check the dataset's doc_ids")


def document_order(pool: list[Chunk]) -> list[Chunk]:
    """``pool`` by document (in order of first appearance), then start offset; stable, so
    chunks that start together (a chunk and its views, nested granularities) keep their order."""
    doc_rank = {d: r for r, d in enumerate(dict.fromkeys(c.doc_id for c in pool))}
    return sorted(pool, key=lambda c: (doc_rank[c.doc_id], c.start))


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top-k of a (queries, items) score matrix, best first; ties by position."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)
