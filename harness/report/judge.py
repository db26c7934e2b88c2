"""Pairwise LLM judge of two recorded runs' answers (MC-indexing §5.2, prompt of Appendix G,
Figure 11).

    chunkbench judge RUN_A RUN_B [--llm-config transformers] [--set model=Qwen/Qwen3-8B]
        [--uri sqlite:///mlruns.db] [--out judged.jsonl]

Reads both runs' ``per_query.jsonl`` (:func:`harness.report.compare.per_query`), pairs queries
by id (queries in only one run, or without an answer in either, are counted and left out),
and asks the model, per query, to score both answers 0-10 against the gold answer (the
first one when a query has several) in two rounds: A as "Answer 1" and B as "Answer 2",
then positions swapped, "to avoid any positional bias" (§5.2). Both rounds of all queries go
out in one batched call. Outcomes are from A's side (win = A better):

- score-based: each answer's two scores are summed; the higher sum wins, equal sums tie.
- round-based: each round is won by the higher score; "the overall winner is the one that
  wins both rounds"; "each answer wins a round, or answers tie in both rounds" is a tie. One
  case the paper leaves open, a win in one round and a tie in the other, is a tie here (it
  is not a win of both rounds).

Parsing (:func:`parse_scores`): text up to the last ``</think>`` is dropped; the last JSON
object (or Python-literal dict) holding valid ``answer_1_score`` and ``answer_2_score`` is
used, else the last ``answer_k_score: N`` of each key found anywhere (unclosed or truncated
JSON). A score is a number or a numeric string ("7", "7.5", "7/10") within 0-10. Anything
else is a parse failure: counted, re-asked with a new seed up to ``--retries`` times when
sampling (temperature > 0), and a query with a round that never parses has no outcome (left
out of the rates, reported as ``invalid``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template

from harness.llm.base import LLM, Sampling
from harness.llm.replies import ask_parsed, json_values, strip_reasoning

# MC-indexing Appendix G, Figure 11 (string.Template: $question, $ground_truth_answer, $answer_1,
# $answer_2). Text verbatim; the line breaks between the parts are as the figure lays them out.
JUDGE_PROMPT = (
    "You are a helpful assistant for evaluating answers. Given a question and ground truth answer, there will be "
    "two possible answers. Provide a score from 0-10 for each answer.\n\n"
    "Question: $question\n\n"
    "Ground truth answer: $ground_truth_answer\n\n"
    "Answer 1: $answer_1\n\n"
    "Answer 2: $answer_2\n\n"
    "Instruction: Assume you do not have any background and internal knowledge about this given contents and "
    "question. You need to evaluate each answer and give a score based on the ground truth answer. You must write "
    "out your reasoning of the score based on relevance to the answer. If both answers are exactly similar, you "
    "must ensure the scores and reasoning for both answers are the same. Finally in a new line, you must return "
    "the scores and nothing else. The scores must be returned in the following json format: "
    '{"answer_1_score":"...", "answer_2_score":"..."}'
)
KEYS = ("answer_1_score", "answer_2_score")
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*10\s*)?$")
_LOOSE = {k: re.compile(rf"""{k}['"]?\s*[:=]\s*['"]?\s*(\d+(?:\.\d+)?)""") for k in KEYS}
OUTCOMES = ("win", "tie", "loss")


# --- parsing and aggregation (pure) ---------------------------------------------------------------

def _score(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        s = float(value)
    elif isinstance(value, str) and (m := _NUMBER.match(value)):
        s = float(m.group(1))
    else:
        return None
    return s if 0 <= s <= 10 else None


def parse_scores(text: str) -> tuple[float, float] | None:
    """(answer_1_score, answer_2_score) of one judge reply, or None (rules in the module doc)."""
    text = strip_reasoning(text)
    for v in reversed(json_values(text)):
        if isinstance(v, dict) and all(k in v for k in KEYS):
            s1, s2 = _score(v[KEYS[0]]), _score(v[KEYS[1]])
            if s1 is not None and s2 is not None:
                return s1, s2
    found = [m[-1] if (m := _LOOSE[k].findall(text)) else None for k in KEYS]
    if None in found:
        return None
    s1, s2 = _score(found[0]), _score(found[1])
    return (s1, s2) if s1 is not None and s2 is not None else None


def score_based(round1: tuple[float, float], round2: tuple[float, float]) -> str:
    """A's outcome from summed scores; round1 = (A, B) as shown, round2 = (B, A) as shown."""
    a, b = round1[0] + round2[1], round1[1] + round2[0]
    return "win" if a > b else "loss" if a < b else "tie"


def round_based(round1: tuple[float, float], round2: tuple[float, float]) -> str:
    """A's outcome from round winners: a win needs both rounds, else a tie (§5.2)."""
    def winner(a: float, b: float) -> str:
        return "A" if a > b else "B" if b > a else "-"

    w = (winner(round1[0], round1[1]), winner(round2[1], round2[0]))
    return "win" if w == ("A", "A") else "loss" if w == ("B", "B") else "tie"


def win_tie_loss(outcomes: Sequence[str | None]) -> dict[str, float]:
    """Rates of win/tie/loss over the queries with an outcome (None = invalid, left out)."""
    valid = [o for o in outcomes if o is not None]
    n = len(valid)
    rates = {o: (sum(v == o for v in valid) / n if n else float("nan")) for o in OUTCOMES}
    return {**rates, "n": float(n), "invalid": float(len(outcomes) - n)}


# --- pairing and judging ------------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    qid: str
    question: str
    gold: str
    answer_a: str
    answer_b: str


def pair_runs(a: dict[str, dict], b: dict[str, dict]) -> tuple[list[Pair], dict[str, int]]:
    """Queries both runs answered (with a gold answer), and counts of those left out."""
    pairs, skipped = [], {"only_in_one_run": len(set(a) ^ set(b)), "no_answer": 0, "no_gold": 0}
    for qid in (q for q in a if q in b):
        ra, rb = a[qid], b[qid]
        if "answer" not in ra or "answer" not in rb:
            skipped["no_answer"] += 1
        elif not ra.get("gold_answers"):
            skipped["no_gold"] += 1
        else:
            pairs.append(Pair(qid, ra["question"], ra["gold_answers"][0], ra["answer"], rb["answer"]))
    return pairs, skipped


def judge_prompt(template: str, pair: Pair, swapped: bool) -> str:
    first, second = (pair.answer_b, pair.answer_a) if swapped else (pair.answer_a, pair.answer_b)
    return Template(template).safe_substitute(question=pair.question, ground_truth_answer=pair.gold,
                                              answer_1=first, answer_2=second)


def judge(pairs: Sequence[Pair], llm: LLM, template: str = JUDGE_PROMPT, temperature: float = 0.0,
          max_tokens: int = 512, seed: int = 0, retries: int = 2) -> list[dict]:
    """Both rounds of every pair, in one batched call; one record per pair."""
    prompts = [judge_prompt(template, p, swapped) for p in pairs for swapped in (False, True)]
    scores, fails = ask_parsed(llm, prompts, parse_scores,
                               lambda a: Sampling(temperature=temperature, max_tokens=max_tokens, seed=seed + a),
                               retries, "judge")
    out = []
    for i, p in enumerate(pairs):
        r1, r2 = scores[2 * i], scores[2 * i + 1]
        ok = r1 is not None and r2 is not None
        out.append({"qid": p.qid, "round1": r1, "round2": r2,
                    "a_total": r1[0] + r2[1] if ok else None, "b_total": r1[1] + r2[0] if ok else None,
                    "score_based": score_based(r1, r2) if ok else None,
                    "round_based": round_based(r1, r2) if ok else None,
                    "parse_failures": fails[2 * i] + fails[2 * i + 1]})
    return out


def summarize(records: Sequence[dict]) -> dict[str, dict[str, float]]:
    return {kind: win_tie_loss([r[kind] for r in records]) for kind in ("score_based", "round_based")}


# --- the printed report ------------------------------------------------------------------------

def report(run_a: str, run_b: str, model: str, skipped: dict[str, int], records: Sequence[dict]) -> str:
    failures = sum(r["parse_failures"] for r in records)
    lines = [f"A = {run_a}, B = {run_b}; judge {model}; {len(records)} queries judged, "
             f"left out: {skipped}; unparsable judge replies: {failures}"]
    for kind, r in summarize(records).items():
        lines.append(f"{kind:12s} A win {r['win']:.3f}  tie {r['tie']:.3f}  A loss {r['loss']:.3f}  "
                     f"(n = {int(r['n'])}, invalid = {int(r['invalid'])})")
    return "\n".join(lines)
