"""HChemSafety, on a small hand-written copy of the publisher's folder
(tests/fixtures/qchunker/hchemsafety); the bundled QA pairs: test_qchunker_family."""

import shutil

import pytest

from harness.data.hchemsafety import BUNDLED as HCHEM_SAMPLE
from harness.data.hchemsafety import HChemSafety
from harness.types import ConfigError
from tests.data.qchunker_files import FIX, load_error, read_json, write_json

def test_hchemsafety_checkout_layout():
    rows = read_json(FIX / "hchemsafety" / "HChemSafety" / "QA_test.json")
    texts = read_json(FIX / "hchemsafety" / "HChemSafety" / "doc_test.json")
    for path in (FIX / "hchemsafety", FIX / "hchemsafety" / "HChemSafety"):  # root or folder
        ds = HChemSafety(path).load()
        assert [d.text for d in ds.documents] == texts
        assert [d.doc_id for d in ds.documents] == ["doc_test#0", "doc_test#1", "doc_test#2"]
        assert [(q.qid, q.question, q.answers[0], q.task, q.doc_ids) for q in ds.queries] == [
            (f"QA_test#{i}", r["question"], r["answer"], "hchemsafety", ()) for i, r in enumerate(rows)]
        assert ds.report["n_docs"] == 3 and ds.report["queries_without_doc"] == 2
    assert HChemSafety(FIX / "hchemsafety").fingerprint() == HChemSafety(
        FIX / "hchemsafety" / "HChemSafety").fingerprint()


def test_hchemsafety_missing_docs_in_a_folder(tmp_path):
    shutil.copy(HCHEM_SAMPLE / "QA_test.json", tmp_path)
    with pytest.raises(ConfigError, match="doc_test.json does not exist"):
        HChemSafety(tmp_path).load()
    assert HChemSafety(tmp_path, qa_only=True).load().report["n_queries"] == 200
    with pytest.raises(ConfigError, match="does not exist"):
        HChemSafety(tmp_path / "nowhere").load()


def test_malformed_qa_and_documents(tmp_path):
    folder = tmp_path / "HChemSafety"
    folder.mkdir()
    write_json(folder / "QA_test.json", [{"question": "问？", "answer": "答。"}, {"question": "问二？"}])
    write_json(folder / "doc_test.json", ["文档一", "文档二"])
    e = load_error(HChemSafety(tmp_path))
    assert (e.dataset, e.row, e.field) == ("hchemsafety", "QA_test.json item 1", "answer")
    write_json(folder / "QA_test.json", [{"question": "问？", "answer": "答。"}])
    write_json(folder / "doc_test.json", ["文档一", "  "])
    e = load_error(HChemSafety(tmp_path))
    assert (e.row, e.field) == ("doc_test#1", "text") and "empty document" in str(e)
    (folder / "doc_test.json").write_text('["文档一",\n "文档二"\n', encoding="utf-8")
    e = load_error(HChemSafety(tmp_path))
    assert e.row == "doc_test.json line 3" and "malformed JSON" in str(e)
    (folder / "QA_test.json").write_bytes('[{"question": "问", "answer": "答"}]'.encode("gbk"))
    e = load_error(HChemSafety(tmp_path))
    assert e.row == "QA_test.json line 1" and "UTF-8" in str(e)


def test_bad_configuration():
    with pytest.raises(ConfigError, match="qa_only"):
        HChemSafety(qa_only="yes")
