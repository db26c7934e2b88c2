"""Dense retrieval: similarity of passage and query vectors in a faiss flat index.

Two ways to name the encoders:

- ``embedder``: the run's embedder (``embedder: ${embedder}``), one model for both sides,
  its own ``query_prefix``/``document_prefix``;
- ``model`` (both sides) or ``query_model`` + ``passage_model`` (a dual encoder such as DPR's
  question and context encoders), with ``query_prefix``/``passage_prefix`` (E5's
  "query: "/"passage: ", BGE's query instruction), ``pooling`` and ``max_seq_length``.
  ``model``, when set, replaces both side models, so ``retriever.model=bundled`` runs every
  paper configuration offline with the bundled MiniLM standing in.

Vectors are cached per (model, settings, exact text) by the embedder: each side's model
caches its own, and a prefixed text is its own entry. ``similarity``: ``cosine``
(normalised vectors) or ``dot`` (raw vectors: DPR and Contriever are trained for the
unnormalised inner product).

faiss-cpu by default; when the `gpu` extra (faiss-gpu) is installed and a GPU is
visible, the index moves to the GPUs. Flat inner-product search is exact, so CPU and
GPU rank the same chunks.

``index``: ``flat`` (the default: exact, every query against every chunk) or ``ivf`` (faiss's
IndexIVFFlat, for collections past what a flat scan serves in time: the vectors are clustered into
``ivf_lists`` lists by k-means, default 4 sqrt(n), at most n/39 (faiss wants 39 training vectors
a list), and a query scans only the ``nprobe`` lists nearest it, so it is approximate: a chunk in
an unprobed list is not ranked). ``nprobe`` >= the lists scans them all, exactly. The defaults
are the constructor's and stay out of the config file, so flat runs keep their cache keys; name
them with ``+retriever.index=ivf +retriever.nprobe=32``. ``hnsw`` is faiss's IndexHNSWFlat (a
navigable small-world graph of ``hnsw_m`` links a vector, built with ``ef_construction``, searched
with ``ef_search`` candidates or the k asked, whichever is more: approximate), with the defaults
of hnswlib as Chroma's collections use it (M 16, construction ef 100) and Chroma's evaluation's
``hnsw:search_ef`` 50: the search its report ran (``+retriever.index=hnsw +retriever.top_k=5``, so
that k does not widen the search past 50).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from harness.cache import Cache
from harness.retrieval.base import Retriever
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.revision import check_local, check_revision
from harness.types import Chunk, ConfigError, Query

# faiss logs at INFO which instruction set it loaded (and a failed AVX2 probe); not a user's concern.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)

SIMILARITIES = ("cosine", "dot")
INDEXES = ("flat", "ivf", "hnsw")
IVF_MIN_PER_LIST = 39  # faiss's k-means warns below 39 training vectors per centroid
# Queries per faiss search: faiss keeps only each query's best ``fetch`` (no queries x chunks
# matrix), so the batch bounds the query vectors and the results, not a score matrix.
SEARCH_ROWS = 1024


def _revisions(model, query_model, passage_model, revision, query_revision, passage_revision):
    """(query side's, passage side's) revision, each checked in one line naming its key:
    ``revision`` pins ``model`` (both sides), ``query_revision``/``passage_revision`` a dual
    encoder's two repositories."""
    revision = check_revision(revision, "retriever.revision")
    sides = check_revision(query_revision, "retriever.query_revision"), check_revision(
        passage_revision, "retriever.passage_revision")
    if model:
        if any(sides):
            raise ConfigError("retriever.query_revision/passage_revision pin a dual encoder's two models; "
                              "retriever.model is one: set retriever.revision")
        check_local(model, revision, "retriever.revision")
        return revision, revision
    if revision:
        raise ConfigError("retriever.revision pins retriever.model; a dual encoder (query_model, passage_model) "
                          "is pinned by retriever.query_revision and retriever.passage_revision")
    for key, name, rev in (("query_revision", query_model, sides[0]), ("passage_revision", passage_model, sides[1])):
        if name:
            check_local(name, rev, f"retriever.{key}")
    return sides


class DenseRetriever(Retriever):
    def __init__(self, embedder: SentenceTransformerEmbedder | None = None, model: str | None = None,
                 query_model: str | None = None, passage_model: str | None = None, query_prefix: str = "",
                 passage_prefix: str = "", pooling: str | None = None, max_seq_length: int | None = None,
                 similarity: str = "cosine", batch_size: int = 64, device: str | None = None,
                 cache: Cache | None = None, scope: str = "document", top_k: int = 100, use_gpu: bool = True,
                 index: str = "flat", nprobe: int = 16, ivf_lists: int | None = None, hnsw_m: int = 16,
                 ef_construction: int = 100, ef_search: int = 50, revision: str | None = None,
                 query_revision: str | None = None, passage_revision: str | None = None):
        super().__init__(scope, top_k)
        if similarity not in SIMILARITIES:
            raise ConfigError(f"retriever.similarity must be one of {', '.join(SIMILARITIES)}; got {similarity!r}")
        if index not in INDEXES:
            raise ConfigError(f"retriever.index must be one of {', '.join(INDEXES)}; got {index!r}")
        for name, value in (("nprobe", nprobe), ("ivf_lists", ivf_lists), ("hnsw_m", hnsw_m),
                            ("ef_construction", ef_construction), ("ef_search", ef_search)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"retriever.{name} must be an integer >= 1; got {value!r}")
        self.index_type, self.nprobe, self.ivf_lists = index, nprobe, ivf_lists
        self.hnsw_m, self.ef_construction, self.ef_search = hnsw_m, ef_construction, ef_search
        if embedder is not None:
            if not isinstance(embedder, SentenceTransformerEmbedder):
                raise ConfigError(f"retriever.embedder must build an embedder (embedder: ${{embedder}}); "
                                  f"got {embedder!r}")
            if model or query_model or passage_model or revision or query_revision or passage_revision:
                raise ConfigError("retriever.embedder and retriever.model/query_model/passage_model (and their "
                                  "revisions: the embedder's is embedder.revision) are alternatives: set one of them")
            self.query_embedder = self.embedder = embedder
            self.query_prefix, self.passage_prefix = embedder.query_prefix, embedder.document_prefix
        else:
            query_revision, passage_revision = _revisions(model, query_model, passage_model, revision,
                                                          query_revision, passage_revision)
            query_model, passage_model = (model, model) if model else (query_model, passage_model)
            if not (query_model and passage_model):
                raise ConfigError("retriever.model (one encoder) or both retriever.query_model and "
                                  "retriever.passage_model (a dual encoder) must be set")

            def encoder(name: str, rev: str | None) -> SentenceTransformerEmbedder:
                return SentenceTransformerEmbedder(name, batch_size, device, max_seq_length, pooling=pooling,
                                                   cache=cache, revision=rev)

            self.embedder = encoder(passage_model, passage_revision)  # passages (both sides unless a dual encoder)
            self.query_embedder = (self.embedder if (query_model, query_revision) == (passage_model, passage_revision)
                                   else encoder(query_model, query_revision))
            self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.similarity, self.use_gpu = similarity, use_gpu

    def input_lengths(self, texts: Sequence[str]) -> tuple[int, list[int]] | None:
        """The passage encoder's input limit and each passage's length in its tokens (prefix
        included), or None where the encoder does not say."""
        lengths = getattr(self.embedder, "input_lengths", None)
        return lengths([self.passage_prefix + t for t in texts]) if lengths else None

    def build(self, chunks: Sequence[Chunk]):
        import faiss

        vecs = self.embedder.encode([self.passage_prefix + c.text for c in chunks], "embed chunks",
                                           normalize=self.similarity == "cosine")
        index = self._empty_index(vecs)
        if self.use_gpu and hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
            index = faiss.index_cpu_to_all_gpus(index)
        index.add(vecs)
        return index

    def _empty_index(self, vecs: np.ndarray):
        """A flat index, an HNSW graph, or an IVF one trained on ``vecs`` (module docstring)."""
        import faiss

        dim = vecs.shape[1]
        if self.index_type == "flat":
            return faiss.IndexFlatIP(dim)
        if self.index_type == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction, index.hnsw.efSearch = self.ef_construction, self.ef_search
            return index
        n = len(vecs)
        lists = self.ivf_lists or round(4 * n ** 0.5)
        lists = max(1, min(lists, n // IVF_MIN_PER_LIST))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
        index.train(vecs)
        index.nprobe = min(self.nprobe, lists)
        return index

    def search_rows(self, n: int) -> int:
        return SEARCH_ROWS

    def search(self, index, queries: Sequence[Query], k: int):
        qv = self.query_embedder.encode([self.query_prefix + q.question for q in queries], "embed queries",
                                       normalize=self.similarity == "cosine")
        # faiss orders equal scores arbitrarily: widen the search until no row's k-th score
        # is tied with its last, so the caller can break ties by document position.
        n = index.ntotal
        fetch = min(n, k + 1)
        while True:
            scores, positions = index.search(qv, fetch)
            # an IVF row that found fewer than ``fetch`` is padded (-1): nothing beyond it to widen to
            tied = (scores[:, k - 1] == scores[:, -1]) & (positions[:, -1] >= 0)
            if fetch == n or not np.any(tied):
                return positions, scores
            fetch = min(n, 2 * fetch)
