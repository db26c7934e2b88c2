"""RAPTOR (Sarthi et al. 2024): a tree of recursive cluster summaries over fixed-length leaves,
as MC-indexing (Dong et al., Appendix C.2) runs it as its "recursive fixed-length chunking"
baseline, following the authors' code (github.com/parthsarthi03/raptor).

- Leaves: the ``base`` chunker's searchable text chunks (default: whole sentences packed up to
  300 cl100k tokens, MC-indexing's "chunks of 300 tokens"; the authors' code packs sentences too,
  100 tokens by default). They are contiguous document spans, level 0.
- Each layer: the nodes are embedded with the chunker's embedder (role ``chunker.embedder``: the
  run's embedder unless set apart; any :class:`SentenceTransformerEmbedder`, e.g. OpenAI's
  text-embedding-ada-002 through :mod:`harness.embedding.openai_embedder`, as MC-indexing embeds
  the trees of its sparse and ColBERT rows), clustered
  (:mod:`harness.chunking.raptor_clustering`: reduction, BIC-chosen soft Gaussian mixtures,
  global then local), each cluster's texts are summarised by the chunker's model (role
  ``chunker.llm``; the RAPTOR code's: GPT-3.5-turbo) with the authors' prompt, and the summaries
  are embedded: they are the next layer. Layers stop after
  ``num_layers`` (5) or once a layer has at most ``reduction_dimension + 1`` nodes ("too few
  nodes to be clustered"; a document of up to 11 leaves has no summary at all).
- A summary node is a chunk of view ``tree_summary`` with ``level`` = its layer, ``children`` =
  the nodes it summarises (soft clustering lets a node have several parents, so the tree is
  a layered DAG and ``parent_id`` stays unset) and spans (``parts``) = the union of its leaves'
  spans. It is searched like any chunk; an assembler returns it as itself and span metrics read
  its spans, i.e. it is credited with its leaves' document text (see ``context=raptor``).
- The summary prompt is the authors' (``GPT3TurboSummarizationModel``): a system turn "You are
  a helpful assistant." and the cluster's texts (each on one line, followed by a blank line)
  after "Write a summary of the following, including as many key details as possible:",
  ``summarization_length`` (100) tokens at most. A reply with no word character (empty,
  punctuation) is not a summary: the cluster's text cut to ``summarization_length`` tokens
  stands in for it, counted as ``chunker_empty_summaries``.

The prompts of one layer of every document in a batch go out in one call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from harness.chunking.base import Chunker, require
from harness.chunking.embedding import EmbeddingChunker
from harness.chunking.llm_chunker import RepairCounts
from harness.chunking.raptor_clustering import REDUCTIONS, Clustering
from harness.chunking.units import make_tokenizer, require_int
from harness.llm.base import LLM, Sampling
from harness.llm.replies import strip_reasoning
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import Chunk, ConfigError, Document

VIEW = "tree_summary"
# The authors' SummarizationModels.py (GPT3TurboSummarizationModel), verbatim.
SYSTEM_PROMPT = "You are a helpful assistant."
SUMMARY_PROMPT = "Write a summary of the following, including as many key details as possible: {context}:"


def cluster_text(nodes: Sequence[Chunk]) -> str:
    """The authors' ``get_text``: each node's lines joined by spaces, then a blank line."""
    return "".join(" ".join(n.text.splitlines()) + "\n\n" for n in nodes)


class RaptorChunker(RepairCounts, EmbeddingChunker):
    def __init__(self, base: Chunker, embedder: SentenceTransformerEmbedder, llm: LLM, num_layers: int = 5,
                 reduction_dimension: int = 10, threshold: float = 0.1, max_clusters: int = 50,
                 reduction: str = "umap", local_neighbors: int = 10, max_cluster_tokens: int = 3500,
                 seed: int = 224, summarization_length: int = 100, unit: str = "tokens",
                 tokenizer: str = "cl100k", batch_size: int = 8):
        require(isinstance(base, Chunker), f"chunker.base must build a chunker; got {base!r}")
        require(isinstance(llm, LLM), "chunker.llm must build a language model (llm: ${llm} with "
                                      f"llm=transformers, vllm or openai); got {llm!r}")
        require(reduction in REDUCTIONS,
                f"chunker.reduction must be one of {', '.join(REDUCTIONS)}; got reduction={reduction!r}")
        require(isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and 0 < threshold < 1,
                f"chunker.threshold must be a probability in (0, 1); got threshold={threshold!r}")
        for name, value, minimum in (("num_layers", num_layers, 1), ("reduction_dimension", reduction_dimension, 1),
                                     ("max_clusters", max_clusters, 2), ("local_neighbors", local_neighbors, 2),
                                     ("max_cluster_tokens", max_cluster_tokens, 1), ("seed", seed, 0),
                                     ("summarization_length", summarization_length, 1),
                                     ("batch_size", batch_size, 1)):
            require_int(name, value, minimum)
        if reduction == "umap":
            try:
                import umap  # noqa: F401
            except ImportError as e:
                raise ConfigError("chunker.reduction=umap needs umap-learn (pip install umap-learn), "
                                  f"or choose chunker.reduction=pca ({e})") from e
        RepairCounts.__init__(self)
        EmbeddingChunker.__init__(self, embedder)
        self.base, self.llm, self.num_layers = base, llm, num_layers
        self.clustering = Clustering(reduction_dimension, float(threshold), max_clusters, reduction,
                                     local_neighbors, max_cluster_tokens, seed)
        self.sampling = Sampling(max_tokens=summarization_length)
        self.tokenizer = make_tokenizer(unit, tokenizer)
        self.batch_size = batch_size

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        leaves = [_leaves(chunks) for chunks in self.base.chunk(docs)]
        layer = list(leaves)
        vectors = _split(self.embed([c.text for nodes in layer for c in nodes]), layer)
        summaries: list[list[Chunk]] = [[] for _ in docs]
        for level in range(1, self.num_layers + 1):
            todo = [i for i, nodes in enumerate(layer) if len(nodes) > self.clustering.dim + 1]
            if not todo:
                break
            plans = [(i, [layer[i][m] for m in members]) for i in todo
                     for members in self.clustering.layer(vectors[i], [self.tokenizer.count(c.text) for c in layer[i]])]
            texts = self._summaries(docs, plans)
            new: list[list[Chunk]] = [[] for _ in docs]
            for (i, members), text in zip(plans, texts):
                new[i].append(_summary_node(docs[i].doc_id, f"{docs[i].doc_id}#L{level}.{len(new[i])}",
                                            text, level, members))
            for i in todo:
                summaries[i].extend(new[i])
            layer = [new[i] if i in todo else [] for i in range(len(docs))]
            vectors = _split(self.embed([c.text for nodes in layer for c in nodes]), layer)
        return [lv + sm for lv, sm in zip(leaves, summaries)]

    def _summaries(self, docs: Sequence[Document], plans: list[tuple[int, list[Chunk]]]) -> list[str]:
        contexts = [cluster_text(members) for _, members in plans]
        replies = self.llm.chat([[{"role": "system", "content": SYSTEM_PROMPT},
                                  {"role": "user", "content": SUMMARY_PROMPT.format(context=ctx)}]
                                 for ctx in contexts], self.sampling, desc="raptor summaries")
        out = []
        for (i, _), ctx, reply in zip(plans, contexts, replies):
            text = strip_reasoning(reply).strip()
            self.count(docs[i].doc_id, "summaries")
            if not re.search(r"\w", text):
                self.count(docs[i].doc_id, "empty_summaries")
                text = ctx[:self.tokenizer.cut(ctx, self.sampling.max_tokens)].strip()
            out.append(text)
        return out


def _leaves(chunks: list[Chunk]) -> list[Chunk]:
    """The base's searchable text chunks that no other chunk names as parent, as flat leaves."""
    parents = {c.parent_id for c in chunks}
    return [replace(c, parent_id=None, level=0) for c in chunks
            if c.indexed and c.view == "text" and c.chunk_id not in parents]


def _split(vectors: np.ndarray, layer: list[list[Chunk]]) -> list[np.ndarray]:
    """The rows of ``vectors`` (one per node, in layer order) per document."""
    bounds = np.cumsum([0] + [len(nodes) for nodes in layer])
    return [vectors[a:b] for a, b in zip(bounds, bounds[1:])]


def _summary_node(doc_id: str, chunk_id: str, text: str, level: int, members: list[Chunk]) -> Chunk:
    spans = sorted({(s.start, s.end) for m in members for s in m.spans})
    return Chunk(chunk_id, doc_id, text, spans[0][0], max(e for _, e in spans), level, None, VIEW,
                 tuple(spans) if len(spans) > 1 else (), True, tuple(m.chunk_id for m in members))
