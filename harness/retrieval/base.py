"""The retriever interface, with retrieval scope handled once for every index kind.

Scope ``document``: a query searches only the chunks of its own ``doc_ids`` (HiChunk,
MC-indexing). Scope ``corpus``: all chunks of the dataset are pooled (Chroma's
evaluation, Qu et al.'s document retrieval). Either way the searchable collection is
a group of chunks; queries that share a collection are searched together, and each
index kind only implements build/search over one collection.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from harness.types import Chunk, ConfigError, Query, Retrieved

SCOPES = ("document", "corpus")


class Retriever(ABC):
    def __init__(self, scope: str = "document", top_k: int = 100):
        if scope not in SCOPES:
            raise ConfigError(f"retriever.scope must be one of {', '.join(SCOPES)}; got {scope!r}")
        if top_k <= 0:
            raise ConfigError(f"retriever.top_k must be > 0, got {top_k}")
        self.scope, self.top_k = scope, top_k

    @abstractmethod
    def build(self, chunks: Sequence[Chunk]):
        """An index over one collection of chunks (opaque to the caller)."""

    @abstractmethod
    def search(self, index, queries: Sequence[Query], k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, scores), each of shape (len(queries), k), best first, into the built chunks."""

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
            pool = list(chunks) if not doc_ids else [c for d in doc_ids for c in by_doc.get(d, ())]
            group = [queries[i] for i in members]
            if not pool:
                for i in members:
                    results[i] = Retrieved(queries[i].qid, ())
                continue
            t0 = time.perf_counter()
            index = self.build(pool)
            t1 = time.perf_counter()
            k = min(self.top_k, len(pool))
            positions, scores = self.search(index, group, k)
            per_query = (time.perf_counter() - t1) / len(group)
            build_seconds += t1 - t0
            for i, q, pos, sc in zip(members, group, positions, scores):
                ranked = tuple((pool[p].chunk_id, float(s)) for p, s in zip(pos, sc) if p >= 0)
                results[i] = Retrieved(q.qid, ranked, per_query)
        return results, build_seconds


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top-k of a (queries, items) score matrix, best first; ties by position."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)
