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
from collections.abc import Iterator, Sequence

import numpy as np

from harness.progress import tqdm
from harness.types import Chunk, ConfigError, Query, Ranked, Retrieved

SCOPES = ("document", "corpus")
# Scores held at once while searching (queries x chunks of a batch): 1M cells, 8 MB of float64 per
# matrix, a few times that in top_k's temporaries. Every query's scores at once was the retrieve
# stage's peak (16,000 questions x 10,590 chunks: 5.4 GB, issue 35).
SCORE_CELLS = 1 << 20
VIEW_INDEXES = ("per_view", "pooled")


class Retriever(ABC):
    def __init__(self, scope: str = "document", top_k: int = 100, view_index: str = "pooled"):
        if scope not in SCOPES:
            raise ConfigError(f"retriever.scope must be one of {', '.join(SCOPES)}; got {scope!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0:
            raise ConfigError(f"retriever.top_k must be an integer > 0, got {top_k!r}")
        if view_index not in VIEW_INDEXES:
            raise ConfigError(f"retriever.view_index must be one of {', '.join(VIEW_INDEXES)}; got {view_index!r}")
        self.scope, self.top_k, self.view_index = scope, top_k, view_index

    @abstractmethod
    def build(self, chunks: Sequence[Chunk]):
        """An index over one collection of chunks (opaque to the caller)."""

    @abstractmethod
    def search(self, index, queries: Sequence[Query], k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, scores) into the built chunks, one row per query: the k best and at
        least every chunk tied with the k-th (position -1 pads a row), in any order of ties.
        ``queries`` is a batch (:meth:`search_rows`), so a score matrix is bounded."""

    def unsearchable(self, queries: Sequence[Query]) -> list[str] | None:
        """The qids of ``queries`` this retriever has nothing to search with (a lexical
        retriever's question without a word): they retrieve nothing. None where every question
        can be searched (an encoder embeds any text)."""
        return None

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
            hits: list[tuple[np.ndarray, np.ndarray]] = []  # per index: (pool positions, scores), query rows
            search_seconds = 0.0
            for part in self._indexes(pool):
                t0 = time.perf_counter()
                index = self.build([pool[p] for p in part])
                t1 = time.perf_counter()
                hits.append(self._search_batches(index, group, np.asarray(part), min(self.top_k, len(part))))
                search_seconds += time.perf_counter() - t1
                build_seconds += t1 - t0
            for i, q, ranked in zip(members, group, merged_rankings(pool, hits, len(group))):
                results[i] = Retrieved(q.qid, ranked, search_seconds / len(group))
        return results, build_seconds

    def search_rows(self, n: int) -> int:
        """How many queries to search at once in a collection of ``n`` chunks: a score matrix
        of at most :data:`SCORE_CELLS` cells, so memory follows the batch, not the question count."""
        return max(1, SCORE_CELLS // max(n, 1))

    def _search_batches(self, index, group: Sequence[Query], part: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Each query's k best of one index as (pool positions, scores), (queries, k) arrays,
        best first and equal scores by position; -1 (score -inf) pads a row with fewer hits."""
        positions = np.full((len(group), k), -1, dtype=np.int64)
        scores = np.full((len(group), k), -np.inf)
        rows = self.search_rows(len(part))
        for start in range(0, len(group), rows):
            pos, sc = self.search(index, group[start:start + rows], k)
            pos, sc = best_first(part, np.asarray(pos), np.asarray(sc, dtype=np.float64), k)
            positions[start:start + len(pos)], scores[start:start + len(pos)] = pos, sc
        return positions, scores

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


def unsearchable_warning(qids: Sequence[str], total: int) -> str | None:
    """One warning line for the questions a retriever had nothing to search with, or None."""
    if not qids:
        return None
    named = ", ".join(map(repr, qids[:5])) + (f" and {len(qids) - 5} more" if len(qids) > 5 else "")
    return (f"retriever: {len(qids)} of {total} questions have no word to search with ({named}): they retrieve "
            f"nothing and score 0 (counted as queries_without_terms)")


def document_order(pool: list[Chunk]) -> list[Chunk]:
    """``pool`` by document (in order of first appearance), then start offset; stable, so
    chunks that start together (a chunk and its views, nested granularities) keep their order."""
    doc_rank = {d: r for r, d in enumerate(dict.fromkeys(c.doc_id for c in pool))}
    return sorted(pool, key=lambda c: (doc_rank[c.doc_id], c.start))


def best_first(part: np.ndarray, pos: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A search's rows (index positions, -1 pads; ties with the k-th possibly beyond k, in any
    order) as each row's k best in pool positions, best first, equal scores by pool position."""
    valid = pos >= 0
    pooled = np.where(valid, part[np.where(valid, pos, 0)], np.iinfo(np.int64).max)
    scores = np.where(valid, scores, -np.inf)
    order = np.lexsort((pooled, -scores), axis=-1)[:, :k]  # by score, then position (last key first)
    pooled, scores = np.take_along_axis(pooled, order, -1), np.take_along_axis(scores, order, -1)
    invalid = pooled == np.iinfo(np.int64).max
    return np.where(invalid, -1, pooled), np.where(invalid, -np.inf, scores)


def merged_rankings(pool: Sequence[Chunk], hits: list[tuple[np.ndarray, np.ndarray]], n: int) -> Iterator[Ranked]:
    """Each query's ranking over its indexes (one, or one per view): every index's hits merged by
    score, equal scores by position (earlier in the document first)."""
    if not hits:
        yield from (Ranked() for _ in range(n))
        return
    positions, scores = (hits[0] if len(hits) == 1 else
                         (np.concatenate([h[0] for h in hits], 1), np.concatenate([h[1] for h in hits], 1)))
    if len(hits) > 1:
        pos_key = np.where(positions >= 0, positions, np.iinfo(np.int64).max)
        order = np.lexsort((pos_key, -scores), axis=-1)
        positions, scores = np.take_along_axis(positions, order, -1), np.take_along_axis(scores, order, -1)
    ids = np.array([c.chunk_id for c in pool], dtype=object)  # the chunks' own strings, shared by the rankings
    for pos, sc in zip(positions, scores):
        valid = pos >= 0
        yield Ranked(ids[pos[valid]], np.ascontiguousarray(sc[valid], dtype=np.float64).tobytes())


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top-k of a (queries, items) score matrix, best first, equal scores by position:
    the first k of a stable descending sort, found by a partition (linear in the items) and a
    sort of the k picked."""
    n = scores.shape[1]
    if k >= n or not len(scores):
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return order, np.take_along_axis(scores, order, axis=1)
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]  # each row's k-th best score
    above = scores > kth
    tied = scores == kth
    need = k - above.sum(axis=1, keepdims=True)  # of the ties with the k-th, the first ``need`` by position
    keep = above | (tied & (np.cumsum(tied, axis=1, dtype=np.int32) <= need))
    if keep.sum() != keep.shape[0] * k:  # NaN scores: no clean k-th; the full sort decides
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return order, np.take_along_axis(scores, order, axis=1)
    picked = np.nonzero(keep)[1].reshape(-1, k)  # in position order within each row
    order = np.argsort(-np.take_along_axis(scores, picked, axis=1), axis=1, kind="stable")
    picked = np.take_along_axis(picked, order, axis=1)
    return picked, np.take_along_axis(scores, picked, axis=1)
