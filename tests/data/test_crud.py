"""CRUD-RAG: the bundled real excerpt (corpus lines and RAGQuestEval probes) and a small
hand-written checkout in the publisher's layout (tests/fixtures/qchunker/crud_checkout)."""

import pytest

from harness.data.crud import BUNDLED as CRUD_SAMPLE
from harness.data.crud import CRUD
from harness.pipeline.components import build_components
from harness.types import ConfigError
from tests.data.qchunker_files import FIX, copy_tree, load_error, read_json, write_json

CORPUS_FILE = CRUD_SAMPLE / "80000_docs" / "documents_dup_part_1_part_1.head150"
ALL_QA = ["questanswer_1doc", "questanswer_2docs", "questanswer_3docs"]

# -- the bundled real sample ---------------------------------------------------------------


@pytest.fixture(scope="module")
def crud_sample():
    return CRUD().load()


def test_crud_bundled_corpus_is_the_real_lines(crud_sample):
    lines = CORPUS_FILE.read_text(encoding="utf-8").split("\n")[:-1]
    docs = crud_sample.documents
    assert len(docs) == 150 and [d.text for d in docs] == lines
    assert docs[0].doc_id == "documents_dup_part_1_part_1.head150:1"
    assert docs[0].meta["date"] == "2023-07-28 16：40"
    assert docs[0].text.startswith("[ 2023-07-28 16：40 ] ，正文：人民网柏林7月28日电")
    assert {d.language for d in docs} == {"zh"}
    r = crud_sample.report
    assert r["chars_per_doc"] == pytest.approx(106957 / 150)
    assert r["corpus_blank_lines"] == r["corpus_lines_without_body_mark"] == 0


def test_crud_bundled_probes_and_their_honest_location(crud_sample):
    """QChunker runs questanswer_1doc only. 40 items, 177 probes: 18 "无法推断" and one with
    no answer are skipped as RAGQuestEval does; 158 remain. The items' articles are not among
    the 150 lines: no item has all its key_info in one document, and the 15% of key_info
    phrases found verbatim are common phrases ("农业农村部", "2023年")."""
    r, qs = crud_sample.report, crud_sample.queries
    assert (r["n_queries"], r["quest_eval_items"], r["quest_eval_probes"]) == (158, 40, 177)
    assert r["quest_eval_probes_skipped_unanswerable"] == 18
    assert r["quest_eval_probes_skipped_no_answer"] == 1
    assert (r["key_info_in_corpus"], r["key_info_total"]) == (34, 232)
    assert r["quest_eval_items_key_info_all_in_one_doc"] == 0
    assert r["evidence_total"] == 0 and r["queries_without_doc"] == 158
    raw = read_json(CRUD_SAMPLE / "quest_eval" / "QuestAnswer1Doc_quest_gt_save.first40.json")
    item = raw["64fa9b27b82641eb8ecbe14d"]
    q = qs[0]
    assert q.qid == "questanswer_1doc/64fa9b27b82641eb8ecbe14d#q0"
    assert (q.question, q.answers, q.facts) == (item["question"][0], (item["answers"][0],),
                                               tuple(item["key_info"]))
    assert (q.task, q.doc_ids, q.evidence) == ("questanswer_1doc", (), ())
    assert q.question == "哪个城市发放了体育类电子消费券？"
    assert all(a != "无法推断" for q in qs for a in q.answers)


def test_crud_bundled_all_three_subsets():
    ds = CRUD(subsets=ALL_QA).load()
    r = ds.report
    assert (r["quest_eval_items"], r["quest_eval_probes"], r["n_queries"]) == (120, 748, 633)
    assert (r["key_info_in_corpus"], r["key_info_total"]) == (170, 1261)
    assert r["quest_eval_items_key_info_all_in_one_doc"] == 0
    assert {q.task for q in ds.queries} == set(ALL_QA)
    assert len({q.qid for q in ds.queries}) == 633  # item IDs recur across subsets


def test_crud_bundled_has_no_split():
    with pytest.raises(ConfigError) as e:
        CRUD(questions="split").load()
    msg = str(e.value)
    assert "split_merged.json" in msg and "dataset.path=" in msg and "questions=quest_eval" in msg


# -- a checkout ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crud_fixture():
    return CRUD(FIX / "crud_checkout", subsets=["questanswer_1doc", "questanswer_2docs"]).load()


def test_crud_split_maps_items_and_aligns_news(crud_fixture):
    ds = crud_fixture
    split = read_json(FIX / "crud_checkout" / "data" / "crud_split" / "split_merged.json")
    r = ds.report
    assert [d.doc_id for d in ds.documents] == [
        "documents_dup_part_1_part_1:1", "documents_dup_part_1_part_1:3",
        "documents_dup_part_1_part_1:4", "documents_dup_part_1_part_1:5",
        "documents_hallu.txt_part_1:1"]  # every corpus file; line numbers kept past a blank line
    assert (r["corpus_blank_lines"], r["corpus_lines_without_body_mark"]) == (1, 1)
    assert [d.meta["date"] for d in ds.documents] == ["2023-08-01 10:00", "2023-08-02 09：30",
                                                      "2023-08-03 08:15", "", "08/16  13:50"]
    a, missing, b = ds.queries
    item = split["questanswer_1doc"][0]
    assert (a.qid, a.question, a.answers, a.task) == (
        "questanswer_1doc/" + item["ID"], item["questions"], (item["answers"],), "questanswer_1doc")
    assert a.doc_ids == ("documents_dup_part_1_part_1:1",) and a.meta["event"] == item["event"]
    (span,) = a.evidence
    assert ds.documents[0].text[span.start:span.end] == item["news1"]
    assert a.meta["quest_eval"]["answers"] == ["500万元", "173家", "无法推断"]
    assert (missing.doc_ids, missing.evidence) == ((), ())
    assert missing.unaligned_evidence == (split["questanswer_1doc"][1]["news1"],)
    assert missing.evidence_texts({}) == [split["questanswer_1doc"][1]["news1"]]
    assert b.doc_ids == ("documents_dup_part_1_part_1:3", "documents_dup_part_1_part_1:4")
    assert b.meta["evidence_method"] == ["normalised", "fuzzy"]
    counts = [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")]
    assert counts == [1, 1, 1, 1] and r["evidence_unaligned_share"] == 0.25
    assert r["quest_eval_attached"] == 1 and r["split_items_questanswer_2docs"] == 1


def test_crud_split_on_the_real_corpus(tmp_path):
    """News bodies copied from real corpus lines align exactly to those lines among all 150."""
    root = tmp_path / "CRUD_RAG"
    copy_tree(CRUD_SAMPLE / "80000_docs", root / "data" / "80000_docs")
    lines = CORPUS_FILE.read_text(encoding="utf-8").split("\n")
    picks = [0, 74, 149]
    items = [{"ID": f"id{i}", "event": "e", "news1": lines[i].split("，正文：", 1)[1],
              "questions": "问题？", "answers": "答案。"} for i in picks]
    write_json(root / "data" / "crud_split" / "split_merged.json", {"questanswer_1doc": items})
    ds = CRUD(root).load()
    assert [q.doc_ids for q in ds.queries] == [(f"documents_dup_part_1_part_1.head150:{i + 1}",)
                                               for i in picks]
    assert ds.report["evidence_exact"] == 3 and ds.report["quest_eval_attached"] == 0


def test_crud_limits_follow_the_evidence_documents():
    root = FIX / "crud_checkout"
    ds = CRUD(root, subsets=["questanswer_1doc", "questanswer_2docs"], limit_docs=1).load()
    # the 2docs item's evidence lives in dropped documents; the unaligned one has no document
    assert [q.qid.split("/")[1] for q in ds.queries] == ["64fa00000000000000000a01",
                                                         "64fa00000000000000000a02"]
    assert ds.report["queries_dropped_doc_filters"] == 1
    ds = CRUD(root, subsets=["questanswer_2docs"], qa_only=True).load()
    assert ds.documents == [] and ds.queries[0].evidence == () and ds.queries[0].doc_ids == ()
    qids = {tuple(q.qid for q in CRUD(subsets=ALL_QA, limit_queries=4, seed=s).load().queries)
            for s in range(3)}
    assert len(qids) > 1 and all(len(x) == 4 for x in qids)


def test_malformed_crud(tmp_path):
    root = copy_tree(FIX / "crud_checkout", tmp_path / "crud")
    split_path = root / "data" / "crud_split" / "split_merged.json"
    split = read_json(split_path)
    del split["questanswer_2docs"][0]["news2"]
    write_json(split_path, split)
    e = load_error(CRUD(root, subsets=["questanswer_2docs"]))
    assert (e.dataset, e.row, e.field) == ("crud", "questanswer_2docs/64fa00000000000000000b01", "news2")
    split_path.write_text('{"questanswer_1doc": [\n{"ID": }]}', encoding="utf-8")
    e = load_error(CRUD(root))
    assert e.row == "split_merged.json line 2" and "malformed JSON" in str(e)
    split_path.write_text('{"questanswer_2docs": []}', encoding="utf-8")
    e = load_error(CRUD(root))
    assert (e.row, e.field) == ("split_merged.json", "questanswer_1doc")
    corpus = root / "data" / "80000_docs" / "documents_hallu.txt_part_1"
    corpus.write_bytes(corpus.read_bytes() + "2023-08-20，正文：坏的编码".encode("gbk") + b"\n")
    e = load_error(CRUD(root, questions="quest_eval"))
    assert (e.row, e.field) == ("documents_hallu.txt_part_1:2", "text") and "UTF-8" in str(e)
    corpus.write_text("一行\n", encoding="utf-8")
    probes = root / "src" / "quest_eval" / "QuestAnswer1Doc_quest_gt_save.json"
    write_json(probes, {"x1": {"key_info": [], "question": "不是列表", "answers": []}})
    e = load_error(CRUD(root, questions="quest_eval"))
    assert (e.row, e.field) == ("questanswer_1doc/x1", "question") and "list of strings" in str(e)


def test_bad_configuration():
    with pytest.raises(ConfigError, match="subsets"):
        CRUD(subsets=["event_summary"])
    with pytest.raises(ConfigError, match="questions"):
        CRUD(questions="all")
    with pytest.raises(ConfigError, match="does not exist"):
        CRUD("/nonexistent/crud").load()


def test_config_composes_and_loads(make_cfg):
    ds = build_components(make_cfg("dataset=crud", "dataset.limit_queries=5")).dataset.load()
    assert ds.name == "crud" and len(ds.documents) == 150 and len(ds.queries) == 5
    cfg = make_cfg("dataset=crud", f"dataset.path={FIX / 'crud_checkout'}",
                   "dataset.subsets=[questanswer_1doc,questanswer_2docs]")
    assert build_components(cfg).dataset.load().report["evidence_total"] == 4
    with pytest.raises(ConfigError, match="dataset.*subsets"):
        build_components(make_cfg("dataset=crud", "dataset.subsets=[summary]"))
