"""Paper embedders as configs (configs/embedder/<model>.yaml): each model's id, trust_remote_code
and prefixes written once; trust_remote_code reaches sentence-transformers and the vector's
identity, the query prefix goes to questions only and the document prefix to passages and
chunker sentences. No model is loaded: sentence-transformers is replaced by a recording fake."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sentence_transformers

from harness.chunking.semantic_breakpoint import SemanticBreakpointChunker
from harness.pipeline.components import build_component
from harness.embedding import embedder as embedders
from harness.retrieval.dense import DenseRetriever
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import Chunk, ConfigError, Document, Query

STELLA_QUERY = "Instruct: Given a web search query, retrieve relevant passages that answer the query.\nQuery: "
BGE_QUERY = "Represent this sentence for searching relevant passages: "
PAPER_EMBEDDERS = {  # config -> (model, trust_remote_code, query_prefix, document_prefix)
    "stella": ("dunzhang/stella_en_1.5B_v5", True, STELLA_QUERY, ""),
    "bge_large": ("BAAI/bge-large-en-v1.5", False, BGE_QUERY, ""),
    "bge_m3": ("BAAI/bge-m3", False, "", ""),
    "e5_large": ("intfloat/e5-large", False, "query: ", "passage: "),
    "e5_large_v2": ("intfloat/e5-large-v2", False, "query: ", "passage: "),
    "mpnet": ("sentence-transformers/all-mpnet-base-v2", False, "", ""),
}


class FakeModel:
    """A loaded sentence-transformers model: records what it encodes; bag-of-words vectors."""

    max_seq_length = 128

    def __init__(self, calls: list):
        self.calls = calls

    def encode(self, texts, batch_size, normalize_embeddings, **_):
        self.calls.append(list(texts))
        vecs = np.zeros((len(texts), 32), dtype=np.float32)
        for row, t in zip(vecs, texts):
            for w in t.lower().replace("?", " ").replace(".", " ").split():
                row[sum(map(ord, w)) % 32] += 1.0
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)


@pytest.fixture
def fake_st(monkeypatch):
    """sentence_transformers.SentenceTransformer replaced: its constructor's arguments recorded."""
    built, calls = [], []

    def fake(path=None, **kwargs):
        built.append((path, kwargs))
        return FakeModel(calls)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", fake)
    embedders._load_model.cache_clear()
    yield built, calls
    embedders._load_model.cache_clear()


@pytest.fixture
def recorded(monkeypatch):
    """The loader replaced: every encoded batch recorded (model path, texts)."""
    calls = []
    monkeypatch.setattr(embedders, "_load_model", lambda path, device, pooling, *_: _Recording(path, calls))
    return calls


class _Recording(FakeModel):
    def __init__(self, path, calls):
        super().__init__(calls)


@pytest.mark.parametrize("name", PAPER_EMBEDDERS)
def test_each_paper_model_is_one_config(make_cfg, name):
    model, remote, query, document = PAPER_EMBEDDERS[name]
    cfg = make_cfg(f"embedder={name}")
    assert (cfg.embedder.model, cfg.embedder.trust_remote_code) == (model, remote)
    assert (cfg.embedder.query_prefix, cfg.embedder.document_prefix) == (query, document)
    assert cfg.embedder.batch_size == 1  # the bundled defaults underneath (the cluster profile batches)
    built = build_component(cfg.embedder, "embedder")  # a Hub id: nothing loads until it encodes
    assert (built.model, built.trust_remote_code, built.query_prefix, built.document_prefix) == (
        model, remote, query, document)


def test_a_role_selects_a_paper_config(make_cfg):
    cfg = make_cfg("chunker=semantic_breakpoint", "embedder@roles.chunker.embedder=stella")
    assert cfg.chunker.embedder.model == "dunzhang/stella_en_1.5B_v5" and cfg.chunker.embedder.trust_remote_code
    assert cfg.embedder.model == "bundled" and cfg.retriever.embedder.model == "bundled"


def test_smoke_embedder_is_unchanged(make_cfg):
    """The bundled MiniLM, its config slice as before (no trust_remote_code key: cached stages keep their
    keys) and its vectors' identity spelled as before."""
    cfg = make_cfg()
    assert cfg.embedder.model == "bundled" and "trust_remote_code" not in cfg.embedder
    assert (cfg.embedder.query_prefix, cfg.embedder.document_prefix) == ("", "")
    e = build_component(cfg.embedder, "embedder")
    assert e.trust_remote_code is False and e.identity == "bundled|max_seq=None|solo|threads=1"


def test_trust_remote_code_reaches_sentence_transformers(fake_st, tmp_path):
    built, calls = fake_st
    folder = tmp_path / "stella"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}))
    for remote in (True, False):
        e = SentenceTransformerEmbedder(str(folder), batch_size=8, device="cpu", trust_remote_code=remote)
        e.encode(["a text"])
    assert built == [(str(folder), {"device": "cpu", "trust_remote_code": True}),
                     (str(folder), {"device": "cpu", "trust_remote_code": False})]  # one load per setting
    assert calls == [["a text"], ["a text"]]  # the embedder prefixes nothing itself


def test_trust_remote_code_reaches_a_replaced_pooling(monkeypatch, tmp_path):
    from sentence_transformers import models

    seen = {}

    class FakeTransformer:
        def __init__(self, path, **kwargs):
            seen["transformer"] = (path, kwargs)

        def get_embedding_dimension(self):
            return 4

    monkeypatch.setattr(models, "Transformer", FakeTransformer)
    monkeypatch.setattr(models, "Pooling", lambda dim, mode: ("pooling", dim, mode))
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer",
                        lambda modules=None, device=None: seen.setdefault("modules", modules))
    embedders._load_model.cache_clear()
    try:
        embedders._load_model(str(tmp_path), None, "mean", True)
    finally:
        embedders._load_model.cache_clear()
    path, kwargs = seen["transformer"]
    remote = {"trust_remote_code": True}
    assert path == str(tmp_path) and kwargs == {"model_kwargs": remote, "processor_kwargs": remote,
                                                "config_kwargs": remote}
    assert seen["modules"][1] == ("pooling", 4, "mean")


def test_remote_code_vectors_have_their_own_identity():
    """The repository's own code may compute another function than transformers' class of the same
    model_type, so its vectors are cached apart; the default spelling is unchanged."""
    plain = SentenceTransformerEmbedder("dunzhang/stella_en_1.5B_v5", batch_size=64)
    remote = SentenceTransformerEmbedder("dunzhang/stella_en_1.5B_v5", batch_size=64, trust_remote_code=True)
    assert plain.identity == "dunzhang/stella_en_1.5B_v5|max_seq=None"
    assert remote.identity == "dunzhang/stella_en_1.5B_v5|max_seq=None|remote_code"
    solo = SentenceTransformerEmbedder("dunzhang/stella_en_1.5B_v5", batch_size=1, trust_remote_code=True)
    assert solo.identity == "dunzhang/stella_en_1.5B_v5|max_seq=None|remote_code|solo|threads=1"


@pytest.mark.parametrize("kwargs, param", [
    (dict(trust_remote_code="yes"), "trust_remote_code"),
    (dict(trust_remote_code=None), "trust_remote_code"),
    (dict(query_prefix=None), "query_prefix"),
    (dict(document_prefix=3), "document_prefix"),
])
def test_bad_embedder_settings(kwargs, param):
    with pytest.raises(ConfigError, match=rf"embedder\.{param}"):
        SentenceTransformerEmbedder("some/model", **kwargs)


TEXTS = ["The volcano erupted and lava flowed into the sea.", "Quarterly revenue grew by ten percent."]
CHUNKS = [Chunk(f"d#{i}", "d", t, 0, len(t)) for i, t in enumerate(TEXTS)]
QUERY = Query("q1", "where did the lava flow?", doc_ids=("d",))


@pytest.mark.parametrize("name", PAPER_EMBEDDERS)
def test_prefixes_go_to_queries_and_documents(make_cfg, recorded, name):
    """Dense retrieval with the run's embedder: the config's query prefix on the question only, its
    document prefix on every chunk."""
    _, _, query, document = PAPER_EMBEDDERS[name]
    cfg = make_cfg(f"embedder={name}", "embedder.batch_size=8", "retriever=dense")  # batched: no token counts
    r = build_component(cfg.retriever, "retriever")
    assert isinstance(r, DenseRetriever) and r.embedder.model == PAPER_EMBEDDERS[name][0]
    (res,), _ = r.retrieve([QUERY], CHUNKS)
    passages, questions = recorded
    assert sorted(passages) == sorted(document + t for t in TEXTS)
    assert questions == [query + QUERY.question]
    assert {i for i, _ in res.ranked} == {"d#0", "d#1"}


def test_chunker_sentences_get_the_document_prefix(recorded):
    e = SentenceTransformerEmbedder("intfloat/e5-large", query_prefix="query: ", document_prefix="passage: ")
    doc = Document("d", "Cats purr softly. Cars honk loudly. Cats nap all day.")
    SemanticBreakpointChunker(e, buffer_size=0).chunk_document(doc)
    (sentences,) = recorded
    assert sentences == ["passage: Cats purr softly.", "passage: Cars honk loudly.", "passage: Cats nap all day."]
