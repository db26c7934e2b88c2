"""The harness's own schema: LocalDataset and write_local (the row reader itself: test_rows)."""

import json

import pytest

from harness.data.base import Dataset
from harness.data.local import LocalDataset, write_local
from harness.types import ConfigError, DataError, Document, Query, Section, Span


def _dataset() -> Dataset:
    docs = [
        Document("d1", "Alpha beta.\n\nGamma delta.", "One",
                 (Section(0, 11, 1, "a"), Section(13, 25, 2)), "en", {"domain": "x"}),
        Document("d2", "Zweiter Text.", language="de"),
        Document("d3", "third document"),
    ]
    queries = [
        Query("q1", "What is gamma?", ("delta",), ("d1",), (Span("d1", 13, 25),), ("fact",), "T1",
              {"evidence_method": ["fuzzy"]}, unaligned_evidence=("not in the text",),
              evidence_wording=("Gamma, delta",)),
        Query("q2", "Which text?", (), ("d2",)),
        Query("q3", "Across?", ("x",), ("d1", "d3")),
        Query("q4", "Evidence only in d3", evidence=(Span("d3", 0, 5),)),
    ]
    return Dataset("demo", docs, queries).validate()


def _write_rows(folder, docs, queries):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "documents.jsonl").write_text("".join(json.dumps(r) + "\n" for r in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    return folder


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_round_trip(tmp_path, fmt):
    original = _dataset()
    write_local(original, tmp_path, fmt=fmt)
    loaded = LocalDataset(tmp_path, name="demo").load()
    assert loaded.documents == original.documents
    assert loaded.queries == original.queries
    assert [d.meta for d in loaded.documents] == [d.meta for d in original.documents]
    assert [q.meta for q in loaded.queries] == [q.meta for q in original.queries]
    docs = {d.doc_id: d for d in loaded.documents}
    assert loaded.queries[0].evidence_texts(docs) == ["Gamma delta.", "not in the text"]
    assert loaded.queries[0].unaligned_evidence == ("not in the text",)
    # the dataset's own words for the span, which evidence_recall looks up
    assert loaded.queries[0].evidence_as_given(docs) == ["Gamma, delta", "not in the text"]
    assert loaded.report["n_unaligned_evidence"] == 1 and loaded.report["n_evidence_spans"] == 2


def test_writer_removes_the_other_format(tmp_path):
    write_local(_dataset(), tmp_path, fmt="jsonl")
    write_local(_dataset(), tmp_path, fmt="parquet")
    assert not (tmp_path / "documents.jsonl").exists()
    assert (tmp_path / "queries.parquet").exists()


def test_limit_docs_keeps_only_queries_on_kept_docs(tmp_path):
    write_local(_dataset(), tmp_path)
    ds = LocalDataset(tmp_path, limit_docs=2).load()
    assert [d.doc_id for d in ds.documents] == ["d1", "d2"]
    assert [q.qid for q in ds.queries] == ["q1", "q2"]  # q3 needs d3, q4's evidence is in d3
    assert ds.report["docs_dropped_limit_docs"] == 1
    assert ds.report["queries_dropped_limit_docs"] == 2


def test_limit_queries_after_limit_docs(tmp_path):
    write_local(_dataset(), tmp_path)
    ds = LocalDataset(tmp_path, limit_docs=2, limit_queries=1).load()
    assert [q.qid for q in ds.queries] == ["q1"]
    assert ds.report["queries_dropped_limit_queries"] == 1
    assert len(LocalDataset(tmp_path, limit_queries=3).load().queries) == 3


def test_fingerprint_follows_content_and_parameters(tmp_path):
    write_local(_dataset(), tmp_path)
    a = LocalDataset(tmp_path).fingerprint()
    assert a == LocalDataset(tmp_path).fingerprint()
    assert a != LocalDataset(tmp_path, limit_docs=1).fingerprint()
    with (tmp_path / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"qid": "q9", "question": "new?"}) + "\n")
    assert a != LocalDataset(tmp_path).fingerprint()


_DOC = {"doc_id": "d1", "text": "Some text here."}
_QUERY = {"qid": "q1", "question": "What?", "doc_ids": ["d1"]}


@pytest.mark.parametrize("doc, row, field", [
    ({"text": "no id"}, "documents.jsonl line 1", "doc_id"),
    ({"doc_id": "d1"}, "d1", "text"),
    ({"doc_id": "d1", "text": 5}, "d1", "text"),
    ({"doc_id": 7, "text": "x"}, "documents.jsonl line 1", "doc_id"),
    ({**_DOC, "sections": [{"start": 0, "end": "4", "level": 1}]}, "d1", "sections[0].end"),
    ({**_DOC, "sections": [{"start": 0, "end": 99, "level": 1}]}, "d1", "sections[0]"),
    ({**_DOC, "sections": [{"start": 0, "end": 4}]}, "d1", "sections[0].level"),
    ({**_DOC, "meta": ["not", "a", "dict"]}, "d1", "meta"),
    ({**_DOC, "language": None, "title": 3}, "d1", "title"),
])
def test_document_errors_name_dataset_row_field(tmp_path, doc, row, field):
    _write_rows(tmp_path, [doc], [_QUERY])
    with pytest.raises(DataError) as e:
        LocalDataset(tmp_path, name="mine").load()
    assert (e.value.dataset, e.value.row, e.value.field) == ("mine", row, field)


@pytest.mark.parametrize("query, row, field", [
    ({"question": "no id"}, "queries.jsonl line 1", "qid"),
    ({"qid": "q1"}, "q1", "question"),
    ({**_QUERY, "answers": "not a list"}, "q1", "answers"),
    ({**_QUERY, "answers": ["ok", 3]}, "q1", "answers"),
    ({**_QUERY, "doc_ids": ["nope"]}, "q1", "doc_ids"),
    ({**_QUERY, "evidence": [{"doc_id": "d1", "start": 0}]}, "q1", "evidence[0].end"),
    ({**_QUERY, "evidence": [{"doc_id": "d1", "start": 0, "end": 999}]}, "q1", "evidence[0]"),
    ({**_QUERY, "evidence": [{"doc_id": "d1", "start": True, "end": 3}]}, "q1",
     "evidence[0].start"),
    ({**_QUERY, "task": ["T1"]}, "q1", "task"),
    ({**_QUERY, "unaligned_evidence": ["ok", 3]}, "q1", "unaligned_evidence"),
    ({**_QUERY, "evidence": [{"doc_id": "nope", "text": "Alpha"}]}, "q1", "evidence[0].doc_id"),
    ({**_QUERY, "evidence": [{"doc_id": "d1", "text": "Alpha", "start": 0, "end": 5}]}, "q1", "evidence[0]"),
    ({**_QUERY, "evidence": [{"doc_id": "d1", "text": " "}]}, "q1", "evidence[0].text"),
    ({**_QUERY, "evidence": [{"doc_id": "d1", "text": "Alpha"}], "evidence_wording": ["A"]}, "q1",
     "evidence_wording"),
])
def test_query_errors_name_dataset_row_field(tmp_path, query, row, field):
    _write_rows(tmp_path, [_DOC], [query])
    with pytest.raises(DataError) as e:
        LocalDataset(tmp_path, name="mine").load()
    assert (e.value.dataset, e.value.row, e.value.field) == ("mine", row, field)
    assert "'mine'" in str(e.value) and field in str(e.value)


def test_older_files_kept_evidence_in_meta(tmp_path):
    """Before ``unaligned_evidence`` was a field, it sat in meta next to ``evidence_text`` (the
    spans' text): the first is read into the field, the second dropped."""
    old = {**_QUERY, "evidence": [{"doc_id": "d1", "start": 0, "end": 4}],
           "meta": {"evidence_text": ["Some"], "unaligned_evidence": ["elsewhere"], "k": 1}}
    _write_rows(tmp_path, [_DOC], [old])
    (q,) = LocalDataset(tmp_path).load().queries
    assert q.unaligned_evidence == ("elsewhere",) and q.meta == {"k": 1}
    assert q.evidence_texts({"d1": Document("d1", _DOC["text"])}) == ["Some", "elsewhere"]
    _write_rows(tmp_path, [_DOC], [{**old, "unaligned_evidence": ["twice"]}])
    with pytest.raises(DataError) as e:
        LocalDataset(tmp_path).load()
    assert (e.value.row, e.value.field) == ("q1", "unaligned_evidence")
    _write_rows(tmp_path, [_DOC], [{**_QUERY, "meta": {"unaligned_evidence": "not a list"}}])
    with pytest.raises(DataError) as e:
        LocalDataset(tmp_path).load()
    assert (e.value.row, e.value.field) == ("q1", "meta.unaligned_evidence")


def test_non_object_row_and_duplicate_id(tmp_path):
    _write_rows(tmp_path, [_DOC, ["a", "list"]], [])
    with pytest.raises(DataError, match="documents.jsonl line 2"):
        LocalDataset(tmp_path).load()
    _write_rows(tmp_path, [_DOC], [_QUERY, _QUERY])
    with pytest.raises(DataError) as e:
        LocalDataset(tmp_path).load()
    assert (e.value.row, e.value.field) == ("q1", "qid")
    assert "duplicate" in str(e.value) and "line 2" in str(e.value)


def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(ConfigError, match="dataset.path=.*absent does not exist"):
        LocalDataset(tmp_path / "absent")
    (tmp_path / "documents.jsonl").write_text(json.dumps(_DOC) + "\n")
    with pytest.raises(ConfigError, match="has no queries file: put queries.jsonl"):
        LocalDataset(tmp_path)
    with pytest.raises(ConfigError, match="documents.jsonl.* is a file: give the folder"):
        LocalDataset(tmp_path / "documents.jsonl")


def test_bad_parameters():
    with pytest.raises(ConfigError, match="dataset.path"):
        LocalDataset("???")
    with pytest.raises(ConfigError, match="limit_docs"):
        LocalDataset("x", limit_docs=-1)


def test_evidence_given_as_text_is_aligned_and_counted(tmp_path):
    """``{doc_id, text}`` evidence goes through the loaders' aligner (exact, normalised, fuzzy), in
    the order given beside offset spans; a text no document holds is kept unaligned and counted."""
    docs = [{"doc_id": "d1", "text": "Alpha beta.\n\nGamma   delta \u201cquoted\u201d. Epsilon."},
            {"doc_id": "d2", "text": "Zweiter Text."}]
    queries = [
        {"qid": "q1", "question": "Gamma?", "evidence": [
            {"doc_id": "d1", "start": 0, "end": 5},
            {"doc_id": "d1", "text": "Gamma delta \"quoted\"."},   # whitespace and quotes differ
            {"doc_id": "d2", "text": "Zweiter Text."}]},
        {"qid": "q2", "question": "Missing?", "doc_ids": ["d1"],
         "evidence": [{"doc_id": "d1", "text": "Nothing of the kind is written in this document at all."}]}]
    ds = LocalDataset(_write_rows(tmp_path, docs, queries)).load()
    q1, q2 = ds.queries
    text = ds.documents[0].text
    assert [text[s.start:s.end] for s in q1.evidence[:2]] == ["Alpha", "Gamma   delta \u201cquoted\u201d."]
    assert q1.evidence[2] == Span("d2", 0, 13)
    assert q1.evidence_wording == ("Alpha", "Gamma delta \"quoted\".", "Zweiter Text.")
    assert q2.evidence == () and q2.unaligned_evidence == ("Nothing of the kind is written in this document at all.",)
    r = ds.report
    assert (r["evidence_total"], r["evidence_exact"], r["evidence_normalised"], r["evidence_unaligned"]) == (3, 1, 1, 1)
    assert (r["n_evidence_spans"], r["n_unaligned_evidence"]) == (3, 1)
    # a limit on documents drops the question whose text evidence is in a document left out
    limited = LocalDataset(tmp_path, limit_docs=1).load()
    assert [q.qid for q in limited.queries] == ["q2"] and limited.report["evidence_total"] == 1
