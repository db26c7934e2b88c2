"""Atomic-unit chunking (MC-indexing App. C.3): the Figure 12 prompt, reply parsing, the mapping of
sections back to contiguous source sentences, counted fallbacks, the span contract on real documents
and whatever the reply, configs; one slow test with the bundled SmolLM2-135M.

Unit tests drive the chunker with ScriptedLLM and count segments in whitespace words.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.chunking.test_chunk_properties import documents
from tests.conftest import SAMPLES, ScriptedLLM

from harness.chunking.atomic_units import PROMPT, AtomicUnitChunker, assign_sentences, parse_sections
from harness.chunking.base import check_chunks
from harness.text import punkt_spans
from harness.types import ConfigError, Document

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Three atomic facts of two sentences each; the second fact crosses a paragraph break.
FACTS = ["Alpha is a small grey cat. It sleeps all day long.",
         "Beta is a loud brown dog.\n\nIt barks at every passing car.",
         "Gamma is a yellow bird. It sings every single morning."]
TEXT = " ".join(FACTS)
HEAD = PROMPT.template.split("$text")[0]


def _segment(prompt: str) -> str:
    assert prompt.startswith(HEAD)
    return prompt[len(HEAD):]


def _chunker(reply, **kw):
    kw.setdefault("unit", "words")
    return AtomicUnitChunker(ScriptedLLM(reply=reply), **kw)


def _run(reply, text=TEXT, **kw):
    chunker = _chunker(reply, **kw)
    doc = Document("d", text)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    return chunker, [c.text for c in chunks]


def _one_line(fact: str) -> str:
    return " ".join(fact.split())


# --- the prompt ---------------------------------------------------------------------------------


def test_prompt_is_figure_12_with_each_segment():
    assert HEAD.startswith("You are a helpful text chunking assistant that can divide a piece of text into sections.")
    assert "1. The sentences in each section should make up one stand-alone atomic fact." in HEAD
    assert HEAD.endswith("Return each section on a new line.\n\nPlease breakdown the following text into sections: ")
    # 20-word segments of whole sentences: 6 + 5 + 6 words, then 6 + 5 + 5 (the paragraph break between)
    chunker, texts = _run(lambda p: "", segment_size=20)
    assert [_segment(p) for p in chunker.llm.prompts] == [
        "Alpha is a small grey cat. It sleeps all day long. Beta is a loud brown dog.",
        "It barks at every passing car. Gamma is a yellow bird. It sings every single morning."]
    assert texts == [_segment(p) for p in chunker.llm.prompts]  # empty replies: each segment whole


def test_whole_document_is_one_segment_and_one_question():
    chunker, _ = _run(lambda p: "")
    assert [_segment(p) for p in chunker.llm.prompts] == [TEXT]
    assert chunker.doc_counts["d"] == {"llm_calls": 1, "empty_replies": 1}


def test_a_one_sentence_segment_needs_no_question():
    chunker, texts = _run(lambda p: "anything", text="Only one sentence here.")
    assert chunker.llm.prompts == [] and texts == ["Only one sentence here."]
    assert chunker.doc_counts["d"] == {}


def test_segments_of_several_documents_go_out_in_one_call():
    llm = ScriptedLLM(reply=lambda p: "")
    calls = []
    chat = llm.chat
    llm.chat = lambda convs, *a, **k: calls.append(len(convs)) or chat(convs, *a, **k)
    chunker = AtomicUnitChunker(llm, unit="words", segment_size=12)
    docs = [Document("a", TEXT), Document("b", "Delta swims in the sea. It is a fish. Epsilon flies. It is a bat.")]
    out = chunker.chunk(docs)
    # a: 6+5 | 6+6 | 5+5 words; b: 5+4+2 | 4 (one sentence: no question) -> four prompts, one call
    assert calls == [4] and len(llm.prompts) == 4
    assert (chunker.doc_counts["a"]["llm_calls"], chunker.doc_counts["b"]["llm_calls"]) == (3, 1)
    assert [len(c) for c in out] == [3, 2]


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply, sections", [
    ("A cat. It sleeps.\nA dog.", ["A cat. It sleeps.", "A dog."]),
    ("\n\n  A cat.  \n\n\nA dog.\n", ["A cat.", "A dog."]),                      # blank lines, padding
    ("1. A cat.\n2) A dog.\n- A bird.\n* A fish.\n• A cow.", ["A cat.", "A dog.", "A bird.", "A fish.", "A cow."]),
    ("Section 1: A cat.\nsection 2 - A dog.\nChunk 3. A bird.", ["A cat.", "A dog.", "A bird."]),
    ("<think>Split it.\nA wrong line.</think>\nA cat.\nA dog.", ["A cat.", "A dog."]),  # reasoning skipped
    ("3.5 million people live there.", ["3.5 million people live there."]),     # a number is not a marker
    ("", []),
    ("   \n\t\n", []),
    ("-\n1.\n*", ["-", "1.", "*"]),                                              # bare markers stay text
])
def test_parse_sections(reply, sections):
    assert parse_sections(reply) == sections


# --- mapping sections back to sentences -----------------------------------------------------------


def test_assign_sentences_follows_the_appendix_walk():
    y = ["the cat sleeps", "the cat eats", "a dog barks", "a dog runs", "birds sing"]
    sections = [["the cat sleeps", "the cat eats"], ["a dog barks", "a dog runs"], ["birds sing"]]
    assert assign_sentences(y, sections) == [0, 0, 1, 1, 2]
    assert assign_sentences(y, sections, mapping="alignment") == [0, 0, 1, 1, 2]
    # the walk compares neighbours only: a next section matching nothing, or a repeat of the current
    # one, is never strictly closer, so the walk stays; the alignment skips it
    junk, repeat = [sections[0], ["zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"], *sections[1:]], [sections[0], *sections]
    assert assign_sentences(y, junk) == assign_sentences(y, repeat) == [0] * 5
    assert assign_sentences(y, junk, mapping="alignment") == assign_sentences(y, repeat, mapping="alignment") \
        == [0, 0, 2, 2, 3]
    # the hand-over is re-checked at the same j: a junk section that is closer than the current one
    # for the first dog sentence is entered and left at once (it gets nothing)
    assert assign_sentences(y, [sections[0], ["a dox"], *sections[1:]]) == [0, 0, 2, 2, 3]
    # a tie keeps the current section (only a strictly closer next section takes over)
    assert assign_sentences(["ab"], [["ax"], ["ay"]]) == [0]
    assert assign_sentences(y, []) == [0] * 5 and assign_sentences(y, [["x"]]) == [0] * 5
    assert assign_sentences([], sections) == []


def test_levenshtein_is_raw_edit_distance_and_normalized_an_option():
    # y = a long sentence; S_0 a short unrelated one, S_1 the long one with a few words changed.
    # Raw edits: 37 vs 10 -> S_1 wins either way; the options differ on length, not on direction here.
    y = ["The committee approved the new budget for the coming fiscal year."]
    near = [["The committee approved a new budget for the next fiscal year."]]
    assert assign_sentences(y, [["Cats sleep."], *near]) == [1]
    assert assign_sentences(y, [["Cats sleep."], *near], "normalized") == [1]
    # raw distance favours a short section when the source sentence is short: the paper's d
    short = ["Yes."]
    assert assign_sentences(short, [["No."], ["Yes, certainly, that is entirely correct indeed."]]) == [0]
    assert assign_sentences(short, [["No."], ["Yes, certainly, that is entirely correct indeed."]],
                            "normalized") == [0]


# --- scripted replies: faithful, paraphrased, reordered, duplicated, invented, empty -----------------


def test_faithful_reply_gives_the_models_sections():
    chunker, texts = _run(lambda p: "\n".join(_one_line(f) for f in FACTS))
    assert texts == FACTS
    assert chunker.doc_counts["d"] == {"llm_calls": 1}


@pytest.mark.parametrize("mapping", ["walk", "alignment"])
def test_sections_with_words_left_out_still_find_their_sentences(mapping):
    reply = ("1. Alpha is a small cat. It sleeps all day.\n"
             "2. Beta is a loud dog. It barks at every car.\n"
             "3. Gamma is a yellow bird. It sings every morning.")
    chunker, texts = _run(lambda p: reply, mapping=mapping)
    assert texts == FACTS and chunker.doc_counts["d"] == {"llm_calls": 1}


def test_reworded_sections_are_matched_by_raw_edit_distance():
    # "Gamma is a bird that is yellow." is further (in edits) from "Gamma is a yellow bird." than
    # "Beta is a brown dog." is: the paper's d keeps that sentence with Beta
    reply = ("1. Alpha is a grey cat. It sleeps all day.\n"
             "2. Beta is a brown dog. It barks at cars.\n"
             "3. Gamma is a bird that is yellow. It sings each morning.")
    chunker, texts = _run(lambda p: reply)
    assert texts == [FACTS[0], FACTS[1] + " Gamma is a yellow bird.", "It sings every single morning."]


@pytest.mark.parametrize("mapping", ["walk", "alignment"])
def test_sections_out_of_order_are_counted_and_the_text_stays_tiled(mapping):
    # Gamma's section first: no sentence is closer to it than to Alpha's, so it gets none; the
    # others map in order and Beta's chunk runs to the end
    chunker, texts = _run(lambda p: "\n".join(_one_line(f) for f in (FACTS[2], FACTS[0], FACTS[1])), mapping=mapping)
    assert texts == [FACTS[0], FACTS[1] + " " + FACTS[2]]
    assert chunker.doc_counts["d"] == {"llm_calls": 1, "unlocated_sections": 1}


@pytest.mark.parametrize("mapping, texts, unlocated", [
    ("walk", [FACTS[0], FACTS[1] + " " + FACTS[2]], 2),   # the walk cannot leave the first copy
    ("alignment", FACTS, 1),                             # the alignment gives the copy nothing
])
def test_duplicated_section(mapping, texts, unlocated):
    lines = [_one_line(f) for f in FACTS]
    chunker, got = _run(lambda p: "\n".join([lines[0], lines[1], lines[1], lines[2]]), mapping=mapping)
    assert got == texts
    assert chunker.doc_counts["d"] == {"llm_calls": 1, "unlocated_sections": unlocated}


@pytest.mark.parametrize("mapping, texts, unlocated", [
    ("walk", [TEXT], 5),          # a preamble is passed at once; the invented fact stops the walk
    ("alignment", FACTS, 3),      # preamble, invented fact and closing line get nothing
])
def test_invented_sections_and_preamble(mapping, texts, unlocated):
    lines = [_one_line(f) for f in FACTS]
    reply = "\n".join(["Here are the sections of the text you gave me:", lines[0],
                       "Zebras are striped animals of the African savanna and eat grass.", lines[1], lines[2],
                       "I hope this helps! Let me know if you need anything else."])
    chunker, got = _run(lambda p: reply, mapping=mapping)
    assert got == texts
    assert chunker.doc_counts["d"] == {"llm_calls": 1, "unlocated_sections": unlocated}


def test_a_section_that_merges_two_facts_gives_one_chunk():
    lines = [_one_line(f) for f in FACTS]
    chunker, texts = _run(lambda p: f"{lines[0]} {lines[1]}\n{lines[2]}")
    assert texts == [FACTS[0] + " " + FACTS[1], FACTS[2]]


@pytest.mark.parametrize("reply", ["", "\n  \n", "<think>" + TEXT + "</think>"])
def test_empty_reply_keeps_the_segment_whole(reply):
    chunker, texts = _run(lambda p: reply)
    assert texts == [TEXT]
    assert chunker.doc_counts["d"] == {"llm_calls": 1, "empty_replies": 1}


def test_reply_cut_short_leaves_the_rest_to_the_last_section():
    chunker, texts = _run(lambda p: _one_line(FACTS[0]) + "\nBeta is a loud")  # max_tokens reached
    assert texts == [FACTS[0], FACTS[1] + " " + FACTS[2]]
    assert chunker.doc_counts["d"] == {"llm_calls": 1}


# --- properties: whatever the reply, chunks are whole sentences tiling the document ----------------


def _adversarial_reply(seed: int):
    """A reply built from the segment: its sentences shuffled, merged, cut, repeated, invented."""
    def reply(prompt: str) -> str:
        rng = random.Random(seed)
        sentences = [" ".join(prompt[len(HEAD):][s:e].split()) for s, e in punkt_spans(prompt[len(HEAD):])]
        lines = []
        for _ in range(rng.randint(0, 8)):
            pick = rng.random()
            if pick < 0.5 and sentences:
                a = rng.randrange(len(sentences))
                lines.append(" ".join(sentences[a:a + rng.randint(1, 3)]))
            elif pick < 0.7 and sentences:
                words = rng.choice(sentences).split()
                lines.append(" ".join(words[:rng.randint(0, len(words))]))
            elif pick < 0.85:
                lines.append(rng.choice(["Sure! Here are the sections:", "1.", "", "A fact nobody wrote.", "{]"]))
            elif lines:
                lines.append(rng.choice(lines))
        rng.shuffle(lines) if rng.random() < 0.3 else None
        return "\n".join(lines)
    return reply


def _whole_sentences(doc: Document, chunks) -> bool:
    starts = {s for s, _ in punkt_spans(doc.text)}
    ends = {e for _, e in punkt_spans(doc.text)}
    return all(c.start in starts and c.end in ends for c in chunks)


@PROPS
@given(doc=documents, seed=st.integers(0, 10_000), size=st.integers(1, 40),
       mapping=st.sampled_from(["walk", "alignment"]), distance=st.sampled_from(["levenshtein", "normalized"]))
def test_any_reply_gives_whole_sentences_that_tile_the_document(doc, seed, size, mapping, distance):
    chunker = _chunker(_adversarial_reply(seed), segment_size=size, mapping=mapping, distance=distance)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    assert _whole_sentences(doc, chunks)
    counts = chunker.doc_counts.get("d", {})
    # identical segments are asked once (the LLM-call cache) but counted per segment
    assert counts.get("empty_replies", 0) <= counts.get("llm_calls", 0) >= len(chunker.llm.prompts)


@PROPS
@given(n=st.integers(0, 30), sections=st.lists(st.lists(st.text(max_size=30), min_size=1, max_size=4), max_size=8),
       distance=st.sampled_from(["levenshtein", "normalized"]), mapping=st.sampled_from(["walk", "alignment"]),
       data=st.data())
def test_assignment_is_monotone_and_in_range(n, sections, distance, mapping, data):
    sentences = data.draw(st.lists(st.text(max_size=40), min_size=n, max_size=n))
    owners = assign_sentences(sentences, sections, distance, mapping)
    assert len(owners) == n
    assert all(0 <= o < max(len(sections), 1) for o in owners)
    assert owners == sorted(owners)


# --- real bundled documents -------------------------------------------------------------------------


def _ohr_documents(domains=None):
    from harness.data.ohrbench import OHRBench

    return OHRBench(SAMPLES / "ohr_bench", domains=domains).load().documents


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_real_documents_keep_the_span_contract_under_adversarial_replies(seed):
    docs = _ohr_documents()
    chunker = AtomicUnitChunker(ScriptedLLM(reply=_adversarial_reply(seed)), segment_size=300)
    for doc, chunks in zip(docs, chunker.chunk(docs)):
        check_chunks(doc, chunks, covering=True)
        assert _whole_sentences(doc, chunks)
        assert chunker.doc_counts[doc.doc_id]["llm_calls"] >= 1


def test_real_document_faithful_reply_cuts_where_the_model_says():
    doc = next(d for d in _ohr_documents(["news"]) if d.doc_id == "news/07_15")

    def every_other_pair(prompt):  # sections of two sentences each, word for word
        seg = _segment(prompt)
        lines = [" ".join(seg[s:e].split()) for s, e in punkt_spans(seg)]
        return "\n".join(" ".join(lines[i:i + 2]) for i in range(0, len(lines), 2))

    chunker = AtomicUnitChunker(ScriptedLLM(reply=every_other_pair), segment_size=300)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    sentences = punkt_spans(doc.text)
    assert sum(len(punkt_spans(c.text)) for c in chunks) == len(sentences)
    assert all(len(punkt_spans(c.text)) <= 2 for c in chunks)
    assert "unlocated_sections" not in chunker.doc_counts[doc.doc_id]


def test_sentencex_splitter_for_chinese():
    text = "数据分块很重要。检索需要好的分块！我们比较方法？结果很好。"
    chunker = _chunker(lambda p: "数据分块很重要。检索需要好的分块！\n我们比较方法？结果很好。", splitter="sentencex")
    doc = Document("d", text, language="zh")
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    assert [c.text for c in chunks] == ["数据分块很重要。检索需要好的分块！", "我们比较方法？结果很好。"]


# --- configs ------------------------------------------------------------------------------------


def test_config_composes_and_builds(make_cfg):
    from harness.llm.transformers_llm import TransformersLLM
    from harness.pipeline.components import build_components

    chunker = build_components(make_cfg("chunker=atomic_units")).chunker
    assert isinstance(chunker, AtomicUnitChunker) and isinstance(chunker.llm, TransformersLLM)
    assert (chunker.segment_size, chunker.tokenizer.unit, chunker.splitter, chunker.distance, chunker.mapping) == \
        (2000, "tokens", "nltk", "levenshtein", "walk")
    assert (chunker.sampling.temperature, chunker.sampling.max_tokens, chunker.batch_size) == (0.0, 4096, 8)
    with pytest.raises(ConfigError, match="chunker.llm must build a language model"):
        build_components(make_cfg("chunker=atomic_units", "llm=none"))


@pytest.mark.parametrize("kw, name", [
    ({"segment_size": 0}, "segment_size"), ({"max_tokens": 0}, "max_tokens"), ({"batch_size": 0}, "batch_size"),
    ({"splitter": "spacy"}, "splitter"), ({"distance": "jaccard"}, "distance"), ({"mapping": "dtw"}, "mapping"), ({"temperature": -1}, "temperature"),
    ({"unit": "bytes"}, "unit"), ({"segment_size": True}, "segment_size"),
])
def test_config_errors_name_the_parameter(kw, name):
    with pytest.raises(ConfigError, match=re.escape(f"chunker.{name}")):
        AtomicUnitChunker(ScriptedLLM(), **{"unit": "words", **kw})


# --- the bundled model -----------------------------------------------------------------------------


@pytest.mark.slow
def test_bundled_model_on_a_real_document():
    """SmolLM2-135M on OHR-Bench's news/07_15 in 300-token segments, replies capped at 48 tokens: whatever
    it answers, the chunks are whole sentences tiling the document and the fallbacks are counted."""
    from harness.llm.transformers_llm import TransformersLLM

    doc = next(d for d in _ohr_documents(["news"]) if d.doc_id == "news/07_15")
    llm = TransformersLLM()
    chunker = AtomicUnitChunker(llm, segment_size=300, max_tokens=48)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    assert _whole_sentences(doc, chunks)
    counts = chunker.doc_counts[doc.doc_id]
    assert counts["llm_calls"] == llm.stats.calls == len(chunker.segments(doc, punkt_spans(doc.text))) >= 2
    assert len(chunks) >= counts["llm_calls"]
