"""`python -m harness.cli challenge` (issue 32): a chunker into the papers' tables beside the
baselines, with paired tests (Holm-corrected), ranks, cost, and a failure recorded, not fatal."""

import csv
import io
import math
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from harness.data.ohrbench import OHRBench
from harness.report.challenge import challenger, own_data, rows, significance
from harness.report.challenge.cluster import Given
from harness.report.tables import spec
from harness.types import ConfigError

from tests.report.test_tables import write_table

OUTSIDE = '''
import re

from harness.chunking.base import Chunker, spans_to_chunks


class Windows(Chunker):
    """Windows of `size` whitespace words; raises on a document whose id holds `fail_on`."""

    def __init__(self, size: int = 50, fail_on: str = ""):
        self.size, self.fail_on = size, fail_on

    def chunk_document(self, doc):
        if self.fail_on and self.fail_on in doc.doc_id:
            raise RuntimeError("cannot chunk this one")
        words = [m.span() for m in re.finditer(r"\\S+", doc.text)]
        return spans_to_chunks(doc, [(words[i][0], words[min(i + self.size, len(words)) - 1][1])
                                     for i in range(0, len(words), self.size)])


class Broken(Windows):
    def chunk_document(self, doc):
        raise RuntimeError("no tokenizer offline")


class NoSize(Windows):
    def __init__(self, width: int = 50):
        super().__init__(width)
'''


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A chunker module in a folder outside the repository (imported afresh by each test)."""
    from harness.code_digest import module_digest

    path = tmp_path / "elsewhere" / "my_chunkers.py"
    path.parent.mkdir()
    path.write_text(OUTSIDE)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    yield path
    sys.modules.pop("my_chunkers", None)
    module_digest.cache_clear()


# --- the significance arithmetic, against scipy and Holm's definition ---------------------------

def test_holm_matches_its_definition_on_fixed_numbers():
    p = [0.01, 0.04, 0.03, 0.005, float("nan")]
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06 (never below the one before)
    assert significance.holm(p)[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(significance.holm(p)[4])
    assert significance.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert significance.holm([]) == []


def test_a_comparison_is_scipys_paired_permutation_test_on_the_same_questions():
    base = {"q1": 0.1, "q2": 0.4, "q3": 0.2, "q4": 0.0, "q5": 0.3, "q6": 0.5}
    mine = {"q1": 0.3, "q2": 0.5, "q3": 0.6, "q4": 0.2, "q5": 0.3, "q6": 0.9, "q7": 1.0}  # q7: only in one run
    c = significance.Comparison("t", "", "col", "b", "B", "sentence", 0.25, None, 0.4, False)
    significance.test(c, [(base, "question")], [(mine, "question")], [""], [""], 100.0)
    a, b = np.array([base[q] for q in sorted(base)]), np.array([mine[q] for q in sorted(base)])
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples",
                                 n_resamples=10_000, alternative="two-sided", random_state=np.random.default_rng(0))
    assert c.n == 6 and c.pairing == "questions"
    assert c.diff == pytest.approx(100 * np.mean(b - a))
    assert c.p == pytest.approx(ref.pvalue)  # 6 pairs: scipy enumerates all 64 sign flips, exactly
    assert c.ci_low < c.diff < c.ci_high


def test_two_rows_swept_over_the_same_sizes_pair_by_question_and_size():
    base = [{"q1": 0.0, "q2": 1.0}, {"q1": 0.5, "q2": 0.5}]
    mine = [{"q1": 1.0, "q2": 1.0}, {"q1": 1.0, "q2": 0.0}]
    p = significance.pair(base, mine, ["200", "300"], ["200", "300"])
    assert p.how == "(question, sweep value) pairs" and len(p.a) == 4
    assert p.a == [0.0, 1.0, 0.5, 0.5] and p.b == [1.0, 1.0, 1.0, 0.0]
    # one run against a swept row: the swept side's per-question mean
    one = significance.pair(base, [{"q1": 1.0, "q2": 0.0}], ["200", "300"], [""])
    assert one.a == [0.25, 0.75] and one.b == [1.0, 0.0] and "mean over its sweep" in one.how


def test_verdicts_read_the_corrected_p_value_in_the_metrics_direction():
    def comparison(diff, p_holm, lower=False, ci=(0.1, 0.3), margin=0.5):
        return significance.Comparison("t", "", "col", "b", "B", "x", 0.0, None, 0.0, lower, n=10, diff=diff,
                                       ci_low=ci[0], ci_high=ci[1], p=p_holm, p_holm=p_holm, margin=margin)

    assert comparison(0.2, 0.01).verdict == "win"
    assert comparison(0.2, 0.01, lower=True).verdict == "loss"  # a higher chunking error is worse
    assert comparison(0.2, 0.2).verdict == "tie"  # the interval [0.1, 0.3] lies within ±0.5
    assert comparison(0.2, 0.2, margin=0.25).verdict == "inconclusive"  # it reaches past ±0.25
    assert "not corrected" in comparison(0.2, 0.2).disagreement  # the interval excludes 0, the test does not reject
    assert comparison(0.2, 0.01, ci=(-0.1, 0.3)).disagreement.startswith("its 95% interval holds 0")
    assert comparison(0.2, float("nan")).verdict == "untested"
    assert significance.rank(0.5, [0.7, 0.5, 0.2], False) == 2
    assert significance.rank(0.5, [0.7, 0.5, 0.2], True) == 2


BASE = [0.1 * (i % 5) for i in range(20)]
BETTER = [x + 0.3 + 0.05 * (i % 3 - 1) for i, x in enumerate(BASE)]  # 30 points better, nearly the same on each


@pytest.mark.parametrize("a, b, line", [
    (BASE, BETTER, "| +29.75 [+27.82, +31.68] | ±1.93 | 20 | <0.001 | <0.001 | win (p (Holm) < 0.05) |"),
    (BETTER, BASE, "| -29.75 [-31.68, -27.82] | ±1.93 | 20 | <0.001 | <0.001 | loss (p (Holm) < 0.05) |"),
    # half a point either way on every question: the interval excludes any difference of 2 points
    (BASE, [x + 0.005 * (-1) ** i for i, x in enumerate(BASE)],
     "| +0.00 [-0.24, +0.24] | ±0.24 | 20 | 1.000 | 1.000 | tie (the interval lies within ±2.00) |"),
    # 11 questions, 27 points behind: not significant, and nothing excludes a 40-point loss
    ([1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0], [0, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0],
     "| -27.27 [-70.72, +16.17] | ±43.44 | 11 | 0.375 | 0.375 | inconclusive (the interval reaches past ±2.00) |"),
])
def test_win_loss_tie_and_inconclusive_from_fixed_scores(a, b, line):
    """The interval is Student's t (scipy) of the paired mean difference, in the table's units
    (points: factor 100); ``detectable``, half its width, is the smallest difference it tells from none."""
    from harness.report.challenge import report

    c = significance.Comparison("t", "", "ERec", "b", "Fixed", "fixed", 0.0, None, 0.0, False)
    significance.test(c, [(dict(enumerate(a)), "question")], [(dict(enumerate(b)), "question")], [""], [""], 100.0)
    significance.correct([c])
    assert c.margin == 2.0 and report.comparison_line(c) == "| all | ERec | Fixed | 0.00 " + line
    d = np.subtract(b, a)
    assert (c.ci_low, c.ci_high) == pytest.approx([100 * x for x in stats.ttest_1samp(d, 0).confidence_interval(0.95)])


# --- the challenger: what the user names ------------------------------------------------------

def test_a_challenger_is_a_config_choice_or_a_class_by_import_path(outside):
    ch = challenger.parse("chunker=sentence", ["chunker.size=120"])
    assert ch.name == "sentence" and ch.overrides == ("chunker=sentence", "chunker.size=120")
    assert ch.target == "harness.chunking.sentence.SentenceChunker" and not ch.takes("chunker.size")  # fixed
    assert challenger.parse("hichunk").context == "auto_merge"  # the assembler it is meant for
    ch = challenger.parse(f"{outside}:Windows", ["chunker.fail_on=x"], name="mine")
    assert ch.name == "mine" and ch.target == "my_chunkers.Windows"
    assert ch.overrides == ("chunker=custom", "chunker._target_=my_chunkers.Windows", "++chunker.fail_on=x")
    assert ch.takes("chunker.size") and ch.override("chunker.size") == "++chunker.size"
    assert not challenger.parse("my_chunkers:NoSize").takes("chunker.size")  # importable now: its folder is on the path
    other = outside.parent.parent / "another" / "my_chunkers.py"
    other.parent.mkdir()
    other.write_text(OUTSIDE)
    with pytest.raises(ConfigError, match="the module name 'my_chunkers' is taken by"):
        challenger.parse(f"{other}:Windows")  # never the other file's class, silently


@pytest.mark.parametrize("given, args, message", [
    ("nonesuch", [], "not a chunker config"),
    ("custom", [], "name the class by import path"),
    ("/no/such/file.py:X", [], "no file"),
    ("no_such_module:X", [], "cannot import no_such_module.X"),
    ("harness.types:Chunk", [], "is not a chunker class"),
    ("sentence", ["retriever=bm25"], "is not a chunker argument"),
])
def test_a_bad_challenger_is_one_line(given, args, message):
    with pytest.raises(ConfigError, match=message):
        challenger.parse(given, args)


# --- the table files' challenge blocks ---------------------------------------------------------

SKIPPED = {"hichunk/figure4", "hichunk/table2", "hichunk/table5", "mc_indexing/figure3", "mc_indexing/table1",
           "mc_indexing/table3", "mc_indexing/table5", "mc_indexing/table9", "qchunker/figure2", "qchunker/figure3",
           "qu_et_al/figure2", "qu_et_al/figure3", "qu_et_al/figure4", "qu_et_al/figure5"}


def test_every_table_file_says_whether_and_how_a_challenger_joins_it():
    specs = spec.all_specs()
    assert all(s.challenge is not None for s in specs)
    assert {s.id for s in specs if s.challenge.skip} == SKIPPED
    assert all(s.challenge.skip.strip() for s in specs if s.id in SKIPPED)


def test_families_replace_the_chunker_and_keep_the_retriever():
    t = spec.select("mc_indexing/table2")[0]
    ch = challenger.parse("sentence")
    c = rows.challenged(t, ch, "full")
    assert len(c.families) == 8  # one per retriever
    tfidf = c.families[0]
    assert tfidf.row == "sentence~tfidf_flc100" and tfidf.label == "retriever=tfidf"
    assert set(tfidf.baselines) == {r.key for r in t.rows if r.key.startswith("tfidf_") and not r.missing}
    row = next(r for r in c.spec.rows if r.key == tfidf.row)
    assert row.overrides == ("retriever=tfidf", "retriever.sublinear_tf=false", "chunker=sentence")
    assert row.label == "★ sentence (retriever=tfidf)"
    assert len(c.spec.runs("full")) == len(t.runs("full")) + 8 * 2  # 8 rows x 2 datasets


def test_a_plain_chunker_gets_a_flat_context_and_the_tables_size_sweep(outside):
    t = spec.select("lgmgc/table2")[0]
    ch = challenger.parse(f"{outside}:Windows")
    c = rows.challenged(t, ch, "smoke")
    assert [f.label for f in c.families] == ["embedder.model=BAAI/bge-large-en-v1.5", "embedder.model=intfloat/e5-large"]
    bge = next(r for r in c.spec.rows if r.key == c.families[0].row)
    assert "context=budget" in bge.overrides and not any(o.startswith("context=parent") for o in bge.overrides)
    assert bge.sweep == ((("++chunker.size", (200, 300, 500)),),)
    # at smoke scale the E5 rows are skipped, so is the E5 challenger, with the reason
    assert "not run at this scale" in c.spec.scales["smoke"]["skip"][c.families[1].row]
    # a class without the size parameter runs once, and the report says why
    no_size = rows.challenged(t, challenger.parse("my_chunkers:NoSize"), "smoke")
    assert no_size.spec.rows[-2].sweep == () and "takes no size" in no_size.families[0].sweep_note
    # HiChunk, a challenger with its own assembler, keeps it where the table gives a plain chunker budget
    hc = rows.challenged(t, challenger.parse("hichunk"), "smoke").spec.rows[-2]
    assert "context=auto_merge" in hc.overrides and "context=budget" not in hc.overrides


def test_a_table_that_takes_no_challenger_or_a_clashing_name_is_one_line():
    with pytest.raises(ConfigError, match="takes no challenger: dataset statistics"):
        rows.challenged(spec.select("hichunk/table2")[0], challenger.parse("sentence"), "smoke")
    with pytest.raises(ConfigError, match="is a row of table"):
        rows.challenged(spec.select("lgmgc/table1")[0], challenger.parse("sentence", name="recursive"), "smoke")


BLOCK = """
title: T
source: a test
numbers: NUMBERS
x: {param: X, values: [1, 2]}
rows:
  a: {label: A, overrides: [chunker=fixed]}
groups:
  g: {label: G, overrides: []}
metrics:
  m: {metric: evidence_recall}
challenge: BLOCK
"""


@pytest.mark.parametrize("x, block, message", [
    ("chunker.size", "{}", "the x axis sweeps chunker.size, a parameter of the chunker"),
    ("context.budget", "{skip: ''}", "the reason the table takes no challenger"),
    ("context.budget", "{skip: why, rows: [a]}", "the reason the table takes no challenger, and nothing else"),
    ("context.budget", "{rows: [b*]}", "match no row"),
    ("context.budget", "{lower: [n]}", "are not layout metrics"),
    ("context.budget", "{by: retriever}", "must be a list of Hydra overrides"),
    ("context.budget", "{colour: red}", "keys are add, by, drop"),
])
def test_a_bad_challenge_block_names_the_problem(tmp_path, x, block, message):
    with pytest.raises(ConfigError, match=message):
        write_table(tmp_path, BLOCK.replace("X", x).replace("BLOCK", block))


# --- end to end: a chunker outside the repository, one document it cannot chunk ----------------

TABLE = """
title: Demo
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none, dataset=ohrbench]
rows:
  fixed: {label: Fixed, overrides: [chunker=fixed, chunker.unit=words], sweep: {chunker.size: [40, 80]}}
  sentence: {label: Sentence, overrides: [chunker=sentence]}
groups:
  news: {label: News, overrides: ["dataset.domains=[news]"]}
  textbook: {label: Textbook, overrides: ["dataset.domains=[textbook]"]}
metrics:
  erec: {metric: evidence_recall, label: ERec, factor: 100, digits: 1}
challenge: {sweep: {chunker.size: [40, 80]}}
"""


def test_a_challenge_runs_its_rows_reuses_the_baselines_and_records_a_failure(tmp_path, outside):
    from harness.report.challenge import run
    from harness.report.tables import grid

    t = write_table(tmp_path, TABLE, "row,column,value\nsentence,news/erec,50.0\n")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    extra = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    grid.run_table(t, "smoke", extra, log=lambda *_: None)  # the table reproduced first
    ch = Given(f"{outside}:Windows", ("chunker.fail_on=textbook",), "mine")
    said = []
    readme = run.challenge(ch, [t], "smoke", extra, uri, tmp_path / "report", log=said.append)
    # what it will compute, before it computes anything
    assert said[0].startswith("plan [demo/t1]: 4 challenger point(s) (read instead where this code recorded them); "
                              "baselines: 6 read from the record, 0 to run; no recorded timing for this table")
    assert said[1] == "plan: 1 table(s), no estimate (no recorded timing for demo/t1)"
    assert "[demo/t1] challenged: 2 finished, 2 failed, 6 baseline points read from the record, 0 run" in said[-1]
    failed = [line for line in said if "failed in" in line]
    assert len(failed) == 2 and all("Windows failed on document" in f and "textbook" in f for f in failed)
    # the version: scale, tables, the arguments with their defaults, the code
    first = readme.parent
    assert first.parent == tmp_path / "report" / "mine"
    assert first.name.startswith("smoke-demo_t1-fail_on=textbook,size=50-")
    text = readme.read_text()
    assert "(fail_on=textbook, size=50; code `" in text and "This version against the last" not in text
    # the leaderboard by the table's row names, ranks averaged per metric, sizes in a named unit
    assert "| Fixed (`fixed`) | 1 |" in text and "| Sentence (`sentence`) | 1 |" in text
    assert "| ERec (`evidence_recall`) | 1.00 | 1 | 1 |" in text
    assert "| demo/t1 |  | News | Fixed | " in text and " | tokens (bundled) | " in text
    assert "| table | why |" in text
    assert "- failed (2 points: `mine|textbook|++chunker.size=40`, `mine|textbook|++chunker.size=80`): Windows " \
           "failed on document textbook/" in text  # the reason once
    assert "| all | Textbook ERec | failed (why: above) |" in text
    table = (first / "tables" / "demo" / "t1.md").read_text()
    assert "| ★ mine |" in table and "Windows failed on document" in table
    compared = {r["baseline"]: r for r in csv.DictReader(io.StringIO((first / "comparisons.csv").read_text()))}
    assert set(compared) == {"fixed", "sentence"}  # news only: the textbook points failed
    assert compared["fixed"]["pairing"] == "(question, sweep value) pairs"  # both swept over 40 and 80
    assert compared["sentence"]["pairing"] == "questions, each side's mean over its sweep"
    assert compared["fixed"]["verdict"] in significance.VERDICTS[:4] and float(compared["fixed"]["p_holm"]) <= 1
    # again, unchanged: nothing finished runs again (a failed point is tried again); an edit to the
    # chunker's file runs its rows again, into a version of its own, beside the last
    said.clear()
    assert run.challenge(ch, [t], "smoke", extra, uri, tmp_path / "report", log=said.append) == readme
    assert sum("already recorded" in line for line in said if "/4 mine|news" in line) == 2
    outside.write_text(outside.read_text() + "\n# an edit\n")
    from harness.code_digest import module_digest

    module_digest.cache_clear()  # a new process reads the file again
    said.clear()
    second = run.challenge(ch, [t], "smoke", extra, uri, tmp_path / "report", log=said.append)
    assert sum("finished in" in line for line in said if "/4 mine|news" in line) == 2
    assert second != readme and readme.is_file()  # the earlier version kept
    index = (tmp_path / "report" / "mine" / "README.md").read_text()
    assert f"Latest: [{second.parent.name}]" in index and f"[{first.name}]" in index
    against = second.read_text().split("## This version against the last")[1].split("\n## ")[0]
    assert f"since [{first.name}](../{first.name}/README.md)" in against
    row = next(line for line in against.splitlines() if line.startswith("| demo/t1 | all | news/erec |"))
    last, this, delta = (float(x) for x in row.split("|")[4:7])
    assert delta == pytest.approx(this - last, abs=1e-4)


TWO_ROWS = """
title: Demo
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none, dataset=ohrbench, "dataset.domains=[news]"]
rows:
  sentence: {label: Sentence, overrides: [chunker=sentence]}
  lumber: {label: LumberChunker, overrides: [chunker=lumber]}
groups:
  news: {label: News, overrides: []}
metrics:
  erec: {metric: evidence_recall, label: ERec, factor: 100, digits: 1}
challenge: {}
"""


def test_the_plan_counts_the_llm_baselines_and_no_llm_baselines_leaves_them_out(tmp_path):
    from harness.report.challenge import plan

    t = write_table(tmp_path, TWO_ROWS)
    ch = challenger.parse("fixed")
    c = rows.challenged(t, ch, "smoke")
    timing = {"demo/t1": SimpleNamespace(computed=50.0, reused=10.0)}  # as results/index.json records it
    said = plan.lines([c], {"demo/t1": c.base.runs("smoke")}, "smoke", timing)
    assert said[0] == ("plan [demo/t1]: 1 challenger point(s) (read instead where this code recorded them); "
                       "baselines: 0 read from the record, 2 to run (1 calling an LLM); "
                       "~30 s a point (results/index.json) -> ~90 s")
    assert said[1].startswith("plan: 1 table(s), about 90 s of CPU time at the tables' mean seconds a point; "
                              "1 baseline point(s) call an LLM")
    left = rows.challenged(t, ch, "smoke", no_llm=True)
    assert left.left_out == ("LumberChunker",)
    assert [p.row for p in left.base.runs("smoke") if not p.skip] == ["sentence"]
    assert [p.skip for p in left.spec.runs("smoke") if p.row == "lumber"] == [rows.LEFT_OUT]
    said = plan.lines([left], {"demo/t1": [p for p in left.base.runs("smoke") if not p.skip]}, "smoke", timing)
    assert "1 to run; ~30 s a point" in said[0] and "LLM" not in said[0]
    assert said[1].endswith("; left out by --no-llm-baselines: LumberChunker")


def test_every_challenger_point_failing_is_an_error_after_the_report(tmp_path, outside, monkeypatch, capsys):
    from harness.cli import main

    t = write_table(tmp_path, TWO_ROWS)
    monkeypatch.setattr(Given, "specs", lambda self, tables=None: [t])
    out, uri = tmp_path / "report", f"sqlite:///{tmp_path / 'mlruns.db'}"
    with pytest.raises(SystemExit) as e:
        main(["challenge", f"{outside}:Broken", "--no-llm-baselines", "--uri", uri, "--out", str(out),
              "--set", f"cache.dir={tmp_path / 'cache'}"])
    assert e.value.code == 2
    said = capsys.readouterr()
    printed = said.out.splitlines()
    assert printed[0].startswith("plan [demo/t1]: 1 challenger point(s)") and "1 to run" in printed[0]
    assert printed[1].startswith("plan: ") and "baseline 1/1 news" not in printed[0] + printed[1]
    assert any(line.startswith("[demo/t1] baseline 1/1 ") for line in printed[2:])  # the sentence row, run after
    error = [line for line in said.err.splitlines() if line.startswith("chunkbench: error:")]
    assert len(error) == 1 and "every challenger point failed (1 of 1); the first, demo/t1 `Broken|news`: " \
        "Broken failed on document" in error[0] and "RuntimeError: no tokenizer offline" in error[0]
    readme = next((out / "Broken").glob("*/README.md"))
    assert f"the report of what was computed: {readme}" in error[0]
    text = readme.read_text()
    assert text.count("**Failed: every challenger point failed") == 1
    assert text.splitlines()[2].startswith("**Failed: every challenger point failed (1 of 1)")
    assert "- left out (--no-llm-baselines; each calls an LLM): LumberChunker." in text
    assert "| no comparison: no challenger point finished beside a baseline |" in text


def test_a_chunker_that_raises_names_the_document():
    from types import SimpleNamespace

    from harness.pipeline import stages
    from harness.types import ChunkerFailed, Document

    class Broken:
        def chunk(self, docs):
            raise KeyError("oops")

    cache = SimpleNamespace(counts=lambda before=None: {}, reused_seconds=0.0)
    with pytest.raises(ChunkerFailed, match=r"Broken failed on document d1: KeyError: 'oops'"):
        stages.chunk(SimpleNamespace(chunker=Broken(), cache=cache, chunker_timeout_s=None), [Document("d1", "some text")])


def test_a_challenger_names_its_own_code_in_the_record(outside):
    tags = challenger.parse(f"{outside}:Windows", name="mine").tags()
    assert tags["challenge"] == "mine" and len(tags["challenge.code"]) >= 16


def test_own_data_puts_the_challenger_beside_the_standard_baselines(tmp_path, outside, capsys):
    from harness.cli import main
    from harness.data.local import write_local

    data = write_local(OHRBench(domains=["news"]).load(), tmp_path / "my_data")
    out, uri = tmp_path / "report", f"sqlite:///{tmp_path / 'mlruns.db'}"
    main(["challenge", f"{outside}:Windows", "chunker.size=60", "dataset=local", f"dataset.path={data}",
          "dataset.limit_queries=8", "--uri", uri, "--set", f"cache.dir={tmp_path / 'cache'}", "--out", str(out)])
    out = next((out / "Windows").glob("smoke-own_*-fail_on=,size=60-*"))  # the data's own version
    assert f"report -> {out / 'README.md'}" in capsys.readouterr().out
    readme = (out / "README.md").read_text()
    assert "1 tables challenged, 0 skipped" in readme and f"### own/{str(data).strip('/').replace('/', '_')}" in readme
    compared = {r["baseline"] for r in csv.DictReader(io.StringIO((out / "comparisons.csv").read_text()))}
    assert compared == set(own_data.BASELINES)
    table = next((out / "tables" / "own").glob("*.md")).read_text()
    assert "| ★ Windows |" in table and "| semantic_cluster |" in table and "paper" not in table.split("\n|")[1]


PLACES = ["harbour", "orchard", "glacier", "foundry", "library", "volcano"]
THINGS = ["lanterns", "ledgers", "pulleys", "barrels", "compasses", "anchors", "kettles", "ropes", "bells", "maps"]


def short_documents(folder):
    """Six documents of about 700 tokens (far below a 4,096-token context) whose counts name no
    place: only a chunk that keeps the document's first sentence says where it is. A question per
    (document, every third thing), its evidence given as text."""
    import json

    folder.mkdir(parents=True)
    docs, queries = [], []
    for i, place in enumerate(PLACES):
        sentences = [f"This is the keeper's record of the {place}."]
        for j, thing in enumerate(THINGS):
            sentences += [f"The keeper counted {3 + (i * 7 + j) % 40} {thing} in room {j + 1}.",
                          f"The {PLACES[(i + j + 1) % len(PLACES)]} once lent {thing} to travellers who asked.",
                          f"Nobody recalls why room {j + 1} smells of cedar and old rain."]
        docs.append({"doc_id": place, "text": " ".join(sentences)})
        queries += [{"qid": f"{place}-{j}", "question": f"How many {thing} did the {place} keeper count?",
                     "doc_ids": [place], "evidence": [{"doc_id": place, "text": sentences[1 + 9 * j]}]}
                    for j, thing in enumerate(THINGS[::3])]
    for name, rows in (("documents", docs), ("queries", queries)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.mark.slow
def test_own_data_lets_chunking_count_and_a_saturating_set_runs_the_baselines_again(tmp_path, outside, capsys):
    """Short documents: the own-data defaults (pooled corpus, 512 tokens) tell the chunkers apart;
    ``--set retriever.scope=document --set context.budget=4096`` hands every document back whole:
    the baselines recorded without it are run again, never read, and the report and the table
    say the numbers are saturated."""
    from harness.cli import main

    data = short_documents(tmp_path / "short")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    args = ["challenge", f"{outside}:Windows", "chunker.size=60", "dataset=local", f"dataset.path={data}",
            "--uri", uri, "--set", f"cache.dir={tmp_path / 'cache'}", "--set", "retriever=bm25"]

    def report(root):  # the one version folder a challenge writes under --out
        return next((root / "Windows").glob("*/README.md")).parent

    def erec(out):
        table = next((out / "tables" / "own").glob("*.md")).read_text()
        return table, [float(line.split("|")[2].split()[0]) for line in table.splitlines()
                       if line.startswith("| ") and "ERec" not in line]

    main([*args, "--out", str(tmp_path / "default")])
    capsys.readouterr()
    readme = (report(tmp_path / "default") / "README.md").read_text()
    table, values = erec(report(tmp_path / "default"))
    assert len(set(values)) > 1 and max(values) < 100  # the chunkers differ, none at the ceiling
    assert "saturated" not in readme.lower() and "saturated" not in table
    assert "(`--set`): `retriever=bm25`." in readme
    assert "`retriever.scope=corpus`, `context.budget=512`, `context.unit=tokens`, `dataset=local`" in readme

    # each document whole in one window, a 4,096-token context over its own document: every row at the
    # ceiling of ERec and span recall; span precision still tells the chunkers apart
    whole = [a if a != "chunker.size=60" else "chunker.size=5000" for a in args]
    main([*whole, "--set", "retriever.scope=document", "--set", "context.budget=4096", "--out", str(tmp_path / "whole")])
    n = len(own_data.BASELINES)
    assert f"0 baseline points read from the record, {n} run" in capsys.readouterr().out
    readme = (report(tmp_path / "whole") / "README.md").read_text()
    assert (f"{n} baseline points run, 0 read from the record" in readme and "(`--set`): `context.budget=4096`, "
            "`retriever.scope=document`, `retriever=bm25`." in readme)
    table, values = erec(report(tmp_path / "whole"))
    assert values == [100.0] * (n + 1)
    rows = [line.split("|")[2:5] for line in table.splitlines() if line.startswith("| ") and "ERec" not in line]
    assert all("— saturated: chunking cannot change this number here (every row scores 100" in c
               for erec_cell, recall, _ in rows for c in (erec_cell, recall))
    assert not any("saturated" in precision for *_, precision in rows)
    assert "**Saturated: chunking cannot change 2 of the challenger's 3 values here**" in readme
    assert "Every run under the overrides `context.budget=4096`, `retriever.scope=document`, `retriever=bm25`" in table


def test_an_override_that_is_not_the_chunkers_is_one_line(outside):
    from harness.cli import main

    with pytest.raises(SystemExit) as e:
        main(["challenge", f"{outside}:Windows", "retriever=bm25"])
    assert e.value.code == 2


def test_a_challenge_travels_to_its_jobs_as_json_with_absolute_paths(tmp_path, outside, monkeypatch):
    from harness.report.challenge.cluster import Given

    monkeypatch.chdir(outside.parent.parent)
    relative = f"{outside.parent.name}/{outside.name}:Windows"
    given = Given(relative, ("chunker.size=60",), None, ((("chunker.size", (40, 80)),),),
                  ("dataset=local", "dataset.path=data"), True)
    sent = given.for_jobs("mine")
    assert sent.chunker == f"{outside}:Windows" and sent.name == "mine"
    assert sent.data == ("dataset=local", f"dataset.path={outside.parent.parent / 'data'}")
    assert Given.from_json(sent.to_json()) == sent  # the sweep, as tuples again
    assert Given.from_json(Given("sentence").to_json()) == Given("sentence")
    assert sent.challenger().tags() == given.challenger().tags() | {"challenge": "mine"}


@pytest.mark.slow
def test_a_challenge_through_a_launcher_runs_every_point_as_a_job(tmp_path, outside, capfd):
    """``--set hydra/launcher=local`` (submitit's local executor: a process per job, as on SLURM):
    the own-data table's baselines and the challenger's point are jobs, rebuilt from the JSON in each
    job; the challenge then reads them all from the record and runs nothing itself."""
    from harness.cli import main
    from harness.data.local import write_local

    data = write_local(OHRBench(domains=["news"]).load(), tmp_path / "my_data")
    out, uri = tmp_path / "report", f"sqlite:///{tmp_path / 'mlruns.db'}"
    args = ["challenge", f"{outside}:Windows", "chunker.size=60", "dataset=local", f"dataset.path={data}",
            "dataset.limit_queries=4", "--uri", uri, "--out", str(out),
            *(a for o in [f"cache.dir={tmp_path / 'cache'}", "retriever=bm25", "hydra/launcher=local",
                          f"hydra.sweep.dir={tmp_path / 'sweep'}"] for a in ("--set", o))]
    main(args)
    said = capfd.readouterr().out
    n = len(own_data.BASELINES)
    assert f"challenge Windows: {n} baseline point(s) and 1 of the challenger's to queue" in said
    assert f"queueing {n + 1} job(s) through LocalLauncher" in said
    # the jobs ran the baselines (counted as run by this challenge); nothing ran in this process
    assert f"challenged: 1 finished, 0 failed, 0 baseline points read from the record, {n} run" in said
    assert "finished in" not in said.split("queueing")[0]
    assert next((out / "Windows").glob("*/README.md")).is_file()
    main(args)  # again: every point is recorded, nothing is queued
    again = capfd.readouterr().out
    assert "0 baseline point(s) and 0 of the challenger's to queue" in again and "nothing to queue" in again
