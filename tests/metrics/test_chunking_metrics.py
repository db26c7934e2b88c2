"""Chunking-quality metrics against hand-computed values: chunk-point F1 (HiChunk Table 3),
ChunkScore (QChunker Sec. 3.3) and chunking error (MC-indexing Table 6)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import query_eval
from harness.chunking.structure_tree import StructureTreeChunker
from harness.data.hicbench import header_sections
from harness.metrics.chunk_points import ChunkPointF1, micro_scores, predicted_points, units
from harness.metrics.chunking_error import ChunkingError, answer_scopes
from harness.metrics.chunkscore import ChunkScore, perplexity_ratio, semantic_dispersion
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import Chunk, ConfigError, Document, Query, Span

# ---------------------------------------------------------------- chunk-point F1

MD = "# A\nAlpha one. Alpha two.\n## A1\nBeta one.\n# B\nGamma one."


def md_doc(text=MD, language="en"):
    return Document("d", text, sections=header_sections(text), language=language)


def node(text, start, level, indexed=False, cid=None):
    return Chunk(cid or f"d#{start}", "d", text[start:], start, len(text), level, indexed=indexed)


def flat(text, starts):
    ends = starts[1:] + [len(text)]
    return [Chunk(f"d#{i}", "d", text[s:e], s, e) for i, (s, e) in enumerate(zip(starts, ends))]


def test_gold_points_come_from_header_sections():
    doc = md_doc()
    assert [(s.start, s.level) for s in doc.sections] == [(0, 1), (MD.index("## A1"), 2), (MD.index("# B"), 1)]


def test_structure_nodes_score_by_level():
    doc = md_doc()
    # predicted sections: "# A" level 1 (right), "## A1" at level 1 (wrong level), "# B" level 1 (right);
    # the indexed leaf is fixed-size packing and is not a chunk point
    chunks = [node(MD, 0, 1), node(MD, MD.index("## A1"), 1), node(MD, MD.index("# B"), 1),
              node(MD, MD.index("Alpha two"), 2, indexed=True, cid="leaf")]
    out = ChunkPointF1()(doc, chunks)
    assert out["chunk_point_precision_l1_macro"] == pytest.approx(2 / 3) and out["chunk_point_recall_l1_macro"] == 1.0
    assert out["chunk_point_f1_l1_macro"] == pytest.approx(0.8)
    assert out["chunk_point_precision_l2_macro"] == 0.0 and out["chunk_point_f1_l2_macro"] == 0.0
    assert out["chunk_point_f1_all_macro"] == 1.0  # "all" ignores levels
    assert (out["chunk_point_n_match_l1"], out["chunk_point_n_pred_l1"], out["chunk_point_n_gold_l1"]) == (2, 3, 2)
    # with the leaves counted, the leaf adds a wrong level-2 point
    out = ChunkPointF1(include_leaves=True)(doc, chunks)
    assert out["chunk_point_n_pred_l2"] == 1 and out["chunk_point_precision_l2_macro"] == 0.0


def test_flat_chunks_are_level_one():
    doc = md_doc()
    chunks = flat(MD, [0, MD.index("Alpha two"), MD.index("# B")])
    out = ChunkPointF1()(doc, chunks)
    assert out["chunk_point_precision_l1_macro"] == pytest.approx(2 / 3) and out["chunk_point_recall_l1_macro"] == 1.0
    assert out["chunk_point_recall_l2_macro"] == 0.0 and out["chunk_point_f1_l2_macro"] == 0.0
    assert out["chunk_point_precision_all_macro"] == pytest.approx(2 / 3)
    assert out["chunk_point_recall_all_macro"] == pytest.approx(2 / 3)
    assert out["chunk_point_f1_all_macro"] == pytest.approx(2 / 3)


def test_sentence_match_tolerates_an_offset_inside_the_header_line_exact_does_not():
    doc = md_doc()
    b = MD.index("# B")
    chunks = flat(MD, [0, MD.index("## A1"), b + 2])  # "B" of "# B"
    assert ChunkPointF1()(doc, chunks)["chunk_point_f1_all_macro"] == 1.0
    exact = ChunkPointF1(match="exact")(doc, chunks)
    assert exact["chunk_point_recall_all_macro"] == pytest.approx(2 / 3)
    # a point on the newline before a header is that header in both modes
    chunks = flat(MD, [0, MD.index("## A1"), b - 1])
    assert ChunkPointF1(match="exact")(doc, chunks)["chunk_point_f1_all_macro"] == 1.0


def test_units_split_header_lines_from_sentences():
    assert [MD[s:e] for s, e in units(MD)] == ["# A", "Alpha one.", "Alpha two.", "## A1", "Beta one.", "# B",
                                                "Gamma one."]


def test_level_without_gold_is_nan_and_no_sections_is_all_nan():
    text = "# Only\nOne sentence. Two sentences."
    out = ChunkPointF1()(md_doc(text), flat(text, [0, text.index("Two")]))
    assert math.isnan(out["chunk_point_f1_l2_macro"]) and out["chunk_point_n_pred_l2"] == 0
    assert out["chunk_point_recall_l1_macro"] == 1.0 and out["chunk_point_precision_l1_macro"] == 0.5
    out = ChunkPointF1()(Document("d", "plain text."), flat("plain text.", [0]))
    assert out and all(math.isnan(v) for v in out.values())


def test_empty_chunk_list_scores_zero():
    out = ChunkPointF1()(md_doc(), [])
    assert out["chunk_point_f1_l1_macro"] == 0.0 and out["chunk_point_recall_all_macro"] == 0.0
    assert out["chunk_point_n_pred_all"] == 0.0 and out["chunk_point_n_gold_all"] == 3.0


def test_chinese_headers():
    text = "# 第一章\n这是第一句。这是第二句。\n## 第一节\n内容。\n# 第二章\n更多内容。"
    doc = md_doc(text, "zh")
    chunks = flat(text, [0, text.index("## 第一节"), text.index("# 第二章")])
    out = ChunkPointF1()(doc, chunks)
    assert out["chunk_point_f1_all_macro"] == 1.0
    assert out["chunk_point_f1_l1_macro"] == pytest.approx(0.8)  # the level-2 header predicted at level 1


def test_micro_scores_sum_counts_over_documents():
    rows = [ChunkPointF1()(md_doc(), flat(MD, [0, MD.index("Alpha two"), MD.index("# B")])),
            ChunkPointF1()(md_doc(), [node(MD, 0, 1), node(MD, MD.index("## A1"), 2), node(MD, MD.index("# B"), 1)]),
            ChunkPointF1()(Document("x", "no sections"), [])]
    micro = micro_scores(rows)
    # level 1: matched 2 + 2, predicted 3 + 2, gold 2 + 2
    assert micro["chunk_point_precision_l1"] == pytest.approx(4 / 5)
    assert micro["chunk_point_recall_l1"] == 1.0
    # level 2: matched 0 + 1, predicted 0 + 1, gold 1 + 1
    assert micro["chunk_point_precision_l2"] == 1.0 and micro["chunk_point_recall_l2"] == 0.5


def test_headline_f1_is_micro_and_the_per_document_mean_is_macro():
    from harness.aggregation import aggregate_documents

    metric = ChunkPointF1()
    rows = [metric(md_doc(), flat(MD, [0, MD.index("Alpha two"), MD.index("# B")])),        # L1: P 2/3, R 1
            metric(md_doc(), [node(MD, 0, 1), node(MD, MD.index("## A1"), 2), node(MD, MD.index("# B"), 1)])]  # 1, 1
    # micro (HiChunk's Table 3): P 4/5, R 4/4 -> F1 8/9; macro: mean of F1 0.8 and 1.0 -> 0.9
    assert metric.aggregate(rows)["chunk_point_f1_l1"] == pytest.approx(8 / 9)
    assert aggregate_documents(rows)["chunk_point_f1_l1_macro"] == pytest.approx(0.9)
    assert set(metric.aggregate(rows)) == metric.aggregate_keys()


def test_non_contiguous_chunk_predicts_each_part_start():
    c = Chunk("c", "d", "x", 0, 20, parts=((0, 5), (12, 20)))
    assert predicted_points([c]) == {(0, 1), (12, 1)}


def test_bad_parameters_name_the_parameter():
    with pytest.raises(ConfigError, match="levels"):
        ChunkPointF1(levels=[0])
    with pytest.raises(ConfigError, match="match"):
        ChunkPointF1(match="fuzzy")


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "omega"])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), _WORDS, st.lists(_WORDS, min_size=1, max_size=12)),
                min_size=1, max_size=6))
def test_a_chunking_built_from_the_gold_sections_scores_one(parts):
    text = "\n".join(f"{'#' * lv} {title}\n{' '.join(body).capitalize()}." for lv, title, body in parts)
    doc = md_doc(text)
    chunks = StructureTreeChunker(size=5, unit="words").chunk_document(doc)
    out = ChunkPointF1(levels=[1, 2, 3])(doc, chunks)
    assert out["chunk_point_f1_all_macro"] == 1.0
    for lv in (1, 2, 3):
        f1 = out[f"chunk_point_f1_l{lv}_macro"]
        assert f1 == 1.0 if any(p[0] == lv for p in parts) else math.isnan(f1)


# ---------------------------------------------------------------- ChunkScore

class FakeEmbedder(SentenceTransformerEmbedder):
    def __init__(self, vectors):
        super().__init__()
        self.vectors = vectors

    def _encode(self, texts, normalize=True):
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


class FakeLLM:
    """Each continuation token scores -1 after a non-empty prompt and -2 without one."""

    def __init__(self):
        self.calls = []

    def logprobs(self, prompts, continuations):
        self.calls.append((list(prompts), list(continuations)))
        return [[-1.0 if p else -2.0] * len(c.split()) for p, c in zip(prompts, continuations)]


TEXT = "one two.\n\nthree four. five six."
CHUNKS = [Chunk("d#0", "d", "one two.", 0, 8), Chunk("d#1", "d", "three four.", 10, 21),
          Chunk("d#2", "d", "five six.", 22, 31)]
VECS = {"one two.": [1, 0], "three four.": [0, 1], "five six.": [1, 1]}


def test_semantic_dispersion_hand_computed():
    # rows minus their own mean: [.5,-.5] and [-.5,.5]; Sigma = [[.5,-.5],[-.5,.5]]
    alpha = 1e-3
    assert semantic_dispersion(np.array([[1.0, 0.0], [0.0, 1.0]]), alpha) == pytest.approx(
        0.5 * math.log(alpha + alpha ** 2))
    # a constant embedding centres to zero: log(alpha)
    assert semantic_dispersion(np.array([[3.0, 3.0, 3.0]]), alpha) == pytest.approx(math.log(alpha))
    assert math.isnan(semantic_dispersion(np.zeros((0, 4))))


def test_semantic_dispersion_matches_the_papers_matrix_formula():
    rng = np.random.default_rng(0)
    for k, d in [(3, 8), (6, 4)]:  # also K > d (rank-deficient Sigma)
        z = rng.normal(size=(k, d))
        zt = z.T  # the paper's d x K
        j = np.eye(d) - np.ones((d, d)) / d
        expected = np.linalg.slogdet(zt.T @ j @ zt + 1e-3 * np.eye(k))[1] / k
        assert semantic_dispersion(z, 1e-3) == pytest.approx(expected)


def test_redundant_chunks_disperse_less():
    distinct = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], dtype=float)
    redundant = np.array([[1, 0, 0, 0], [0.9, 0.1, 0, 0], [1, 0, 0, 0]], dtype=float)
    assert semantic_dispersion(distinct) > semantic_dispersion(redundant)


def test_perplexity_ratio():
    assert perplexity_ratio([-1.0, -1.0], [-2.0, -2.0]) == pytest.approx(math.exp(-1))
    # one token fewer without a prompt: compare the common last tokens
    assert perplexity_ratio([-5.0, -1.0, -1.0], [-2.0, -2.0]) == pytest.approx(math.exp(-1))
    assert math.isnan(perplexity_ratio([], []))


def test_chunkscore_hand_computed_with_fake_llm():
    llm = FakeLLM()
    doc = Document("d", TEXT)
    out = ChunkScore(FakeEmbedder(VECS), llm)(doc, CHUNKS)
    li = math.exp(-1)  # PPL(c|prev) = e^1, PPL(c) = e^2 at every boundary
    sd = semantic_dispersion(np.array([VECS[c.text] for c in CHUNKS], dtype=float), 1e-3)
    assert out["chunkscore_li"] == pytest.approx(li)
    assert out["chunkscore_sd"] == pytest.approx(sd)
    assert out["chunkscore"] == pytest.approx(0.3 * li + 0.7 * sd)
    # prompts: the previous chunk plus the document's whitespace between the two; then unconditional
    prompts, conts = llm.calls[0]
    assert prompts == ["one two.\n\n", "three four. ", "", ""]
    assert conts == ["three four.", "five six.", "three four.", "five six."]


def test_chunkscore_without_llm_is_sd_only():
    out = ChunkScore(FakeEmbedder(VECS), None)(Document("d", TEXT), CHUNKS)
    assert math.isnan(out["chunkscore_li"]) and math.isnan(out["chunkscore"])
    assert np.isfinite(out["chunkscore_sd"])
    # lam = 0: CS is SD alone
    out = ChunkScore(FakeEmbedder(VECS), None, lam=0)(Document("d", TEXT), CHUNKS)
    assert out["chunkscore"] == out["chunkscore_sd"]


def test_chunkscore_edge_cases():
    metric = ChunkScore(FakeEmbedder({**VECS, "第一句。": [0.5, 2.0]}), FakeLLM())
    assert all(math.isnan(v) for v in metric(Document("d", TEXT), []).values())
    one = metric(Document("d", "第一句。"), [Chunk("d#0", "d", "第一句。", 0, 4)])
    assert math.isnan(one["chunkscore_li"]) and math.isnan(one["chunkscore"])
    assert one["chunkscore_sd"] == pytest.approx(math.log(2 * 0.75 ** 2 + 1e-3))
    # structure nodes (indexed=False) and other views are not part of the partition
    extra = [Chunk("s", "d", TEXT, 0, 31, level=1, indexed=False),
             Chunk("k", "d", "kw", 0, 8, parent_id="d#0", view="keywords")]
    assert metric(Document("d", TEXT), CHUNKS + extra) == metric(Document("d", TEXT), CHUNKS)


def test_chunkscore_bad_parameters():
    with pytest.raises(ConfigError, match="lam"):
        ChunkScore(FakeEmbedder(VECS), lam=1.5)
    with pytest.raises(ConfigError, match="alpha"):
        ChunkScore(FakeEmbedder(VECS), alpha=0)
    with pytest.raises(ConfigError, match="embedder"):
        ChunkScore(None)
    with pytest.raises(ConfigError, match="llm"):
        ChunkScore(FakeEmbedder(VECS), llm=object())


@pytest.mark.slow
def test_chunkscore_with_the_bundled_embedder():
    metric = ChunkScore(SentenceTransformerEmbedder())
    text = "Cats purr when content. Stock markets fell sharply today. Volcanoes erupt molten rock."
    sents = [(0, 23), (24, 57), (58, 86)]
    distinct = [Chunk(f"d#{i}", "d", text[s:e], s, e) for i, (s, e) in enumerate(sents)]
    same = [Chunk(f"d#{i}", "d", text[0:23], 0, 23) for i in range(3)]
    sd_distinct = metric(Document("d", text), distinct)["chunkscore_sd"]
    sd_same = metric(Document("d", text), same)["chunkscore_sd"]
    assert np.isfinite(sd_distinct) and sd_distinct > sd_same


# ---------------------------------------------------------------- chunking error

ERR_TEXT = "aaaa bbbb cccc dddd"


def err(evidence, chunks, text=ERR_TEXT, **kw):
    doc = Document("d", text)
    q = Query("q", "?", doc_ids=("d",), evidence=tuple(Span("d", s, e) for s, e in evidence))
    return ChunkingError(**kw)(query_eval(q, chunks_by_doc={"d": chunks}, documents={"d": doc}))["chunking_error"]


TWO = [Chunk("d#0", "d", "aaaa bbbb", 0, 9), Chunk("d#1", "d", "cccc dddd", 10, 19)]


def test_chunking_error_hand_computed():
    assert err([(5, 14)], TWO) == 1.0        # "bbbb cccc" straddles the boundary
    assert err([(0, 4)], TWO) == 0.0
    assert err([(0, 4), (12, 19)], TWO) == 0.0
    assert err([(0, 4), (15, 19), (5, 14)], TWO, merge_adjacent=False) == pytest.approx(1 / 3)


def test_adjacent_evidence_forms_one_scope():
    # "bbbb" and "cccc" are separated by a space only: one scope "bbbb cccc", split
    assert err([(5, 9), (10, 14)], TWO) == 1.0
    assert err([(5, 9), (10, 14)], TWO, merge_adjacent=False) == 0.0
    doc = {"d": Document("d", ERR_TEXT)}
    assert answer_scopes([Span("d", 0, 4), Span("d", 5, 9), Span("d", 15, 19)], doc) == [
        Span("d", 0, 9), Span("d", 15, 19)]


def test_whitespace_at_scope_edges_is_not_a_split():
    assert err([(0, 10)], TWO) == 0.0        # "aaaa bbbb " : the trailing space is in no chunk


def test_overlapping_and_non_contiguous_chunks():
    window = TWO + [Chunk("d#w", "d", "bbbb cccc", 5, 14)]
    assert err([(5, 14)], window) == 0.0      # a sliding window holds it whole
    parts = [Chunk("d#p", "d", "aaaa cccc", 0, 14, parts=((0, 4), (10, 14)))]
    assert err([(10, 14)], parts) == 0.0 and err([(0, 14)], parts) == 1.0
    section = TWO + [Chunk("d#s", "d", ERR_TEXT, 0, 19, level=1, indexed=False)]
    assert err([(5, 14)], section) == 1.0     # a structure node is not retrievable


def test_chunking_error_edge_cases_and_chinese():
    assert math.isnan(err([], TWO))
    assert err([(0, 4)], []) == 1.0           # no chunk holds anything
    zh = "第一句话。第二句话。"
    chunks = [Chunk("d#0", "d", zh[:5], 0, 5), Chunk("d#1", "d", zh[5:], 5, 10)]
    assert err([(0, 5)], chunks, zh) == 0.0 and err([(3, 8)], chunks, zh) == 1.0
