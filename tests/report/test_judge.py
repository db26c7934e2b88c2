"""Pairwise LLM judge (MC-indexing §5.2, Figure 11): parsing recorded judge replies,
score-based and round-based outcomes, pairing two runs, a scripted model end to end, the
printed report. The command line (model from the config, runs from MLflow): tests/test_cli.py."""

import math
import re
from collections import Counter

import pytest

from harness.report.judge import (JUDGE_PROMPT, Pair, judge, judge_prompt, pair_runs, parse_scores, report,
                                  round_based, score_based, summarize, win_tie_loss)
from tests.conftest import ScriptedLLM


# --- parsing recorded replies -------------------------------------------------------------------

@pytest.mark.parametrize("reply, scores", [
    ("Answer 1 names Paris and the year 1889, matching the ground truth. Answer 2 gives the wrong city.\n"
     '{"answer_1_score":"9", "answer_2_score":"2"}', (9.0, 2.0)),
    ('Reasoning: both are partially right.\n```json\n{"answer_1_score": 7.5, "answer_2_score": 10}\n```', (7.5, 10.0)),
    ('<think>Draft {"answer_1_score": "1", "answer_2_score": "1"}</think>\nBoth identical.\n'
     '{"answer_1_score": "6", "answer_2_score": "6"}', (6.0, 6.0)),
    # the format line echoed before (or after) the real scores
    ('Format: {"answer_1_score":"...", "answer_2_score":"..."}\nAnswer 1 is vague.\n'
     '{"answer_1_score":"4", "answer_2_score":"8"}', (4.0, 8.0)),
    ('{"answer_1_score":"4", "answer_2_score":"8"}\nas required: {"answer_1_score":"...", "answer_2_score":"..."}',
     (4.0, 8.0)),
    ("{'answer_1_score': '5/10', 'answer_2_score': '2/10'}", (5.0, 2.0)),           # Python-style dict
    ('Scores:\n{"answer_1_score": "9", "answer_2_score": "4', (9.0, 4.0)),           # cut off by max_tokens
    ('answer_1_score: 3\nanswer_2_score = 0', (3.0, 0.0)),
    ('{"answer_1_score": 0, "answer_2_score": "10"}', (0.0, 10.0)),
])
def test_parse_scores(reply, scores):
    assert parse_scores(reply) == scores


@pytest.mark.parametrize("reply", [
    "Both answers are good.",
    "Score for Answer 1: 8. Score for Answer 2: 5.",
    '{"answer_1_score": 8}',
    '{"answer_1_score": 12, "answer_2_score": 3}',                                    # outside 0-10
    '{"answer_1_score": "high", "answer_2_score": "low"}',
    '{"answer_1_score":"...", "answer_2_score":"..."}',
    '{"answer_1_score": true, "answer_2_score": false}',
    "",
])
def test_parse_scores_failures(reply):
    assert parse_scores(reply) is None


# --- outcomes (from A's side; round 1 shows A first, round 2 shows B first) -----------------------

@pytest.mark.parametrize("round1, round2, by_score, by_round", [
    ((8, 3), (5, 7), "win", "win"),      # A: 8 + 7 = 15 vs B: 3 + 5 = 8; A wins both rounds
    ((9, 6), (9, 7), "win", "tie"),      # position bias: each round won by the first answer; sums 16 vs 15
    ((5, 5), (5, 5), "tie", "tie"),      # ties in both rounds
    ((8, 6), (7, 7), "win", "tie"),      # a win and a tie is not "wins both rounds"
    ((2, 9), (9, 2), "loss", "loss"),    # B wins both: 4 vs 18
    ((6, 4), (6, 4), "tie", "tie"),      # one round each, equal sums 10 vs 10
    ((7, 6), (10, 6.5), "loss", "tie"),  # sums 13.5 vs 16; one round each
])
def test_score_and_round_based(round1, round2, by_score, by_round):
    assert score_based(round1, round2) == by_score
    assert round_based(round1, round2) == by_round


def test_win_tie_loss_rates():
    r = win_tie_loss(["win", "win", "tie", "loss", None])
    assert r == {"win": 0.5, "tie": 0.25, "loss": 0.25, "n": 4.0, "invalid": 1.0}
    empty = win_tie_loss([None])
    assert math.isnan(empty["win"]) and empty["n"] == 0.0 and empty["invalid"] == 1.0


# --- pairing and judging -------------------------------------------------------------------------

def row(qid, answer=None, gold=("Paris",), question=None):
    r = {"qid": qid, "task": "", "question": question or f"Capital of {qid}?", "evidence_recall": 1.0}
    if answer is not None:
        r.update(answer=answer, gold_answers=list(gold))
    return r


RUN_A = {q: row(q, a) for q, a in [("q1", "Paris"), ("q2", "Lyon"), ("q3", "Marseille"), ("q4", "MALFORMED"),
                                   ("q5", "Paris"), ("q6", "Paris")]}
RUN_A["q7"] = row("q7", "Paris", gold=())
RUN_B = {q: row(q, a) for q, a in [("q1", "Lyon"), ("q2", "Lyon"), ("q3", "Paris"), ("q4", "Paris"),
                                   ("q7", "Paris")]}
RUN_B["q6"] = row("q6")  # retrieval-only row: no answer


def test_pair_runs():
    pairs, skipped = pair_runs(RUN_A, RUN_B)
    assert [p.qid for p in pairs] == ["q1", "q2", "q3", "q4"]
    assert pairs[0] == Pair("q1", "Capital of q1?", "Paris", "Paris", "Lyon")
    assert skipped == {"only_in_one_run": 1, "no_answer": 1, "no_gold": 1}


def judge_reply(prompt):
    """A biased judge: 8 for the gold answer, 3 otherwise, +1 for whatever is shown first."""
    gold = re.search(r"Ground truth answer: (.*)\n", prompt).group(1)
    a1 = re.search(r"Answer 1: (.*)\n", prompt).group(1)
    a2 = re.search(r"Answer 2: (.*)\n", prompt).group(1)
    if "MALFORMED" in (a1, a2):
        return "Both answers look fine to me."
    s1, s2 = (8 if a1 == gold else 3) + 1, 8 if a2 == gold else 3
    return f'Answer 1 is {a1}, answer 2 is {a2}.\n{{"answer_1_score":"{s1}", "answer_2_score":"{s2}"}}'


def test_judge_end_to_end_hand_computed():
    llm = ScriptedLLM(reply=judge_reply)
    pairs, _ = pair_runs(RUN_A, RUN_B)
    records = judge(pairs, llm)
    # both rounds of the four pairs in one call (greedy: no retries); q2's two rounds are the same
    # prompt (identical answers), asked once
    assert len(llm.prompts) == 7
    assert llm.prompts[1] == judge_prompt(JUDGE_PROMPT, pairs[0], swapped=True)
    assert "Answer 1: Lyon\n\nAnswer 2: Paris\n" in llm.prompts[1]
    by = {r["qid"]: r for r in records}
    # q1: A right: round 1 (9, 3), round 2 shows B first (4, 8): A 17 vs B 7
    assert by["q1"] == {"qid": "q1", "round1": (9.0, 3.0), "round2": (4.0, 8.0), "a_total": 17.0, "b_total": 7.0,
                        "score_based": "win", "round_based": "win", "parse_failures": 0}
    # q2: same wrong answer: (4, 3), (4, 3): each wins its first position, 7 vs 7
    assert (by["q2"]["score_based"], by["q2"]["round_based"]) == ("tie", "tie")
    # q3: B right: (4, 8), (9, 3): A 7 vs B 17
    assert (by["q3"]["a_total"], by["q3"]["b_total"], by["q3"]["round_based"]) == (7.0, 17.0, "loss")
    # q4: unparsable in both rounds: no outcome, two failures
    assert by["q4"]["score_based"] is None and by["q4"]["round1"] is None and by["q4"]["parse_failures"] == 2
    s = summarize(records)
    third = pytest.approx(1 / 3)
    assert s["score_based"] == {"win": third, "tie": third, "loss": third, "n": 3.0, "invalid": 1.0}
    assert s["round_based"] == s["score_based"]


def test_judge_retries_when_sampling():
    calls = Counter()

    def reply(prompt):
        calls[prompt] += 1
        return "Let me think." if calls[prompt] == 1 else '{"answer_1_score": "7", "answer_2_score": "5"}'

    llm = ScriptedLLM(reply=reply)
    [r] = judge([Pair("q", "Q?", "G", "a", "b")], llm, temperature=0.7, retries=1)
    assert r["parse_failures"] == 2 and r["round1"] == (7.0, 5.0) and r["round2"] == (7.0, 5.0)
    assert (r["score_based"], r["round_based"]) == ("tie", "tie")   # 12 vs 12; one round each
    assert len(llm.prompts) == 4


def test_judge_prompt_is_figure_11():
    p = judge_prompt(JUDGE_PROMPT, Pair("q", "Why $x?", "Because.", "A {1}", "B $answer_1"), swapped=False)
    assert p.startswith("You are a helpful assistant for evaluating answers. Given a question and ground truth")
    assert "Question: Why $x?\n\nGround truth answer: Because.\n\nAnswer 1: A {1}\n\nAnswer 2: B $answer_1\n" in p
    assert p.endswith('The scores must be returned in the following json format: '
                      '{"answer_1_score":"...", "answer_2_score":"..."}')


def test_report():
    pairs, skipped = pair_runs(RUN_A, RUN_B)
    text = report("runA", "runB", "scripted", skipped, judge(pairs, ScriptedLLM(reply=judge_reply)))
    assert text == ("A = runA, B = runB; judge scripted; 4 queries judged, left out: "
                    "{'only_in_one_run': 1, 'no_answer': 1, 'no_gold': 1}; unparsable judge replies: 2\n"
                    "score_based  A win 0.333  tie 0.333  A loss 0.333  (n = 3, invalid = 1)\n"
                    "round_based  A win 0.333  tie 0.333  A loss 0.333  (n = 3, invalid = 1)")


@pytest.mark.slow
def test_judge_bundled_model_runs():
    from harness.llm.transformers_llm import TransformersLLM

    [r] = judge([Pair("q", "What is the capital of France?", "Paris", "Paris", "Lyon")], TransformersLLM(),
                max_tokens=48, retries=0)
    assert 0 <= r["parse_failures"] <= 2
    for rnd in (r["round1"], r["round2"]):
        assert rnd is None or all(0 <= s <= 10 for s in rnd)
    assert r["score_based"] in ("win", "tie", "loss", None)
    assert (r["score_based"] is None) == (r["parse_failures"] > 0)
