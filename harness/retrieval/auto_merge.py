"""HiChunk's Auto-Merge retrieval (Lu et al., HiChunk, Section 4 and Algorithm 2).

Walk the query-ranked leaves, adding each to the retrieved nodes; after each, merge
upward into the parent p while all three conditions hold:

- Cond1: at least two of p's children are among the retrieved nodes;
- Cond2: those children hold at least theta* = len(p)/3 * (1 + tk_cur/T) units, so
  high-ranked chunks (small tk_cur) merge more easily;
- Cond3: the budget left, T - tk_cur, is at least len(p).

A merge puts p where its first retrieved child was and removes every node p covers.
Stop once the retrieved nodes hold T units; the context is then cut at T (``ctx[:T]``).

Choices where the paper is silent, taken from the authors' reference implementation:
a leaf that is the only child of its parent is replaced by the parent; a leaf already
inside a retrieved node is skipped; tk_cur is the context's size before the current
leaf was added, updated after each merge. Lengths are in the assembler's unit
(tokens by default) for all three conditions, as the paper writes them.
``Context.merges`` counts upward merges.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from harness.hierarchy import contains
from harness.retrieval.assemblers import Assembler, check_budget
from harness.types import Chunk, Context, Ranking


class AutoMergeAssembler(Assembler):
    def __init__(self, budget: int = 4096, unit: str = "tokens", tokenizer: str = "bundled",
                 separator: str = "\n\n"):
        self.budget, _ = check_budget(budget, "truncate")
        super().__init__(unit, tokenizer, separator)
        self._children: tuple[Mapping | None, dict[str, int]] = (None, {})

    def _n_children(self, chunks: Mapping[str, Chunk]) -> dict[str, int]:
        """Children per parent id, computed once per chunk collection (the pipeline passes
        the same mapping for every query)."""
        if self._children[0] is not chunks:
            counts: dict[str, int] = defaultdict(int)
            for c in chunks.values():
                if c.parent_id is not None and c.view == "text":
                    counts[c.parent_id] += 1
            self._children = (chunks, dict(counts))
        return self._children[1]

    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        n_children = self._n_children(chunks)
        T = self.budget
        nodes: list[Chunk] = []
        merges = 0
        for leaf in (chunks[c] for c in ranking.chunk_ids):
            if any(contains(n, leaf) for n in nodes):
                continue
            parent = chunks.get(leaf.parent_id) if leaf.parent_id else None
            if parent is not None and n_children.get(parent.chunk_id, 0) == 1:
                leaf, parent = parent, (chunks.get(parent.parent_id) if parent.parent_id else None)
            tk_cur = self._used(nodes)
            nodes.append(leaf)
            while parent is not None and self._may_merge(parent, nodes, tk_cur):
                first = next(i for i, n in enumerate(nodes) if n.parent_id == parent.chunk_id)
                nodes[first] = parent
                nodes = [n for i, n in enumerate(nodes) if i == first or not contains(parent, n)]
                merges += 1
                tk_cur = self._used(nodes)
                if tk_cur >= T:
                    break
                parent = chunks.get(parent.parent_id) if parent.parent_id else None
            if self._used(nodes) >= T:
                break
        return self.fill(ranking.qid, nodes, T, "truncate", merges)

    def _used(self, nodes: list[Chunk]) -> int:
        return sum(self.size(n) for n in nodes)

    def _may_merge(self, parent: Chunk, nodes: list[Chunk], tk_cur: int) -> bool:
        kids = [n for n in nodes if n.parent_id == parent.chunk_id]
        size = self.size(parent)
        theta = size / 3 * (1 + tk_cur / self.budget)
        return (len(kids) >= 2                                   # Cond1
                and sum(self.size(k) for k in kids) >= theta     # Cond2
                and self.budget - tk_cur >= size)                # Cond3
