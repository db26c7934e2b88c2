"""A folder of one's own data that would change a score without a word (issue 51, items 6-8): each
refused in one line naming the file, row and field, or counted in the load report and said in one
warning. Checks by hand, then through the command line on the issue's one-document folder."""

import json
import os
import subprocess
import sys

import pytest

from harness.data.evidence_checks import cut_at, from_utf16, whitespace_only
from harness.data.languages import language_problem
from harness.data.local import LocalDataset
from harness.data.rows import read_rows
from harness.files import not_regular
from harness.types import DataError, Document, Span
from tests.test_cli import ENV

TEXT = "The river Thames flows through London. It is the longest river in England. Tower Bridge crosses it."
EMOJI = "🙂🙂 The river Thames flows through London. Bridges cross it."
DOC = {"doc_id": "d1", "text": TEXT}
Q1 = {"qid": "q1", "question": "Which river flows through London?", "answers": ["The Thames"],
      "doc_ids": ["d1"], "evidence": [{"doc_id": "d1", "start": 0, "end": 38}]}


def utf16(text: str, i: int) -> int:
    return len(text[:i].encode("utf-16-le")) // 2


def folder(path, docs=(DOC,), queries=(Q1,)):
    path.mkdir(parents=True, exist_ok=True)
    (path / "documents.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    (path / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    return path


def chunkbench(tmp_path, data, *overrides):
    """The issue's command on the folder ``data``."""
    return subprocess.run([sys.executable, "-m", "harness", "dataset=local", f"dataset.path={data}", "retriever=bm25",
                           f"cache.dir={tmp_path / 'cache'}", "tracking=none", *overrides],
                          cwd=tmp_path, env=ENV, text=True, capture_output=True, timeout=300)


def one_line(p, *named):
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr[-3000:]
    assert p.stderr.startswith("chunkbench: error: ") and all(n in p.stderr for n in named), p.stderr
    return p.stderr


# --- by hand ------------------------------------------------------------------------------------

def test_a_span_cut_inside_a_word_or_a_character_sequence_is_flagged():
    assert not cut_at(TEXT, 0, 38) and not cut_at(TEXT, 4, 9)      # "river": word edges
    assert cut_at(TEXT, 1, 38) and cut_at(TEXT, 0, 36)              # "he river ..." / "... Londo"
    assert not cut_at("河流经过伦敦。", 1, 3)                          # no spaces between words: any boundary
    assert cut_at("e\u0301t\u00e9", 0, 1)                           # before a combining accent
    assert cut_at("👍🏽 ok", 0, 1)                                    # between an emoji and its skin tone
    assert not cut_at(TEXT, 0, 1000)                                # outside the text: validation says so


def test_utf16_offsets_are_read_back_as_characters():
    s, e = EMOJI.index("The"), EMOJI.index("London.") + 7
    assert (from_utf16(EMOJI, utf16(EMOJI, s)), from_utf16(EMOJI, utf16(EMOJI, e))) == (s, e)
    assert cut_at(EMOJI, utf16(EMOJI, s), utf16(EMOJI, e)) and not cut_at(EMOJI, s, e)


def test_whitespace_only_span():
    doc = Document("d1", "a \n\t b")
    assert whitespace_only(Span("d1", 1, 5), doc) and not whitespace_only(Span("d1", 0, 2), doc)
    assert not whitespace_only(Span("d1", 1, 50), doc)  # out of range: left to validation


@pytest.mark.parametrize("tag, ok", [("en", True), ("zh", True), ("zh-Hans", True), ("en_US", True),
                                     ("xx", False), ("english", False), ("", False)])
def test_language_codes(tag, ok):
    assert (language_problem(tag) is None) == ok


def test_json_nested_too_deep_names_its_line(tmp_path):
    path = tmp_path / "documents.jsonl"
    path.write_text('{"doc_id": "a", "text": "x"}\n{"meta": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DataError, match=r"row 'documents.jsonl line 2'.*JSON nested too deeply"):
        list(read_rows(path, "local"))


def test_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "file").write_text("")
    assert not_regular(tmp_path / "fifo") == "a FIFO (named pipe)"
    assert not_regular(tmp_path / "zero") == "a character device (/dev/zero)"
    assert not_regular(tmp_path) == "a folder"
    assert not_regular(tmp_path / "file") is None and not_regular(tmp_path / "missing") is None


def test_the_load_report_counts_what_it_drops_and_flags(tmp_path):
    s, e = EMOJI.index("The"), EMOJI.index("London.") + 7
    space = TEXT.index(". It") + 1
    data = folder(tmp_path / "d", docs=[DOC, {"doc_id": "d2", "text": EMOJI}], queries=[
        Q1, {**Q1, "qid": "q2", "evidence": []},
        {**Q1, "qid": "q3", "evidence": [{"doc_id": "d1", "start": space, "end": space + 1},
                                         {"doc_id": "d1", "start": 0, "end": 38}],
         "evidence_wording": [" ", "The river Thames flows through London."]},
        {**Q1, "qid": "q4", "doc_ids": ["d2"], "evidence": [{"doc_id": "d2", "start": utf16(EMOJI, s),
                                                              "end": utf16(EMOJI, e)}]}])
    ds = LocalDataset(path=data).load()
    r = ds.report
    assert (r["queries_no_evidence"], r["evidence_spans_whitespace"], r["evidence_spans_cut"]) == (1, 1, 1)
    q3 = ds.queries[2]
    assert q3.evidence == (Span("d1", 0, 38),) and q3.evidence_wording == ("The river Thames flows through London.",)


# --- through the command line ------------------------------------------------------------------

def test_evidence_that_would_change_a_score_is_counted_and_said(tmp_path):
    """``evidence: []`` is n/a (left out of every evidence mean, not 0); a whitespace span is dropped;
    a span in UTF-16 units is flagged, named, with its text read as characters."""
    s, e = EMOJI.index("The"), EMOJI.index("London.") + 7
    space = TEXT.index(". It") + 1
    data = folder(tmp_path / "D", docs=[DOC, {"doc_id": "d2", "text": EMOJI}], queries=[
        Q1, {**Q1, "qid": "q2", "evidence": []},
        {**Q1, "qid": "q3", "evidence": [{"doc_id": "d1", "start": space, "end": space + 1}]},
        {**Q1, "qid": "q4", "doc_ids": ["d2"], "evidence": [{"doc_id": "d2", "start": utf16(EMOJI, s),
                                                              "end": utf16(EMOJI, e)}]}])
    p = chunkbench(tmp_path, data)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "dataset 'local': 2 of 4 queries give no evidence: the evidence and span metrics score them n/a" in out
    assert "dataset 'local': 1 evidence span covers only whitespace: dropped" in out
    assert ("1 evidence span starts or ends inside a word or a character sequence (the first: query 'q4' "
            "evidence[0], 'e river Thames flows through London. B' of document 'd2'); read as UTF-16 units") in out
    assert "it would be 'The river Thames flows through London.'" in out
    rows = {line.split("│")[2].strip(): line.split("│")[-2].strip() for line in out.splitlines()
            if line.count("│") > 4 and "evidence" in line}
    assert rows["evidence_recall"] == rows["evidence_span_recall"] == "2"  # q1 and q4 scored; q2, q3 n/a


@pytest.mark.parametrize("case, named", [
    ("both_formats", ["holds both documents.jsonl and documents.parquet: keep one"]),
    ("fifo", ["documents.jsonl is a FIFO (named pipe), not a file"]),
    ("dev_zero", ["documents.jsonl is a character device (/dev/zero), not a file"]),
    ("language", ["row 'd1', field 'language': 'xx' is not a language code: give an ISO 639-1 code (en, zh"]),
    ("deep", ["row 'documents.jsonl line 1'", "JSON nested too deeply to read"]),
    ("empty_qid", ["row 'queries.jsonl line 2', field 'qid': is empty ('')"]),
    ("empty_doc_id", ["row 'documents.jsonl line 2', field 'doc_id': is empty ('')"]),
])
def test_bad_local_data_is_one_line(tmp_path, case, named):
    data = folder(tmp_path / "D")
    if case == "both_formats":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist([{"doc_id": "other", "text": "other"}]), data / "documents.parquet")
    elif case in ("fifo", "dev_zero"):
        (data / "documents.jsonl").unlink()
        os.mkfifo(data / "documents.jsonl") if case == "fifo" else (data / "documents.jsonl").symlink_to("/dev/zero")
    elif case == "language":
        folder(data, docs=[{**DOC, "language": "xx"}])
    elif case == "deep":
        (data / "documents.jsonl").write_text('{"doc_id": "d1", "text": "x", "meta": ' + "[" * 100_000
                                              + "]" * 100_000 + "}\n")
    elif case == "empty_qid":
        folder(data, queries=[Q1, {**Q1, "qid": ""}])
    elif case == "empty_doc_id":
        folder(data, docs=[DOC, {"doc_id": "", "text": "y"}])
    one_line(chunkbench(tmp_path, data), *named)
    assert not (tmp_path / "cache" / "chunk_doc").exists()  # refused before any chunking


def test_a_quoted_home_path_is_expanded(tmp_path):
    """Hydra reads ``~`` only quoted (``'dataset.path="~/D"'``, as the one line for the unquoted one says)."""
    data = folder(tmp_path / "home" / "D")
    p = subprocess.run([sys.executable, "-m", "harness", "dataset=local", 'dataset.path="~/D"', "retriever=bm25",
                        f"cache.dir={tmp_path / 'cache'}", "tracking=none"], cwd=tmp_path,
                       env={**ENV, "HOME": str(data.parent)}, text=True, capture_output=True, timeout=300)
    assert p.returncode == 0 and "[evaluate]" in p.stdout, p.stderr[-3000:]


def test_a_fifo_as_the_folder_is_named(tmp_path):
    from harness.types import ConfigError

    os.mkfifo(tmp_path / "D")
    with pytest.raises(ConfigError, match=r"dataset.path=.*D is a FIFO \(named pipe\): give the folder"):
        LocalDataset(path=tmp_path / "D")
