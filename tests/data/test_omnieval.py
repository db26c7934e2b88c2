"""OmniEval, on small hand-written files in both question forms (QChunker's reduced copy,
OmniEval's generated rows) and both corpus forms (tests/fixtures/qchunker/omnieval)."""

import json

import pytest

from harness.data.omnieval import CORPUS_HUB_ID, HUB_ID, OmniEval
from harness.pipeline.components import build_components
from harness.types import ConfigError
from tests.data.qchunker_files import FIX, load_error, write_json

def test_omnieval_generated_rows_and_flashrag_corpus():
    ds = OmniEval(FIX / "omnieval", qa_file="autogen.jsonl").load()
    rows = [json.loads(x) for x in (FIX / "omnieval" / "autogen.jsonl").read_text().splitlines()]
    r = ds.report
    assert [d.doc_id for d in ds.documents] == ["doc-0001", "doc-0002", "doc-0004"]
    assert ds.documents[0].title == "基金定投" and r["docs_skipped_empty"] == 1
    assert r["queries_skipped_multi_turn"] == 1 and r["n_queries"] == 3
    first, second, third = ds.queries
    assert (first.qid, first.task, first.meta["topic"]) == ("autogen#0", "抽取式问答", "金融 - 基金")
    assert first.answers == (rows[0]["answer"],) and second.answers == tuple(rows[1]["answer"])
    assert first.doc_ids == ("doc-0001",) and first.meta["evidence_method"] == ["exact"]
    (span,) = first.evidence
    assert ds.documents[0].text[span.start:span.end] == rows[0]["relevant_passage"][0]
    assert second.doc_ids == ("doc-0002",) and second.meta["evidence_method"] == ["normalised"]
    assert second.meta["relevant_node"] == ["doc-0002"]
    assert third.qid == "autogen#3" and third.doc_ids == () and third.task == "长文本问答"
    assert third.unaligned_evidence == tuple(rows[3]["relevant_passage"])
    assert (r["relevant_node_in_corpus"], r["relevant_node_total"]) == (1, 2)
    assert [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")] == [1, 1, 0, 1]


def test_omnieval_qchunker_form_with_a_string_corpus():
    ds = OmniEval(FIX / "omnieval", corpus_file="corpus_strings.json").load()
    assert [d.doc_id for d in ds.documents] == ["doc#0", "doc#1", "doc#2"]
    assert [q.qid for q in ds.queries] == ["OmniEval#0", "OmniEval#1"]  # OmniEval.json found
    assert all(q.doc_ids == () and q.task == "omnieval" for q in ds.queries)
    ds = OmniEval(FIX / "omnieval", qa_file="autogen.jsonl", corpus_file="corpus_strings.json",
                  limit_docs=1).load()
    assert [q.qid for q in ds.queries] == ["autogen#0", "autogen#3"]  # 1 dropped with its doc


class _Table:
    def __init__(self, rows):
        self.rows = rows

    def to_list(self):
        return list(self.rows)


def test_omnieval_hub(monkeypatch):
    import datasets

    rows = [json.loads(x) for x in (FIX / "omnieval" / "autogen.jsonl").read_text().splitlines()]
    corpus = [json.loads(x) for x in
              (FIX / "omnieval" / "gen_datas_all-2048-256_docs" / "corpus.jsonl").read_text().splitlines()]
    calls = []

    def load_dataset(repo, split=None, revision=None, **kw):
        calls.append((repo, split, revision))
        return _Table({HUB_ID: rows, CORPUS_HUB_ID: corpus}[repo])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    loader = OmniEval("hub", revision="r1", corpus_revision="c1")
    fp = loader.fingerprint()
    ds = loader.load()
    assert sorted(calls) == sorted([(HUB_ID, "train", "r1"),  # one download each
                                    (CORPUS_HUB_ID, "train", "c1")])
    local = OmniEval(FIX / "omnieval", qa_file="autogen.jsonl").load()
    assert [(q.question, q.answers, q.doc_ids, q.evidence) for q in ds.queries] == [
        (q.question, q.answers, q.doc_ids, q.evidence) for q in local.queries]
    assert ds.queries[0].qid == "hub#0"
    assert fp == OmniEval("hub", revision="r1", corpus_revision="c1").fingerprint()
    assert fp != OmniEval("hub", revision="r1").fingerprint()

    def offline(repo, **kw):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(ConfigError, match="OmniEval-AutoGen-Dataset.*ConnectionError.*dataset.path="):
        OmniEval("hub").load()


def test_malformed_rows(tmp_path):
    (tmp_path / "qa.jsonl").write_text(
        '{"question": "问？", "answer": "答。"}\n{"question": "问二？", "topic_name": "t"}\n',
        encoding="utf-8")
    write_json(tmp_path / "corpus.json", ["文档"])
    e = load_error(OmniEval(tmp_path, qa_file="qa.jsonl", corpus_file="corpus.json"))
    assert (e.dataset, e.row, e.field) == ("omnieval", "qa.jsonl line 2", "answer")
    (tmp_path / "qa.jsonl").write_text('{"question": "问？", "answer": "答。"}\n{"question": \n',
                                       encoding="utf-8")
    e = load_error(OmniEval(tmp_path, qa_file="qa.jsonl", corpus_file="corpus.json"))
    assert e.row == "qa.jsonl line 2" and "malformed JSON" in str(e)


def test_bad_configuration_and_config(make_cfg):
    with pytest.raises(ConfigError, match="limit_docs"):
        OmniEval(limit_docs=-1)
    cfg = make_cfg("dataset=omnieval", f"dataset.path={FIX / 'omnieval'}",
                   "dataset.qa_file=autogen.jsonl", "retriever.scope=corpus")
    ds = build_components(cfg).dataset.load()
    assert len(ds.documents) == 3 and len(ds.queries) == 3
