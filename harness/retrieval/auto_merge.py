"""HiChunk's Auto-Merge retrieval (Lu et al., HiChunk, Section 4 and Algorithm 2).

Walk the query-ranked leaves, adding each to the retrieved nodes; after each, merge
upward into the parent p while all three conditions hold:

- Cond1: at least two of p's children are among the retrieved nodes;
- Cond2: those children hold at least theta* = len(p)/3 * (1 + tk_cur/T), so
  high-ranked chunks (small tk_cur) merge more easily;
- Cond3: the budget left, T - tk_cur, holds what merging needs (see ``cond3``).

A merge puts p where its first retrieved child was and removes every node p covers.
Stop once the retrieved nodes hold T units; the context is then cut at T (``ctx[:T]``).

Where the paper's text and the authors' code (``retrieval_algo.py``,
``check_merge_condition`` and ``tree_chunk_retrieval_auto_merge``) differ, both are offered;
the code, which produced the published numbers, is the default:

- ``cond3``: ``code`` requires only the units merging *adds* to fit, len(p) minus the
  retrieved nodes already inside p (the current leaf included), so near the end of the
  budget it merges more; ``paper`` requires T - tk_cur >= len(p).
- ``length_unit`` (Cond2's len(p) and children): ``chars`` counts the characters of the
  leaves under a node (the code sums ``len(text)`` over the node's leaf chunks);
  ``budget`` counts in the budget's unit, as the paper writes it. tk_cur/T is in the
  budget's unit either way (the code: tokens of the context over the token budget).

Choices where the paper is silent, taken from the same code: a leaf that is the only
child of its parent is replaced by the parent; a leaf already inside a retrieved node is
skipped; tk_cur is the context's size before the current leaf was added, updated after
each merge. ``Context.merges`` counts upward merges (the code's ``auto_merge_count``
instead counts the leaves merges brought in).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from harness.hierarchy import contains
from harness.retrieval.assemblers import Assembler, check_budget
from harness.types import Chunk, ConfigError, Context, Ranking

COND3 = ("code", "paper")
LENGTH_UNITS = ("chars", "budget")


class AutoMergeAssembler(Assembler):
    def __init__(self, budget: int = 4096, unit: str = "tokens", tokenizer: str = "bundled",
                 separator: str = "\n\n", cond3: str = "code", length_unit: str = "chars"):
        self.budget, _ = check_budget(budget, "truncate")
        if cond3 not in COND3:
            raise ConfigError(f"context.cond3 must be one of {', '.join(COND3)}; got {cond3!r}")
        if length_unit not in LENGTH_UNITS:
            raise ConfigError(f"context.length_unit must be one of {', '.join(LENGTH_UNITS)}; got {length_unit!r}")
        super().__init__(unit, tokenizer, separator)
        self.cond3, self.length_unit = cond3, length_unit
        self._tree: tuple[Mapping | None, dict[str, list[Chunk]]] = (None, {})
        self._chars: dict[str, int] = {}

    def _children(self, chunks: Mapping[str, Chunk]) -> dict[str, list[Chunk]]:
        """Children per parent id, computed once per chunk collection (the pipeline passes
        the same mapping for every query)."""
        if self._tree[0] is not chunks:
            kids: dict[str, list[Chunk]] = defaultdict(list)
            for c in chunks.values():
                if c.parent_id is not None and c.view == "text":
                    kids[c.parent_id].append(c)
            self._tree, self._chars = (chunks, dict(kids)), {}
        return self._tree[1]

    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        children = self._children(chunks)
        T = self.budget
        nodes: list[Chunk] = []
        merges = 0
        for leaf in (chunks[c] for c in ranking.chunk_ids):
            if any(contains(n, leaf) for n in nodes):
                continue
            parent = chunks.get(leaf.parent_id) if leaf.parent_id else None
            if parent is not None and len(children.get(parent.chunk_id, ())) == 1:
                leaf, parent = parent, (chunks.get(parent.parent_id) if parent.parent_id else None)
            tk_cur = self._used(nodes)
            nodes.append(leaf)
            while parent is not None and self._may_merge(parent, nodes, tk_cur, children):
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

    def _length(self, node: Chunk, children: Mapping[str, list[Chunk]]) -> int:
        """len() in Cond2: the budget's unit, or the characters of the leaves under ``node``."""
        if self.length_unit == "budget":
            return self.size(node)
        if node.chunk_id not in self._chars:
            kids = children.get(node.chunk_id)
            self._chars[node.chunk_id] = sum(self._length(k, children) for k in kids) if kids else len(node.text)
        return self._chars[node.chunk_id]

    def _may_merge(self, parent: Chunk, nodes: list[Chunk], tk_cur: int,
                   children: Mapping[str, list[Chunk]]) -> bool:
        kids = [n for n in nodes if n.parent_id == parent.chunk_id]
        if len(kids) < 2:                                                           # Cond1
            return False
        theta = self._length(parent, children) / 3 * (1 + tk_cur / self.budget)
        if sum(self._length(k, children) for k in kids) < theta:                    # Cond2
            return False
        need = self.size(parent)
        if self.cond3 == "code":
            need -= sum(self.size(n) for n in nodes if contains(parent, n))
        return self.budget - tk_cur >= need                                         # Cond3
