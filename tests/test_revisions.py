"""``revision`` on model and dataset configs (harness/revision.py): a pinned revision reaches every
loader of the weights and of the tokenizer / chat template, keys its own cache entries (a null one
keys nothing, so unpinned keys stand), a bad one fails in one line naming its role, and the roles
(and so ``tables explain``) show it. No model is loaded: the libraries' constructors are fakes."""

from __future__ import annotations

import sys
import types

import pytest
import sentence_transformers
import transformers

from harness.cache import Cache, make_key
from harness.embedding import dpr
from harness.embedding import embedder as embedders
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.llm import tokens, transformers_llm, vllm_llm
from harness.pipeline.components import build_components
from harness.pipeline.roles import roles
from harness.pipeline.runner import config_slice
from harness.revision import check_revision
from harness.text import Tokenizer, _hf_backend, bundled_embedder_path
from harness.types import ConfigError

MPNET = "e8c3b32edf5434bc2275fc9bab85f82640a19130"  # harness/offline_models.py's copy of all-mpnet-base-v2
OTHER = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("value", [None, "main", "v1.0.0", "refs/pr/3", MPNET])
def test_branch_tag_or_commit(value):
    assert check_revision(value, "embedder.revision") == value


@pytest.mark.parametrize("value, why", [("e8c3b32", "abbreviated commit"), ("a..b", "not a branch"),
                                        ("two words", "not a branch"), ("main/", "not a branch"),
                                        (7, "a revision is"), ("", "a revision is")])
def test_a_bad_revision_is_one_line_naming_the_key(value, why):
    with pytest.raises(ConfigError, match=why) as e:
        check_revision(value, "chunker.llm.revision")
    assert str(e.value).startswith("chunker.llm.revision=") and "\n" not in str(e.value)


@pytest.fixture
def fake_st(monkeypatch):
    """SentenceTransformer, MultiVectorEncoder and AutoConfig replaced: their arguments recorded."""
    built = []

    class Fake:
        max_seq_length = 128

        def __init__(self, path=None, **kwargs):
            built.append((path, kwargs))

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Fake)
    monkeypatch.setattr(sentence_transformers, "MultiVectorEncoder", Fake)
    bert = types.SimpleNamespace(architectures=["BertModel"])
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained",
                        classmethod(lambda cls, path, **kw: built.append((path, {"config": kw})) or bert))
    embedders._load_model.cache_clear()
    yield built
    embedders._load_model.cache_clear()


def test_the_revision_reaches_sentence_transformers(fake_st):
    e = SentenceTransformerEmbedder("org/model", revision=MPNET)
    embedders._load_model(e.path, None, None, False, e.revision)
    assert fake_st == [("org/model", {"config": {"revision": MPNET}}),  # is it DPR? asked at the commit too
                       ("org/model", {"device": None, "trust_remote_code": False, "revision": MPNET})]


def test_the_revision_reaches_a_replaced_pooling(monkeypatch, fake_st):
    from sentence_transformers import models

    seen = {}

    class FakeTransformer:
        def __init__(self, path, **kwargs):
            seen.update(kwargs)

        def get_embedding_dimension(self):
            return 4

    monkeypatch.setattr(models, "Transformer", FakeTransformer)
    monkeypatch.setattr(models, "Pooling", lambda dim, mode: None)
    embedders._load_model("org/model", None, "cls", False, MPNET)
    assert all(seen[k]["revision"] == MPNET for k in ("model_kwargs", "processor_kwargs", "config_kwargs"))


def test_the_revision_reaches_a_dpr_encoder(monkeypatch):
    seen = []
    monkeypatch.setattr(dpr, "architectures", lambda path, revision=None: seen.append(("config", revision))
                        or ["DPRContextEncoder"])
    fake = types.SimpleNamespace(to=lambda device: types.SimpleNamespace(eval=lambda: "model"))
    monkeypatch.setattr(transformers.DPRContextEncoder, "from_pretrained",
                        classmethod(lambda cls, path, **kw: seen.append(("weights", kw.get("revision"))) or fake))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        classmethod(lambda cls, path, **kw: seen.append(("tokenizer", kw.get("revision")))))
    dpr.DPREncoder("facebook/dpr-ctx_encoder-multiset-base", "cpu", MPNET)
    assert seen == [("config", MPNET), ("weights", MPNET), ("tokenizer", MPNET)]


def test_the_revision_reaches_a_retrievers_own_encoders(fake_st):
    from harness.retrieval.dense import DenseRetriever
    from harness.retrieval.late_interaction import LateInteractionRetriever, _load_encoder

    one = DenseRetriever(model="BAAI/bge-large-en-v1.5", revision=MPNET)
    assert one.embedder.revision == one.query_embedder.revision == MPNET
    dual = DenseRetriever(query_model="q/enc", passage_model="p/enc", query_revision=MPNET, passage_revision=OTHER)
    assert (dual.query_embedder.revision, dual.embedder.revision) == (MPNET, OTHER)
    with pytest.raises(ConfigError, match="retriever.revision pins retriever.model"):
        DenseRetriever(query_model="q/enc", passage_model="p/enc", revision=MPNET)
    with pytest.raises(ConfigError, match="retriever.revision=.*no Hub id"):
        DenseRetriever(model="bundled", revision=MPNET)
    colbert = LateInteractionRetriever(revision=MPNET)
    _load_encoder.cache_clear()
    _load_encoder(colbert.model, None, None, colbert.revision)
    _load_encoder.cache_clear()
    assert fake_st[-1] == ("colbert-ir/colbertv2.0", {"device": None, "revision": MPNET})
    assert LateInteractionRetriever().identity != colbert.identity


def test_a_pinned_embedder_has_its_own_vectors(tmp_path, monkeypatch):
    calls = []

    class Model:
        max_seq_length = 128

        def encode(self, texts, **_):
            import numpy as np

            calls.append(list(texts))
            return np.ones((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(embedders, "_load_model", lambda *args: Model())
    cache = Cache(tmp_path)
    for revision in (None, MPNET, None, MPNET):
        SentenceTransformerEmbedder("org/model", batch_size=8, cache=cache, revision=revision).encode(["a text"])
    assert calls == [["a text"], ["a text"]]  # one computation each; the second pair read back
    assert SentenceTransformerEmbedder("org/model", batch_size=8).identity == "org/model|max_seq=None"  # as before
    pinned = SentenceTransformerEmbedder("org/model", batch_size=8, revision=MPNET)
    assert pinned.identity == f"org/model@{MPNET}|max_seq=None"
    with pytest.raises(ConfigError, match="embedder.revision=.*'bundled' is no Hub id"):
        SentenceTransformerEmbedder("bundled", revision=MPNET)


def test_the_revision_reaches_transformers_weights_and_chat_template(monkeypatch):
    seen = []
    tok = types.SimpleNamespace(pad_token_id=0)
    model = types.SimpleNamespace(to=lambda device: types.SimpleNamespace(eval=lambda: "model"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        classmethod(lambda cls, path, **kw: seen.append(("tokenizer", kw.get("revision"))) or tok))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        classmethod(lambda cls, path, **kw: seen.append(("weights", kw.get("revision"))) or model))
    transformers_llm._load.cache_clear()
    try:
        llm = transformers_llm.TransformersLLM("Qwen/Qwen3-8B", dtype="float32", device="cpu", revision=MPNET)
        assert llm.tokenizer is tok
    finally:
        transformers_llm._load.cache_clear()
    assert seen == [("tokenizer", MPNET), ("weights", MPNET)]
    assert llm.identity["revision"] == MPNET
    assert "revision" not in transformers_llm.TransformersLLM("Qwen/Qwen3-8B").identity  # unpinned keys as before


def test_the_revision_reaches_vllms_weights_and_tokenizer(monkeypatch):
    seen = {}
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=lambda **kw: seen.update(kw) or "engine"))
    vllm_llm._engine.cache_clear()
    try:
        assert vllm_llm.VLLM("Qwen/Qwen3-8B", revision=MPNET).engine == "engine"
    finally:
        vllm_llm._engine.cache_clear()
    assert (seen["model"], seen["revision"], seen["tokenizer_revision"]) == ("Qwen/Qwen3-8B", MPNET, MPNET)


def test_a_pinned_llm_keys_its_own_replies(tmp_path):
    from harness.llm.base import LLM

    class Echo(LLM):
        calls = 0

        def _generate(self, prompts, sampling):
            Echo.calls += len(prompts)
            return prompts

        _chat = _logprobs = _token_logprobs = tokenizer = None

    cache = Cache(tmp_path)
    for revision in (None, MPNET, OTHER, MPNET, None):
        Echo("Qwen/Qwen3-8B", cache=cache, revision=revision).generate(["hi"])
    assert Echo.calls == 3


def test_the_openai_backends_local_tokenizer_is_pinned(monkeypatch):
    from harness.llm.openai_llm import OpenAILLM

    seen = []
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        classmethod(lambda cls, path, **kw: seen.append((path, kw.get("revision")))))
    OpenAILLM("Qwen/Qwen3-8B", revision=MPNET).tokenizer
    OpenAILLM("Qwen/Qwen3-8B", revision=MPNET, tokenizer=f"Xenova/qwen@{OTHER}").tokenizer
    assert seen == [("Qwen/Qwen3-8B", MPNET), ("Xenova/qwen", OTHER)]


def test_a_counting_tokenizer_is_pinned(monkeypatch):
    """``<Hub id>@<revision>`` for a named tokenizer; ``reader`` follows a pinned llm."""
    from tokenizers import Tokenizer as HFTokenizer

    seen = []
    backend = HFTokenizer.from_file(str(bundled_embedder_path() / "tokenizer.json"))
    loaded = types.SimpleNamespace(backend_tokenizer=backend)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        classmethod(lambda cls, path, **kw: seen.append((path, kw.get("revision"))) or loaded))
    _hf_backend.cache_clear()
    try:
        assert Tokenizer("tokens", f"org/tok@{MPNET}").count("two words") == 2
        assert tokens.reader_name({"model": "org/llm", "revision": MPNET}) == f"llm:org/llm@{MPNET}"
        assert tokens.reader_name({"model": "org/llm", "tokenizer": "org/tok", "revision": MPNET}) == "llm:org/tok"
        tokens.tokenizer_for("tokens", f"llm:org/llm@{MPNET}")
    finally:
        _hf_backend.cache_clear()
    assert seen == [("org/tok", MPNET), ("org/llm", MPNET)]
    with pytest.raises(ConfigError, match="abbreviated commit"):
        Tokenizer("tokens", "org/tok@e8c3b32")


def test_a_bad_revision_in_a_config_names_its_role(make_cfg):
    cfg = make_cfg("chunker=lumber", "llm.revision=e8c3b32")
    with pytest.raises(ConfigError, match=r"^chunker\.llm\.revision=e8c3b32: an abbreviated commit"):
        build_components(cfg, dataset=False)
    with pytest.raises(ConfigError, match=r"^dataset\.revision='a\.\.b': not a branch"):
        build_components(make_cfg("dataset=longbench", "dataset.revision=a..b"), dataset=False)


def test_roles_show_a_pin_and_unpinned_keys_stand(make_cfg):
    plain = make_cfg("embedder=mpnet")
    pinned = make_cfg("embedder=mpnet", f"embedder.revision={MPNET}")
    role, unpinned = roles(pinned)["retriever.embedder"], roles(plain)["retriever.embedder"]
    assert role.settings["revision"] == MPNET and "revision" not in unpinned.settings
    assert role.describe().startswith("sentence-transformers/all-mpnet-base-v2@e8c3b32 ")
    assert unpinned.describe().startswith("sentence-transformers/all-mpnet-base-v2 ")
    # a null revision keys nothing (the stages recorded before the key existed keep theirs); a pin does
    assert "revision" not in config_slice(plain, "retriever")["embedder"]
    assert config_slice(pinned, "retriever")["embedder"]["revision"] == MPNET
    dual = roles(make_cfg("retriever=dpr", f"retriever.query_revision={MPNET}"))["retriever"]
    assert dual.describe().startswith("facebook/dpr-question_encoder-multiset-base@e8c3b32 | facebook/dpr-ctx")


def test_explain_lists_a_pinned_role():
    from harness.report.tables.checks import check_table, explain
    from harness.report.tables.spec import select

    spec = select("chroma/table2")[0]
    records = explain(check_table(spec, "full", (f"embedder.revision={OTHER}",)))
    assert records and all(r["role_settings"]["retriever.embedder"]["revision"] == OTHER for r in records)
    plain = explain(check_table(spec, "full", ()))
    assert all("revision" not in r["role_settings"]["retriever.embedder"] for r in plain)
