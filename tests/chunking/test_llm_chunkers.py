"""LumberChunker, HiChunk (issue 5) and the Logits-Guided windows: parsing, the inference loops, fallbacks,
counts, configs.

Unit tests drive the chunkers with ScriptedLLM (tokens = whitespace words); one slow test runs
both with the bundled SmolLM2-135M on a real OHR-Bench document.
"""

import re

import pytest
from tests.conftest import SAMPLES, ScriptedLLM

from harness.chunking.base import check_chunks
from harness.chunking.hichunk import HiChunkChunker
from harness.chunking.hichunk_format import (PROMPT as HC_PROMPT, Point, parse_points, prompt_text,
                                             sentence_units)
from harness.chunking.logits_guided import LogitsGuidedChunker
from harness.chunking.lumber import PROMPT as LC_PROMPT, LumberChunker, parse_shift_id
from harness.retrieval.auto_merge import AutoMergeAssembler
from harness.types import ConfigError, Document, Retrieved

# --- LumberChunker ------------------------------------------------------------------------


@pytest.mark.parametrize("reply, expected", [
    ("Answer: ID 12", 12),
    ("answer:id 0012", 12),
    ("**Answer:** ID 7\nbecause the topic changes", 7),
    ("The first paragraph is ID 2. Answer: ID 5. Answer: ID 9", 5),  # the first answer counts
    ("<think>Answer: ID 3 maybe</think>\nAnswer: ID 4", 4),          # reasoning is skipped
    ("Answer: ID XXXX", None),
    ("ID 5", None),
    ("The content shifts at paragraph 5.", None),
    ("", None),
])
def test_lumber_parse(reply, expected):
    assert parse_shift_id(reply) == expected


def _paragraph_doc(doc_id="d", n=20, words=30):
    paras = [" ".join(f"{doc_id}{i}w{j}" for j in range(words)) + "." for i in range(n)]
    return Document(doc_id, "\n\n".join(paras)), paras


def _ids(prompt):
    return [int(x) for x in re.findall(r"^ID (\d+):", prompt, re.M)]


def test_lumber_groups_and_shifts():
    doc, paras = _paragraph_doc()
    # Each line "ID k: <30 words>" is 32 tokens: a 200-token group holds 6 paragraphs.
    llm = ScriptedLLM(reply=lambda p: f"Answer: ID {_ids(p)[2]}")  # shift at the group's third paragraph
    chunker = LumberChunker(llm, threshold=200)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    # Groups [0..5] -> cut before 2, [2..7] -> before 4, ... until <= 5 paragraphs remain (16..19).
    bounds = [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 12), (12, 14), (14, 16), (16, 20)]
    assert [c.text for c in chunks] == ["\n\n".join(paras[a:b]) for a, b in bounds]
    assert [c.chunk_id for c in chunks] == [f"d#{i}" for i in range(9)]
    assert [_ids(p) for p in llm.prompts[:2]] == [[0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7]]
    assert llm.prompts[0].startswith(LC_PROMPT + "\nDocument:\nID 0: d0w0 d0w1")
    assert chunker.doc_counts["d"] == {"llm_calls": 8}


@pytest.mark.parametrize("reply, counter", [
    ("I cannot tell.", "parse_failures"),
    ("", "parse_failures"),
    ("Answer: ID 99999", "invalid_ids"),                          # outside the group
    (lambda p: f"Answer: ID {_ids(p)[0]}", "invalid_ids"),          # the group's first paragraph
])
def test_lumber_fallback_cuts_at_group_end(reply, counter):
    doc, paras = _paragraph_doc()
    chunker = LumberChunker(ScriptedLLM(reply=reply if callable(reply) else lambda p: reply), threshold=200)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    bounds = [(0, 6), (6, 12), (12, 18), (18, 20)]  # whole groups of 6; the last 2 need no question
    assert [c.text for c in chunks] == ["\n\n".join(paras[a:b]) for a, b in bounds]
    assert chunker.doc_counts["d"] == {"llm_calls": 3, counter: 3}


def test_lumber_batches_documents_and_handles_edge_cases():
    a, _ = _paragraph_doc("a")
    b, _ = _paragraph_doc("b", n=8)
    big = Document("big", "\n\n".join([" ".join(["x"] * 300) + ".", *(f"short {i}." for i in range(7))]))
    empty = Document("empty", "  \n ")
    llm = ScriptedLLM(reply=lambda p: f"Answer: ID {_ids(p)[1]}")
    batches = []
    chat = llm._chat
    llm._chat = lambda convs, s: (batches.append(len(convs)), chat(convs, s))[1]
    out = LumberChunker(llm, threshold=200).chunk([a, b, big, empty])
    for doc, chunks in zip([a, b, big, empty], out):
        check_chunks(doc, chunks, covering=True)
    assert out[3] == []
    # One step asks every unfinished document: a, b and big (its first paragraph alone is a
    # chunk without a question) go together; b (8 paragraphs) finishes after 3 answers.
    assert batches[0] == 3 and sum(batches) == len(llm.prompts)
    assert out[2][0].text == " ".join(["x"] * 300) + "."
    assert [_ids(p)[0] for p in llm.prompts[:3]] == [0, 0, 1]


def test_lumber_short_rest_is_last_chunk_only_when_it_fits():
    doc, paras = _paragraph_doc("five", n=5, words=98)  # 100 tokens per line
    chunker = LumberChunker(ScriptedLLM(reply=lambda p: f"Answer: ID {_ids(p)[1]}"), threshold=250)
    chunks = chunker.chunk([doc])[0]
    # 5 paragraphs (<= TAIL_UNITS) but 500 tokens: still grouped by 2; the last 2 fit and need no question.
    assert [c.text for c in chunks] == [paras[0], paras[1], paras[2], "\n\n".join(paras[3:])]
    assert chunker.doc_counts["five"] == {"llm_calls": 3}
    short, _ = _paragraph_doc("short", n=5, words=10)
    llm = ScriptedLLM(reply=lambda p: "Answer: ID 1")
    assert len(LumberChunker(llm, threshold=250).chunk([short])[0]) == 1 and llm.prompts == []


def test_lumber_falls_back_to_sentences():
    text = " ".join(f"Sentence {i} says something about item {i}." for i in range(40))
    doc = Document("s", text)
    chunker = LumberChunker(ScriptedLLM(reply=lambda p: f"Answer: ID {_ids(p)[3]}"), threshold=60)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    assert chunker.doc_counts["s"]["sentence_units"] == 1
    assert chunks[0].text == " ".join(f"Sentence {i} says something about item {i}." for i in range(3))


def test_lumber_config_errors():
    llm = ScriptedLLM()
    with pytest.raises(ConfigError, match="threshold"):
        LumberChunker(llm, threshold=0)
    with pytest.raises(ConfigError, match="temperature"):
        LumberChunker(llm, temperature=-0.5)
    with pytest.raises(ConfigError, match="chunker.llm"):
        LumberChunker(None)


# --- HiChunk: formats -----------------------------------------------------------------------


def test_hichunk_sentence_units_and_prompt_text():
    text = "# Intro\n\nOk. This sentence is long enough. End\n   \nAnother line that is long enough."
    units = [text[s:e] for s, e in sentence_units(text)]
    # Lines first; "Ok." (< 10 characters) joins the next sentence of its line, never another line;
    # a line's last sentence stays even when short.
    assert units == ["# Intro", "Ok. This sentence is long enough.", "End", "Another line that is long enough."]
    assert prompt_text("## Results and discussion", None) == "Results and discussion"
    assert prompt_text("x" * 150, 100, "paper") == "x" * 100


def test_hichunk_prompt_cut_per_language_as_the_authors_code():
    # code: --limit 100 shows 1000 characters of a sentence without Chinese characters, 100 of one
    # with any; a heading is cut as "# " + text. paper: 100 characters of every sentence.
    english, chinese, mixed = "x" * 1200, "数据" * 80, "Then 数 appears. " + "y" * 200
    assert [len(prompt_text(t, 100)) for t in (english, chinese, mixed)] == [1000, 100, 100]
    assert [len(prompt_text(t, 100, "paper")) for t in (english, chinese, mixed)] == [100, 100, 100]
    assert prompt_text("## " + "z" * 1200, 100) == "z" * 998
    assert prompt_text("## " + "z" * 1200, 100, "paper") == "z" * 100
    assert prompt_text("x" * 150, 100) == "x" * 150


@pytest.mark.parametrize("truncation, shown", [("code", 300), ("paper", 100)])
def test_hichunk_prompt_lines_follow_truncation(truncation, shown):
    llm = ScriptedLLM(reply=lambda p: "0, Level One, True")
    doc = Document("t", "w" * 300 + "\nA short second line here.")
    HiChunkChunker(llm, window=400, truncation=truncation, unit="words").chunk([doc])
    assert llm.prompts[0][len(HC_PROMPT):].splitlines() == ["0 @ " + "w" * shown, "1 @ A short second line here."]


@pytest.mark.parametrize("reply, points, counts", [
    # well-formed, as the authors' training data writes it
    ("0, Level One, True\n4, Level Two, False\n9, Level One, True",
     [Point(0, 1, True), Point(4, 2), Point(9, 1, True)], {}),
    # malformed but readable: digits, "L2", "level 3", bullets, numbered list, quotes, a one-line list
    ("- 0, 1, yes\n1. 2, L2, no\n* 3, level 3, 1\n'5', 'Level Two', 'False'",
     [Point(0, 1, True), Point(2, 2), Point(3, 3, True), Point(5, 2)], {}),
    ("[[0, 'Level One', True], [6, 'Level Two', False]]", [Point(0, 1, True), Point(6, 2)], {}),
    ("(1, 1, True); (3, 2, False)", [Point(1, 1, True), Point(3, 2)], {}),
    # missing or unreadable is_title: kept as False, counted
    ("0, Level One\n3, Level Two, maybe", [Point(0, 1), Point(3, 2)], {"missing_is_title": 2}),
    # extra text around the list, and a reasoning block that is skipped
    ("<think>7, 1, True</think>Here is the result:\n```\n0, Level One, True\n```\nDone.",
     [Point(0, 1, True)], {"unparsed_lines": 4}),
    # adversarial: out of range, bad levels, duplicates, going backwards, garbage
    ("0, Level One, True\n10, Level One, True\n2, Level Zero, True\n3, 0, True\n4, 11, False\n"
     "5, Level Eleven, True\n6, Level Two, False\n6, Level One, True\n1, Level Two, False\n"
     "lorem ipsum 3, 4\n-1, 1, True\n8, Level Three, False",  # "-1": a bullet, then line 1
     [Point(0, 1, True), Point(6, 2), Point(8, 3)],
     {"invalid_points": 5, "duplicate_points": 1, "unordered_points": 2, "unparsed_lines": 1}),
    ("", [], {}),
    ("I am sorry, I cannot segment this text.", [], {"unparsed_lines": 1}),
    ("In 2019, 5 people came", [], {"unparsed_lines": 1}),
])
def test_hichunk_parse(reply, points, counts):
    got, repairs = parse_points(reply, n_lines=10)
    assert got == points
    assert dict(repairs) == counts


# --- HiChunk: iterative inference -----------------------------------------------------------

# Each sentence "A012 ..." shows as "k @ A012" (max_sentence_chars=4): 3 tokens per line. The
# oracle reads each line's global number from its text, so its answers are right in any window.
LEVEL1 = {"A": {0, 45}, "B": {0, 20, 40}}
LINE_TOKENS = 3


def _oracle_doc(name, n=60):
    text = "\n".join(f"{name}{i:03d} holds filler words for sentence {i}." for i in range(n))
    return Document(name, text)


def _oracle(prompt):
    out = []
    for k, name, i in re.findall(r"^(\d+) @ ([AB])(\d{3})", prompt, re.M):
        i = int(i)
        if i in LEVEL1[name]:
            out.append(f"{k}, Level One, True")
        elif i % 5 == 0:
            out.append(f"{k}, Level Two, False")
    return "\n".join(out)


def _expected(name, n=60):
    return [Point(i, 1, True) if i in LEVEL1[name] else Point(i, 2) for i in range(0, n, 5)]


def _hichunk(llm, lines=30, **kw):
    """A window of the prompt plus ``lines`` sentence lines."""
    kw = {"size": 12, "unit": "words", **kw}
    return HiChunkChunker(llm, window=len(HC_PROMPT.split()) + LINE_TOKENS * lines, max_sentence_chars=4,
                          truncation="paper", max_tokens=64, **kw)


def test_hichunk_iterative_inference_global_points():
    docs = [_oracle_doc("A"), _oracle_doc("B")]
    llm = ScriptedLLM(reply=_oracle)
    batches = []
    chat = llm._chat
    llm._chat = lambda convs, s: (batches.append(len(convs)), chat(convs, s))[1]
    chunker = _hichunk(llm)
    points = chunker.chunk_points(docs)
    # Global, ordered, unique, and exactly the oracle's points although no window holds a whole document.
    assert points == [_expected("A"), _expected("B")]
    a, b = chunker.doc_counts["A"], chunker.doc_counts["B"]
    # A: one level-1 point per window until line 45, so windows after the first are led by residual
    # lines; B: two level-1 points per window, so each window restarts at the last one (20, 40).
    assert a == {"llm_calls": 6, "residual_windows": 5}
    assert b == {"llm_calls": 3}
    assert batches[:3] == [2, 2, 2] and sum(batches) == 9
    # Window 2 of A: the residual lines are the first 2 and last 3 level-2 segments of the level-1
    # segment at 0 (segments start 0, 5, ..., 25), numbered from 0; then sentences 30.. follow.
    second = [p for p in llm.prompts if "A030" in p][0]
    body = second[len(HC_PROMPT):].splitlines()
    shown = [int(x[-3:]) for x in body]
    assert shown == [*range(0, 10), *range(15, 30), *range(30, 35)]
    assert body[0] == "0 @ A000" and body[25] == "25 @ A030"


def test_hichunk_tree_titles_and_max_level():
    doc = _oracle_doc("A")
    chunks = _hichunk(ScriptedLLM(reply=_oracle)).chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    nodes = [c for c in chunks if not c.indexed]
    assert [(c.level, c.text.split()[0]) for c in nodes if c.level == 1] == [(1, "A000"), (1, "A045")]
    assert len([c for c in nodes if c.level == 2]) == 10  # the level-2 points 5, 10, ..., 55
    section = next(c for c in nodes if c.level == 2 and c.text.startswith("A005"))
    assert section.parent_id == nodes[0].chunk_id
    assert section.text.splitlines()[-1].startswith("A009")  # ends where the next point starts
    leaves = [c for c in chunks if c.indexed]
    by_id = {c.chunk_id: c for c in chunks}
    assert all(c.level == by_id[c.parent_id].level + 1 and len(c.text.split()) <= 12 for c in leaves)
    assert {c.level for c in leaves} == {2, 3}  # under a level-1 section directly, or under a level-2 one
    assert [c.chunk_id for c in chunks] == [f"A#{i}" for i in range(len(chunks))]
    # L1: only the level-1 sections stay; their text goes to their leaves.
    l1 = _hichunk(ScriptedLLM(reply=_oracle), max_level=1).chunk([doc])[0]
    check_chunks(doc, l1, covering=True)
    assert sorted({c.level for c in l1 if not c.indexed}) == [1]
    assert {c.level for c in l1 if c.indexed} == {2}


def test_hichunk_titles_from_is_title():
    doc = Document("t", "# Methods\nWe measure the thing carefully.\n## Data\nThe data comes from a survey.")
    replies = "0, Level One, True\n2, Level Two, True\n3, Level Two, False"
    chunker = HiChunkChunker(ScriptedLLM(reply=lambda p: replies), window=400, size=50, unit="words")
    (w,) = chunker._infer([doc])
    from harness.chunking.hichunk import _sections
    sections = _sections(w)
    assert [(s.level, s.title) for s in sections] == [(1, "Methods"), (2, "Data"), (2, "")]
    assert sections[0].end == len(doc.text) and sections[1].end == sections[2].start


def test_hichunk_fallback_on_garbage():
    doc = _oracle_doc("A")
    chunker = _hichunk(ScriptedLLM(reply=lambda p: "The text talks about filler words."))
    (points,) = chunker.chunk_points([doc])
    counts = chunker.doc_counts["A"]
    calls = counts["llm_calls"]
    # Every window falls back to one level-1 point at its first sentence.
    assert calls > 2 and counts["parse_failures"] == calls and counts["window_fallbacks"] == calls
    assert counts["unparsed_lines"] == calls
    assert all(p.level == 1 for p in points) and points[0] == Point(0, 1) and len(points) == calls
    chunks = _hichunk(ScriptedLLM(reply=lambda p: "")).chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)


def test_hichunk_invalid_points_are_dropped_not_fatal():
    doc = _oracle_doc("A", n=20)

    def reply(prompt):  # the oracle's points plus out-of-range, backwards and duplicate ones
        return _oracle(prompt) + "\n999, Level One, True\n3, Level Two, False\n15, Level Two, False"

    chunker = _hichunk(ScriptedLLM(reply=reply), lines=30)
    (points,) = chunker.chunk_points([doc])
    assert points == [Point(0, 1, True), Point(5, 2), Point(10, 2), Point(15, 2)]
    assert chunker.doc_counts["A"] == {"llm_calls": 1, "invalid_points": 1, "unordered_points": 1,
                                       "duplicate_points": 1}
    # Only invalid points: the window falls back, without a parse failure.
    chunker = _hichunk(ScriptedLLM(reply=lambda p: "999, Level One, True"))
    chunker.chunk_points([doc])
    assert chunker.doc_counts["A"] == {"llm_calls": 1, "invalid_points": 1, "window_fallbacks": 1}


def test_hichunk_auto_merge_runs_on_output():
    doc = _oracle_doc("A")
    chunks = _hichunk(ScriptedLLM(reply=_oracle)).chunk([doc])[0]
    by_id = {c.chunk_id: c for c in chunks}
    section = next(c for c in chunks if not c.indexed and c.text.startswith("A005"))
    children = [c for c in chunks if c.parent_id == section.chunk_id]
    assert len(children) >= 2
    ranked = tuple((c.chunk_id, 1.0) for c in children)
    ctx = AutoMergeAssembler(budget=400, unit="words").assemble(Retrieved("q", ranked), by_id)
    assert ctx.merges >= 1 and section.chunk_id in ctx.chunk_ids
    assert ctx.text.startswith(section.text)


def test_hichunk_empty_document_and_config_errors():
    chunker = HiChunkChunker(ScriptedLLM(reply=lambda p: "0, 1, True"), window=400, unit="words")
    assert chunker.chunk([Document("e", " \n\n ")]) == [[]]
    assert chunker.doc_counts == {}
    with pytest.raises(ConfigError, match="window"):
        HiChunkChunker(ScriptedLLM(), window=0)
    with pytest.raises(ConfigError, match="max_level"):
        HiChunkChunker(ScriptedLLM(), max_level=0)
    with pytest.raises(ConfigError, match="temperature"):
        HiChunkChunker(ScriptedLLM(), temperature=-1)
    with pytest.raises(ConfigError, match=r"chunker.truncation must be one of code, paper \(got truncation='head'\)"):
        HiChunkChunker(ScriptedLLM(), truncation="head")


def test_hichunk_window_capped_to_model_length():
    llm = ScriptedLLM()
    llm.max_model_len = 8192
    assert HiChunkChunker(llm, window=16384, max_tokens=4096).window == 8192 - 4096 - 64
    assert HiChunkChunker(llm, window=2000, max_tokens=512).window == 2000
    with pytest.raises(ConfigError, match="max_tokens"):
        HiChunkChunker(llm, max_tokens=8192)
    # the full-scale tables: the paper's window is refused rather than cut
    with pytest.raises(ConfigError, match=r"exceeds the model's max_model_len=8192: raise the llm's max_model_len to 20544"):
        HiChunkChunker(llm, window=16384, max_tokens=4096, window_cap="error")
    llm.max_model_len = 20544
    assert HiChunkChunker(llm, window=16384, max_tokens=4096, window_cap="error").window == 16384


# --- Logits-Guided windows ------------------------------------------------------------------

LG_SENTENCES = [f"Sentence number {i} talks about topic {i // 3}." for i in range(12)]  # 7 words each
LG_DOC = Document("d", " ".join(LG_SENTENCES))


@pytest.mark.parametrize("window, groups, inputs", [
    # Blocks of theta = 14 words: [0 1] [2 3] ... [10 11]. The model wants to stop after 1, 4, 6, 9;
    # elsewhere all ends tie and the first wins. paper: the rest + the next block, e.g. [7] + [8 9]
    # -> cut after 9: a 21-word chunk; [10 11] is the last block and fits, so it ends the document.
    ("paper", [[0, 1], [2], [3, 4], [5, 6], [7, 8, 9], [10, 11]], [14, 14, 21, 21, 21]),
    # capped: the rest refilled to 14 words: [7 8] cuts after 7, and no chunk exceeds 14 words.
    ("capped", [[0, 1], [2], [3, 4], [5, 6], [7], [8, 9], [10, 11]], [14, 14, 14, 14, 14, 14]),
])
def test_logits_guided_windows_paper_and_capped(window, groups, inputs):
    llm = ScriptedLLM(score=lambda p, c: [0.0 if any(p.endswith(LG_SENTENCES[i]) for i in (1, 4, 6, 9)) else -9.0])
    seen = []
    score = llm._prefix_logprobs
    llm._prefix_logprobs = lambda items: seen.extend(len(t.split()) for _, t, _, _ in items) or score(items)
    chunker = LogitsGuidedChunker(llm, theta=14, window=window, chat=False, eos="</s>")
    chunks = chunker.chunk([LG_DOC])[0]
    check_chunks(LG_DOC, chunks, covering=True)
    assert [c.text for c in chunks] == [" ".join(LG_SENTENCES[i] for i in g) for g in groups]
    assert seen == inputs and chunker.doc_counts["d"]["windows"] == len(inputs)


def test_logits_guided_paper_input_waits_for_a_long_rest():
    # The model always wants the first sentence. A rest under theta = 14 words takes the next
    # block ([1] + [2 3]); a rest of 14 ([2 3]) is an input by itself, so inputs stay under 2 theta.
    # [9] + [10 11] is read with the last block; its rest [10 11] fits theta and ends the document.
    llm = ScriptedLLM(score=lambda p, c: [-1.0])
    seen = []
    score = llm._prefix_logprobs
    llm._prefix_logprobs = lambda items: seen.extend(len(t.split()) for _, t, _, _ in items) or score(items)
    chunker = LogitsGuidedChunker(llm, theta=14, chat=False, eos="</s>")
    chunks = chunker.chunk([LG_DOC])[0]
    assert [len(c.text.split()) for c in chunks] == [7] * 10 + [14]
    assert seen == [14] + [21, 14] * 4 + [21]
    with pytest.raises(ConfigError, match=r"chunker.window must be one of paper, capped \(got window='open'\)"):
        LogitsGuidedChunker(ScriptedLLM(), window="open")


# --- configs --------------------------------------------------------------------------------


def test_configs_compose_and_build(make_cfg):
    from harness.llm.transformers_llm import TransformersLLM
    from harness.pipeline.components import build_components

    lumber = build_components(make_cfg("chunker=lumber")).chunker
    assert isinstance(lumber, LumberChunker) and isinstance(lumber.llm, TransformersLLM)
    assert (lumber.threshold, lumber.sampling.temperature, lumber.batch_size) == (550, 0.1, 8)
    comps = build_components(make_cfg("chunker=hichunk", "chunker.max_level=2"))
    hichunk = comps.chunker
    # the model gets the run's cache through its constructor (`cache: ${cache}`), as the embedder does
    assert isinstance(hichunk, HiChunkChunker) and hichunk.llm.cache is comps.retriever.embedder.cache is not None
    # The paper's L = 16384 does not fit the bundled model (8192 tokens with 4096 for the reply).
    assert hichunk.window == 8192 - 4096 - 64 and hichunk.tree.max_level == 2 and hichunk.tree.size == 200
    with pytest.raises(ConfigError, match="threshold"):
        build_components(make_cfg("chunker=lumber", "chunker.threshold=0"))
    with pytest.raises(ConfigError, match="chunker.llm must build a language model"):
        build_components(make_cfg("chunker=hichunk", "llm=none"))


# --- the bundled model ----------------------------------------------------------------------

SAMPLE = SAMPLES / "ohr_bench"


@pytest.mark.slow
def test_real_model_runs_both_chunkers():
    """SmolLM2-135M on OHR-Bench's news/07_15 (814 words): whatever it answers, the chunkers
    produce valid chunks and count what they repaired."""
    from harness.data.ohrbench import OHRBench
    from harness.llm.transformers_llm import TransformersLLM

    doc = next(d for d in OHRBench(SAMPLE, domains=["news"]).load().documents if d.doc_id == "news/07_15")
    llm = TransformersLLM()
    lumber = LumberChunker(llm, max_tokens=16)
    chunks = lumber.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = lumber.doc_counts[doc.doc_id]
    assert counts["llm_calls"] >= 1 and len(chunks) >= 2
    assert counts["parse_failures"] + counts["invalid_ids"] <= counts["llm_calls"]

    calls = llm.stats.calls
    hichunk = HiChunkChunker(llm, max_tokens=48)
    chunks = hichunk.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = hichunk.doc_counts[doc.doc_id]
    assert counts["llm_calls"] == llm.stats.calls - calls >= 1
    assert counts["window_fallbacks"] <= counts["llm_calls"]
    assert any(not c.indexed for c in chunks) and any(c.indexed for c in chunks)


def test_lumber_as_hichunks_code_runs_it_lines_without_header_marks_and_scaled_words():
    """HiChunk's lumber_chunk.py: units are lines, shown without their leading '#'/' ', grouped by
    round(1.2 x words) (the protocol's chunker.paragraph_pattern, strip_marks, threshold_unit)."""
    lines = [f"# Section {i}" if i % 5 == 0 else " ".join(f"w{i}x{j}" for j in range(20)) for i in range(15)]
    doc = Document("d", "\n".join(lines))
    llm = ScriptedLLM(reply=lambda p: f"Answer: ID {_ids(p)[1]}")
    chunker = LumberChunker(llm, threshold=100, paragraph_pattern=r"\n", strip_marks="# ", threshold_unit="words_x1.2")
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    first = llm.prompts[0]
    assert "ID 0: Section 0\n" in first and "#" not in first.split("Document:\n", 1)[1]
    # "ID k: <20 words>" is 22 words -> 26 units; "ID 0: Section 0" 4 words -> 5: 5 + 3 x 26 = 83 <= 100 < 109
    assert _ids(first) == [0, 1, 2, 3]
    assert "# Section 0" in chunks[0].text  # the chunk keeps the text as it is
    with pytest.raises(ConfigError, match="chunker.threshold_unit must be one of tokens, words_x1.2"):
        LumberChunker(llm, threshold_unit="chars")
