"""Chunk hierarchy and views: how a ranked chunk resolves to the text it stands for.

A ground-floor service shared by the assemblers (which build contexts from a ranking) and
the ranking metrics (which read the ranking the assembler recorded):

- a chunk of another view (summary, keywords) stands for the content chunk it describes
  (its ``parent_id``); a tree summary (``children`` set, no parent: RAPTOR) stands for itself;
- ``expand=parent`` returns a retrieved chunk's parent instead (small-to-big), and
  ``expand=root`` its top ancestor, so a root ranks by the best score among itself and its
  descendants: LGMGC's parent scoring;
- a chunk already ranked, or inside one that is, is not ranked again.

``k`` may be fractional, as MC-indexing's "top 1.5": each query gets the floor or the
ceiling, drawn per query from a seeded hash so that the split is about half and half and
the same in every run.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence

from harness.types import Chunk, ConfigError, Ranking, Retrieved

EXPAND = ("none", "parent", "root")


def check_expand(expand: str, name: str = "context.expand") -> str:
    if expand not in EXPAND:
        raise ConfigError(f"{name} must be one of {', '.join(EXPAND)}; got {expand!r}")
    return expand


def resolve(chunk: Chunk, chunks: Mapping[str, Chunk], expand: str = "none") -> Chunk:
    """The content chunk a ranked chunk stands for (see the module docstring)."""
    if chunk.view != "text" and chunk.parent_id is not None:
        chunk = chunks[chunk.parent_id]
    if expand == "parent" and chunk.parent_id is not None:
        return chunks[chunk.parent_id]
    while expand == "root" and chunk.parent_id is not None:
        chunk = chunks[chunk.parent_id]
    return chunk


def contains(outer: Chunk, inner: Chunk) -> bool:
    """Whether ``inner``'s text is all inside ``outer``'s (same chunk, or a descendant's span)."""
    if outer.doc_id != inner.doc_id:
        return False
    if not outer.parts and not inner.parts:  # the common case, without building Span tuples
        return outer.start <= inner.start and inner.end <= outer.end
    return all(any(o.start <= s.start and s.end <= o.end for o in outer.spans) for s in inner.spans)


def rank(retrieved: Retrieved, chunks: Mapping[str, Chunk], expand: str = "none") -> Ranking:
    """The retriever's ranking resolved once: content chunks with ``expand`` applied and
    contained chunks skipped, and per view the content chunks its hits stand for."""
    seen: list[Chunk] = []
    by_view: dict[str, list[str]] = {}
    for cid, _ in retrieved.ranked:
        hit = chunks[cid]
        chunk = resolve(hit, chunks, expand)
        if not any(contains(s, chunk) for s in seen):
            seen.append(chunk)
        content = chunk if expand == "none" else resolve(hit, chunks)
        view = by_view.setdefault(hit.view, [])
        if content.chunk_id not in view:
            view.append(content.chunk_id)
    return Ranking(retrieved.qid, tuple(c.chunk_id for c in seen), expand,
                   {v: tuple(ids) for v, ids in by_view.items()})


def merge_views(ranking: Ranking, k_view: int, views: Sequence[str] | None = None) -> list[str]:
    """MC-indexing's multi-view top k: the top ``k_view`` content chunks of each view, rank r
    of every view before rank r+1 of any (views in ``views`` order, else as first ranked),
    deduplicated; ``views=None`` takes every view present."""
    order = list(views) if views is not None else list(ranking.by_view)
    picked = [ranking.by_view.get(v, ())[:k_view] for v in order]
    return [cid for r in range(k_view) for ids in picked if r < len(ids) for cid in (ids[r],)]


def dedupe_contained(ids: Sequence[str], chunks: Mapping[str, Chunk]) -> list[Chunk]:
    """``ids`` in order, leaving out a chunk inside one already kept."""
    kept: list[Chunk] = []
    for cid in ids:
        chunk = chunks[cid]
        if not any(contains(m, chunk) for m in kept):
            kept.append(chunk)
    return kept


def check_k(k: float, name: str = "context.k") -> float:
    if isinstance(k, bool) or not isinstance(k, (int, float)) or k < 1 or (k * 2) % 1:
        raise ConfigError(f"{name} must be a whole or half number >= 1 (e.g. 3 or 1.5); got {k!r}")
    return k


def check_k_factor(k_factor: int, name: str = "context.k_factor") -> int:
    if isinstance(k_factor, bool) or not isinstance(k_factor, int) or k_factor < 1:
        raise ConfigError(f"{name} must be a whole number >= 1 (chunks taken per unit of k); got {k_factor!r}")
    return k_factor


def k_for(k: float, qid: str, seed: int) -> int:
    """``k`` itself when whole; otherwise floor or ceiling, half the queries each, fixed by ``seed``."""
    if k == int(k):
        return int(k)
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return math.ceil(k) if digest[0] % 2 else math.floor(k)
