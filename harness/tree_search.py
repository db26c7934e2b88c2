"""Tree traversal over RAPTOR's summary trees (``chunker=raptor``), from a retriever's ranking.

A ground-floor service shared by ``context=raptor`` (which builds the context) and the
answer-scope recall (``selection=tree_traversal``, which redoes the traversal at each k).

The retriever scores every node of a document (leaves and summaries, one index): a dense
retriever by cosine similarity with the query, a lexical one by its relevance score, as
MC-indexing does for its sparse retrievers ("we modify the sampling procedure of every layer
based on the retrieval relevance score of the text in each node", App. C.2). A node the
retriever did not rank (beyond ``retriever.top_k``) scores below every ranked one.

Traversal (MC-indexing App. C.2; the authors' ``retrieve_information``): the k best nodes of
each document's top layer form S_1; the k best children of S_i form S_(i+1); a leaf picked
before the last layer stays a candidate of the next. It stops when every picked node is a leaf.
``returns=leaves`` gives the last set, the k leaves MC-indexing scores; ``all_layers`` gives
S_1 .. S_n in order, the context of RAPTOR's code and paper.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from harness.types import Chunk, ConfigError, Retrieved

RETURNS = ("leaves", "all_layers")


def check_returns(returns: str, name: str = "context.returns") -> str:
    if returns not in RETURNS:
        raise ConfigError(f"{name} must be one of {', '.join(RETURNS)}; got {returns!r}")
    return returns


class TopLayers:
    """Each document's top layer (its nodes of the highest ``level``), read once from the run's chunks."""

    def __init__(self, chunks: Mapping[str, Chunk]):
        levels: dict[str, int] = {}
        nodes: dict[str, list[str]] = defaultdict(list)
        for c in chunks.values():
            if not c.indexed or (c.view != "text" and not c.children):
                continue
            if c.level > levels.get(c.doc_id, -1):
                levels[c.doc_id], nodes[c.doc_id] = c.level, []
            if c.level == levels[c.doc_id]:
                nodes[c.doc_id].append(c.chunk_id)
        self.nodes = dict(nodes)


def tree_traversal(retrieved: Retrieved, chunks: Mapping[str, Chunk], k: int, top: TopLayers,
                   returns: str = "leaves") -> list[Chunk]:
    """The traversal's nodes (see the module docstring), best first within each layer."""
    position = {cid: r for r, (cid, _) in enumerate(retrieved.ranked)}
    docs = dict.fromkeys(chunks[cid].doc_id for cid, _ in retrieved.ranked)
    candidates = [cid for d in docs for cid in top.nodes.get(d, ())]
    order = {cid: i for i, cid in enumerate(candidates)}
    picked_all: list[str] = []
    while candidates:
        # rank order; unranked nodes after, in tree order
        best = sorted(candidates, key=lambda c: (position.get(c, len(position)), order.get(c, 0)))[:k]
        picked_all.extend(best)
        if not any(chunks[c].children for c in best):
            return [chunks[c] for c in (best if returns == "leaves" else picked_all)]
        candidates = list(dict.fromkeys(child for c in best for child in (chunks[c].children or (c,))))
        order = {cid: i for i, cid in enumerate(candidates)}
    return []
