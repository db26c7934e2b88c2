"""Where a full-scale point's data size comes from in `tables plan`: the table's paper block, the
papers' and publishers' statistics (LongBench task.md, HiChunk Table 2, ...), and the figures of
results/papers/dataset_sizes.csv for what the papers leave out, each printed with its basis
(cited, counted, assumed); a point so sized is costed like any other."""

from __future__ import annotations

import pytest

from harness.report.tables import spec as tables
from harness.report.tables.dataset_sizes import SIZES, size_figures
from harness.report.tables.hardware import load_hardware
from harness.report.tables.plan import plan_tables
from harness.report.tables.plan_cost import report
from harness.report.tables.workload import paper_size
from harness.types import ConfigError
from tests.report.test_plan import ENCODER_RATE, TOY, TOY_MODELS, WORK, _hardware, _plan_cli

CQA = "harness.data.conditionalqa.ConditionalQA"

def test_longbench_sizes_come_from_its_published_statistics():
    """LongBench task.md: NarrativeQA 200 rows of 18,409 words; MultiFieldQA-zh 200 of 6,701
    characters; a row is one document and one question; "all" is the eight QA subsets, 1,550 rows."""
    from harness.report.tables.workload import paper_size

    work = {**WORK, "cl100k_per_zh_char": 2.0}
    target = "harness.data.longbench.LongBench"
    nqa = paper_size([], {"_target_": target, "subset": "narrativeqa"}, work)
    assert (nqa.documents, nqa.questions, nqa.doc_tokens) == (200, 200, 18409 * 1.0)
    zh = paper_size([{"name": "x", "questions": 50}], {"_target_": target, "subset": "multifieldqa_zh"}, work)
    assert (zh.documents, zh.questions, zh.doc_tokens) == (50, 50, 6701 * 2.0)
    every = paper_size([], {"_target_": target, "subset": "all"}, work)
    words = 9151 + 4887 + 11214 + 18409 + 3619   # the English subsets of 200 rows
    expected = (200 * words + 150 * 4559 + 200 * (15768 + 6701) * 2.0) / 1550
    assert (every.documents, every.questions) == (1550, 1550) and every.doc_tokens == pytest.approx(expected)
    zh = paper_size([{"name": "QChunker's", "documents": 200, "questions": 200}],
                    {"_target_": "harness.data.multifieldqa_zh.MultiFieldQAZh"}, {**WORK, "cl100k_per_zh_char": 2.0})
    assert zh.doc_tokens == 6701 * 2.0   # QChunker's copy is LongBench's MultiFieldQA-zh


def test_nq_counts_a_document_per_question_and_a_whole_bundled_dataset_is_counted(tmp_path):
    """MC-indexing's NQ test set is question-article pairs: 586 questions, 586 documents. Chroma's
    evaluation is bundled whole, so a full-scale point is sized on the data (5 corpora, 472 questions)."""
    from harness.report.tables.workload import paper_size

    nq = paper_size([{"name": "NQ", "questions": 586}], {"_target_": "harness.data.nq.NaturalQuestions", "split": "validation"},
                    WORK)
    assert (nq.documents, nq.questions, nq.doc_tokens) == (586, 586, 17.4 * 1000)
    (tmp_path / "toy").mkdir()
    path = tmp_path / "toy" / "chroma.yaml"
    path.write_text(TOY.replace("dataset=qasper", "dataset=chroma"), encoding="utf-8")
    spec = tables.load_spec(path, tmp_path)
    plans, _ = plan_tables([spec], "full", [f"cache.dir={tmp_path / 'cache'}"], WORK)
    size = plans[0].points[0].size
    assert (size.documents, size.questions) == (5, 472) and size.doc_tokens > 0
    assert size.source.startswith("counted on the loaded data")


def test_figures_the_papers_leave_out_come_from_the_sizes_file_with_their_basis():
    """ConditionalQA dev: 285 questions counted in the publisher's dev.json, 271 with evidence
    (the row with more conditions wins); the table's own count, where it has one, comes first."""
    dev = {"_target_": CQA, "split": "dev", "require_evidence": False}
    assert size_figures("conditionalqa", dev)["questions"].value == 285
    figure = size_figures("conditionalqa", {**dev, "require_evidence": True})["questions"]
    assert (figure.value, figure.basis) == (271, "counted") and "haitian-sun/ConditionalQA@77bd295" in figure.source
    size = paper_size([{"name": "CQA", "documents": 652}], {**dev, "require_evidence": True}, WORK)
    assert (size.documents, size.questions) == (652, 271)
    assert "271 questions [counted: rows of v1_0/dev.json" in size.source
    assert "652 documents [cited: the table's paper block]" in size.source
    assert paper_size([{"name": "CQA", "documents": 652, "questions": 100}], dev, WORK).questions == 100
    # a length the papers leave out: Gov-report's words per document from HiChunk's Table 5, 973 documents at most
    gov = paper_size([{"name": "Gov"}], {"_target_": "harness.data.hicbench.HiCBench", "subset": "gov_report_5w"}, WORK)
    assert (gov.documents, gov.questions, gov.doc_tokens) == (973, 0, 13153 * WORK["cl100k_per_word"])
    # a declared assumption says so where the plan prints the size
    omni = paper_size([{"name": "OmniEval", "questions": 500}], {"_target_": "harness.data.omnieval.OmniEval"}, WORK)
    assert omni.doc_tokens == 2048 and "2048 cl100k tokens/doc [assumed: " in omni.source


def test_every_row_of_the_sizes_file_names_its_basis_and_source_and_a_bad_row_is_one_line(tmp_path):
    from harness.report.tables.dataset_sizes import _rows

    rows = _rows(SIZES)
    assert rows and all(r.value.basis in ("cited", "counted", "assumed") and r.value.source for r in rows)
    bad = tmp_path / "sizes.csv"
    bad.write_text("dataset,when,figure,value,basis,source\nqasper,split=test,questions,12,guessed,a hunch\n",
                   encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sizes.csv, data row 1: .*basis one of cited, counted, assumed"):
        size_figures("qasper", {"split": "test"}, bad)


def test_a_point_sized_by_the_sizes_file_is_costed(tmp_path):
    """Hand-computed: ConditionalQA dev with evidence, 652 documents (the paper block) of 120
    sentences x 20 words x 1 token (Qu et al. Table 4, toy ratios), 271 questions (counted) of 5
    tokens; fixed chunks index every document token, so the retriever embeds
    652 x 2,400 + 271 x 5 = 1,566,155 tokens at the toy encoder's 1,250 tokens/s."""
    (tmp_path / "toy").mkdir()
    path = tmp_path / "toy" / "cqa.yaml"
    path.write_text(TOY.replace("responder=llm, responder.max_context_tokens=100", "responder=none")
                    .replace("dataset=qasper", "dataset=conditionalqa, dataset.require_evidence=true")
                    .replace("documents: 10, questions: 20", "documents: 652"), encoding="utf-8")
    spec = tables.load_spec(path, tmp_path)
    plans, planner = plan_tables([spec], "full", [f"cache.dir={tmp_path / 'cache'}"], WORK)
    r = report(plans, planner, load_hardware(_hardware(tmp_path), TOY_MODELS))
    t = r["tables"][0]
    embedded = 652 * 120 * 20.0 + 271 * 5.0
    assert embedded == 1_566_155
    assert {row["role"]: row["embedded"] for row in t["roles"]} == {"retriever.embedder": pytest.approx(embedded)}
    assert not t["missing"] and t["gpu_hours"] == pytest.approx(embedded / ENCODER_RATE / 3600)


def test_the_tables_that_lacked_a_size_are_costed_with_each_figure_marked(tmp_path):
    """Through the CLI: the tables whose datasets had no published size (CRUD, OmniEval,
    HChemSafety, Gov-report, TechQA, ConditionalQA, Qasper questions) print no unknown term, and
    each size says what it rests on."""
    text = _plan_cli("--tables", "qchunker/table1,hichunk/table3,qu_et_al/table2", "--scale", "full",
                     "--set", f"cache.dir={tmp_path}")
    assert "unknown" not in text and "? (not declared)" not in text
    sizes = [ln for ln in text.splitlines() if ln.strip().startswith("size ")]
    assert sizes and all("[cited: " in ln or ": counted on the loaded data (" in ln for ln in sizes)
    assert any("[counted: " in ln for ln in sizes) and any("[assumed: " in ln for ln in sizes)
    assumed = text.split("Data sizes resting on a declared assumption")[1].split("\n\n")[0].splitlines()[1:]
    assert len(assumed) == 2 and all(ln.rstrip().endswith("[qchunker/table1]") for ln in assumed)   # OmniEval's and HChemSafety's lengths
