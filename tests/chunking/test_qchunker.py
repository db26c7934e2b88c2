"""QChunker (issue 14): prompts, reply parsing, span mapping, ChunkScore selection over sampled
candidates, review and knowledge completion, counted fallbacks, the rewritten-chunk contract.

Unit tests drive the chunker with ScriptedLLM; slow tests run the bundled SmolLM2-135M on a real
CRUD news article and the controlled experiment end to end.
"""

import math

import pytest
from tests.conftest import ScriptedLLM

from harness.cache import Cache
from harness.chunking.base import check_chunks
from harness.chunking.qchunker import QChunker
from harness.chunking.qchunker_format import (JUDGE_PROMPT, REWRITE_PROMPT, SEGMENT_PROMPT, locate,
                                              parse_judgement, parse_rewrite, parse_segmentation,
                                              spans_from_starts)
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import Chunk, ConfigError, Document

PARAS = ["Alpha founded the lab in 1990. It grew fast and hired many people.",
         "The lab studies corrosion. Its main product is a coating for ships.",
         "It was sold in 2005. The buyer kept the name and the staff."]
DOC = Document("d", "\n\n".join(PARAS))


def oracle(paras=PARAS, questions=True):
    """A well-formed reply: the outline, then head[MASK]tail of each paragraph."""
    outline = "<think>\n" + "\n".join(f"{i + 1}. Question {i}?" for i in range(len(paras))) + "\n</think>\n" \
        if questions else ""
    return outline + "\n".join(f"<chunk>{p[:12]}[MASK]{p[-8:]}</chunk>" for p in paras)


def script(segment=None, judge="否", rewrite="<think>x</think>\nREWRITTEN"):
    """A model answering each agent's prompt by its kind."""
    def reply(prompt):
        if prompt.startswith(SEGMENT_PROMPT[:30]):
            return segment(prompt) if callable(segment) else (segment if segment is not None else oracle())
        if prompt.startswith(JUDGE_PROMPT[:30]):
            return judge(prompt) if callable(judge) else judge
        return rewrite(prompt) if callable(rewrite) else rewrite
    return ScriptedLLM(reply=reply)


# --- parsing ----------------------------------------------------------------------------------


def test_parse_segmentation_well_formed_and_figure_4_tags():
    seg = parse_segmentation("<think>\n1. 什么是A？\n2、What is B?\n......\n</think>\n"
                             "<chunk>开头[MASK]结尾</chunk>\n<chunk>Head two [MASK] tail two.</chunk>")
    assert seg.questions == ("什么是A？", "What is B?")
    assert seg.items == (("开头", "结尾"), ("Head two", "tail two."))
    # the paper's Figure 4 closes a chunk with a second <chunk>; blank items are dropped
    fig4 = parse_segmentation("<chunk>A b[MASK]c d.<chunk>\n\n<chunk>E f[mask]g h.<chunk>")
    assert fig4.items == (("A b", "c d."), ("E f", "g h.")) and fig4.questions == ()


@pytest.mark.parametrize("reply", ["", "I cannot do this.", "<think>1. Q?</think>", "<chunk>   </chunk>",
                                   "</chunk>text outside</chunk>"])
def test_parse_segmentation_without_items_is_none(reply):
    assert parse_segmentation(reply) is None


def test_parse_segmentation_adversarial():
    # a chunk written out in full is its own head and tail; full-width [MASK]; chatter outside tags
    seg = parse_segmentation("Sure! Here:\n<chunk>Whole chunk text.</chunk> and <chunk>x［MASK］y[MASK]z</chunk>")
    assert seg.items == (("Whole chunk text.", "Whole chunk text."), ("x", "z"))


@pytest.mark.parametrize("reply, verdict", [
    ("是", True), ("否", False), ("是。", True), ("“否”", False), ("Yes, it misses the date.", True),
    ("no", False), ("<think>是吗</think>否", False), ("nothing is missing", None), ("maybe", None), ("", None),
])
def test_parse_judgement(reply, verdict):
    assert parse_judgement(reply) is verdict


@pytest.mark.parametrize("reply, text", [
    ("<think>\nmissing: the year\n</think>\nThe lab, founded in 1990, ...", "The lab, founded in 1990, ..."),
    ("No reasoning, just text.", "No reasoning, just text."),  # the code keeps it all
    ("<think>only reasoning</think>\n  ", ""),
    ("<think>r</think><chunk>wrapped</chunk>", "wrapped"),
])
def test_parse_rewrite(reply, text):
    assert parse_rewrite(reply) == text


# --- span mapping -----------------------------------------------------------------------------


def test_locate_tiles_the_document_ignoring_whitespace():
    items = parse_segmentation(oracle()).items
    starts, counts = locate(DOC.text, items)
    assert [DOC.text[a:b].strip() for a, b in spans_from_starts(starts, len(DOC.text))] == PARAS
    assert counts == {"unmatched_heads": 0, "unmatched_chunks": 0}
    respaced = tuple((" ".join(h), t) for h, t in items)  # the model re-spaced every head
    assert locate(DOC.text, respaced)[0] == starts


def test_locate_repeated_text_keeps_order():
    text = "Intro. Same head here. Middle. Same head here. End."
    starts, _ = locate(text, (("Intro.", "x"), ("Same head", "x"), ("Same head", "x")))
    assert starts == [0, 7, 31]


def test_locate_repairs_are_counted():
    # a paraphrased head: the boundary is the previous tail's end; garbage is merged
    starts, counts = locate(DOC.text, (("Alpha found", "many people."), ("Teh lab", "ships."),
                                       ("zzz", "qqq"), ("It was sold", "staff.")))
    assert starts == [0, DOC.text.index("The lab"), DOC.text.index("It was sold")]
    assert counts == {"unmatched_heads": 1, "unmatched_chunks": 1}
    starts, counts = locate(DOC.text, (("not in the text", "nope"),))
    assert starts == [0] and counts == {"unmatched_heads": 1, "unmatched_chunks": 0}


# --- the chunker ------------------------------------------------------------------------------


def test_prompts_and_chunks_with_completion():
    llm = script(judge=lambda p: "是" if "corrosion" in p.split("<chunk>")[-1] else "否")
    chunker = QChunker(llm)
    chunks = chunker.chunk([DOC])[0]
    check_chunks(DOC, chunks, covering=True)
    assert llm.prompts[0] == SEGMENT_PROMPT.format(DOC.text)
    assert llm.prompts[1:4] == [JUDGE_PROMPT.format(DOC.text, p) for p in PARAS]
    assert llm.prompts[4] == REWRITE_PROMPT.format(DOC.text, PARAS[1])
    assert [c.text for c in chunks] == [PARAS[0], "REWRITTEN", PARAS[2]]
    assert [c.rewritten for c in chunks] == [False, True, False]
    assert (chunks[1].start, chunks[1].end) == (DOC.text.index(PARAS[1]), DOC.text.index(PARAS[1]) + len(PARAS[1]))
    assert chunker.take_counts("d") == {"segment_calls": 1, "candidates": 1, "judge_calls": 3, "rewrites": 1}


def test_segmenter_and_rewriter_use_the_codes_repetition_penalty(make_cfg):
    """The authors' vLLM SamplingParams: repetition_penalty=1.05 for segmentation and rewriting;
    the review is a classifier in their code (greedy here, no penalty)."""
    llm = script(judge="是")
    seen = []
    chat = llm._chat
    llm._chat = lambda convs, sampling: seen.append(sampling.repetition_penalty) or chat(convs, sampling)
    QChunker(llm).chunk([DOC])
    assert seen == [1.05, 1.0, 1.05]  # segment, review (one batch), rewrite (one batch)
    assert make_cfg("chunker=qchunker").chunker.repetition_penalty == 1.05


def test_without_m_ref_only_segments():
    llm = script(judge="是")
    chunks = QChunker(llm, knowledge_completion=False).chunk([DOC])[0]
    assert [c.text for c in chunks] == PARAS and len(llm.prompts) == 1


@pytest.mark.parametrize("segment, judge, rewrite, counts", [
    ("garbage", "否", "", {"segment_calls": 1, "parse_failures": 1, "segmentation_fallbacks": 1}),
    (None, "perhaps", "", {"segment_calls": 1, "candidates": 1, "judge_parse_failures": 3}),
    (None, "是", "<think>only reasoning</think>", {"segment_calls": 1, "candidates": 1, "empty_rewrites": 3}),
])
def test_fallbacks_are_counted_and_keep_the_contract(segment, judge, rewrite, counts):
    chunker = QChunker(script(segment, judge, rewrite), fallback_size=12)
    chunks = chunker.chunk([DOC])[0]
    check_chunks(DOC, chunks, covering=True)
    assert not any(c.rewritten for c in chunks)
    assert {k: v for k, v in chunker.take_counts("d").items() if k != "judge_calls"} == counts
    if segment == "garbage":  # whole sentences packed to fallback_size tokens
        assert len(chunks) > len(PARAS) and all(c.text.endswith(".") for c in chunks)


def test_samples_have_distinct_seeds_and_cache_entries(tmp_path):
    seen = []
    llm = script(segment=lambda p: oracle())
    chat = llm._chat
    llm._chat = lambda convs, sampling: seen.append((sampling.seed, sampling.temperature, sampling.top_p)) or \
        chat(convs, sampling)
    llm.cache = Cache(tmp_path)
    chunker = QChunker(llm, embedder=SentenceTransformerEmbedder(), n_samples=3, temperature=0.7, top_p=0.8,
                       seed=5, knowledge_completion=False)
    chunker.chunk([DOC])
    assert seen == [(5, 0.7, 0.8), (6, 0.7, 0.8), (7, 0.7, 0.8)]
    assert llm.cache.counts()["llm"]["misses"] == 3
    assert chunker.take_counts("d") == {"segment_calls": 3, "candidates": 1}  # identical replies: one candidate


def _sampled(replies):
    """A model whose segmentation reply depends on the sample's seed."""
    llm = script()
    chat = llm._chat
    llm._chat = lambda convs, sampling: [replies[sampling.seed]] * len(convs) \
        if convs[-1][-1]["content"].startswith(SEGMENT_PROMPT[:30]) else chat(convs, sampling)
    return llm


CANDIDATES = [oracle(PARAS[:1] + [PARAS[1] + "\n\n" + PARAS[2]]), oracle(), oracle([PARAS[0] + "\n\n" + PARAS[1], PARAS[2]])]


@pytest.mark.parametrize("scores, picked", [([0.1, 0.9, 0.5], 1), ([0.7, 0.2, 0.7], 0), ([math.nan, 0.1, 0.0], 1),
                                            ([math.nan] * 3, 0)])
def test_selection_is_the_chunkscore_argmax(scores, picked):
    chunker = QChunker(_sampled(CANDIDATES), embedder=SentenceTransformerEmbedder(), n_samples=3,
                       knowledge_completion=False)
    seen = []

    def fake(doc, chunks):  # a known score per candidate, told apart by its first chunk's end
        seen.append(chunks[0].end)
        return {"chunkscore": scores[len(seen) - 1]}

    chunker.chunkscore = fake
    chunks = chunker.chunk([DOC])[0]
    expected = QChunker(_sampled(CANDIDATES), knowledge_completion=False, seed=picked).chunk([DOC])[0]
    assert [c.text for c in chunks] == [c.text for c in expected] and len(seen) == 3


def test_selection_with_the_real_chunkscore():
    embedder = SentenceTransformerEmbedder()
    chunker = QChunker(_sampled(CANDIDATES), embedder=embedder, n_samples=3, knowledge_completion=False)
    chunks = chunker.chunk([DOC])[0]
    check_chunks(DOC, chunks, covering=True)
    scores = [chunker.chunkscore(DOC, QChunker(_sampled(CANDIDATES), knowledge_completion=False, seed=j)
                                 .chunk([DOC])[0])["chunkscore"] for j in range(3)]
    assert all(not math.isnan(s) for s in scores)
    best = max(range(3), key=lambda j: (scores[j], -j))
    assert len(chunks) == [2, 3, 2][best]


def test_question_view():
    chunker = QChunker(script(), question_view=True, knowledge_completion=False)
    chunks = chunker.chunk([DOC])[0]
    check_chunks(DOC, chunks)
    views = [c for c in chunks if c.view == "question"]
    assert [c.text for c in views] == [f"Question {i}?\n{p}" for i, p in enumerate(PARAS)]
    assert all(v.parent_id == f"d#{i}" for i, v in enumerate(views))
    chunker = QChunker(script(oracle(questions=False)), question_view=True, knowledge_completion=False)
    assert all(c.view == "text" for c in chunker.chunk([DOC])[0])
    assert chunker.take_counts("d")["outline_mismatches"] == 1


def test_config_errors():
    llm = script()
    for kw, name in [({"n_samples": 0}, "n_samples"), ({"temperature": -1}, "temperature"),
                     ({"top_p": 0}, "top_p"), ({"knowledge_completion": "yes"}, "knowledge_completion"),
                     ({"n_samples": 2}, "embedder"), ({"fallback_size": 0}, "fallback_size")]:
        with pytest.raises(ConfigError, match=name):
            QChunker(llm, **kw)
    with pytest.raises(ConfigError, match="lam"):
        QChunker(llm, embedder=SentenceTransformerEmbedder(), lam=2)
    with pytest.raises(ConfigError, match="chunker.llm"):
        QChunker(None)


# --- the rewritten-chunk contract -------------------------------------------------------------


def test_rewritten_chunk_contract_and_truncation():
    s = DOC.text.index(PARAS[1])
    c = Chunk("d#1", "d", "x" * 2 * len(PARAS[1]), s, s + len(PARAS[1]), rewritten=True)
    check_chunks(DOC, [c])
    with pytest.raises(ValueError, match="text differs"):
        check_chunks(DOC, [Chunk("d#1", "d", "other", s, s + len(PARAS[1]))])
    with pytest.raises(ValueError, match="rewritten"):
        check_chunks(DOC, [Chunk("d#1", "d", "  ", s, s + len(PARAS[1]), rewritten=True)])
    # a cut rewritten chunk keeps the same share of its source span
    assert [(p.start, p.end) for p in c.spans_upto(len(PARAS[1]))] == [(s, s + len(PARAS[1]) // 2)]
    assert c.spans_upto(len(c.text)) == (c.span,) and c.spans_upto(0) == ()


# --- the bundled model ------------------------------------------------------------------------


@pytest.mark.slow
def test_real_model_keeps_the_span_contract():
    """SmolLM2-135M on a real CRUD news article (Chinese, the paper's prompts): whatever it
    answers, the chunks tile the article and the fallbacks are counted."""
    from harness.data.crud import CRUD
    from harness.llm.transformers_llm import TransformersLLM

    doc = CRUD(limit_docs=1, limit_queries=1).load().documents[0]
    chunker = QChunker(TransformersLLM(), embedder=SentenceTransformerEmbedder(), n_samples=2, temperature=0.7,
                       top_p=0.8, max_tokens=48, judge_max_tokens=2, rewrite_max_tokens=16)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = chunker.take_counts(doc.doc_id)
    assert counts["segment_calls"] == 2 and counts["judge_calls"] == len(chunks)
    assert counts.get("parse_failures", 0) + counts.get("candidates", 0) == 2 or counts["segmentation_fallbacks"] == 1


@pytest.mark.slow
def test_controlled_experiment_end_to_end(make_cfg):
    from harness.pipeline.runner import Pipeline

    cfg = make_cfg("experiment=qchunker_controlled", "dataset=crud", "dataset.limit_docs=1", "dataset.limit_queries=2",
                   "chunker.max_tokens=32", "chunker.judge_max_tokens=2", "chunker.rewrite_max_tokens=16",
                   "responder.max_tokens=16", "responder.max_context_tokens=512")
    r = Pipeline(cfg, log=lambda *_: None).run()
    assert r.metrics["n_docs"] == 1 and r.metrics["n_queries"] >= 1
    assert r.metrics["chunker_segment_calls"] == 1
    for name in ("bleu4_qchunker", "rouge_l_qchunker", "meteor_qchunker"):
        assert 0.0 <= r.metrics[name] <= 1.0, name
