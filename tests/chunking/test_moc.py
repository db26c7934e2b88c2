"""MoC's meta-chunker without its router (issue 14): the prompt, reading the rule list, locating
rules (regex, edit-distance recovery), the counted fallbacks, the span contract, configs.

Unit tests drive the chunker with ScriptedLLM; the slow tests run the bundled SmolLM2-135M on a
real OHR-Bench document and through the pipeline.
"""

import json
import random
import re

import pytest
from tests.conftest import SAMPLES, ScriptedLLM

from harness.chunking.base import check_chunks
from harness.chunking.moc import MoCMetaChunkerNoRouter
from harness.chunking.moc_rules import (ANSWER_EN, ANSWER_ZH, MASK, PROMPT_EN, PROMPT_ZH, SYSTEM, locate,
                                        parse_rules, prompt_for)
from harness.types import ConfigError, Document

TEXT = ("Intro here. The dog barked. Middle part. The dog barked. End part.")


def window_of(prompt: str) -> str:
    """The text a prompt asks about (between the prompt's head and its answer cue)."""
    for head, tail in ((PROMPT_ZH, ANSWER_ZH), (PROMPT_EN, ANSWER_EN)):
        if prompt.startswith(head):
            return prompt[len(head):-len(tail)]
    raise AssertionError(f"not a MoC prompt: {prompt[:40]!r}")


def replying(*rules):
    return ScriptedLLM(reply=lambda p: json.dumps(list(rules), ensure_ascii=False))


def chunk(doc, llm, **kw):
    chunker = MoCMetaChunkerNoRouter(llm, **kw)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    return [c.text for c in chunks], dict(chunker.doc_counts[doc.doc_id])


# --- the prompt -------------------------------------------------------------------------------


def test_prompt_is_the_authors():
    chat = prompt_for("Some text.", "zh")
    assert chat[0] == {"role": "system", "content": " You are a helpful assistant."} and SYSTEM == chat[0]["content"]
    user = chat[1]["content"]
    assert user == PROMPT_ZH + "Some text." + "\n\n分割好的文本块的列表格式输出："
    assert user.startswith("这是一个文本分块任务，你是一名文本分割方面的专家") and "“[MASK]”" in user
    assert prompt_for("Some text.", "en")[1]["content"] == PROMPT_EN + "Some text." + ANSWER_EN


def test_windows_hold_whole_sentences():
    sentences = [f"Sentence {i} has some words in it." for i in range(12)]
    doc = Document("d", " ".join(sentences))
    llm = ScriptedLLM(reply=lambda p: "[]")
    chunk(doc, llm, window=80, retries=0)
    windows = [window_of(p) for p in llm.prompts]
    assert len(windows) == 6 and all(len(w) <= 80 for w in windows)
    assert " ".join(windows) == doc.text  # consecutive, whole sentences, nothing left out


# --- reading the reply ------------------------------------------------------------------------


@pytest.mark.parametrize("reply, rules", [
    ('["a[MASK]b", "c[MASK]d"]', ["a[MASK]b", "c[MASK]d"]),
    ('```json\n[\n  "a[MASK]b"\n]\n```', ["a[MASK]b"]),                # a code fence
    ('Chunks use [MASK] as asked:\n["a[MASK]b"]', ["a[MASK]b"]),       # prose with brackets first
    ('<think>["x"]</think>["a[MASK]b"]', ["a[MASK]b"]),                 # reasoning is skipped
    ('["a[MASK]b", 3, null, ["c"]]', ["a[MASK]b", 3, None, ["c"]]),     # elements as given
    ("[]", []),
    ('["a[MASK]b", "c', None),                                          # cut off mid-list
    ('{"chunks": ["a[MASK]b"]}', None),                                 # not a list
    ("I cannot split this text.", None),
    ("", None),
])
def test_parse_rules(reply, rules):
    assert parse_rules(reply) == rules


# --- locating rules ---------------------------------------------------------------------------


def test_well_formed_rules_cut_at_their_starts():
    texts, counts = chunk(Document("d", TEXT), replying("Intro[MASK]barked.", "Middle[MASK]part.",
                                                        "The dog barked.[MASK]End part."))
    assert texts == ["Intro here. The dog barked.", "Middle part.", "The dog barked. End part."]
    assert counts == {"llm_calls": 1}


def test_repeated_head_is_the_next_occurrence():
    # "The dog barked." is in the text twice; the authors' findall(...)[0] would take the first.
    found = locate("The dog barked.[MASK]End part.", TEXT, 0, len(TEXT), TEXT.index("Middle part.") + 12,
                   "regex", None)
    assert found.start == TEXT.rindex("The dog barked.") and found.how == "matched"


def test_out_of_order_rules_still_cut():
    texts, counts = chunk(Document("d", TEXT), replying("Middle[MASK]part.", "Intro[MASK]barked.",
                                                        "The dog barked.[MASK]End part."))
    assert texts == ["Intro here. The dog barked.", "Middle part.", "The dog barked. End part."]
    assert counts == {"llm_calls": 1, "out_of_order_rules": 1}


def test_text_between_rules_stays_with_the_earlier_chunk():
    # The rules skip "Middle part." (the authors' chunks would leave it out of every chunk).
    texts, _ = chunk(Document("d", TEXT), replying("Intro[MASK]here.", "End[MASK]part."))
    assert texts == ["Intro here. The dog barked. Middle part. The dog barked.", "End part."]


META = "Prices rose (see Fig. 2 for $5.00+tax? [1]) in May. Costs fell in June. Rates held."


@pytest.mark.parametrize("rule_syntax, counts", [
    ("regex", {"llm_calls": 1, "recovered_rules": 1}),   # as a regex it matches nothing: recovered exactly
    ("literal", {"llm_calls": 1}),
])
def test_regex_metacharacters_in_rules(rule_syntax, counts):
    doc = Document("d", META)
    got = chunk(doc, replying("Prices[MASK]May.", "(see Fig. 2[MASK]tax? [1])", "Costs fell[MASK]Rates held."),
                rule_syntax=rule_syntax)
    assert got == (["Prices rose", "(see Fig. 2 for $5.00+tax? [1]) in May.", "Costs fell in June. Rates held."],
                   counts)


def test_rule_matching_nothing_is_recovered_by_edit_distance():
    doc = Document("d", TEXT)
    texts, counts = chunk(doc, replying("Intro[MASK]barked.", "Midle part.[MASK]End"))  # a typo
    assert texts == ["Intro here. The dog barked.", "Middle part. The dog barked. End part."]
    assert counts == {"llm_calls": 1, "recovered_rules": 1}


def test_far_recovery_is_refused_with_max_edit_ratio():
    doc = Document("d", TEXT)
    texts, counts = chunk(doc, replying("Zebra quantum[MASK]xylophone"), max_edit_ratio=0.3, fallback_size=27)
    assert counts == {"llm_calls": 1, "unlocatable_rules": 1, "no_rules_located": 1}
    assert texts == ["Intro here. The dog barked.", "Middle part.", "The dog barked. End part."]  # by length
    # the authors' default: the nearest substring is taken whatever its distance
    assert chunk(doc, replying("Zebra quantum[MASK]xylophone"))[1] == {"llm_calls": 1, "recovered_rules": 1}


@pytest.mark.parametrize("rules, counts", [
    ([3, None, ["x"], {"a": 1}], {"invalid_rules": 4, "no_rules_located": 1}),
    (["", "   "], {"no_rules_located": 1}),                          # empty rules are skipped
    ([MASK, MASK + "tail"], {"unlocatable_rules": 1}),                # empty heads: the window start, or nowhere
    ([".*?", "^", "$"], {}),                                          # regexes matching empty strings
    (["x" * 5000 + MASK], {"recovered_rules": 1}),                    # a head longer than the window
    ([TEXT[::-1]], {"recovered_rules": 1}),                           # no [MASK]: the whole rule is the head
])
def test_adversarial_rules_never_break_the_spans(rules, counts):
    doc = Document("d", TEXT)
    texts, got = chunk(doc, replying(*rules), fallback_size=30)
    assert "".join(texts).replace(" ", "") == TEXT.replace(" ", "")
    assert all(got.get(k, 0) == v for k, v in counts.items()), got


# --- unparsable replies: re-asking, then the length fallback ----------------------------------


def test_unparsable_reply_is_reasked_then_cut_by_length():
    doc = Document("d", TEXT)
    llm = ScriptedLLM(reply=lambda p: "Sure! Here are the chunks: chunk 1, chunk 2.")
    texts, counts = chunk(doc, llm, fallback_size=27)
    assert counts == {"llm_calls": 4, "retries": 3, "parse_failures": 1}
    assert texts == ["Intro here. The dog barked.", "Middle part.", "The dog barked. End part."]


def test_retry_uses_the_authors_resampling_and_may_succeed():
    seen = []
    llm = ScriptedLLM(reply=lambda p: "oops" if not seen else '["Intro[MASK]here.", "Middle[MASK]part."]')
    chat = llm.chat

    def recording(convs, sampling, desc=""):
        out = chat(convs, sampling, desc)
        seen.append(sampling)
        return out

    llm.chat = recording
    texts, counts = chunk(Document("d", TEXT), llm)
    assert counts == {"llm_calls": 2, "retries": 1}
    assert [(s.temperature, s.top_p, s.max_tokens) for s in seen] == [(0.1, 0.1, 1280), (0.5, 0.5, 1280)]
    assert seen[1].seed == 1 and texts == ["Intro here. The dog barked.", "Middle part. The dog barked. End part."]


def test_greedy_model_is_not_reasked():
    llm = ScriptedLLM(reply=lambda p: "no list")
    _, counts = chunk(Document("d", TEXT), llm, temperature=0, retry_temperature=0)
    assert counts == {"llm_calls": 1, "parse_failures": 1}


def test_documents_are_batched_and_empty_ones_cost_nothing():
    docs = [Document("a", TEXT), Document("b", "   "), Document("c", META)]
    llm = replying("Intro[MASK]here.")
    chunker = MoCMetaChunkerNoRouter(llm)
    out = chunker.chunk(docs)
    assert out[1] == [] and len(llm.prompts) == 2
    for d, chunks in zip(docs, out):
        check_chunks(d, chunks, covering=True)
    assert chunker.take_counts("c") == {"llm_calls": 1, "recovered_rules": 1} and chunker.take_counts("b") == {}


# --- the span contract on real documents ------------------------------------------------------


def _meta_chunker(seed):
    """A scripted meta-chunker that answers from the window it is shown: sentence groups as
    head/tail rules, with typos, swapped and repeated rules, and junk mixed in."""
    rng = random.Random(seed)

    def reply(prompt):
        text = window_of(prompt)
        starts = sorted({0, *(m.end() for m in re.finditer(r"[.!?]\s+", text) if rng.random() < 0.4)})
        rules = []
        for a, b in zip(starts, [*starts[1:], len(text)]):
            head, tail = text[a:a + rng.randint(3, 15)], text[max(a, b - rng.randint(3, 15)):b].rstrip()
            if rng.random() < 0.2 and len(head) > 3:
                head = head[:2] + "#" + head[3:]  # a hallucinated character
            rules.append(head + MASK + tail)
        if len(rules) > 2 and rng.random() < 0.3:
            rules[0], rules[1] = rules[1], rules[0]
        rules += rng.choice([[], [rules[-1]], [42], ["(unbalanced[MASK]"]])
        return rng.choice([json.dumps(rules), f"```json\n{json.dumps(rules)}\n```", "no list here"])

    return ScriptedLLM(reply=reply)


def test_span_contract_on_bundled_documents():
    from harness.data.ohrbench import OHRBench

    docs = OHRBench(SAMPLES / "ohr_bench").load().documents
    docs = sorted(docs, key=lambda d: len(d.text))[:6]  # the two longest are ~200K characters
    for seed, syntax in enumerate(["regex", "literal"]):
        chunker = MoCMetaChunkerNoRouter(_meta_chunker(seed), rule_syntax=syntax, retries=1)
        for doc, chunks in zip(docs, chunker.chunk(docs)):
            check_chunks(doc, chunks, covering=True)
            counts = chunker.take_counts(doc.doc_id)
            assert counts["llm_calls"] >= 1 and len(chunks) >= 2


# --- configs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kw, name", [
    ({"window": 0}, "window"), ({"fallback_size": -1}, "fallback_size"), ({"prompt": "fr"}, "prompt"),
    ({"rule_syntax": "glob"}, "rule_syntax"), ({"max_edit_ratio": -0.1}, "max_edit_ratio"),
    ({"top_p": 0}, "top_p"), ({"retry_top_p": 1.5}, "retry_top_p"), ({"temperature": -1}, "temperature"),
    ({"retries": -1}, "retries"), ({"max_tokens": 0}, "max_tokens"), ({"unit": "pages"}, "unit"),
])
def test_config_errors_name_the_parameter(kw, name):
    with pytest.raises(ConfigError, match=rf"chunker\.{name}"):
        MoCMetaChunkerNoRouter(ScriptedLLM(), **kw)
    with pytest.raises(ConfigError, match="chunker.llm must build a language model"):
        MoCMetaChunkerNoRouter(None)


def test_config_builds(make_cfg):
    from harness.llm.transformers_llm import TransformersLLM
    from harness.pipeline.components import build_components

    moc = build_components(make_cfg("chunker=moc")).chunker
    assert isinstance(moc, MoCMetaChunkerNoRouter) and isinstance(moc.llm, TransformersLLM)
    assert (moc.window, moc.prompt, moc.rule_syntax, moc.max_edit_ratio, moc.retries) == (512, "zh", "regex", None, 3)
    assert (moc.sampling.temperature, moc.sampling.top_p, moc.sampling.max_tokens) == (0.1, 0.1, 1280)
    with pytest.raises(ConfigError, match="rule_syntax"):
        build_components(make_cfg("chunker=moc", "chunker.rule_syntax=glob"))


# --- the bundled model ------------------------------------------------------------------------


@pytest.mark.slow
def test_real_model_keeps_the_span_contract():
    """SmolLM2-135M on OHR-Bench's shortest textbook page (1339 characters, 4 windows), English
    prompt: whatever it answers, the chunks are valid and every fallback is counted."""
    from harness.data.ohrbench import OHRBench
    from harness.llm.transformers_llm import TransformersLLM

    doc = min(OHRBench(SAMPLES / "ohr_bench", domains=["textbook"]).load().documents, key=lambda d: len(d.text))
    chunker = MoCMetaChunkerNoRouter(TransformersLLM(), prompt="en", max_tokens=64, retries=0)
    chunks = chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = chunker.take_counts(doc.doc_id)
    windows = counts["llm_calls"] - counts.get("retries", 0)
    assert windows >= 2 and len(chunks) >= windows
    assert counts.get("parse_failures", 0) + counts.get("no_rules_located", 0) <= windows


@pytest.mark.slow
def test_end_to_end_run_on_a_bundled_sample(make_cfg):
    from harness.pipeline.runner import Pipeline

    cfg = make_cfg("chunker=moc", "chunker.prompt=en", "chunker.max_tokens=48", "chunker.retries=0",
                   "dataset.domains=[textbook]", "dataset.limit_docs=1", "dataset.limit_queries=3")
    r = Pipeline(cfg, log=lambda *_: None).run()
    assert r.metrics["n_docs"] == 1 and r.metrics["n_queries"] == 3
    assert r.metrics["chunker_llm_calls"] >= 1
    assert 0.0 <= r.metrics["evidence_recall"] <= 1.0
