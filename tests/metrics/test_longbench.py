"""LongBench's scorers (harness/metrics/longbench.py) against hand-computed values, and the
ROUGE-L they use against the ``rouge`` 1.0.1 package that LongBench and HiChunk call."""

import math

import pytest

from harness.metrics import longbench as lb
from harness.metrics.rouge_l import rouge_l_py, rouge_l_py_zh
from harness.types import Answer, ConfigError, Document, Query
from tests.conftest import query_eval


def item(task, answer, golds, language="en", **meta):
    q = Query("q1", "question?", answers=tuple(golds), doc_ids=("d",), task=task, meta=meta)
    docs = {"d": Document("d", "text", language=language)}
    return query_eval(q, answer=None if answer is None else Answer("q1", answer), documents=docs)


# --- qa_f1 / qa_f1_zh ------------------------------------------------------------------------

def test_qa_f1_hand_computed():
    # pred tokens [cat, sat] (article, case and punctuation gone), gold [cat, sat, on, mat]:
    # P = 1, R = 1/2, F1 = 2/3.
    assert lb.qa_f1("The Cat sat.", "a cat sat on the mat") == pytest.approx(2 / 3, abs=1e-12)
    assert lb.normalize_answer("The  Théâtre, an Opera!") == "théâtre opera"  # only ASCII punctuation goes
    assert lb.qa_f1("café", "Café!") == 1.0
    assert lb.qa_f1("", "anything") == 0.0 and lb.qa_f1("the", "a") == 0.0  # nothing left to match


def test_qa_f1_counts_repeated_tokens_once_each():
    # pred [cat, cat, dog], gold [cat, dog, dog]: overlap {cat: 1, dog: 1} = 2; P = R = 2/3.
    assert lb.qa_f1("cat cat dog", "cat dog dog") == pytest.approx(2 / 3, abs=1e-12)


def test_qa_f1_zh_uses_jieba_words_without_punctuation():
    # 北京/是/中国/的/首都/。 against 中国/的/首都/是/北京: "。" normalises to nothing; same bag.
    assert lb.qa_f1_zh("北京是中国的首都。", "中国的首都是北京") == 1.0
    # LongBench's list has "》" but not "《": pred tokens [《, 红楼梦], gold [红楼梦] -> F1 2/3.
    assert lb.qa_f1_zh("《红楼梦》", "红楼梦") == pytest.approx(2 / 3, abs=1e-12)
    assert lb.normalize_zh_answer("ＡＢ，Ｃ d") == "ａｂｃd"  # full-width letters are lower-cased, not folded
    assert lb.qa_f1_zh("", "北京") == 0.0


# --- ROUGE-L of the rouge package ------------------------------------------------------------

def test_rouge_l_py_hand_computed_on_word_types():
    # One sentence each. LCS = the cat on the mat; its word *types* {the, cat, on, mat} = 4;
    # reference types {the, cat, is, on, mat} = 5, prediction types 5: P = R = 4/5,
    # F = 2PR / (P + R + 1e-8). (Google's rouge-score gives 5/6 here: token LCS 5 of 6.)
    p = r = 4 / 5
    assert rouge_l_py("the cat sat on the mat", "the cat is on the mat") == pytest.approx(
        2 * p * r / (p + r + 1e-8), abs=1e-15)


def test_rouge_l_py_sentence_split_quirks():
    assert rouge_l_py("", "x") == 0.0 and rouge_l_py("x", "") == 0.0 and rouge_l_py(".", "x") == 0.0
    # "a. " has the sentences "a" and "" (a whitespace piece survives as the empty word):
    # against "a." the reference has 2 word types, the LCS union 1: R = 1/2, P = 1.
    assert rouge_l_py("a.", "a. ") == pytest.approx(2 * 0.5 / (1.5 + 1e-8), abs=1e-15)
    assert rouge_l_py("a. ", "a. ") == pytest.approx(2 / (2 + 1e-8), abs=1e-15)


def test_rouge_zh_joins_jieba_words():
    # 北京 是 中国 的 首都 vs 中国 的 首都 是 北京: LCS 中国 的 首都 (3 of 5 types each side).
    assert rouge_l_py_zh("北京是中国的首都", "中国的首都是北京") == pytest.approx(
        2 * 0.36 / (1.2 + 1e-8), abs=1e-15)
    # Without segmentation the whole Chinese text is one word: no overlap.
    assert rouge_l_py("北京是中国的首都", "中国的首都是北京") == 0.0


PAIRS = [
    ("the cat sat on the mat", "the cat is on the mat"),
    ("The cat. The dog sat. A bird", "the dog. the cat sat on the mat."),
    ("Paris is the capital of France.", "The capital of France is Paris"),
    ("a b c d e f g", "g f e d c b a"),
    ("  spaces   and\ttabs \n here. ", "spaces and tabs. here"),
    ("x. . y", "x. y ."),
    ("Answer: 42", "42"),
    ("résumé naïve café", "naïve café résumé"),
    ("no overlap at all", "completely different words"),
    ("3.5 percent growth in 2019", "growth of 3.5 percent"),
    ("a a a b b", "a b a b a b"),
    ("北京 是 中国 的 首都", "中国 的 首都 是 北京"),
]


def test_rouge_l_py_agrees_with_the_rouge_package():
    from rouge import Rouge

    ref = Rouge()
    for pred, gold in PAIRS:
        expected = ref.get_scores([pred], [gold], avg=True)["rouge-l"]["f"]
        assert rouge_l_py(pred, gold) == pytest.approx(expected, abs=1e-12), (pred, gold)


def test_rouge_l_py_agrees_with_the_rouge_package_on_generated_pairs():
    import random

    from rouge import Rouge

    ref, rng = Rouge(), random.Random(7)
    vocab = "a b c the cat . . , x y 1 ".split(" ") + ["  ", "\n"]
    for _ in range(300):
        pred, gold = ("".join(rng.choice(vocab) + rng.choice(["", " "]) for _ in range(rng.randint(1, 20)))
                      for _ in range(2))
        try:
            expected = ref.get_scores([pred], [gold], avg=True)["rouge-l"]["f"]
        except ValueError:  # empty side: LongBench catches it and scores 0
            expected = 0.0
        assert rouge_l_py(pred, gold) == pytest.approx(expected, abs=1e-12), (pred, gold)


# --- classification, retrieval, count, code similarity -----------------------------------------

def test_classification_score():
    classes = ["sports", "sport", "news"]
    # Matches [sports, sport, news]; "sport" is a proper substring of the gold and goes -> 1/2.
    assert lb.classification_score("this is sports news", "sports", classes) == 0.5
    assert lb.classification_score("weather", "sports", classes) == 0.0  # no match: 0, no difflib fallback
    # Matches [sports, sport]; "sport" goes as a substring of the gold: [sports] -> 1.
    assert lb.classification_score("sports", "sports", classes) == 1.0
    assert lb.classification_score("news", "sports", classes) == 0.0  # the gold is not named


def test_classification_keeps_longbench_skip_after_removal():
    # Matches [a, ab, abc]; "a" is removed, the walk moves to index 1 (now "abc") and "ab" is
    # never examined, so [ab, abc] remains: 1/2 (a careful implementation would give 1).
    assert lb.classification_score("abc", "abc", ["a", "ab", "abc"]) == 0.5


def test_retrieval_and_count_scores():
    assert lb.retrieval_score("The answer is Paragraph 3, not 13", "Paragraph 3") == 0.5
    assert lb.retrieval_score("no number", "Paragraph 3") == 0.0
    assert lb.retrieval_zh_score("段落5和段落7", "段落5") == 0.5
    assert lb.count_score("There are 4 unique paragraphs among 10", "4") == 0.5
    assert lb.count_score("４", "4") == 0.0  # a full-width digit is a number, but not "4"
    with pytest.raises(ValueError, match="names no paragraph"):
        lb.retrieval_score("1", "the third one")


def test_code_sim_score_first_plain_line_and_fuzz_ratio():
    pred = "```python\n# comment\nx = foo(1)\n"
    # First line without ` # //: "x = foo(1)"; difflib: 9 matching of 20 characters -> 0.9.
    assert lb.code_sim_score(pred, "x = foo(2)") == 0.9
    assert lb.code_sim_score(pred, "x = foo(2)", "levenshtein") == 0.9  # indel distance 2 of 20
    assert lb.code_sim_score("abc", "abd") == 0.67  # round(100 * 4/6) / 100
    assert lb.code_sim_score("", "") == 1.0 and lb.code_sim_score("// only", "x") == 0.0


# --- the per-subset scorer and the metric -----------------------------------------------------

def test_dataset_mapping_is_longbench_eval():
    assert len(lb.DATASET_SCORERS) == 21
    assert lb.DATASET_SCORERS["multifieldqa_zh"] == "qa_f1_zh" and lb.DATASET_SCORERS["dureader"] == "rouge_zh"
    assert lb.DATASET_SCORERS["trec"] == "classification" and lb.DATASET_SCORERS["lcc"] == "code_sim"


def test_metric_picks_the_subset_scorer_and_max_over_golds():
    m = lb.LongBenchScore()
    # qasper -> qa_f1: golds "cat" (F1 1) and "the cat sat" (F1 2/3): the best counts.
    assert m(item("qasper", "cat", ["the cat sat", "cat"])) == {"lb_score": 1.0}
    assert m(item("multifieldqa_zh", "北京是中国的首都。", ["中国的首都是北京"], "zh"))["lb_score"] == 1.0
    assert m(item("dureader", "北京是中国的首都", ["中国的首都是北京"], "zh"))["lb_score"] == pytest.approx(0.6, abs=1e-7)
    assert m(item("qasper_e", "cat", ["cat"]))["lb_score"] == 1.0  # LongBench-E subsets share the scorer


def test_metric_first_line_rule():
    m = lb.LongBenchScore()
    # triviaqa scores only "Paris"; qasper scores the whole text ("a" goes: 5 tokens, gold 1: F1 1/3).
    assert m(item("triviaqa", "\nParis\nLondon is a city too", ["Paris"]))["lb_score"] == 1.0
    assert m(item("qasper", "\nParis\nLondon is a city too", ["Paris"]))["lb_score"] == pytest.approx(1 / 3)
    trec = item("trec", "Location\nHuman being", ["Location"], all_classes=["Location", "Human being"])
    assert m(trec)["lb_score"] == 1.0


def test_metric_nan_cases_and_options():
    m = lb.LongBenchScore()
    assert math.isnan(m(item("qasper", None, ["x"]))["lb_score"])  # retrieval-only run
    assert math.isnan(m(item("qasper", "x", []))["lb_score"])  # no gold answer
    assert math.isnan(m(item("T0", "x", ["x"]))["lb_score"])  # a task LongBench does not map
    hichunk = lb.LongBenchScore(scorers={"T0": "rouge"}, remove="Answer: ")
    assert hichunk(item("T0", "Answer: the cat is on the mat", ["the cat is on the mat"]))["lb_score"] == pytest.approx(
        1.0, abs=1e-7)
    assert lb.LongBenchScore(default="qa_f1")(item("T0", "x", ["x"]))["lb_score"] == 1.0
    assert lb.LongBenchScore(scorer="qa_f1")(item("dureader", "x b", ["b"])) == {"lb_qa_f1": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="all_classes"):
        m(item("trec", "Location", ["Location"]))


def test_bad_scorer_names_are_config_errors():
    with pytest.raises(ConfigError, match="scorer"):
        lb.LongBenchScore(scorer="f1")
    with pytest.raises(ConfigError, match="scorers.T0"):
        lb.LongBenchScore(scorers={"T0": "bleu"})
    with pytest.raises(ConfigError, match="code_sim_matcher"):
        lb.LongBenchScore(code_sim_matcher="jaro")


def test_task_mean_weighs_every_subset_the_same():
    m = lb.LongBenchScore()
    rows = [{"task": "qasper", "lb_score": 1.0}, {"task": "qasper", "lb_score": 0.0}, {"task": "qasper", "lb_score": 0.0},
            {"task": "hotpotqa", "lb_score": 1.0}, {"task": "hotpotqa", "lb_score": math.nan}]
    # qasper 1/3, hotpotqa 1 (its NaN row is not scorable): (1/3 + 1) / 2, not the pooled 2/4
    assert m.aggregate(rows) == {"lb_score_task_mean": pytest.approx(2 / 3)}
    assert m.aggregate_keys() == {"lb_score_task_mean"} and math.isnan(m.aggregate([])["lb_score_task_mean"])
