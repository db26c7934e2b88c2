"""RAPTOR's two ways to read a summary tree (``chunker=raptor``; Sarthi et al. 2024, Section 3).

- ``mode=traversal`` (default; MC-indexing App. C.2 chose it "as it allows retrieving a fixed
  number of leaf nodes"): top k per layer, descending from each document's top layer through
  the children of the picked nodes (:mod:`harness.tree_search`). ``returns=leaves`` (default)
  gives the k leaves of the last layer, what MC-indexing scores; ``all_layers`` the nodes of
  every layer, as RAPTOR's code and paper build the context. k may be 1.5 (k of 1 or 2 per
  query, seeded, half and half).
- ``mode=collapsed``: every node in one ranking; nodes are taken in score order, at most
  ``top_k``, until the next one would pass ``budget`` tokens (the authors'
  ``retrieve_information_collapse_tree``: top_k 10, 3500 tokens; their paper reports 2000).

Summary nodes stand for themselves: the context holds their summary text and its spans are
their leaves' spans (what span metrics read). The recorded ranking is the context's nodes
for traversal and the resolved retriever ranking for collapsed (summaries as themselves,
nodes inside an earlier one skipped). For answer-scope recall at several k from one run, use
``metrics.scope_recall.selection=tree_traversal``, which redoes the traversal at each k.
The retriever must rank every node of a document (``retriever.top_k`` >= its nodes) for an
exact traversal; unranked nodes count as the worst.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.hierarchy import check_k, k_for, rank
from harness.retrieval.assemblers import Assembler, check_budget
from harness.tree_search import TopLayers, check_returns, tree_traversal
from harness.types import Chunk, ConfigError, Context, Ranking, Retrieved

MODES = ("traversal", "collapsed")


class RaptorAssembler(Assembler):
    def __init__(self, mode: str = "traversal", k: float = 3, returns: str = "leaves", top_k: int = 10,
                 budget: int = 3500, unit: str = "tokens", tokenizer: str = "cl100k", separator: str = "\n\n",
                 seed: int = 0):
        if mode not in MODES:
            raise ConfigError(f"context.mode must be one of {', '.join(MODES)}; got {mode!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ConfigError(f"context.top_k must be an integer >= 1; got {top_k!r}")
        self.mode, self.k, self.returns = mode, check_k(k), check_returns(returns)
        self.top_k, (self.budget, _) = top_k, check_budget(budget, "stop")
        super().__init__(unit, tokenizer, separator)
        self.seed = seed
        self._top: tuple[int, TopLayers] | None = None

    def assemble(self, retrieved: Retrieved, chunks: Mapping[str, Chunk]) -> Context:
        if self.mode == "collapsed":
            return self._collapsed(retrieved, chunks)
        if self._top is None or self._top[0] != id(chunks):
            self._top = (id(chunks), TopLayers(chunks))
        nodes = tree_traversal(retrieved, chunks, k_for(self.k, retrieved.qid, self.seed), self._top[1], self.returns)
        return self._whole(retrieved.qid, nodes, Ranking(retrieved.qid, tuple(c.chunk_id for c in nodes)))

    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        raise NotImplementedError("RaptorAssembler reads the retriever's ranking itself (assemble)")

    def _collapsed(self, retrieved: Retrieved, chunks: Mapping[str, Chunk]) -> Context:
        picked, used = [], 0
        for cid, _ in retrieved.ranked[:self.top_k]:
            chunk = chunks[cid]
            if chunk.view != "text" and not chunk.children:  # another view stands for its content chunk
                chunk = chunks[chunk.parent_id]
            if used + self.size(chunk) > self.budget:
                break
            picked.append(chunk)
            used += self.size(chunk)
        return self._whole(retrieved.qid, picked, rank(retrieved, chunks))

    def _whole(self, qid: str, nodes: list[Chunk], ranking: Ranking) -> Context:
        ctx = self._context(qid, [(c, len(c.text)) for c in nodes])
        return Context(ctx.qid, ctx.chunk_ids, ctx.text, ctx.n_tokens, ctx.spans, 0, ranking)
