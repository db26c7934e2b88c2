"""MC-indexing's multi-view merge (Dong et al., Section 3.3 and Appendix E).

Each content chunk is indexed in several views (its raw text, and e.g. a summary and
keywords); all views are searched together and the ranking is split by view. From each
view the top k' content chunks are taken, k' ~ 2k/3, and the union is deduplicated:
on average about k chunks remain, which is how the paper compares with single-view
top-k. The union is not cut back to k (the paper does not); rank r of every view comes
before rank r+1 of any, in the configured view order.

A fractional k or k' ("top 1.5") is the floor for about half the queries and the
ceiling for the others (seeded per query, as in :mod:`harness.retrieval.assemblers`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.hierarchy import check_k, dedupe_contained, k_for, merge_views
from harness.retrieval.assemblers import Assembler
from harness.types import Chunk, ConfigError, Context, Ranking


class MultiViewAssembler(Assembler):
    def __init__(self, k: float = 3, k_per_view: float | None = None, views: Sequence[str] | None = None,
                 unit: str = "tokens", tokenizer: str = "bundled", separator: str = "\n\n", seed: int = 0):
        self.k = check_k(k)
        # k' = round(2k/3): 1 for top 1.5, 2 for top 3, 3 for top 5 (the paper's Appendix E).
        self.k_per_view = check_k(k_per_view, "context.k_per_view") if k_per_view is not None \
            else max(1, round(2 * self.k / 3))
        if views is not None and (isinstance(views, str) or not views or not all(isinstance(v, str) for v in views)):
            raise ConfigError(f"context.views must be null (every view present) or a non-empty list of "
                              f"view names; got {views!r}")
        super().__init__(unit, tokenizer, separator)
        self.views = tuple(views) if views is not None else None
        self.seed = seed

    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        k_view = k_for(self.k_per_view, ranking.qid, self.seed)
        merged = dedupe_contained(merge_views(ranking, k_view, self.views), chunks)
        return self._context(ranking.qid, [(c, len(c.text)) for c in merged])
