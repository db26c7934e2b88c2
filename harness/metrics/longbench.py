"""LongBench's answer scorers as LongBench (v1) defines them: THUDM/LongBench ``LongBench/metrics.py``
(the scorers) and ``LongBench/eval.py`` (which subset uses which, the first-line rule, the max
over gold answers). HiChunk (§5.1) and LGMGC (§4, F1 on NarrativeQA/Qasper/MultiFieldQA) score
with these; HiChunk's ``eval.py`` adds subsets of its own (:data:`HICHUNK_SCORERS`) and deletes
every "Answer: " from the prediction first (``remove="Answer: "``).

Definitions (facts taken from the reference, code written anew):

- ``qa_f1``: SQuAD-style normalisation (lower-case; ASCII punctuation, the articles a/an/the and
  extra whitespace removed), whitespace tokens, bag-of-tokens F1.
- ``qa_f1_zh``: jieba tokens (``cut_all=False``), each lower-cased with ASCII and Chinese
  punctuation and all whitespace removed, empty tokens dropped, then the same F1.
- ``rouge`` / ``rouge_zh``: ROUGE-L F of the ``rouge`` package (see
  :mod:`harness.metrics.rouge_l`); the zh variant joins jieba tokens with spaces first.
- ``classification``: the classes named in the prediction, minus those that are proper
  substrings of the gold class, and the score is 1/len(that list) when it holds the gold
  class. Two quirks kept: the removal loop deletes from the list it walks, so the entry after
  each removed one is not examined; and the fallback to difflib similarity when nothing
  matched never runs (``em_match_list != 0`` is always true), so no match scores 0.
- ``retrieval`` / ``retrieval_zh``: the paragraph number in the gold ("Paragraph N" / "段落N");
  the share of the numbers in the prediction that equal it.
- ``count``: the share of the numbers in the prediction that equal the gold count.
- ``code_sim``: the first prediction line without "`", "#" or "//" (after leading newlines),
  compared with fuzzywuzzy's ``fuzz.ratio`` / 100: identical strings 1, an empty side 0,
  else round(100 * SequenceMatcher ratio) / 100. fuzzywuzzy uses difflib unless
  python-Levenshtein is installed (then the Levenshtein ratio: ``matcher="levenshtein"``).

A prediction is scored against each gold answer and the best counts, starting from 0. For
trec, triviaqa, samsum and lsht only the first line of the prediction (after leading
newlines) is scored. A query with no gold answer, or whose task has no scorer, is NaN.
"""

from __future__ import annotations

import difflib
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.metrics.answers import answer_inputs, nan_scores
from harness.metrics.base import QueryEval, QueryMetric
from harness.metrics.rouge_l import rouge_l_py, rouge_l_py_zh
from harness.metrics.tokenizers import check_choice, jieba_tokens
from harness.text import normalize_answer  # LongBench's English normalisation (SQuAD's)
from harness.types import ConfigError

EN_PUNCTUATION = frozenset(string.punctuation)
# LongBench's Chinese punctuation list (note: it has "》" but not "《").
ZH_PUNCTUATION = frozenset(EN_PUNCTUATION | set(
    "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏."))
_NUMBER = re.compile(r"\d+")


def normalize_zh_answer(s: str) -> str:
    """LongBench's Chinese normalisation: lower-case, punctuation and all whitespace removed."""
    return "".join("".join(ch for ch in s.lower() if ch not in ZH_PUNCTUATION).split())


def token_f1(prediction: Sequence[str], gold: Sequence[str]) -> float:
    same = sum((Counter(prediction) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(prediction), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def qa_f1(prediction: str, gold: str) -> float:
    return token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def _zh_tokens(text: str) -> list[str]:
    return [t for t in (normalize_zh_answer(w) for w in jieba_tokens(text)) if t]


def qa_f1_zh(prediction: str, gold: str) -> float:
    return token_f1(_zh_tokens(prediction), _zh_tokens(gold))


def _share_equal(prediction: str, target: str) -> float:
    numbers = _NUMBER.findall(prediction)
    return sum(n == target for n in numbers) / len(numbers) if numbers else 0.0


def count_score(prediction: str, gold: str) -> float:
    return _share_equal(prediction, str(gold))


def _paragraph_score(prediction: str, gold: str, pattern: str) -> float:
    found = re.findall(pattern, gold)
    if not found:
        raise ValueError(f"gold answer {gold!r} names no paragraph (pattern {pattern!r})")
    return _share_equal(prediction, found[0])


def retrieval_score(prediction: str, gold: str) -> float:
    return _paragraph_score(prediction, gold, r"Paragraph (\d+)")


def retrieval_zh_score(prediction: str, gold: str) -> float:
    return _paragraph_score(prediction, gold, r"段落(\d+)")


def classification_score(prediction: str, gold: str, all_classes: Sequence[str]) -> float:
    matches = [c for c in all_classes if c in prediction]
    i = 0
    while i < len(matches):  # LongBench removes while iterating: the next entry is skipped
        term = matches[i]
        i += 1
        if term in gold and term != gold:
            matches.remove(term)
    return 1.0 / len(matches) if gold in matches else 0.0


def _fuzz_ratio(a: str, b: str, matcher: str) -> float:
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    if matcher == "levenshtein":
        from rapidfuzz.fuzz import ratio  # == python-Levenshtein's ratio, times 100

        return round(ratio(a, b)) / 100
    return round(100 * difflib.SequenceMatcher(None, a, b).ratio()) / 100


def code_sim_score(prediction: str, gold: str, matcher: str = "difflib") -> float:
    first = next((line for line in prediction.lstrip("\n").split("\n")
                  if "`" not in line and "#" not in line and "//" not in line), "")
    return _fuzz_ratio(first, gold, matcher)


SCORERS: dict[str, Callable[..., float]] = {
    "qa_f1": qa_f1, "qa_f1_zh": qa_f1_zh, "rouge": rouge_l_py, "rouge_zh": rouge_l_py_zh,
    "classification": classification_score, "retrieval": retrieval_score,
    "retrieval_zh": retrieval_zh_score, "count": count_score, "code_sim": code_sim_score,
}
# LongBench eval.py's dataset2metric.
DATASET_SCORERS: dict[str, str] = {
    "narrativeqa": "qa_f1", "qasper": "qa_f1", "multifieldqa_en": "qa_f1", "multifieldqa_zh": "qa_f1_zh",
    "hotpotqa": "qa_f1", "2wikimqa": "qa_f1", "musique": "qa_f1", "dureader": "rouge_zh",
    "gov_report": "rouge", "qmsum": "rouge", "multi_news": "rouge", "vcsum": "rouge_zh",
    "trec": "classification", "triviaqa": "qa_f1", "samsum": "rouge", "lsht": "classification",
    "passage_retrieval_en": "retrieval", "passage_count": "count", "passage_retrieval_zh": "retrieval_zh",
    "lcc": "code_sim", "repobench-p": "code_sim",
}
# HiChunk eval.py's additions to that mapping.
HICHUNK_SCORERS: dict[str, str] = {"HiCBench": "rouge", "qasper_all": "qa_f1", "OHRBench_sub": "rouge",
                                   "GutenQA": "rouge"}
FIRST_LINE_TASKS = ("trec", "triviaqa", "samsum", "lsht")


def first_line(prediction: str) -> str:
    return prediction.lstrip("\n").split("\n")[0]


def score_prediction(scorer: str, prediction: str, golds: Sequence[str], all_classes: Sequence[str] | None = None,
                     code_sim_matcher: str = "difflib") -> float:
    """LongBench's per-sample score: ``scorer`` against each gold answer, the best (from 0)."""
    fn = SCORERS[check_choice(scorer, SCORERS, "scorer")]
    if scorer == "classification":
        if all_classes is None:
            raise ValueError("classification needs the subset's all_classes (query meta 'all_classes')")
        call = lambda g: fn(prediction, g, all_classes)  # noqa: E731
    elif scorer == "code_sim":
        call = lambda g: fn(prediction, g, code_sim_matcher)  # noqa: E731
    else:
        call = lambda g: fn(prediction, g)  # noqa: E731
    best = 0.0
    for g in golds:
        best = max(best, call(g))
    return float(best)


class LongBenchScore(QueryMetric):
    """The LongBench score of each answer.

    - ``scorer``: one scorer for every query (key ``lb_<scorer>``); null = each query's task
      picks its scorer from LongBench's mapping (key ``lb_score``; per-task means are the
      subset scores LongBench reports).
    - ``scorers``: task -> scorer entries added to (or replacing in) LongBench's mapping, e.g.
      HiChunk's ``{GutenQA: rouge}``.
    - ``default``: the scorer for a task the mapping lacks (null = NaN). A task ``X_e``
      (LongBench-E) uses ``X``'s scorer.
    - ``first_line_tasks``: tasks whose prediction is cut to its first line.
    - ``remove``: a substring deleted from the prediction first (HiChunk: "Answer: ").
    - ``code_sim_matcher``: ``difflib`` or ``levenshtein`` (see the module doc).
    """

    def __init__(self, scorer: str | None = None, scorers: Mapping[str, str] | None = None, default: str | None = None,
                 first_line_tasks: Sequence[str] = FIRST_LINE_TASKS, remove: str = "",
                 code_sim_matcher: str = "difflib", name: str | None = None):
        if scorer is not None:
            check_choice(scorer, SCORERS, "scorer")
        for task, s in (scorers or {}).items():
            check_choice(s, SCORERS, f"scorers.{task}")
        if default is not None:
            check_choice(default, SCORERS, "default")
        if not isinstance(remove, str):
            raise ConfigError(f"remove must be a string, got {type(remove).__name__}")
        self.scorer, self.default, self.remove = scorer, default, remove
        self.mapping = {**DATASET_SCORERS, **(scorers or {})}
        self.first_line_tasks = frozenset(first_line_tasks)
        self.code_sim_matcher = check_choice(code_sim_matcher, ("difflib", "levenshtein"), "code_sim_matcher")
        self.name = name or (f"lb_{scorer}" if scorer else "lb_score")

    def keys(self) -> set[str]:
        return {self.name}

    def aggregate_keys(self) -> set[str]:
        return {f"{self.name}_task_mean"}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, float]:
        """The mean over tasks of each task's mean score: HiChunk's "LongBench score" and the
        Avg columns of its Table A1 and LGMGC's Table 2 (each subset weighs the same, whatever
        its number of questions)."""
        by_task: dict[str, list[float]] = {}
        for r in rows:
            v = r.get(self.name)
            if v is not None and not math.isnan(v):
                by_task.setdefault(r.get("task", ""), []).append(v)
        means = [sum(vs) / len(vs) for vs in by_task.values()]
        return {f"{self.name}_task_mean": sum(means) / len(means) if means else math.nan}

    def scorer_for(self, task: str) -> str | None:
        if self.scorer:
            return self.scorer
        if task not in self.mapping and task.endswith("_e"):
            task = task[:-2]
        return self.mapping.get(task, self.default)

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item)
        task = item.query.task
        scorer = self.scorer_for(task)
        if inp is None or scorer is None:
            return nan_scores([self.name])
        prediction = inp.prediction.replace(self.remove, "") if self.remove else inp.prediction
        if task in self.first_line_tasks or (task.endswith("_e") and task[:-2] in self.first_line_tasks):
            prediction = first_line(prediction)
        return {self.name: score_prediction(scorer, prediction, inp.golds, item.query.meta.get("all_classes"),
                                            self.code_sim_matcher)}
