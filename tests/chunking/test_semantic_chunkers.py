"""Embedding chunkers: breakpoint (Kamradt / Qu et al. App. B) and clustering (Qu et al. Eq. 1-3, App. A).

Property and hand-checked tests use fake embedders (deterministic, no model); a few tests
at the end load the bundled MiniLM on real text.
"""

from __future__ import annotations

import json
import zlib
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chunking.base import check_chunks
from harness.chunking.semantic_cluster import (
    SemanticClusterChunker,
    clusters_to_chunks,
    constrained_single_linkage,
    dbscan_labels,
    distance_matrix,
)
from harness.chunking.semantic_breakpoint import (
    THRESHOLD_DEFAULTS,
    SemanticBreakpointChunker,
    breakpoints,
    merge_small,
    window_means,
    window_texts,
)
from harness.chunking.sentence import sentence_pieces
from harness.chunking.units import UnitIndex
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.text import Tokenizer
from harness.types import ConfigError, Document
from tests.conftest import SAMPLES

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class HashEmbedder(SentenceTransformerEmbedder):
    """Deterministic unit vectors from a stable hash of the text. A low dimension makes
    similar-enough pairs common, so clusters (scattered ones too) actually form."""

    def __init__(self, dim: int = 4):
        super().__init__()
        self.dim = dim

    def _encode(self, texts, normalize=True):
        rows = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim) for t in texts]
        v = np.array(rows, dtype=np.float32).reshape(len(rows), self.dim)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class TopicEmbedder(SentenceTransformerEmbedder):
    """One axis per topic word: a text's vector is the normalised count of the words it holds."""

    TOPICS = ("cat", "car", "sea")

    def _encode(self, texts, normalize=True):
        v = np.array([[t.lower().count(w) for w in self.TOPICS] + [0.01] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


# --- generated documents (the idea of tests/test_chunk_properties.py) ------------------------

FRAGMENTS = [
    "the ", "quick ", "brown ", "fox", " ", "  ", "\t", ". ", "! ", "? ", ".", "\n", "\n\n",
    "Dr. ", "e.g. ", "3.14 ", "The cat sat on the mat. ", "Is it? Yes! ", "Cars honk. ",
    "数据", "分块", "。", "！", "？", "café ", "🙂", "---",
    # characters a tokenizer drops or merges (issue 34: the recursive chunker's spans met there)
    "e\u0301", "\u0301", "\ufe0f", "\u200d", "👍🏽", "👩\u200d💻", "a\u0308" * 5,
]
texts = st.builds(
    lambda parts, extra, times: ("".join(parts) + extra) * times,
    st.lists(st.sampled_from(FRAGMENTS), max_size=50),
    st.text(alphabet="ab .\n。？", max_size=10),
    st.integers(1, 3),  # repeated text: offsets must not be recovered by searching
)
documents = st.builds(lambda text, lang: Document("d", text, language=lang), texts, st.sampled_from(["en", "zh"]))
small_units = st.sampled_from(["words", "chars"])

TOPIC_TEXT = "Cats purr softly. Cats nap all day. Cars honk loudly. Cars race on roads."


def sentences_of(doc):
    return sentence_pieces(doc.text, 0, len(doc.text), doc.language)


def parts_of(chunk):
    return chunk.parts or ((chunk.start, chunk.end),)


# --- breakpoint: thresholds ------------------------------------------------------------------

DISTANCES = np.array([0.1, 0.1, 0.9, 0.1])  # gradient: [0, 0.4, 0, -0.8]


@pytest.mark.parametrize("kind, amount, expected", [
    ("percentile", 95, [2]),          # 95th percentile = 0.78
    ("standard_deviation", 1, [2]),   # 0.3 + 0.346
    ("interquartile", 1.5, [2]),      # 0.3 + 1.5 * (0.3 - 0.1)
    ("gradient", 95, [1]),            # LangChain breaks where the slope peaks, before the jump
    ("distance", 0.5, [2]),
    ("gradient_absolute", 0.3, [1]),
    ("distance", 0.95, []),
])
def test_breakpoint_thresholds(kind, amount, expected):
    assert breakpoints(DISTANCES, kind, amount).tolist() == expected


def test_breakpoint_threshold_edge_cases():
    assert breakpoints(np.zeros(0), "percentile", 95).tolist() == []
    assert breakpoints(np.full(5, 0.4), "percentile", 50).tolist() == []  # strictly above only
    assert breakpoints(np.array([0.7]), "gradient", 95).tolist() == []    # one distance: no slope


def test_defaults_follow_langchain_and_paper_grids():
    assert THRESHOLD_DEFAULTS == {"percentile": 95, "standard_deviation": 3, "interquartile": 1.5,
                                  "gradient": 95, "distance": 0.3, "gradient_absolute": 0.1}
    assert SemanticBreakpointChunker(HashEmbedder(), threshold_type="interquartile").threshold_amount == 1.5


def test_window_texts_buffer():
    assert window_texts(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert window_texts(["a", "b", "c"], 1) == ["a b", "a b c", "b c"]


def test_merge_small_joins_forward_and_tail_backward():
    sizes = [3, 1, 1, 3, 1]
    size_of = lambda a, b: sum(sizes[a:b + 1])  # noqa: E731
    assert merge_small([(i, i) for i in range(5)], size_of, 2) == [(0, 0), (1, 2), (3, 4)]
    assert merge_small([(0, 0), (1, 1)], lambda a, b: b - a + 1, 5) == [(0, 1)]


# --- breakpoint: hand-checked chunks ---------------------------------------------------------

def test_breakpoint_splits_between_topics():
    doc = Document("d", TOPIC_TEXT)
    chunker = SemanticBreakpointChunker(TopicEmbedder(), threshold_type="distance", threshold_amount=0.5,
                                        buffer_size=0)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert [c.text for c in chunks] == ["Cats purr softly. Cats nap all day.", "Cars honk loudly. Cars race on roads."]
    assert [c.chunk_id for c in chunks] == ["d#0", "d#1"]


def test_breakpoint_min_and_max_size():
    doc = Document("d", TOPIC_TEXT)
    merged = SemanticBreakpointChunker(TopicEmbedder(), threshold_type="distance", threshold_amount=0.5,
                                       buffer_size=0, min_size=9, unit="words")
    assert [c.text for c in merged.chunk_document(doc)] == [TOPIC_TEXT]
    capped = SemanticBreakpointChunker(TopicEmbedder(), threshold_type="distance", threshold_amount=0.5,
                                       buffer_size=0, max_size=4, unit="words")
    assert len(capped.chunk_document(doc)) == 4


def test_breakpoint_edge_documents():
    chunker = SemanticBreakpointChunker(HashEmbedder())
    assert chunker.chunk_document(Document("d", "")) == []
    assert chunker.chunk_document(Document("d", " \n\t ")) == []
    one = chunker.chunk_document(Document("d", "  Just one sentence here.  "))
    assert [(c.text, c.start, c.end) for c in one] == [("Just one sentence here.", 2, 25)]


def test_breakpoint_chinese():
    doc = Document("d", "猫在睡觉。猫很可爱！汽车在路上跑。汽车很快？", language="zh")
    emb = TopicEmbedder()
    emb.TOPICS = ("猫", "汽车", "海")
    chunks = SemanticBreakpointChunker(emb, threshold_type="distance", threshold_amount=0.5,
                                       buffer_size=0).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert [c.text for c in chunks] == ["猫在睡觉。猫很可爱！", "汽车在路上跑。汽车很快？"]


# --- breakpoint: window vectors -------------------------------------------------------------

class CountingEmbedder(TopicEmbedder):
    """Counts the texts it is asked to encode."""

    def __init__(self):
        super().__init__()
        self.encoded: list[str] = []

    def _encode(self, texts, normalize=True):
        self.encoded.extend(texts)
        return super()._encode(texts, normalize)


def test_window_means_by_hand():
    v = np.array([[1, 0], [0, 1], [1, 1], [3, 0]], dtype=np.float32)
    got = window_means(v, 1)
    want = [v[0:2].sum(0), v[0:3].sum(0), v[1:4].sum(0), v[2:4].sum(0)]
    np.testing.assert_allclose(got, [w / np.linalg.norm(w) for w in want], rtol=1e-6)
    np.testing.assert_allclose(window_means(v, 0), v / np.linalg.norm(v, axis=1, keepdims=True), rtol=1e-6)
    assert np.isfinite(window_means(np.array([[1.0, 0.0], [-1.0, 0.0]]), 1)).all()  # a zero mean stays finite


@pytest.mark.parametrize("buffer_size", [0, 1, 2])
def test_mean_windows_embed_each_sentence_once(buffer_size):
    doc = Document("d", TOPIC_TEXT * 2)
    n = len(sentences_of(doc))
    by_text, by_mean = CountingEmbedder(), CountingEmbedder()
    text_chunks = SemanticBreakpointChunker(by_text, threshold_type="distance", threshold_amount=0.5,
                                            buffer_size=buffer_size).chunk_document(doc)
    mean_chunks = SemanticBreakpointChunker(by_mean, threshold_type="distance", threshold_amount=0.5,
                                            buffer_size=buffer_size, window_embedding="mean").chunk_document(doc)
    check_chunks(doc, mean_chunks, covering=True)
    assert sorted(by_mean.encoded) == sorted(doc.text[s:e] for s, e in sentences_of(doc))
    assert len(by_text.encoded) == n
    if buffer_size == 0:  # the sentence alone: the same computation
        assert by_text.encoded == by_mean.encoded and text_chunks == mean_chunks
    else:
        assert len(set(by_text.encoded) - set(by_mean.encoded)) > 0  # windows are joined texts


# --- breakpoint: properties ------------------------------------------------------------------

@FAST
@given(documents, st.sampled_from(sorted(THRESHOLD_DEFAULTS)), st.integers(0, 2), small_units,
       st.none() | st.integers(1, 15), st.none() | st.integers(15, 40))
def test_breakpoint_properties(doc, kind, buffer_size, unit, min_size, max_size):
    chunker = SemanticBreakpointChunker(HashEmbedder(), threshold_type=kind, buffer_size=buffer_size,
                                        min_size=min_size, max_size=max_size, unit=unit)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    sentences = sentences_of(doc)
    assert {c.start for c in chunks} <= {s for s, _ in sentences}
    assert chunker.chunk_document(doc) == chunks  # deterministic
    units = UnitIndex(doc.text, Tokenizer(unit))
    counts = [units.count(c.start, c.end) for c in chunks]
    if max_size is not None:  # over budget only as one whole sentence
        assert all((c.start, c.end) in set(sentences) for c, n in zip(chunks, counts) if n > max_size)
    elif min_size is not None and len(chunks) > 1:
        assert min(counts) >= min_size


def test_breakpoint_tokens_unit():
    doc = Document("d", TOPIC_TEXT * 3)
    chunks = SemanticBreakpointChunker(HashEmbedder(), min_size=5, max_size=12).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)


@pytest.mark.parametrize("kwargs, param", [
    (dict(threshold_type="median"), "threshold_type"),
    (dict(threshold_amount=150), "threshold_amount"),
    (dict(threshold_type="gradient", threshold_amount=-1), "threshold_amount"),
    (dict(threshold_type="distance", threshold_amount="0.3"), "threshold_amount"),
    (dict(threshold_type="standard_deviation", threshold_amount=float("nan")), "threshold_amount"),
    (dict(buffer_size=-1), "buffer_size"),
    (dict(buffer_size=True), "buffer_size"),
    (dict(min_size=0), "min_size"),
    (dict(max_size=2.5), "max_size"),
    (dict(min_size=10, max_size=5), "min_size"),
    (dict(unit="lines"), "unit"),
    (dict(embedder="bundled"), "embedder"),
    (dict(window_embedding="sum"), "window_embedding"),
])
def test_breakpoint_validation(kwargs, param):
    kwargs = {"embedder": HashEmbedder(), **kwargs}
    with pytest.raises(ConfigError, match=rf"chunker\.{param}"):
        SemanticBreakpointChunker(**kwargs)


# --- cluster: distance and clustering --------------------------------------------------------

def test_distance_matrix_formula():
    e1, e2 = [1.0, 0.0], [0.0, 1.0]
    v = np.array([e1, e1, e2, [-1.0, 0.0]], dtype=np.float32)
    d = distance_matrix(v, 0.5)  # n = 4
    assert d[0, 1] == pytest.approx(0.5 * 1 / 4 + 0.5 * 0)
    assert d[0, 2] == pytest.approx(0.5 * 2 / 4 + 0.5 * 1)
    assert d[0, 3] == pytest.approx(0.5 * 3 / 4 + 0.5 * 1)  # cos = -1 counts as 0, not -1
    assert np.allclose(d, d.T) and np.all(np.diag(d) == 0)
    assert distance_matrix(v, 0.0)[0, 3] == pytest.approx(1.0)
    assert distance_matrix(v, 1.0)[0, 3] == pytest.approx(0.75)


def _matrix(values: dict[tuple[int, int], float], n: int) -> np.ndarray:
    d = np.ones((n, n), dtype=np.float32)
    for (a, b), x in values.items():
        d[a, b] = d[b, a] = x
    np.fill_diagonal(d, 0)
    return d


def partition(labels):
    groups: dict[int, set[int]] = {}
    for k, label in enumerate(labels):
        groups.setdefault(int(label), set()).add(k)
    return {frozenset(g) for g in groups.values()}


def test_single_linkage_stops_at_threshold():
    d = _matrix({(0, 1): 0.1, (2, 3): 0.4, (1, 2): 0.6}, 4)
    assert partition(constrained_single_linkage(d, 0.5)) == {frozenset({0, 1}), frozenset({2, 3})}
    assert partition(constrained_single_linkage(d, 0.6)) == {frozenset({0, 1, 2, 3})}  # "exceeds": <= merges
    assert partition(constrained_single_linkage(d, 0.05)) == {frozenset({k}) for k in range(4)}


def test_single_linkage_size_cap_skips_merges_that_do_not_fit():
    # 0-1 merge first; 2 is closest to 1 but {0,1,2} would exceed the cap, so 2 pairs with 3.
    d = _matrix({(0, 1): 0.1, (1, 2): 0.2, (2, 3): 0.3}, 4)
    assert partition(constrained_single_linkage(d, 0.5, [(np.ones(4), 2)])) == {
        frozenset({0, 1}), frozenset({2, 3})}
    weights = np.array([1.0, 1.0, 5.0, 1.0])  # sentence 2 alone is over the cap: stays alone
    assert partition(constrained_single_linkage(d, 0.5, [(weights, 3)])) == {
        frozenset({0, 1}), frozenset({2}), frozenset({3})}


def kruskal_reference(d, threshold, weights, cap):
    """The paper's procedure, literally: pairs by increasing distance, merge when the result fits."""
    n = len(d)
    root, size = list(range(n)), [float(w) for w in weights]

    def find(a):
        while root[a] != a:
            a = root[a]
        return a

    for dist, a, b in sorted((float(d[a, b]), a, b) for a, b in combinations(range(n), 2)):
        if dist > threshold:
            break
        ra, rb = find(a), find(b)
        if ra != rb and size[ra] + size[rb] <= cap:
            root[rb] = ra
            size[ra] += size[rb]
    return [find(a) for a in range(n)]


@FAST
@given(st.integers(1, 14), st.integers(0, 2**32 - 1), st.floats(0, 1), st.integers(1, 12))
def test_single_linkage_matches_reference(n, seed, threshold, cap):
    rng = np.random.default_rng(seed)
    d = rng.random((n, n)).astype(np.float32)
    d = np.triu(d, 1) + np.triu(d, 1).T
    weights = rng.integers(1, 5, size=n).astype(float)
    got = constrained_single_linkage(d, threshold, [(weights, cap)])
    assert partition(got) == partition(kruskal_reference(d, threshold, weights, cap))


def test_dbscan_noise_points_become_singletons():
    v = np.array([[1, 0, 0], [0.99, 0.1, 0], [0.98, 0.15, 0], [0, 0, 1]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    d = distance_matrix(v, 0.0)
    labels = dbscan_labels(d, eps=0.1, min_samples=2)
    assert partition(labels) == {frozenset({0, 1, 2}), frozenset({3})}
    assert sorted(set(labels.tolist())) == [0, 1]  # noise (-1) relabelled to a fresh cluster
    assert len(set(dbscan_labels(d, eps=0.1, min_samples=4).tolist())) == 4  # all noise


def test_scattered_cluster_gets_parts():
    text = "Cats purr softly. Cars honk loudly.\n\nCats nap all day. Cats eat fish. Cars race on roads."
    doc = Document("d", text)
    chunker = SemanticClusterChunker(TopicEmbedder(), position_weight=0.0, max_size=None, n_chunks=1)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert [c.text for c in chunks] == ["Cats purr softly. Cats nap all day. Cats eat fish.",
                                       "Cars honk loudly. Cars race on roads."]
    cats, cars = chunks
    assert [text[s:e] for s, e in cats.parts] == ["Cats purr softly.", "Cats nap all day. Cats eat fish."]
    assert (cats.start, cats.end) == (cats.parts[0][0], cats.parts[-1][1])
    assert [s.start for s in cars.spans] == [text.index("Cars honk"), text.index("Cars race")]


def test_consecutive_cluster_is_contiguous_chunk():
    doc = Document("d", TOPIC_TEXT)
    chunks = SemanticClusterChunker(TopicEmbedder(), position_weight=0.5, max_size=None,
                                    n_chunks=2).chunk_document(doc)
    assert [(c.text, c.parts) for c in chunks] == [("Cats purr softly. Cats nap all day.", ()),
                                                  ("Cars honk loudly. Cars race on roads.", ())]


def test_clusters_to_chunks_orders_by_first_sentence():
    doc = Document("x", "Alpha one. Beta two. Gamma three. Delta four.")
    sentences = sentences_of(doc)
    chunks = clusters_to_chunks(doc, sentences, [7, 3, 7, 3])
    assert [(c.chunk_id, c.text) for c in chunks] == [("x#0", "Alpha one. Gamma three."),
                                                      ("x#1", "Beta two. Delta four.")]
    check_chunks(doc, chunks, covering=True)


def test_cluster_edge_documents():
    for method in ("single_linkage", "dbscan"):
        chunker = SemanticClusterChunker(HashEmbedder(), method=method)
        assert chunker.chunk_document(Document("d", "   \n")) == []
        one = chunker.chunk_document(Document("d", "Only one. "))
        assert [(c.text, c.parts) for c in one] == [("Only one.", ())]


def test_cluster_window_keeps_clusters_inside_windows():
    doc = Document("d", " ".join(["Cats purr."] * 7))
    chunks = SemanticClusterChunker(TopicEmbedder(), max_size=None, n_chunks=1, window=3).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert [len(c.text.split()) // 2 for c in chunks] == [3, 3, 1]


# --- cluster: properties ---------------------------------------------------------------------

def _members(sentences, chunk):
    return [s for s in sentences if any(a <= s[0] and s[1] <= b for a, b in parts_of(chunk))]


@FAST
@given(documents, st.floats(0, 1), st.floats(0.1, 1), small_units, st.none() | st.integers(1, 30),
       st.none() | st.integers(1, 4), st.sampled_from([None, 5]))
def test_single_linkage_properties(doc, weight, threshold, unit, max_size, n_chunks, window):
    if max_size is None and n_chunks is None:
        n_chunks = 2
    chunker = SemanticClusterChunker(HashEmbedder(), position_weight=weight, threshold=threshold,
                                     max_size=max_size, n_chunks=n_chunks, window=window, unit=unit)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert chunker.chunk_document(doc) == chunks
    sentences, units = sentences_of(doc), UnitIndex(doc.text, Tokenizer(unit))
    assert sum(len(_members(sentences, c)) for c in chunks) == len(sentences)
    for c in chunks:
        members = _members(sentences, c)
        if max_size is not None and len(members) > 1:
            assert sum(units.count(s, e) for s, e in members) <= max_size
        if n_chunks is not None:
            n = min(len(sentences), window or len(sentences))
            assert len(members) <= -(-n // n_chunks)


@FAST
@given(documents, st.floats(0, 1), st.floats(0.01, 0.6), st.integers(1, 5))
def test_dbscan_properties(doc, weight, eps, min_samples):
    chunker = SemanticClusterChunker(HashEmbedder(), method="dbscan", position_weight=weight, eps=eps,
                                     min_samples=min_samples)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert chunker.chunk_document(doc) == chunks


@pytest.mark.parametrize("kwargs, param", [
    (dict(method="kmeans"), "method"),
    (dict(position_weight=1.5), "position_weight"),
    (dict(position_weight=None), "position_weight"),
    (dict(threshold=-0.1), "threshold"),
    (dict(n_chunks=0), "n_chunks"),
    (dict(max_size=-5), "max_size"),
    (dict(max_size=None, n_chunks=None), "max_size"),
    (dict(eps=0), "eps"),
    (dict(min_samples=0), "min_samples"),
    (dict(window=1), "window"),
    (dict(unit="pages"), "unit"),
    (dict(embedder=None), "embedder"),
])
def test_cluster_validation(kwargs, param):
    kwargs = {"embedder": HashEmbedder(), **kwargs}
    with pytest.raises(ConfigError, match=rf"chunker\.{param}"):
        SemanticClusterChunker(**kwargs)


def test_dbscan_needs_no_size_cap():
    assert SemanticClusterChunker(HashEmbedder(), method="dbscan", max_size=None).method == "dbscan"


# --- config ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", [("semantic_breakpoint", SemanticBreakpointChunker),
                                       ("semantic_cluster", SemanticClusterChunker)])
def test_config_composes(make_cfg, name, cls):
    from harness.pipeline.components import build_components

    comps = build_components(make_cfg(f"chunker={name}"))
    assert isinstance(comps.chunker, cls)
    assert isinstance(comps.chunker.embedder, SentenceTransformerEmbedder)
    assert comps.chunker.embedder.model == comps.retriever.embedder.model
    # one cache per folder: the chunker's sentence vectors and retrieval's chunk vectors share it
    assert comps.chunker.embedder.cache is comps.retriever.embedder.cache is not None


# --- the real bundled embedder ---------------------------------------------------------------

GT = SAMPLES / "ohr_bench" / "retrieval_base" / "gt"


def _page_text(relative: str, chars: int) -> str:
    pages = json.loads((GT / relative).read_text())
    return "\n\n".join(p["text"] for p in pages)[:chars]


@pytest.fixture(scope="module")
def stitched():
    """A news story followed by a Markov-chain textbook page: one obvious topic change."""
    news = _page_text("news/06_13.json", 3000)
    news = news[:news.rfind(".") + 1]  # end on a sentence
    maths = _page_text("textbook/GTM40-Denumerable_Markov_Chains-with_a_chapter_of_Markov_Random_Fields_"
                       "by_David_Griffeath1976.pdf_256.json", 2000)
    return Document("stitched", news + "\n\n" + maths), len(news) + 2


@pytest.mark.slow
@pytest.mark.parametrize("window_embedding", ["text", "mean"])
def test_real_embedder_breakpoint(stitched, window_embedding):
    doc, seam = stitched
    chunks = SemanticBreakpointChunker(SentenceTransformerEmbedder(),  # 95th percentile
                                       window_embedding=window_embedding).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    starts = {s for s, _ in sentences_of(doc)}
    assert len(chunks) > 1 and all(c.start in starts for c in chunks)
    assert seam in {c.start for c in chunks}, "no break at the topic change"


@pytest.mark.slow
def test_real_embedder_cluster(stitched):
    doc, seam = stitched
    chunks = SemanticClusterChunker(SentenceTransformerEmbedder(), max_size=120).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    mixed = [c for c in chunks if any(s < seam for s, _ in parts_of(c)) and any(e > seam for _, e in parts_of(c))]
    assert len(mixed) <= 1  # at most the chunk straddling the seam mixes news and maths
