"""Ranking metrics against hand-computed values: answer-scope recall@k (MC-indexing Sec. 5.2),
DCG@k / Recall@k with ROUGE relabelling (LGMGC Sec. 4) and document / evidence-sentence
P/R/F1@k (Qu et al. App. D)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import query_eval
from harness.metrics.ranking import AnswerScopeRecall, DocumentPRF, EvidenceSentencePRF, scope_recall
from harness.metrics.rouge_relabel import RougeRelabelRanking, dcg
from harness.pipeline.components import build_component
from harness.retrieval.assemblers import k_for
from harness.types import Chunk, ConfigError, Document, Query, Span


def chunk(cid, start, end, doc="d", text=None, **kw):
    return Chunk(cid, doc, text if text is not None else "x" * (end - start), start, end, **kw)


def ranking(*ids):
    return [(cid, 1.0 - i / 100) for i, cid in enumerate(ids)]


# ---------------------------------------------------------------- answer-scope recall (MC-indexing)

THREE = [chunk("c0", 0, 10), chunk("c1", 10, 20), chunk("c2", 20, 30)]


def scope_eval(evidence, ranked, chunks=THREE, qid="q", expand="none"):
    q = Query(qid, "?", doc_ids=("d",), evidence=tuple(Span("d", s, e) for s, e in evidence))
    return query_eval(q, chunks_by_doc={"d": chunks}, ranked=ranking(*ranked), expand=expand)


def test_scope_recall_sums_each_chunks_share():
    # scope [5,25) = 20 chars: c1 holds 10 (0.5), c0 5 (0.25), c2 5 (0.25)
    out = AnswerScopeRecall(ks=[1, 2, 3, 10])(scope_eval([(5, 25)], ["c1", "c0", "c2"]))
    assert out == pytest.approx({"scope_recall_at_1": 0.5, "scope_recall_at_2": 0.75, "scope_recall_at_3": 1.0,
                                 "scope_recall_at_10": 1.0})


def test_top_one_and_a_half_is_one_or_two_per_query():
    metric = AnswerScopeRecall(ks=[1.5])
    seen = set()
    for i in range(20):
        qid = f"q{i}"
        value = metric(scope_eval([(5, 25)], ["c1", "c0", "c2"], qid=qid))["scope_recall_at_1.5"]
        assert value == pytest.approx(0.5 if k_for(1.5, qid, 0) == 1 else 0.75)
        seen.add(value)
    assert len(seen) == 2


def test_sum_versus_union_on_overlapping_chunks():
    windows = [chunk("w0", 0, 20), chunk("w1", 10, 30)]
    item = scope_eval([(10, 20)], ["w0", "w1"], windows)
    assert AnswerScopeRecall(ks=[2])(item)["scope_recall_at_2"] == pytest.approx(2.0)  # the paper's sum
    assert AnswerScopeRecall(ks=[2], count="union")(item)["scope_recall_at_2"] == pytest.approx(1.0)


def test_view_chunks_resolve_to_their_content_chunk_once():
    chunks = THREE + [Chunk("c1/kw", "d", "keywords", 10, 20, parent_id="c1", view="keywords")]
    # the keyword view of c1, then c1 itself (a duplicate), then c0
    out = AnswerScopeRecall(ks=[1, 2])(scope_eval([(5, 25)], ["c1/kw", "c1", "c0"], chunks))
    assert out == pytest.approx({"scope_recall_at_1": 0.5, "scope_recall_at_2": 0.75})


def test_expand_parent_scores_the_parent():
    chunks = [chunk("p", 0, 30, indexed=False, level=1), chunk("c0", 0, 10, parent_id="p"),
              chunk("c1", 10, 20, parent_id="p")]
    item = scope_eval([(5, 25)], ["c1"], chunks)
    assert AnswerScopeRecall(ks=[1])(item)["scope_recall_at_1"] == pytest.approx(0.5)
    # the context's expand, recorded with its ranking
    expanded = scope_eval([(5, 25)], ["c1"], chunks, expand="parent")
    assert AnswerScopeRecall(ks=[1])(expanded)["scope_recall_at_1"] == pytest.approx(1.0)


def test_multi_view_selection_takes_two_thirds_k_per_view():
    chunks = THREE + [Chunk(f"c{i}/kw", "d", "kw", 10 * i, 10 * i + 10, parent_id=f"c{i}", view="keywords")
                      for i in range(3)]
    # k = 3 -> k' = 2 per view: text view c0, c1; keyword view c2, c0 -> union c0, c2, c1
    item = scope_eval([(0, 30)], ["c0", "c2/kw", "c1", "c0/kw", "c2", "c1/kw"], chunks)
    assert AnswerScopeRecall(ks=[3], selection="multi_view")(item)["scope_recall_at_3"] == pytest.approx(1.0)
    # by rank alone the first 3 unique content chunks are c0, c2, c1 too; at k = 1.5 -> k' = 1: c0 and c2
    mv = AnswerScopeRecall(ks=[1.5], selection="multi_view")(item)["scope_recall_at_1.5"]
    assert mv == pytest.approx(2 / 3)


def test_one_view_alone_takes_k_of_that_view():
    """MC-indexing App. C.4's Keywords / Summary rows: the sections ranked by one view alone, top k;
    the text view (ranked first here) does not count."""
    chunks = THREE + [Chunk(f"c{i}/kw", "d", "kw", 10 * i, 10 * i + 10, parent_id=f"c{i}", view="keywords")
                      for i in range(3)]
    item = scope_eval([(0, 10), (20, 30)], ["c1", "c2/kw", "c0", "c1/kw", "c2", "c0/kw"], chunks)
    alone = AnswerScopeRecall(ks=[1, 2, 3], selection="multi_view", views=["keywords"], view_k="k")(item)
    # the keyword view ranks c2, c1, c0: scope [0,10) + [20,30), half each
    assert alone == pytest.approx({"scope_recall_at_1": 0.5, "scope_recall_at_2": 0.5, "scope_recall_at_3": 1.0})
    # with two thirds of k per view, k = 2 would take one keyword hit only
    two_thirds = AnswerScopeRecall(ks=[3], selection="multi_view", views=["keywords"])(item)
    assert two_thirds["scope_recall_at_3"] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="view_k must be one of two_thirds, k"):
        AnswerScopeRecall(selection="multi_view", view_k="all")
    with pytest.raises(ConfigError, match="view_k=k applies to selection=multi_view only"):
        AnswerScopeRecall(view_k="k")


def test_scope_recall_edge_cases():
    assert all(math.isnan(v) for v in AnswerScopeRecall()(scope_eval([], ["c0"])).values())
    assert AnswerScopeRecall(ks=[3])(scope_eval([(0, 5)], []))["scope_recall_at_3"] == 0.0
    # evidence in another document is not covered by this one's chunks
    assert scope_recall([Span("e", 0, 5)], THREE) == 0.0
    zh = "第一句话。第二句话。"
    chunks = [Chunk("z0", "d", zh[:5], 0, 5), Chunk("z1", "d", zh[5:], 5, 10)]
    assert AnswerScopeRecall(ks=[1])(scope_eval([(3, 8)], ["z1"], chunks))["scope_recall_at_1"] == pytest.approx(0.6)


def test_scope_recall_bad_parameters():
    with pytest.raises(ConfigError, match="ks"):
        AnswerScopeRecall(ks=[0.7])
    with pytest.raises(ConfigError, match="count"):
        AnswerScopeRecall(count="max")
    with pytest.raises(ConfigError, match="selection"):
        AnswerScopeRecall(selection="views")
    with pytest.raises(ConfigError, match="views"):
        AnswerScopeRecall(selection="multi_view", views="keywords")


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(1, 99), max_size=8, unique=True), order=st.randoms(use_true_random=False),
       scope=st.tuples(st.integers(0, 99), st.integers(1, 50)), count=st.sampled_from(["sum", "union"]))
def test_scope_recall_is_monotone_in_k(cuts, order, scope, count):
    bounds = [0, *sorted(cuts), 100]
    chunks = [chunk(f"c{i}", s, e) for i, (s, e) in enumerate(zip(bounds, bounds[1:]))]
    ids = [c.chunk_id for c in chunks]
    order.shuffle(ids)
    start = scope[0]
    item = scope_eval([(start, min(100, start + scope[1]))], ids, chunks)
    out = AnswerScopeRecall(ks=[1, 1.5, 2, 3, 5, 10], count=count)(item)
    values = [out[f"scope_recall_at_{k}"] for k in ("1", "1.5", "2", "3", "5", "10")]
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(1.0)  # a partition retrieved whole covers the scope


# ---------------------------------------------------------------- Qu et al. document level

def doc_eval(relevant, ranked_docs):
    chunks = {}
    for i, d in enumerate(ranked_docs):
        chunks.setdefault(d, []).append(chunk(f"{d}#{i}", 10 * i, 10 * i + 5, doc=d))
    q = Query("q", "?", doc_ids=tuple(relevant))
    ids = [c.chunk_id for cs in chunks.values() for c in cs]
    ids.sort(key=lambda cid: int(cid.split("#")[1]))
    return query_eval(q, chunks_by_doc=chunks, ranked=ranking(*ids))


def test_document_prf_hand_computed():
    out = DocumentPRF(ks=[1, 3, 4])(doc_eval(["a", "b"], ["a", "c", "a", "b"]))
    assert out["doc_precision_at_1"] == 1.0 and out["doc_recall_at_1"] == 0.5
    assert out["doc_f1_at_1"] == pytest.approx(2 / 3)
    assert out["doc_precision_at_3"] == 0.5 and out["doc_recall_at_3"] == 0.5 and out["doc_f1_at_3"] == 0.5
    assert out["doc_precision_at_4"] == pytest.approx(2 / 3) and out["doc_recall_at_4"] == 1.0
    assert out["doc_f1_at_4"] == pytest.approx(0.8)


def test_document_prf_edge_cases():
    assert all(math.isnan(v) for v in DocumentPRF()(doc_eval([], ["a"])).values())
    out = DocumentPRF(ks=[5])(doc_eval(["a"], []))
    assert out == {"doc_precision_at_5": 0.0, "doc_recall_at_5": 0.0, "doc_f1_at_5": 0.0}
    with pytest.raises(ConfigError, match="ks"):
        DocumentPRF(ks=[1.5])


@settings(max_examples=60, deadline=None)
@given(relevant=st.sets(st.sampled_from("abcd"), min_size=1), ranked=st.lists(st.sampled_from("abcdef"), max_size=12))
def test_document_recall_is_monotone_in_k(relevant, ranked):
    out = DocumentPRF(ks=[1, 2, 3, 5, 10])(doc_eval(sorted(relevant), ranked))
    values = [out[f"doc_recall_at_{k}"] for k in (1, 2, 3, 5, 10)]
    assert all(a <= b for a, b in zip(values, values[1:]))
    assert all(0 <= out[k] <= 1 for k in out)


# ---------------------------------------------------------------- Qu et al. evidence sentences

FISH = "One fish. Two fish. Red fish. Blue fish."
S1, S2, S3, S4 = (0, 9), (10, 19), (20, 29), (30, 40)


def sent_eval(evidence, ranked, chunks, text=FISH, language="en"):
    q = Query("q", "?", doc_ids=("d",), evidence=tuple(Span("d", s, e) for s, e in evidence))
    return query_eval(q, chunks_by_doc={"d": chunks}, ranked=ranking(*ranked),
                      documents={"d": Document("d", text, language=language)})


def test_evidence_sentence_prf_hand_computed():
    chunks = [chunk("c0", 0, 19, text=FISH[:19]), chunk("c1", 20, 40, text=FISH[20:])]
    out = EvidenceSentencePRF(ks=[1, 2])(sent_eval([S2, S4], ["c1", "c0"], chunks))
    # top 1 = c1: sentences 3 (other) and 4 (evidence)
    assert (out["evidence_sentence_precision_at_1"], out["evidence_sentence_recall_at_1"]) == (0.5, 0.5)
    assert out["evidence_sentence_f1_at_1"] == 0.5
    # top 2: all four sentences, both evidence
    assert out["evidence_sentence_precision_at_2"] == 0.5 and out["evidence_sentence_recall_at_2"] == 1.0
    assert out["evidence_sentence_f1_at_2"] == pytest.approx(2 / 3)


def test_a_sentence_counts_where_most_of_it_is():
    # c0 ends inside "Two fish." after 3 of its 9 characters; c1 holds the other 6
    chunks = [chunk("c0", 0, 13, text=FISH[:13]), chunk("c1", 13, 40, text=FISH[13:])]
    out = EvidenceSentencePRF(ks=[1])(sent_eval([S2], ["c0"], chunks))
    assert out["evidence_sentence_recall_at_1"] == 0.0 and out["evidence_sentence_precision_at_1"] == 0.0
    out = EvidenceSentencePRF(ks=[1])(sent_eval([S2], ["c1"], chunks))
    assert out["evidence_sentence_recall_at_1"] == 1.0
    assert out["evidence_sentence_precision_at_1"] == pytest.approx(1 / 3)  # sentences 2, 3, 4
    strict = EvidenceSentencePRF(ks=[1], min_coverage=1.0)(sent_eval([S2], ["c1"], chunks))
    assert strict["evidence_sentence_recall_at_1"] == 0.0


def test_evidence_sentence_prf_edge_cases_and_chinese():
    chunks = [chunk("c0", 0, 40, text=FISH)]
    assert all(math.isnan(v) for v in EvidenceSentencePRF()(sent_eval([], ["c0"], chunks)).values())
    out = EvidenceSentencePRF(ks=[3])(sent_eval([S1], [], chunks))
    assert out["evidence_sentence_f1_at_3"] == 0.0 and out["evidence_sentence_precision_at_3"] == 0.0
    zh = "第一句话。第二句话。第三句话。"
    zchunks = [Chunk("z0", "d", zh[:10], 0, 10), Chunk("z1", "d", zh[10:], 10, 15)]
    out = EvidenceSentencePRF(ks=[1])(sent_eval([(5, 10)], ["z0"], zchunks, zh, "zh"))
    assert out["evidence_sentence_precision_at_1"] == 0.5 and out["evidence_sentence_recall_at_1"] == 1.0
    with pytest.raises(ConfigError, match="min_coverage"):
        EvidenceSentencePRF(min_coverage=0)


# ---------------------------------------------------------------- LGMGC: ROUGE relabelling

BOOK = ("The cat sat on the mat all day. "
        "A dog barked at the mailman very loudly every morning. "
        "Birds sing in the garden at dawn.")
B0, B1, B2 = (0, 31), (32, 86), (87, len(BOOK))


def book_chunks(text=BOOK, spans=(B0, B1, B2)):
    return [Chunk(f"b{i}", "d", text[s:e], s, e) for i, (s, e) in enumerate(spans)]


def rouge_eval(evidence_texts, ranked, chunks=None, text=BOOK, evidence=(), expand="none"):
    chunks = chunks or book_chunks()
    q = Query("q", "?", doc_ids=("d",), evidence=tuple(evidence), unaligned_evidence=tuple(evidence_texts))
    return query_eval(q, chunks_by_doc={"d": chunks}, ranked=ranking(*ranked), documents={"d": Document("d", text)},
                      expand=expand)


def test_dcg_formula():
    assert dcg([0, 1, 0]) == pytest.approx(1 / math.log2(3))
    assert dcg([1, 0, 1]) == pytest.approx(1.5)
    assert dcg([]) == 0.0


def test_paraphrased_evidence_is_relabelled_to_its_chunk():
    metric = RougeRelabelRanking(ks=[1, 2, 5])
    item = rouge_eval(["The dog barked loudly at the mailman."], ["b2", "b1", "b0"])
    assert [c.chunk_id for c in metric.relabel(item)] == ["b1"]
    out = metric(item)
    assert out["dcg_at_1"] == 0.0 and out["chunk_recall_at_1"] == 0.0
    assert out["dcg_at_2"] == pytest.approx(1 / math.log2(3)) and out["chunk_recall_at_2"] == 1.0
    assert out["dcg_at_5"] == pytest.approx(1 / math.log2(3))


def test_two_evidences_two_relevant_chunks():
    out = RougeRelabelRanking(ks=[1, 3])(rouge_eval(["the cat sat on the mat", "birds sing at dawn"],
                                                    ["b2", "b1", "b0"]))
    assert out["dcg_at_1"] == 1.0 and out["chunk_recall_at_1"] == 0.5
    assert out["dcg_at_3"] == pytest.approx(1.5) and out["chunk_recall_at_3"] == 1.0


def test_evidence_span_text_is_used_without_evidence_strings():
    item = rouge_eval([], ["b0", "b2"], evidence=[Span("d", *B2)])
    assert RougeRelabelRanking(ks=[2])(item)["chunk_recall_at_2"] == 1.0


def test_parent_scoring_relabels_to_parents():
    spans = [(0, 86), (0, 31), (32, 86), (87, len(BOOK))]
    chunks = [Chunk("p0", "d", BOOK[0:86], 0, 86, level=1), Chunk("p0.0", "d", BOOK[0:31], 0, 31, 2, "p0"),
              Chunk("p0.1", "d", BOOK[32:86], 32, 86, 2, "p0"), Chunk("p1", "d", BOOK[87:], 87, len(BOOK), 1)]
    assert len(chunks) == len(spans)
    metric = RougeRelabelRanking(ks=[1])
    item = rouge_eval(["A dog barked at the mailman"], ["p0.1", "p1"], chunks, expand="root")
    assert [c.chunk_id for c in metric.relabel(item)] == ["p0"]
    assert metric(item)["chunk_recall_at_1"] == 1.0
    # without expansion the finest chunk holding the evidence is the relevant one; its parent contains it
    flat = RougeRelabelRanking(ks=[1])
    item = rouge_eval(["A dog barked at the mailman"], ["p0.1", "p1"], chunks)
    assert [c.chunk_id for c in flat.relabel(item)] == ["p0.1"]
    assert flat(rouge_eval(["A dog barked at the mailman"], ["p0", "p1"], chunks))["chunk_recall_at_1"] == 1.0


def test_chinese_evidence_is_tokenised_with_jieba():
    zh = "小猫在垫子上睡觉。小狗对着邮递员大声叫。鸟儿在花园里唱歌。"
    chunks = [Chunk(f"z{i}", "d", zh[s:e], s, e) for i, (s, e) in enumerate([(0, 9), (9, 19), (19, 28)])]
    metric = RougeRelabelRanking(ks=[1, 2])
    item = rouge_eval(["小狗对邮递员叫"], ["z0", "z1"], chunks, zh)
    assert [c.chunk_id for c in metric.relabel(item)] == ["z1"]
    assert metric(item) == pytest.approx({"dcg_at_1": 0.0, "chunk_recall_at_1": 0.0,
                                          "dcg_at_2": 1 / math.log2(3), "chunk_recall_at_2": 1.0})


def test_rouge_relabel_edge_cases():
    metric = RougeRelabelRanking(ks=[1])
    assert all(math.isnan(v) for v in metric(rouge_eval([], ["b0"])).values())
    assert all(math.isnan(v) for v in metric(rouge_eval(["zebra quantum"], ["b0"])).values())  # no shared token
    assert metric(rouge_eval(["the cat sat"], [])) == {"dcg_at_1": 0.0, "chunk_recall_at_1": 0.0}
    with pytest.raises(ConfigError, match="rouge_type"):
        RougeRelabelRanking(rouge_type="rougeW")
    with pytest.raises(ConfigError, match="measure"):
        RougeRelabelRanking(measure="f1")


_VOCAB = st.sampled_from("the a cat dog sat ran on mat log fast slow red".split())


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.lists(_VOCAB, min_size=1, max_size=25), min_size=1, max_size=6),
       evidence=st.lists(_VOCAB, min_size=1, max_size=8),
       rouge_type=st.sampled_from(["rouge1", "rougeL", "rouge2"]),
       measure=st.sampled_from(["recall", "precision", "fmeasure"]))
def test_pruned_search_finds_the_brute_force_best(texts, evidence, rouge_type, measure):
    from rouge_score.rouge_scorer import RougeScorer

    pos, chunks = 0, []
    for i, words in enumerate(texts):
        t = " ".join(words)
        chunks.append(Chunk(f"c{i}", "d", t, pos, pos + len(t)))
        pos += len(t) + 1
    ev = " ".join(evidence)
    metric = RougeRelabelRanking(rouge_type=rouge_type, measure=measure)
    best = metric.best_chunk(ev, chunks)
    scorer = RougeScorer([rouge_type])
    scores = [getattr(scorer.score(ev, c.text)[rouge_type], measure) for c in chunks]
    top = max(scores)
    if top == 0:
        assert best is None
    else:
        winners = [c for c, s in zip(chunks, scores) if s == top]
        assert best == min(winners, key=lambda c: (c.end - c.start, c.start))


# ---------------------------------------------------------------- chunks the context cannot hold

def test_a_chunk_the_context_cannot_hold_is_a_miss_at_its_rank_for_every_ranking_metric():
    from dataclasses import replace

    def over(item):  # c1 / b1 / the "a" chunks are longer than the budget
        return replace(item, holds=lambda c: c.chunk_id not in {"c1", "b1"} and c.doc_id != "a")

    scope = scope_eval([(5, 25)], ["c1", "c0", "c2"])
    assert AnswerScopeRecall(ks=[1, 2, 3])(over(scope)) == pytest.approx(
        {"scope_recall_at_1": 0.0, "scope_recall_at_2": 0.25, "scope_recall_at_3": 0.5})
    multi = AnswerScopeRecall(ks=[3], selection="multi_view")
    assert multi(over(scope))["scope_recall_at_3"] < multi(scope)["scope_recall_at_3"]
    docs = doc_eval(["a", "b"], ["a", "c", "a", "b"])
    out = DocumentPRF(ks=[1, 4])(over(docs))  # an uncredited slot is a retrieved slot that holds nothing
    assert out["doc_precision_at_1"] == 0.0 and out["doc_recall_at_4"] == 0.5
    assert out["doc_precision_at_4"] == pytest.approx(1 / 3)
    rouge = rouge_eval(["The dog barked loudly at the mailman."], ["b2", "b1", "b0"])
    assert RougeRelabelRanking(ks=[5])(rouge)["chunk_recall_at_5"] == 1.0
    assert RougeRelabelRanking(ks=[5])(over(rouge)) == {"dcg_at_5": 0.0, "chunk_recall_at_5": 0.0}
    # the stand-in keeps the rank (the chunks after it do not move up) and names the chunk it replaces
    assert [c.chunk_id for c in over(scope).ranked(3)] == ["c1#over-budget", "c0", "c2"]
    # credit=any: the papers' computation, every ranked chunk counts
    assert AnswerScopeRecall(ks=[1], credit="any")(over(scope)) == {"scope_recall_at_1": 0.5}
    assert RougeRelabelRanking(ks=[5], credit="any")(over(rouge))["chunk_recall_at_5"] == 1.0
    with pytest.raises(ConfigError, match="credit must be one of held, any"):
        DocumentPRF(credit="all")


def test_an_assembler_holds_what_fits_its_budget():
    from harness.retrieval.assemblers import TokenBudgetAssembler, TopKAssembler

    small, big = chunk("s", 0, 3, text="one two three"), chunk("b", 0, 5, text="one two three four five")
    budget = TokenBudgetAssembler(budget=4, unit="words")
    assert budget.holds(small) and not budget.holds(big)
    assert TopKAssembler(k=1, unit="words").holds(big)  # no budget: any chunk


# ---------------------------------------------------------------- configs

@pytest.mark.parametrize("group", ["chunking", "mc_indexing", "lgmgc", "qu_et_al", "ranking"])
def test_metric_configs_compose_and_build(make_cfg, group):
    cfg = make_cfg(f"metrics={group}", "context=parent_max", "llm=none")
    metrics = {name: build_component(node, f"metrics.{name}") for name, node in cfg.metrics.items()}
    assert {"evidence_recall", "span_overlap"} <= set(metrics)  # the retrieval metrics come along
    if "chunkscore" in metrics:
        assert metrics["chunkscore"].llm is None  # llm=none
