"""The shared row reader (harness.data.rows): every bad row or field becomes a DataError naming
dataset, row and field."""

import gzip
import json

import pytest

from harness.data.rows import (WHOLE_ROW, RowFields, expand_paths, find_file, read_json_file,
                               read_qrels, read_rows, structs)
from harness.types import DataError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_read_rows_in_every_format(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": "a", "x": 1}, {"id": "b", "x": None}]
    _jsonl(tmp_path / "r.jsonl", rows)
    (tmp_path / "r.jsonl.gz").write_bytes(gzip.compress((tmp_path / "r.jsonl").read_bytes()))
    (tmp_path / "r.json").write_text(json.dumps(rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "r.parquet")
    assert list(read_rows(tmp_path / "r.jsonl", "ds")) == [("r.jsonl line 1", rows[0]),
                                                          ("r.jsonl line 2", rows[1])]
    assert [r for _, r in read_rows(tmp_path / "r.jsonl.gz", "ds")] == rows
    assert [loc for loc, _ in read_rows(tmp_path / "r.json", "ds")] == ["r.json item 0",
                                                                        "r.json item 1"]
    assert list(read_rows(tmp_path / "r.parquet", "ds")) == [("r.parquet row 0", rows[0]),
                                                            ("r.parquet row 1", rows[1])]
    with pytest.raises(ValueError, match="unsupported"):
        list(read_rows(tmp_path / "r.csv", "ds"))


def test_malformed_json_line_names_the_line(tmp_path):
    path = _jsonl(tmp_path / "queries.jsonl", [{"qid": "q1"}])
    with path.open("a") as f:
        f.write("\n{not json\n")
    with pytest.raises(DataError) as e:
        list(read_rows(path, "mine"))
    assert (e.value.dataset, e.value.row, e.value.field) == ("mine", "queries.jsonl line 3", WHOLE_ROW)
    assert str(e.value).endswith("malformed JSON: Expecting property name enclosed in double quotes (column 2)")
    assert " line 1" not in str(e.value)  # json's own line of the one-line text: only the file's is named
    (tmp_path / "list.json").write_text('{"not": "a list"}')
    with pytest.raises(DataError, match="JSON list"):
        list(read_rows(tmp_path / "list.json", "mine"))


@pytest.mark.parametrize("text", [json.dumps([{"qid": "q1"}, {"qid": "q2"}], indent=2),
                                  json.dumps([{"qid": "q1"}, {"qid": "q2"}]),
                                  json.dumps({"qid": "q1"}, indent=2)])
def test_a_json_document_in_a_jsonl_file_says_so(tmp_path, text):
    path = tmp_path / "queries.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(DataError, match="queries.jsonl holds one JSON document .* not JSON Lines: "
                                        "write one record per line") as e:
        list(read_rows(path, "mine"))
    assert e.value.row == "queries.jsonl line 1"


def test_a_lone_surrogate_names_row_and_field():
    """JSON's "\\ud800" decodes to half a UTF-16 pair, which no later encode survives."""
    row = json.loads('{"qid": "q1", "question": "ok \\ud800", "answers": ["a", "b\\udfff"]}')
    f = RowFields("mine", "queries.jsonl line 1", row, "qid")
    with pytest.raises(DataError, match=r"row 'q1', field 'question': holds a lone surrogate '\\ud800' "
                                        r"at character 3"):
        f.get("question", str)
    with pytest.raises(DataError, match=r"field 'answers\[1\]'"):
        f.get("answers", "str_list")
    pair = json.loads('{"qid": "q2", "question": "\\ud83d\\ude00"}')  # a whole pair is one character
    assert RowFields("mine", "x", pair, "qid").get("question", str) == "\U0001f600"


def test_bytes_that_are_not_utf8_name_row_and_field(tmp_path):
    path = tmp_path / "rows.jsonl"
    good = json.dumps({"id": "r1", "text": "fine"}).encode()
    bad = json.dumps({"id": "r2", "meta": {"title": "caf_"}}).encode().replace(b"caf_", b"caf\xe9")
    path.write_bytes(good + b"\n" + bad + b"\n")
    with pytest.raises(DataError) as e:
        list(read_rows(path, "mine", "id"))
    assert (e.value.row, e.value.field) == ("r2", "meta.title")
    assert "not valid UTF-8" in str(e.value) and "rows.jsonl line 2" in str(e.value)

    keyed = tmp_path / "papers.json"
    keyed.write_bytes(b'{"p1": {"title": "ok"}, "p2": {"qas": ["x", "caf\xe9"]}}')
    with pytest.raises(DataError) as e:
        read_json_file(keyed, "mine", "id", keyed=True)
    assert (e.value.row, e.value.field) == ("p2", "qas[1]")
    keyed.write_bytes(b'{"p1": ')
    with pytest.raises(DataError, match="malformed JSON"):
        read_json_file(keyed, "mine")


def test_row_fields_typed_access():
    f = RowFields("ds", "f.jsonl line 4", {"id": "r", "n": 3, "flag": True, "xs": ["a"],
                                           "meta": '{"k": 1}', "none": None}, "id")
    assert f.row == "r"
    assert f.get("n", int) == 3 and f.get("xs", "str_list") == ["a"] and f.get("none", str, "d") == "d"
    assert f.meta() == {"k": 1}
    with pytest.raises(DataError) as e:
        f.get("flag", int)  # a boolean is no integer
    assert (e.value.row, e.value.field) == ("r", "flag") and "(at f.jsonl line 4)" in str(e.value)
    with pytest.raises(DataError, match="missing required field"):
        f.get("absent", str)
    with pytest.raises(DataError) as e:
        f.get("k", str, source={"k": 5}, label="nested[0].k")
    assert e.value.field == "nested[0].k"
    with pytest.raises(DataError) as e:
        RowFields("ds", "f.jsonl line 5", ["a", "list"], "id")
    assert (e.value.row, e.value.field) == ("f.jsonl line 5", WHOLE_ROW)
    assert RowFields("ds", "f.jsonl line 6", {"id": 7}, "id").row == "f.jsonl line 6"


def test_structs_read_both_nestings():
    f = RowFields("ds", "loc", {"id": "p"}, "id")
    listed = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert structs(f, listed, "s") == listed
    assert structs(f, {"a": [1, 2], "b": ["x", "y"]}, "s") == listed
    assert structs(f, None, "s") == []
    with pytest.raises(DataError) as e:
        structs(f, {"a": [1, 2], "b": ["x"]}, "s")
    assert e.value.field == "s" and "differ in length" in str(e.value)
    with pytest.raises(DataError) as e:
        structs(f, [{"a": 1}, 5], "s")
    assert e.value.field == "s[1]"


def test_read_qrels_beir_and_trec(tmp_path):
    (tmp_path / "qrels").mkdir()
    beir = tmp_path / "qrels" / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq2\td2\t0\n")
    assert read_qrels(beir, "ds") == [("qrels/test.tsv line 2", "q1", "d1", "1"),
                                      ("qrels/test.tsv line 4", "q2", "d2", "0")]
    beir.write_text("q1 0 d1 2\n")
    assert read_qrels(beir, "ds")[0][1:] == ("q1", "d1", "2")
    beir.write_text("q1\td1\n")
    with pytest.raises(DataError) as e:
        read_qrels(beir, "ds")
    assert e.value.row == "qrels/test.tsv line 1" and "3 columns" in str(e.value)


def test_finding_files(tmp_path):
    (tmp_path / "b.jsonl").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.parquet").write_text("")
    (tmp_path / "sub" / "skip.txt").write_text("")
    assert find_file(tmp_path, "b", (".json", ".jsonl")) == tmp_path / "b.jsonl"
    with pytest.raises(FileNotFoundError, match="c.json, .*c.jsonl exists"):
        find_file(tmp_path, "c", (".json", ".jsonl"))
    assert expand_paths(tmp_path, (".jsonl", ".parquet")) == [tmp_path / "b.jsonl",
                                                            tmp_path / "sub" / "a.parquet"]
    assert expand_paths(tmp_path / "sub" / "skip.txt", ()) == [tmp_path / "sub" / "skip.txt"]
    assert expand_paths(tmp_path / "*.jsonl", ()) == [tmp_path / "b.jsonl"]


@pytest.mark.parametrize("data", [b"garbage" * 100, b"PAR1" + b"\0" * 40 + b"PAR1"])
def test_a_file_that_is_not_parquet_is_one_data_error_naming_it(tmp_path, data):
    path = tmp_path / "documents.parquet"
    path.write_bytes(data)
    with pytest.raises(DataError, match=f"{path} is not a readable Parquet file") as e:
        list(read_rows(path, "mine"))
    assert (e.value.row, e.value.field) == ("documents.parquet", WHOLE_ROW)
