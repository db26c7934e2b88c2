"""ConditionalQA: the bundled real dev.json rows (checksummed) read against a fixture page built
here from their evidence elements (the publisher's documents.json is not bundled), and small
hand-written folders in the publisher's layout for the mapping and the bad rows."""

import hashlib
import json
import shutil

import pytest

from harness.data.conditionalqa import BUNDLED, ConditionalQA, element_text
from harness.types import ConfigError, DataError


def write(path, rows):
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")


def page(url, contents, title="A page"):
    return {"title": title, "url": url, "contents": contents}


def test_bundled_sample_is_unchanged():
    for line in (BUNDLED / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((BUNDLED / name).read_bytes()).hexdigest() == digest, name


def test_real_rows_against_a_fixture_page(tmp_path):
    # The fixture pages hold every evidence element of the bundled rows, verbatim, between
    # filler elements: what the real pages do, minus the text not needed here.
    rows = json.loads((BUNDLED / "dev.json").read_text(encoding="utf-8"))
    shutil.copy(BUNDLED / "dev.json", tmp_path)
    pages = {}
    for r in rows:
        pages.setdefault(r["url"], ["<h1>Overview</h1>", "<p>Filler &amp; more.</p>"])
        pages[r["url"]] += [e for e in r["evidences"] if e not in pages[r["url"]]]
    write(tmp_path / "documents.json", [page(u, c) for u, c in pages.items()])
    ds = ConditionalQA(tmp_path).load()
    assert [q.qid for q in ds.queries] == [r["id"] for r in rows]
    by_id = {d.doc_id: d for d in ds.documents}
    for r, q in zip(rows, ds.queries):
        assert q.doc_ids == (r["url"],)
        assert q.question == f"{r['scenario']} {r['question']}"
        assert q.answers == tuple(a for a, _ in r["answers"])
        assert [by_id[s.doc_id].text[s.start:s.end] for s in q.evidence] == \
               [element_text(e) for e in dict.fromkeys(r["evidences"])]
        assert q.meta["not_answerable"] is r["not_answerable"]
    assert ds.report["evidence_unaligned"] == 0
    assert sum(not q.evidence for q in ds.queries) == sum(not r["evidences"] for r in rows)
    assert ConditionalQA(tmp_path, require_evidence=True).load().report["queries_dropped_no_evidence"] == \
           sum(not r["evidences"] for r in rows)


def test_bundled_source_has_no_documents():
    with pytest.raises(ConfigError, match="bundled sample holds real dev.json rows only.*documents.json"):
        ConditionalQA(source="bundled").load()
    with pytest.raises(ConfigError, match="dataset.path is required.*haitian-sun/ConditionalQA"):
        ConditionalQA()


def test_mapping_sections_and_unaligned_evidence(tmp_path):
    folder = tmp_path / "v1_0"  # the clone's root is found too
    folder.mkdir()
    contents = ["<h1>Overview</h1>", "<p>You can apply if you&#8217;re 21.</p>", "<p></p>",
                "<h2>Fees</h2>", "<tr><td>Form</td><td>£215</td></tr>", "<h1>Next</h1>", "<li>Apply.</li>",
                "<p>You can apply if you&#8217;re 21.</p>"]
    write(folder / "documents.json", [page("u1", contents, "Apply")])
    write(folder / "dev.json", [{"id": "dev-0", "url": "u1", "scenario": "", "question": "Who can apply?",
                                 "not_answerable": False, "answers": [["over 21", ["<li>Apply.</li>"]]],
                                 "evidences": ["<p>You can apply if you&#8217;re 21.</p>", "<p>Not there.</p>"]}])
    ds = ConditionalQA(tmp_path).load()
    doc, q = ds.documents[0], ds.queries[0]
    assert doc.text.split("\n\n") == ["Overview", "You can apply if you’re 21.", "Fees", "Form £215", "Next",
                                      "Apply.", "You can apply if you’re 21."]
    assert [(doc.text[s.start:s.end].split("\n\n")[0], s.level) for s in doc.sections] == \
           [("Overview", 1), ("Fees", 2), ("Next", 1)]
    assert doc.text[doc.sections[0].start:doc.sections[0].end].endswith("Form £215")
    assert [doc.text[s.start:s.end] for s in q.evidence] == ["You can apply if you’re 21."]
    assert q.evidence[0].start < doc.sections[1].start  # the first copy of a repeated element
    assert q.unaligned_evidence == ("Not there.",) and q.question == "Who can apply?"
    assert q.meta["conditions"] == [["Apply."]]
    assert ds.report["evidence_unaligned"] == 1 and ds.report["evidence_repeated"] == 1
    assert ConditionalQA(folder, with_scenario=False).load().queries[0].question == "Who can apply?"


@pytest.mark.parametrize("rows, docs, row, field, problem", [
    ([{"id": "dev-0", "url": "u1", "question": "Q?", "answers": [["yes"]], "evidences": []}], None,
     "dev-0", "answers[0]", "must be [answer text, [condition elements]]"),
    ([{"id": "dev-0", "url": "u9", "question": "Q?", "answers": [], "evidences": []}], None,
     "dev-0", "url", "names no page of documents.json"),
    ([{"id": "dev-0", "url": "u1", "answers": [], "evidences": []}], None, "dev-0", "question", "missing"),
    ([{"id": "dev-0", "url": "u1", "question": "Q?", "evidences": "<p>x</p>"}], None,
     "dev-0", "evidences", "must be"),
    ([], [page("u1", "<p>x</p>")], "u1", "contents", "must be"),
    ([], [page("u1", ["<p>x</p>"]), page("u1", ["<p>y</p>"])], "u1", "url", "duplicate url"),
])
def test_a_bad_row_is_one_line_naming_file_row_and_field(tmp_path, rows, docs, row, field, problem):
    write(tmp_path / "documents.json", docs or [page("u1", ["<p>x</p>"])])
    write(tmp_path / "dev.json", rows)
    with pytest.raises(DataError) as e:
        ConditionalQA(tmp_path).load()
    message = str(e.value)
    assert "\n" not in message and (e.value.row, e.value.field) == (row, field) and problem in message
    assert ".json item" in message  # the file and its item


def test_bad_configuration_and_missing_files(tmp_path):
    with pytest.raises(ConfigError, match="dataset.split must be one of dev, train"):
        ConditionalQA(tmp_path, split="test")
    with pytest.raises(ConfigError, match="dev.json does not exist"):
        ConditionalQA(tmp_path).load()
    write(tmp_path / "dev.json", [])
    with pytest.raises(ConfigError, match="documents.json does not exist"):
        ConditionalQA(tmp_path).load()
