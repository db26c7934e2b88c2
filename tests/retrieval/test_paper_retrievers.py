"""MC-indexing's dense and late-interaction retrievers (Table 2, Table 7): prefixes and dual
encoders on the right side, DPR's checkpoints loaded as DPR, ColBERT MaxSim, every paper
config composed and built with the bundled stand-in, and end-to-end runs."""

from pathlib import Path

import numpy as np
import pytest
import torch

from harness.cache import Cache
from harness.data.ohrbench import OHRBench
from harness.pipeline.components import build_component
from harness.pipeline.runner import Pipeline
from harness.embedding import embedder as embedders
from harness.retrieval.dense import DenseRetriever
from harness.embedding.dpr import DPREncoder, is_dpr
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.retrieval.late_interaction import LateInteractionRetriever
from harness.text import resolve_model
from harness.types import Chunk, ConfigError, Query

TEXTS = ["The volcano erupted and lava flowed into the sea.", "Quarterly revenue grew by ten percent.",
         "The cat slept on the warm windowsill all afternoon."]
CHUNKS = [Chunk(f"d#{i}", "d", t, 0, len(t)) for i, t in enumerate(TEXTS)]
QUERY = Query("q1", "where did the lava flow?", doc_ids=("d",))


class RecordingModel:
    """Stands in for a loaded sentence-transformers model: records what it encodes, and
    returns unnormalised bag-of-words vectors (so the normalisation asked for is visible)."""

    def __init__(self, path, calls):
        self.path, self.calls = path, calls

    def encode(self, texts, batch_size, normalize_embeddings, **_):
        self.calls.append((self.path, list(texts), normalize_embeddings))
        vecs = np.zeros((len(texts), 64), dtype=np.float32)
        for row, t in zip(vecs, texts):
            for w in t.lower().replace("?", " ").replace(".", " ").split():
                row[sum(map(ord, w)) % 64] += 1.0
        if normalize_embeddings:
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs


@pytest.fixture
def recorded(monkeypatch):
    calls = []
    monkeypatch.setattr(embedders, "_load_model", lambda path, device, pooling, *_: RecordingModel(path, calls))
    return calls


def test_prefixes_go_to_their_own_side(recorded, tmp_path):
    r = DenseRetriever(model="intfloat/e5-large-v2", query_prefix="query: ", passage_prefix="passage: ",
                       cache=Cache(tmp_path))
    (res,), _ = r.retrieve([QUERY], CHUNKS)
    passages = [texts for _, texts, _ in recorded if any("volcano" in t for t in texts)]
    questions = [texts for _, texts, _ in recorded if any("lava flow?" in t for t in texts)]
    assert sorted(passages[0]) == sorted("passage: " + t for t in TEXTS)
    assert questions == [["query: where did the lava flow?"]]
    assert res.ranked[0][0] == "d#0"


def test_bge_instruction_on_queries_only(recorded):
    instruction = "Represent this sentence for searching relevant passages: "
    DenseRetriever(model="BAAI/bge-large-en-v1.5", query_prefix=instruction).retrieve([QUERY], CHUNKS)
    (_, passages, _), (_, questions, _) = recorded
    assert not any(t.startswith(instruction) for t in passages)
    assert questions == [instruction + QUERY.question]


def test_dual_encoder_uses_each_model_on_its_side_with_raw_dot_product(recorded):
    r = DenseRetriever(query_model="facebook/dpr-question_encoder-multiset-base",
                       passage_model="facebook/dpr-ctx_encoder-multiset-base", similarity="dot")
    (res,), _ = r.retrieve([QUERY], CHUNKS)
    by_model = {path: texts for path, texts, _ in recorded}
    assert sorted(by_model["facebook/dpr-ctx_encoder-multiset-base"]) == sorted(TEXTS)
    assert by_model["facebook/dpr-question_encoder-multiset-base"] == [QUERY.question]
    assert {normalised for *_, normalised in recorded} == {False}
    fake = RecordingModel("", [])
    raw = fake.encode([QUERY.question], 1, False) @ fake.encode([TEXTS[0]], 1, False).T
    assert res.ranked[0] == ("d#0", pytest.approx(float(raw[0, 0]))) and raw[0, 0] > 1  # not a cosine


def test_model_replaces_both_sides_for_the_stand_in(recorded):
    r = DenseRetriever(model="bundled", query_model="facebook/dpr-question_encoder-multiset-base",
                       passage_model="facebook/dpr-ctx_encoder-multiset-base")
    assert r.query_embedder is r.embedder and r.embedder.path == resolve_model("bundled")


def test_prefixed_and_raw_vectors_are_separate_cache_entries(recorded, tmp_path):
    def run(**kw):
        cache = Cache(tmp_path)
        DenseRetriever(model="m", cache=cache, **kw).retrieve([QUERY], CHUNKS)
        return cache

    run()
    assert run().misses["embeddings"] == 0  # same texts, same model: all from the cache
    prefixed = run(query_prefix="query: ", passage_prefix="passage: ")
    assert prefixed.hits["embeddings"] == 0 and prefixed.misses["embeddings"] == 4
    raw = run(similarity="dot")  # unnormalised vectors are another entry than normalised ones
    assert raw.hits["embeddings"] == 0 and raw.misses["embeddings"] == 4
    other = Cache(tmp_path)
    DenseRetriever(query_model="q", passage_model="m", cache=other).retrieve([QUERY], CHUNKS)
    assert other.hits["embeddings"] == 3 and other.misses["embeddings"] == 1  # passages shared, query not


def test_bad_dense_parameters():
    with pytest.raises(ConfigError, match="retriever.similarity"):
        DenseRetriever(model="bundled", similarity="l2")
    with pytest.raises(ConfigError, match="retriever.query_model and retriever.passage_model"):
        DenseRetriever(query_model="facebook/dpr-question_encoder-multiset-base")
    with pytest.raises(ConfigError, match="alternatives"):
        DenseRetriever(SentenceTransformerEmbedder(), model="bundled")
    with pytest.raises(ConfigError, match="embedder.pooling"):
        DenseRetriever(model="bundled", pooling="max")


def _tiny_dpr(tmp_path: Path):
    """Random tiny DPR question and context checkpoints in the upstream layout."""
    from transformers import BertTokenizerFast, DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    tok = BertTokenizerFast.from_pretrained(resolve_model("bundled"))
    cfg = DPRConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64)
    out = {}
    for name, cls in (("question", DPRQuestionEncoder), ("ctx", DPRContextEncoder)):
        torch.manual_seed(len(name))
        model = cls(cfg).eval()
        (tmp_path / name).mkdir()
        model.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
        out[name] = (str(tmp_path / name), model, tok)
    return out


def test_dpr_checkpoints_load_as_dpr_and_give_the_cls_vector(tmp_path):
    for path, model, tok in _tiny_dpr(tmp_path).values():
        assert is_dpr(path)
        with torch.no_grad():
            expected = model(**tok(TEXTS, padding=True, return_tensors="pt")).pooler_output.numpy()
        assert np.allclose(DPREncoder(path, "cpu").encode(TEXTS, 2, normalize=False), expected, atol=1e-5)
        got = SentenceTransformerEmbedder(path, device="cpu").encode(TEXTS, normalize=False)
        assert np.allclose(got, expected, atol=1e-5)
    assert not is_dpr(resolve_model("bundled"))


def test_pooling_override_rebuilds_the_model_head():
    mean = SentenceTransformerEmbedder(pooling="mean").encode(TEXTS)
    assert np.allclose(mean, SentenceTransformerEmbedder().encode(TEXTS), atol=1e-5)  # MiniLM's own: mean
    cls = SentenceTransformerEmbedder(pooling="cls").encode(TEXTS)
    assert not np.allclose(cls, mean, atol=1e-3)
    assert SentenceTransformerEmbedder(pooling="cls").identity != SentenceTransformerEmbedder().identity


def _sample_paragraphs(n=12):
    """Paragraphs of the bundled real OHR-Bench documents."""
    docs = OHRBench(domains=["news", "textbook"]).load().documents
    return [p.strip() for d in docs for p in d.text.split("\n\n") if len(p.split()) > 15][:n]


def test_colbert_ranks_a_planted_exact_match_first(tmp_path):
    paras = _sample_paragraphs()
    assert len(paras) >= 8
    planted = "The Zorvath treaty of 1742 fixed the salt tariff between Qelmar and Brisk at nine florins."
    texts = paras[:4] + [planted] + paras[4:]
    chunks = [Chunk(f"s#{i}", "s", t, 100 * i, 100 * i + len(t)) for i, t in enumerate(texts)]
    query = Query("q", "Zorvath treaty salt tariff between Qelmar and Brisk", doc_ids=("s",))
    cache = Cache(tmp_path)
    (res,), _ = LateInteractionRetriever("bundled", cache=cache).retrieve([query], chunks)
    assert res.ranked[0][0] == "s#4"
    assert len(res.ranked) == len(texts)
    again = Cache(tmp_path)
    (res2,), _ = LateInteractionRetriever("bundled", cache=again).retrieve([query], chunks)
    assert again.misses["token_embeddings"] == 0 and res2.ranked == res.ranked


def test_colbert_bad_parameters():
    with pytest.raises(ConfigError, match="retriever.document_length"):
        LateInteractionRetriever(document_length=0)


PAPER_MODELS = {  # MC-indexing Table 7
    "dpr": ("facebook/dpr-question_encoder-multiset-base", "facebook/dpr-ctx_encoder-multiset-base"),
    "contriever": ("facebook/contriever-msmarco",) * 2,
    "e5": ("intfloat/e5-large-v2",) * 2,
    "bge": ("BAAI/bge-large-en-v1.5",) * 2,
    "gte": ("thenlper/gte-large",) * 2,
}


@pytest.mark.parametrize("name", [*PAPER_MODELS, "colbert"])
def test_paper_configs_compose_and_build_with_the_stand_in(make_cfg, name):
    cfg = make_cfg(f"retriever={name}")
    if name == "colbert":
        assert cfg.retriever.model == "colbert-ir/colbertv2.0"
    else:
        built = build_component(cfg.retriever, "retriever")  # paper ids: built lazily, nothing loads
        assert (built.query_embedder.model, built.embedder.model) == PAPER_MODELS[name]
    r = build_component(make_cfg(f"retriever={name}", "retriever.model=bundled").retriever, "retriever")
    if name == "colbert":
        assert isinstance(r, LateInteractionRetriever) and r.model == "bundled"
    else:
        assert r.query_embedder.path == r.embedder.path == resolve_model("bundled")
        assert r.query_prefix == cfg.retriever.query_prefix and r.passage_prefix == cfg.retriever.passage_prefix
    (res,), _ = r.retrieve([QUERY], CHUNKS)
    assert res.ranked[0][0] == "d#0"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["colbert", "e5"])
def test_end_to_end_with_a_paper_retriever(make_cfg, name):
    r = Pipeline(make_cfg(f"retriever={name}", "retriever.model=bundled", "dataset.limit_queries=8"),
                 log=lambda *_: None).run()
    assert r.stages["retrieve"] == "computed" and r.metrics["n_queries"] == 8
    for metric in ("evidence_recall", "span_recall"):
        assert 0.0 <= r.metrics[metric] <= 1.0
    assert all(row["context_chunk_ids"] for row in r.per_query)
    namespace = "token_embeddings" if name == "colbert" else "embeddings"
    assert r.cache_counts[namespace]["misses"] > 0


def test_colbert_checkpoint_loads_with_its_own_settings(tmp_path):
    """A tiny random checkpoint in colbert-ir/colbertv2.0's layout (HF_ColBERT: bert.* weights,
    the projection as linear.weight, artifact.metadata): the paper's loading path, offline."""
    import json

    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from harness.retrieval.late_interaction import _load_encoder

    tok = BertTokenizerFast.from_pretrained(resolve_model("bundled"))
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64)
    torch.manual_seed(0)
    state = {f"bert.{k}": v.contiguous() for k, v in BertModel(cfg).state_dict().items()}
    state["linear.weight"] = torch.randn(8, 32)
    save_file(state, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({**cfg.to_dict(), "architectures": ["HF_ColBERT"]}))
    (tmp_path / "artifact.metadata").write_text(json.dumps({"query_maxlen": 32, "doc_maxlen": 180}))
    tok.save_pretrained(tmp_path)

    r = LateInteractionRetriever(str(tmp_path), document_length=512, device="cpu")
    (query,), (doc,) = r.encode(["hello world"], "query"), r.encode(["hello, world."], "document")
    assert query.shape == (32, 8)  # padded with [MASK] to query_maxlen, projected to 8 dims
    assert doc.shape == (5, 8)  # [CLS] [unused1] hello world [SEP]: punctuation left out
    encoder = _load_encoder(str(tmp_path), "cpu", 512)
    assert encoder[0].document_length == 512 and encoder.prompts["query"] == "[unused0] "
    assert torch.equal(encoder[1].linear.weight.detach().cpu(), state["linear.weight"])
    assert _load_encoder(str(tmp_path), "cpu", None)[0].document_length == 180  # null: the checkpoint's
