"""The OpenAI-compatible embeddings backend (embedder=openai) against a fake local server: batching,
order, normalisation, the cache in front, retries, the key kept out of errors and records, and
RAPTOR's tree and dense retrieval built on it."""

import json

import numpy as np
import pytest
from tests.conftest import ScriptedLLM
from tests.http_fake import JSONHandler, LocalServer

from harness.cache import Cache, make_key
from harness.chunking.base import check_chunks
from harness.chunking.raptor import VIEW, RaptorChunker
from harness.chunking.sentence import SentenceChunker
from harness.retrieval.dense import DenseRetriever
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.embedding.openai_embedder import EmbeddingError, OpenAIEmbedder
from harness.types import Chunk, ConfigError, Document, Query

KEY = "sk-test-0123456789abcdef"
WORDS = ["chef", "bread", "oven", "rocket", "orbit", "moon", "court", "judge", "contract", "lava"]


def bag(text: str) -> list[float]:
    """An unnormalised bag-of-words vector over WORDS, plus a small feature of the whole text (so
    that two texts of the same words still differ, and no vector is zero)."""
    words = text.lower().replace(".", " ").replace(",", " ").replace("?", " ").split()
    return [float(sum(w.startswith(v) for w in words)) for v in WORDS] + [0.5 + sum(map(ord, text)) % 13 / 26]


class FakeEmbeddings:
    """``/v1/embeddings``: fails the first ``fail`` requests with ``status`` (the 401 answer quotes
    the key it was sent, as some servers do), then answers each input with :func:`bag`, the data
    listed in reverse order (clients must sort by index)."""

    def __init__(self, fail: int = 0, status: int = 503):
        self.fail, self.status, self.requests = fail, status, []
        outer = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((self.path, body, self.headers.get("Authorization")))
                if outer.fail > 0:
                    outer.fail -= 1
                    return self._send(outer.status, {"error": {"message": f"refused {self.headers.get('Authorization')}"}})
                if not self.path.endswith("/embeddings") or any(t == "" for t in body["input"]):
                    return self._send(400, {"error": {"message": "bad request"}})
                data = [{"object": "embedding", "index": i, "embedding": bag(t)} for i, t in enumerate(body["input"])]
                return self._send(200, {"object": "list", "model": body["model"], "data": data[::-1],
                                        "usage": {"prompt_tokens": len(body["input"]), "total_tokens": len(body["input"])}})

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr("harness.llm.server.FIRST_WAIT", 0.01)  # retries at once
    s = FakeEmbeddings()
    yield s
    s.close()


def make(url, **kw):
    return OpenAIEmbedder(**{"model": "text-embedding-ada-002", "base_url": url, "api_key": KEY,
                             "max_retries": 2, "timeout": 10, **kw})


def test_vectors_come_back_in_order_normalised_and_batched(server):
    texts = ["The chef bakes bread.", "A rocket to the moon.", "The judge reads the contract.", "", "lava lava"]
    emb = make(server.url, batch_size=2, max_concurrency=2)
    vecs = emb.encode(texts)
    want = np.array([bag(t or " ") for t in texts], dtype=np.float32)
    assert vecs.dtype == np.float32 and vecs.shape == want.shape
    np.testing.assert_allclose(vecs, want / np.linalg.norm(want, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(emb.encode(["lava lava"], normalize=False), [bag("lava lava")])
    bodies = [body for _, body, _ in server.requests]
    assert sorted(len(b["input"]) for b in bodies[:3]) == [1, 2, 2]   # batch_size texts a request
    assert all(b["model"] == "text-embedding-ada-002" and b["encoding_format"] == "float" for b in bodies)
    assert all("dimensions" not in b for b in bodies)   # ada-002 takes none: sent only when set
    assert " " in bodies[0]["input"] + bodies[1]["input"] + bodies[2]["input"]   # the API refuses ""
    assert {auth for _, _, auth in server.requests} == {f"Bearer {KEY}"}
    assert emb.prompt_tokens == 6
    assert emb.encode([]).shape == (0, 0)


def test_the_cache_asks_only_for_texts_it_has_no_vector_of(server, tmp_path):
    cache = Cache(tmp_path)
    emb = make(server.url, cache=cache)
    first = emb.encode(["chef bread", "rocket orbit"])
    assert len(server.requests) == 1
    again = make(server.url, cache=cache).encode(["rocket orbit", "chef bread", "court judge"])
    assert len(server.requests) == 2 and server.requests[-1][1]["input"] == ["court judge"]
    np.testing.assert_array_equal(again[:2], first[::-1])
    # its own vectors: not a sentence-transformers model of the same name, and the key in none
    assert emb.identity == "text-embedding-ada-002|api=openai"
    assert make(server.url, dimensions=256).identity == "text-embedding-ada-002|api=openai|dimensions=256"
    assert cache.get_arrays("embeddings", [make_key("embedding", emb.identity, "chef bread")])[0] is not None
    assert not any(KEY in p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file())
    assert KEY not in repr(emb) and KEY not in str(vars(emb).get("identity", ""))


def test_server_errors_are_retried_then_answered(monkeypatch):
    monkeypatch.setattr("harness.llm.server.FIRST_WAIT", 0.01)  # retries at once
    s = FakeEmbeddings(fail=2)
    try:
        assert make(s.url).encode(["moon"]).shape == (1, len(WORDS) + 1)
        assert len(s.requests) == 3
    finally:
        s.close()


def test_a_refusal_names_the_server_and_masks_the_key(monkeypatch):
    monkeypatch.setattr("harness.llm.server.FIRST_WAIT", 0.01)  # retries at once
    s = FakeEmbeddings(fail=1, status=401)
    try:
        with pytest.raises(EmbeddingError, match=r"answered 401 for model 'text-embedding-ada-002'") as e:
            make(s.url).encode(["moon"])
        assert KEY not in str(e.value) and "***" in str(e.value) and e.value.__cause__ is None
    finally:
        s.close()
    down = make(s.url, max_retries=0)
    with pytest.raises(EmbeddingError, match=r"no answer from http://127\.0\.0\.1:\d+/v1"):
        down.encode(["moon"])


def test_the_key_comes_from_the_environment_and_bad_settings_are_refused(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    OpenAIEmbedder("text-embedding-ada-002", base_url=server.url).encode(["moon"])
    assert server.requests[-1][2] == "Bearer sk-from-the-environment"
    for bad, match in (({"model": "???"}, "embedder.model"), ({"batch_size": 0}, "batch_size"),
                       ({"max_concurrency": 0}, "max_concurrency"), ({"dimensions": -1}, "dimensions"),
                       ({"timeout": 0}, "timeout")):
        with pytest.raises(ConfigError, match=match):
            make(server.url, **bad)


TOPICS = {"cook": "The chef bakes bread in the oven.", "space": "The rocket flies to orbit around the moon.",
          "law": "The court and the judge read the contract."}


def test_raptor_builds_its_tree_on_the_served_vectors(server):
    """RAPTOR's tree (leaves and summaries) embedded through the server, as MC-indexing's sparse and
    ColBERT rows embed theirs with text-embedding-ada-002."""
    order = [t for _ in range(6) for t in TOPICS]
    doc = Document("d", " ".join(TOPICS[t].replace(".", f" {i}.") for i, t in enumerate(order)))
    emb = make(server.url, document_prefix="passage: ")
    llm = ScriptedLLM(reply=lambda p: "Summary: " + p.split(": ", 1)[1][:40])
    chunker = RaptorChunker(SentenceChunker(size=9, unit="words"), emb, llm, reduction="pca", reduction_dimension=2)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    leaves = [c for c in chunks if c.view == "text"]
    summaries = [c for c in chunks if c.view == VIEW]
    assert len(leaves) == 18 and summaries
    sent = [t for _, body, _ in server.requests for t in body["input"]]
    assert {"passage: " + c.text for c in leaves} <= set(sent)        # leaves, with the document prefix
    assert {"passage: " + s.text for s in summaries if s.level < max(c.level for c in chunks)} <= set(sent)


def test_dense_retrieval_ranks_with_the_served_vectors(server, tmp_path):
    texts = ["Lava reached the sea.", "The chef bakes bread.", "The judge read the contract."]
    chunks = [Chunk(f"d#{i}", "d", t, 0, len(t)) for i, t in enumerate(texts)]
    r = DenseRetriever(embedder=make(server.url, query_prefix="query: ", cache=Cache(tmp_path)))
    (res,), _ = r.retrieve([Query("q", "where did the lava flow?", doc_ids=("d",))], chunks)
    assert res.ranked[0][0] == "d#0"
    sent = [t for _, body, _ in server.requests for t in body["input"]]
    assert "query: where did the lava flow?" in sent and "Lava reached the sea." in sent


def test_the_config_builds_a_role_of_its_own(make_cfg):
    from harness.pipeline.components import build_components
    from harness.pipeline.roles import roles

    cfg = make_cfg("chunker=raptor", "context=raptor", "retriever=bm25",
                   "embedder@roles.chunker.embedder=openai", "roles.chunker.embedder.model=text-embedding-ada-002",
                   "roles.chunker.embedder.base_url=https://api.openai.com/v1")
    role = roles(cfg)["chunker.embedder"]
    assert (role.model, role.backend, role.kind, role.follows) == ("text-embedding-ada-002", "OpenAIEmbedder",
                                                                   "embedder", None)
    built = build_components(cfg, dataset=False)
    emb = built.chunker.embedder
    assert isinstance(emb, OpenAIEmbedder) and isinstance(emb, SentenceTransformerEmbedder)
    assert emb.base_url == "https://api.openai.com/v1" and "client" not in vars(emb)   # nothing asked yet
    assert roles(make_cfg("chunker=raptor"))["chunker.embedder"].bundled   # smoke: the run's bundled embedder
