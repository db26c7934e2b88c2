"""Fact-Cov (HiChunk §3, §5.1): parsing of recorded model outputs, aggregation, the batched
metric on a scripted model, the config, and one small run of the bundled model."""

import math
import re
from collections import Counter

import pytest
from omegaconf import OmegaConf

from tests.conftest import CONFIGS, ScriptedLLM, query_eval
from harness.metrics.fact_cov import (COVERAGE_PROMPT, EXTRACTION_PROMPT, FactCov, coverage, fact_weighted_coverage,
                                      json_values, parse_coverage, parse_facts, repetition_counts)
from harness.types import Answer, ConfigError, Query

CONFIG = CONFIGS / "metrics" / "fact_cov.yaml"


# --- parsing recorded outputs -----------------------------------------------------------------

@pytest.mark.parametrize("reply, facts", [
    ('{\n  "facts": [\n    "The Eiffel Tower is in Paris",\n    "It was completed in 1889"\n  ]\n}',
     ["The Eiffel Tower is in Paris", "It was completed in 1889"]),
    ('Here are the facts:\n```json\n{"facts": ["Water boils at 100 °C at sea level"]}\n```\nLet me know!',
     ["Water boils at 100 °C at sea level"]),
    ('<think>Maybe {"facts": ["draft"]}? No, split it.</think>\n\n{"facts": ["Ada wrote notes", "on the engine"]}',
     ["Ada wrote notes", "on the engine"]),
    ("{'facts': ['Single quotes', 'and a trailing comma',]}", ["Single quotes", "and a trailing comma"]),
    ('{"facts": ["  kept  ", "", "   ", null, 42]}', ["kept", "42"]),
    ('["A bare list", "of facts"]', ["A bare list", "of facts"]),
    ('{"facts": ["北京是中国的首都"]}', ["北京是中国的首都"]),
    ('{"facts": []}', []),
])
def test_parse_facts(reply, facts):
    assert parse_facts(reply) == facts


@pytest.mark.parametrize("reply", [
    "The facts are: 1. Paris 2. 1889",
    '{"facts": ["The Eiffel Tower is in Paris", "It was comp',   # cut off by max_tokens
    '{"facts": "one string, not a list"}',
    '{"statements": ["wrong key"]}',
    "",
])
def test_parse_facts_failures(reply):
    assert parse_facts(reply) is None


@pytest.mark.parametrize("reply, flags", [
    ('{\n  "classifications": [\n    {"statement": "Seasonal changes result from axial tilt", "attributed": 1},\n'
     '    {"statement": "Hemispheres receive varying sunlight", "attributed": 0}\n  ]\n}', [1, 0]),
    ('```json\n{"classifications": [{"statement": "a", "attributed": "1"}, {"statement": "b", "attributed": true},'
     ' {"statement": "c", "attributed": "No"}, {"statement": "d", "attributed": 0.0}]}\n```', [1, 1, 0, 0]),
    # invalid values and items without "attributed" are dropped (HiChunk keeps 0/1 only)
    ('{"classifications": [{"statement": "a", "attributed": 1}, {"statement": "b", "attributed": 2},'
     ' {"statement": "c", "attributed": "maybe"}, {"statement": "d"}, "e"]}', [1]),
    ("{'classifications': [{'statement': 'x', 'attributed': True}, {'statement': 'y', 'attributed': 0},]}", [1, 0]),
    ('<think>{"classifications": [{"attributed": 0}]}</think>{"classifications": [{"attributed": 1}]}', [1]),
    ('Sure. [{"statement": "a", "attributed": 1}, {"statement": "b", "attributed": 1}]', [1, 1]),
])
def test_parse_coverage(reply, flags):
    assert parse_coverage(reply) == flags


@pytest.mark.parametrize("reply", [
    "Both facts are covered.",
    '{"classifications": [{"statement": "a", "attributed": 1}, {"statement": "b", "attr',
    '{"classifications": [{"statement": "a", "attributed": "partly"}]}',
    '{"classifications": []}',
    '["a fact", "another"]',
])
def test_parse_coverage_failures(reply):
    assert parse_coverage(reply) is None


def test_json_values_finds_every_top_level_value():
    assert json_values('x {"a": 1} y [2, {"b": 3}] {bad} z') == [{"a": 1}, [2, {"b": 3}]]


def test_repetition_counts_coverage_and_fact_weighting():
    assert repetition_counts([1, 0, 1], 4) == (2, 3)            # HiChunk: of the returned items
    assert repetition_counts([1, 0, 1], 4, "facts") == (2, 4)   # of the facts
    assert repetition_counts([1, 1, 1], 2, "facts") == (2, 2)   # extra items ignored
    # two repetitions returned 1 of 1 and 1 of 3 items: HiChunk pools them, 2 of 4; the mean of ratios is 2/3
    assert coverage([(1, 1), (1, 3)]) == 0.5
    assert coverage([(1, 1), (1, 3)], "mean_of_ratios") == pytest.approx(2 / 3)
    assert math.isnan(coverage([]))
    rows = [{"fact_cov": 0.5, "fact_cov_facts": 2.0, "fact_cov_covered": 1.0},
            {"fact_cov": 1.0, "fact_cov_facts": 3.0, "fact_cov_covered": 3.0},
            {"fact_cov": math.nan, "fact_cov_facts": math.nan, "fact_cov_covered": math.nan}]
    assert fact_weighted_coverage(rows) == pytest.approx(4 / 5)               # the query mean would be 0.75
    assert math.isnan(fact_weighted_coverage(rows[2:]))


# --- the metric on a scripted model -----------------------------------------------------------

COV = '{{"classifications": [{}]}}'


def cov(*flags):
    return COV.format(", ".join(f'{{"statement": "s{i}", "attributed": {f}}}' for i, f in enumerate(flags)))


def scripted():
    """Replies by prompt kind and by the response in it; ``seen`` counts each response's calls."""
    seen = Counter()
    q1 = [cov(1, 1), "I think the response covers most facts.", cov(1, 0), cov(0, 0)]
    q2 = ('{"classifications": [{"statement": "G1", "attributed": 1}, {"statement": "G2", "attributed": "no"}, '
          '{"statement": "G3", "attributed": true}]}')

    def reply(prompt):
        if "Extract distinct factual statements" in prompt:
            if "Gold two." in prompt:
                return 'Output:\n```json\n{"facts": ["G1", "G2", "G3"]}\n```'
            return "I cannot extract facts from this."
        response = re.findall(r'Response: "(.*)"\nReference Facts', prompt)[-1]  # [0] is the example
        seen[response] += 1
        if response == "text1":
            return q1[seen[response] - 1]
        if response == "text2":
            return q2
        return '{"classifications": [{"statement": "X", "attributed": '  # cut off, every time

    llm = ScriptedLLM(reply=reply)
    llm.calls = []
    chat = llm.chat

    def counting_chat(convs, sampling=None, desc="chat"):
        llm.calls.append((len(convs), sampling.seed))
        return chat(convs, sampling, desc)

    llm.chat = counting_chat
    return llm, seen


def items():
    def q(qid, answers=(), facts=()):
        return Query(qid, f"Question {qid}?", answers=tuple(answers), facts=tuple(facts))

    return [
        query_eval(q("q1", ["Gold one."], ["F1", "F2"]), answer=Answer("q1", "text1")),   # gold facts
        query_eval(q("q2", ["Gold two."]), answer=Answer("q2", "text2")),                  # facts extracted
        query_eval(q("q3", ["Gold three."], ["F"]), answer=None),                          # retrieval-only
        query_eval(q("q4", ["Gold four."], ["F1"]), answer=Answer("q4", "  ")),            # blank response
        query_eval(q("q5", ["Gold five."]), answer=Answer("q5", "text5")),                 # extraction fails
        query_eval(q("q6", ["Gold six."], ["X"]), answer=Answer("q6", "text6")),           # coverage never parses
        query_eval(q("q7"), answer=Answer("q7", "text7")),                                 # no gold at all
    ]


def test_fact_cov_end_to_end_hand_computed():
    llm, seen = scripted()
    out = FactCov(llm, repetitions=3, retries=1).score_all(items())
    by = {f"q{i + 1}": row for i, row in enumerate(out)}
    # q1: rep 1 -> 2/2; rep 2 unparsable, retried -> 1/2; rep 3 -> 0/2: mean 0.5 over 3 reps, 1 failure
    assert by["q1"] == {"fact_cov": 0.5, "fact_cov_facts": 2.0, "fact_cov_covered": 1.0, "fact_cov_reps": 3.0,
                        "fact_cov_parse_failures": 1.0}
    # q2: 3 extracted facts, 2 attributed ("no" = 0, true = 1) in every repetition
    assert by["q2"]["fact_cov"] == pytest.approx(2 / 3)
    assert (by["q2"]["fact_cov_facts"], by["q2"]["fact_cov_covered"]) == (3.0, pytest.approx(2.0))
    assert all(math.isnan(v) for v in by["q3"].values()) and len(by["q3"]) == 5
    assert by["q4"] == {"fact_cov": 0.0, "fact_cov_facts": 1.0, "fact_cov_covered": 0.0, "fact_cov_reps": 0.0,
                        "fact_cov_parse_failures": 0.0}
    # q5: extraction unparsable twice (1 + retries) -> NaN; q6: 3 reps x 2 attempts unparsable -> NaN
    assert math.isnan(by["q5"]["fact_cov"]) and by["q5"]["fact_cov_parse_failures"] == 2.0
    assert math.isnan(by["q6"]["fact_cov"]) and by["q6"]["fact_cov_parse_failures"] == 6.0
    assert by["q6"]["fact_cov_reps"] == 0.0 and by["q6"]["fact_cov_facts"] == 1.0
    # q7: a blank reference scores 1.0 with no facts, as HiChunk's compute_coverage_score (no call)
    assert by["q7"] == {"fact_cov": 1.0, "fact_cov_facts": 0.0, "fact_cov_covered": 0.0, "fact_cov_reps": 0.0,
                        "fact_cov_parse_failures": 0.0}
    # batching: extraction (q2, q5) then its retry (q5); per repetition one call for q1, q2, q6 and one retry;
    # seeds: extraction 0, 1; repetition r attempt a -> r + 3a
    assert llm.calls == [(2, 0), (1, 1), (3, 0), (1, 3), (3, 1), (2, 4), (3, 2), (1, 5)]
    assert seen == {"text1": 4, "text2": 3, "text6": 6}
    prompt = next(p for p in llm.prompts if 'Response: "text1"' in p)
    assert prompt == COVERAGE_PROMPT.format(question="Question q1?", response="text1", facts='["F1", "F2"]')


def test_fact_cov_pools_the_repetitions_flags_or_averages_their_ratios():
    replies = iter([cov(1), cov(1, 0, 0)] * 2)  # repetition 1 returns one item, repetition 2 three
    llm = ScriptedLLM(reply=lambda p: next(replies))
    item = query_eval(Query("q", "Q?", ("Gold.",), facts=("F1", "F2", "F3")), answer=Answer("q", "text"))
    assert FactCov(llm, repetitions=2)(item)["fact_cov"] == pytest.approx(2 / 4)
    assert FactCov(llm, repetitions=2, aggregation="mean_of_ratios")(item)["fact_cov"] == pytest.approx((1 + 1 / 3) / 2)


def test_fact_cov_empty_reference_option():
    llm = ScriptedLLM(reply=lambda p: cov(1, 0))
    blank = query_eval(Query("q", "Q?", ("  ",), facts=("F1", "F2")), answer=Answer("q", "text"))
    assert FactCov(llm, repetitions=1)(blank)["fact_cov"] == 1.0 and not llm.prompts   # before the gold facts
    assert FactCov(llm, repetitions=1, empty_reference=None)(blank)["fact_cov"] == 0.5  # gold facts scored
    no_facts = query_eval(Query("q", "Q?", ()), answer=Answer("q", "text"))
    assert math.isnan(FactCov(llm, repetitions=1, empty_reference=None)(no_facts)["fact_cov"])


def test_fact_cov_greedy_asks_once_and_denominator_facts():
    llm = ScriptedLLM(reply=lambda p: '{"classifications": [{"statement": "F1", "attributed": 1}]}'
                      if "text" in p else "no json")
    metric = FactCov(llm, repetitions=2, temperature=0.0, denominator="facts")
    row = metric(query_eval(Query("q", "Q?", ("Gold.",), facts=("F1", "F2", "F3", "F4")),
                            answer=Answer("q", "some text")))
    assert row["fact_cov"] == 0.25 and row["fact_cov_covered"] == 1.0 and row["fact_cov_reps"] == 2.0
    bad = metric(query_eval(Query("q", "Q?", ("Gold.",), facts=("F1",)), answer=Answer("q", "nothing")))
    assert math.isnan(bad["fact_cov"]) and bad["fact_cov_parse_failures"] == 2.0   # no retries when greedy


def test_fact_cov_extraction_prompt_and_gold_facts_switch():
    llm = ScriptedLLM(reply=lambda p: '{"facts": ["E1"]}' if "Extract" in p else cov(1))
    row = FactCov(llm, repetitions=1, use_gold_facts=False)(
        query_eval(Query("q", "Who?", ("Marie Curie, twice.", "other"), facts=("ignored",)),
                   answer=Answer("q", "Curie")))
    assert row["fact_cov"] == 1.0 and row["fact_cov_facts"] == 1.0
    assert llm.prompts[0] == EXTRACTION_PROMPT.format(question="Who?", reference="Marie Curie, twice.")


def test_fact_cov_config_errors():
    llm = ScriptedLLM()
    with pytest.raises(ConfigError, match="fact_cov.*language model"):
        FactCov(None)
    with pytest.raises(ConfigError, match="repetitions"):
        FactCov(llm, repetitions=0)
    with pytest.raises(ConfigError, match="denominator"):
        FactCov(llm, denominator="all")
    with pytest.raises(ConfigError, match="aggregation must be one of pooled, mean_of_ratios"):
        FactCov(llm, aggregation="median")
    with pytest.raises(ConfigError, match="empty_reference"):
        FactCov(llm, empty_reference="one")
    with pytest.raises(ConfigError, match="temperature"):
        FactCov(llm, temperature=-1)
    with pytest.raises(ConfigError, match="coverage_prompt"):
        FactCov(llm, coverage_prompt="Is {facts} in the response?")
    with pytest.raises(ConfigError, match="extraction_prompt"):
        FactCov(llm, extraction_prompt='{"facts": {question} {reference}')


def test_fact_cov_config_composes(make_cfg):
    from harness.pipeline.components import build_component

    cfg = make_cfg("metrics=fact_cov", "llm=none")
    assert {"evidence_recall", "evidence_span_recall", "span_overlap", "fact_cov"} <= set(cfg.metrics)
    with pytest.raises(ConfigError, match="metrics.fact_cov.*language model"):
        build_component(cfg.metrics.fact_cov, "metrics.fact_cov")
    raw = OmegaConf.load(CONFIG).fact_cov
    assert raw.extraction_prompt == EXTRACTION_PROMPT and raw.coverage_prompt == COVERAGE_PROMPT
    assert (raw.repetitions, raw.temperature, raw.top_p) == (5, 0.6, 0.95)
    assert (raw.aggregation, raw.empty_reference) == ("pooled", 1.0)


# --- the bundled model -------------------------------------------------------------------------

@pytest.mark.slow
def test_fact_cov_bundled_model_runs():
    from harness.llm.transformers_llm import TransformersLLM

    metric = FactCov(TransformersLLM(), repetitions=2, max_tokens=32, retries=0)
    row = metric(query_eval(Query("q", "Where is the Eiffel Tower and when was it finished?", ("Paris, 1889.",),
                                  facts=("The Eiffel Tower is in Paris", "It was finished in 1889")),
                            answer=Answer("q", "It stands in Paris and was completed in 1889.")))
    assert row["fact_cov_facts"] == 2.0
    assert row["fact_cov_reps"] + row["fact_cov_parse_failures"] == 2.0
    assert math.isnan(row["fact_cov"]) == (row["fact_cov_reps"] == 0)
    assert math.isnan(row["fact_cov"]) or 0.0 <= row["fact_cov"] <= 1.0
