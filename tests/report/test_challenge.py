"""`python -m harness.cli challenge` (issue 32): a chunker into the papers' tables beside the
baselines, with paired tests (Holm-corrected), ranks, cost, and a failure recorded, not fatal."""

import csv
import io
import math
import os
import sys

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
    def comparison(diff, p_holm, lower=False, ci=(0.1, 0.3)):
        c = significance.Comparison("t", "", "col", "b", "B", "x", 0.0, None, 0.0, lower, n=10, diff=diff,
                                    ci_low=ci[0], ci_high=ci[1], p=p_holm, p_holm=p_holm)
        return c

    assert comparison(0.2, 0.01).verdict == "win"
    assert comparison(0.2, 0.01, lower=True).verdict == "loss"  # a higher chunking error is worse
    assert comparison(0.2, 0.2).verdict == "tie"
    assert "not corrected" in comparison(0.2, 0.2).disagreement  # the interval excludes 0, the test does not reject
    assert comparison(0.2, 0.01, ci=(-0.1, 0.3)).disagreement.startswith("its 95% interval holds 0")
    assert comparison(0.2, float("nan")).verdict == "untested"
    assert significance.rank(0.5, [0.7, 0.5, 0.2], False) == 2
    assert significance.rank(0.5, [0.7, 0.5, 0.2], True) == 2


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
    assert "[demo/t1] challenged: 2 finished, 2 failed, 6 baseline points read from the record, 0 run" in said[-1]
    failed = [line for line in said if "failed in" in line]
    assert len(failed) == 2 and all("Windows failed on document" in f and "textbook" in f for f in failed)
    text = readme.read_text()
    assert "| table | why |" in text and "failed: `mine|textbook|++chunker.size=40`" in text
    table = (tmp_path / "report" / "tables" / "demo" / "t1.md").read_text()
    assert "| ★ mine |" in table and "Windows failed on document" in table
    compared = {r["baseline"]: r for r in csv.DictReader(io.StringIO((tmp_path / "report" / "comparisons.csv").read_text()))}
    assert set(compared) == {"fixed", "sentence"}  # news only: the textbook points failed
    assert compared["fixed"]["pairing"] == "(question, sweep value) pairs"  # both swept over 40 and 80
    assert compared["sentence"]["pairing"] == "questions, each side's mean over its sweep"
    assert compared["fixed"]["verdict"] in ("win", "tie", "loss") and float(compared["fixed"]["p_holm"]) <= 1
    # again, unchanged: nothing finished runs again (a failed point is tried again); an edit to the
    # chunker's file runs its rows again
    said.clear()
    run.challenge(ch, [t], "smoke", extra, uri, tmp_path / "report", log=said.append)
    assert sum("already recorded" in line for line in said if "/4 mine|news" in line) == 2
    outside.write_text(outside.read_text() + "\n# an edit\n")
    from harness.code_digest import module_digest

    module_digest.cache_clear()  # a new process reads the file again
    said.clear()
    run.challenge(ch, [t], "smoke", extra, uri, tmp_path / "report", log=said.append)
    assert sum("finished in" in line for line in said if "/4 mine|news" in line) == 2


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
    assert f"report -> {out / 'README.md'}" in capsys.readouterr().out
    readme = (out / "README.md").read_text()
    assert "1 tables challenged, 0 skipped" in readme and f"### own/{str(data).strip('/').replace('/', '_')}" in readme
    compared = {r["baseline"] for r in csv.DictReader(io.StringIO((out / "comparisons.csv").read_text()))}
    assert compared == set(own_data.BASELINES)
    table = next((out / "tables" / "own").glob("*.md")).read_text()
    assert "| ★ Windows |" in table and "| semantic_cluster |" in table and "paper" not in table.split("\n|")[1]


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
    assert (out / "README.md").is_file()
    main(args)  # again: every point is recorded, nothing is queued
    again = capfd.readouterr().out
    assert "0 baseline point(s) and 0 of the challenger's to queue" in again and "nothing to queue" in again
