"""retriever.index (issue 35): flat (exact, the default) or IVF (faiss IndexIVFFlat), tested with
a stand-in embedder of fixed random vectors, so no model is loaded."""

import zlib

import numpy as np
import pytest

from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.retrieval.dense import DenseRetriever
from harness.types import Chunk, ConfigError, Query


class Vectors(SentenceTransformerEmbedder):
    """A vector per text drawn from its hash: clustered (8 centres), so IVF lists mean something."""

    def __init__(self):
        super().__init__()
        self.centres = np.random.default_rng(0).normal(size=(8, 16))

    def encode(self, texts, desc="embed", normalize=True):
        out = []
        for t in texts:
            rng = np.random.default_rng(zlib.crc32(t.encode()))  # stable across processes
            v = self.centres[rng.integers(8)] + 0.3 * rng.normal(size=16)
            out.append(v / np.linalg.norm(v))
        return np.asarray(out, dtype=np.float32)


CHUNKS = [Chunk(f"d{i % 5}#{i}", f"d{i % 5}", f"passage {i}", i, i + 1) for i in range(400)]
QUERIES = [Query(f"q{j}", f"question {j}") for j in range(30)]


def rankings(**kw):
    r = DenseRetriever(Vectors(), scope="corpus", top_k=10, **kw)
    return [x.ranked for x in r.retrieve(QUERIES, CHUNKS)[0]]


def test_ivf_probing_every_list_ranks_as_flat():
    flat = rankings()
    assert rankings(index="ivf", ivf_lists=8, nprobe=8) == flat


def test_ivf_probing_few_lists_finds_most_of_flat():
    flat, ivf = rankings(), rankings(index="ivf", ivf_lists=8, nprobe=2)
    found = np.mean([len({c for c, _ in a} & {c for c, _ in b}) / len(a) for a, b in zip(flat, ivf)])
    assert found > 0.8 and all(len(b) <= 10 for b in ivf)
    for row in ivf:  # still best first, ties by position
        scores = [s for _, s in row]
        assert scores == sorted(scores, reverse=True)


def test_a_small_collection_gets_one_list_and_is_exact():
    """400 vectors hold at most 400 // 39 = 10 lists; a 30-chunk document one list: exhaustive."""
    r = DenseRetriever(Vectors(), scope="corpus", top_k=5, index="ivf")
    assert r._empty_index(Vectors().encode([c.text for c in CHUNKS[:30]])).nlist == 1
    assert r._empty_index(Vectors().encode([c.text for c in CHUNKS])).nlist == 10


def test_hnsw_with_a_wide_search_ranks_as_flat_and_a_narrow_one_finds_most():
    """Chroma's collections search an HNSW graph (hnswlib, M 16, construction ef 100, search ef 50)."""
    flat = rankings()
    assert rankings(index="hnsw", ef_search=400) == flat
    narrow = rankings(index="hnsw", hnsw_m=4, ef_construction=16, ef_search=10)
    found = np.mean([len({c for c, _ in a} & {c for c, _ in b}) / len(a) for a, b in zip(flat, narrow)])
    assert narrow != flat and found > 0.8   # approximate: most of the exact top 10, not all
    r = DenseRetriever(Vectors(), scope="corpus", index="hnsw")
    index = r._empty_index(Vectors().encode(["a"]))
    assert (index.hnsw.efConstruction, index.hnsw.efSearch) == (100, 50)


@pytest.mark.parametrize("kw, match", [({"index": "annoy"}, "retriever.index must be one of flat, ivf, hnsw"),
                                       ({"ef_search": 0}, "retriever.ef_search"),
                                       ({"nprobe": 0}, "retriever.nprobe"), ({"ivf_lists": 2.5}, "retriever.ivf_lists")])
def test_bad_index_settings(kw, match):
    with pytest.raises(ConfigError, match=match):
        DenseRetriever(Vectors(), **kw)
