"""Natural Questions loader (MC-indexing's NQ), on hand-built rows in the Hub layout
(tests/fixtures/nq/validation.jsonl, made consistent by tests/fixtures/nq/build.py)."""

import copy
import importlib.util
import json

import datasets
import pytest

from harness.data.nq import HUB_ID, NaturalQuestions
from harness.data.nq_rows import from_google_row
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "nq"
ROWS_FILE = FIXTURES / "validation.jsonl"
_spec = importlib.util.spec_from_file_location("nq_fixture_build", FIXTURES / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

APOLLO_TEXT = (
    "Apollo 11\n\n"
    "Apollo 11 was the American spaceflight that first landed humans on the Moon .\n\n"
    "Mission\n\n"
    "The crew launched from Kennedy Space Center on July 16 , 1969 .\n\n"
    "Landing\n\n"
    "Armstrong and Aldrin landed the lunar module Eagle on July 20 , 1969 , in the Sea of "
    "Tranquility .\n\n"
    "Commander Neil Armstrong\nPilot Buzz Aldrin\n\n"
    "Return\n\n"
    "The crew splashed down in the Pacific Ocean on July 24 .\n\n"
    "Legacy\n\n"
    "Aldrin’s boot print remains on the Moon .")


def _rows():
    return [json.loads(line) for line in ROWS_FILE.read_text(encoding="utf-8").splitlines()]


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _load(path=ROWS_FILE, **kw):
    kw.setdefault("min_tokens", 0)
    return NaturalQuestions(path=path, **kw).load()


@pytest.fixture(scope="module")
def fixture_ds():
    return _load()


@pytest.fixture
def hub(monkeypatch):
    """``datasets.load_dataset`` standing in for the Hub: records its calls, serves rows."""
    calls, served = [], {"rows": _rows()}

    def fake(path, name=None, **kw):
        calls.append((path, name, kw))
        return iter(served["rows"]) if kw.get("streaming") else list(served["rows"])

    monkeypatch.setattr(datasets, "load_dataset", fake)
    return calls, served


def _text_tokens(row, start, end):
    t = row["document"]["tokens"]
    return [t["token"][k] for k in range(start, end) if not t["is_html"][k]]


def test_fixture_file_is_built_by_its_script():
    assert build.rows() == _rows()
    row = _rows()[0]  # byte offsets point at the tokens in the html (UTF-8, non-ASCII inside)
    html, toks = row["document"]["html"].encode(), row["document"]["tokens"]
    assert all(html[s:e].decode() == t for t, s, e in
               zip(toks["token"], toks["start_byte"], toks["end_byte"]))
    assert any(len(t.encode()) != len(t) for t in toks["token"])


def test_hub_path_counts_and_report(hub):
    calls, _ = hub
    ds = NaturalQuestions(min_tokens=0).load()  # the config's defaults: path=hub, dev/validation
    assert calls == [(HUB_ID, "dev", {"split": "validation", "streaming": False, "revision": None})]
    assert [q.qid for q in ds.queries] == ["5001", "5005", "5006"]
    assert [d.doc_id for d in ds.documents] == ["Apollo 11", "Great Barrier Reef"]
    r = ds.report
    assert (r["n_docs"], r["n_queries"], r["rows_read"]) == (2, 3, 6)
    assert r["queries_skipped_no_long_answer"] == 1                 # 5004
    assert r["queries_skipped_annotations_across_sections"] == 1    # 5003
    assert r["queries_skipped_answer_in_dropped_section"] == 1      # 5002
    assert r["queries_skipped_min_tokens"] == 0
    assert r["evidence_total"] == r["evidence_exact"] == r["evidence_from_token_offsets"] == 3
    assert r["evidence_unaligned"] == 0 and r["sections_dropped"] == 5
    assert r["tokens_per_doc"] == (79 + 55) / 2 and r["sections_per_doc"] == 4.5
    assert all(isinstance(v, (int, float)) for v in r.values())


def test_text_is_the_text_tokens_with_layout_breaks(fixture_ds):
    apollo, reef = fixture_ds.documents
    assert apollo.text == APOLLO_TEXT
    assert apollo.meta["n_tokens"] == len(APOLLO_TEXT.split()) == 79
    assert "It stretches over 2,300 kilometres .\nIt covers an area" in reef.text  # list items
    assert apollo.title == "Apollo 11" and apollo.meta["url"].endswith("oldid=1001")


def test_headings_become_nested_sections(fixture_ds):
    apollo, reef = fixture_ds.documents
    got = [(s.level, s.title, apollo.text[s.start:s.end]) for s in apollo.sections]
    assert [g[:2] for g in got] == [(1, "Apollo 11"), (2, "Mission"), (3, "Landing"),
                                    (3, "Return"), (2, "Legacy")]
    assert got[0][2] == APOLLO_TEXT                                  # the title spans the page
    assert got[1][2].startswith("Mission\n\n") and got[1][2].endswith("July 24 .")
    assert got[2][2].startswith("Landing") and got[2][2].endswith("Pilot Buzz Aldrin")
    assert got[4][2] == "Legacy\n\nAldrin’s boot print remains on the Moon ."
    assert [s.title for s in reef.sections] == ["Great Barrier Reef", "Geography", "Visibility",
                                                "Ecology"]


def test_dropped_sections_leave_the_text(fixture_ds):
    apollo, reef = fixture_ds.documents
    for gone in ("See also", "Apollo program", "Related missions", "Apollo 12", "Notes",
                 "UTC", "References", "NASA history"):
        assert gone not in apollo.text
    assert apollo.meta["sections_dropped"] == ["See also", "Notes", "References"]
    assert "Astronauts" not in reef.text and "Reef authority" not in reef.text  # an H3 "Notes"
    kept = _load(drop_sections=[])
    apollo_all = kept.documents[0]
    assert "See also\n\nApollo program\nMoon landing\n\nRelated missions" in apollo_all.text
    assert [q.qid for q in kept.queries] == ["5001", "5002", "5005", "5006"]
    (see_also,) = [q for q in kept.queries if q.qid == "5002"]
    assert apollo_all.text[see_also.evidence[0].start:see_also.evidence[0].end] == "Apollo program"


def test_long_answer_span_is_its_tokens(fixture_ds):
    rows = {r["id"]: r for r in _rows()}
    docs = {d.doc_id: d for d in fixture_ds.documents}
    for q in fixture_ds.queries:
        row = rows[q.qid]
        (span,) = q.evidence
        long = next(la for la in row["annotations"]["long_answer"] if la["start_token"] >= 0)
        text = docs[span.doc_id].text[span.start:span.end]
        assert text.split() == _text_tokens(row, long["start_token"], long["end_token"])
        assert q.evidence_texts(docs) == [text] and q.unaligned_evidence == ()
        assert q.meta["long_answer_tokens"] == [[long["start_token"], long["end_token"]]]
        assert q.meta["long_answer_bytes"] == [[long["start_byte"], long["end_byte"]]]
        assert q.question == row["question"]["text"] and q.doc_ids == (span.doc_id,)
        for s, e in q.meta["short_answer_spans"]:
            assert docs[span.doc_id].text[s:e] in q.answers
    by_id = {q.qid: q for q in fixture_ds.queries}
    assert by_id["5001"].answers == ("July 20 , 1969",)          # first annotator with a long answer
    assert by_id["5001"].meta["annotation_ids"] == ["500100"]
    assert by_id["5005"].answers == ("yes",)
    assert by_id["5006"].answers == ("2,300 kilometres", "344,400 square kilometres")


def test_annotation_settings():
    all_ = {q.qid: q for q in _load(annotation="all").queries}
    apollo = _load(annotation="all").documents[0]
    texts = [apollo.text[e.start:e.end] for e in all_["5001"].evidence]
    assert texts[0].startswith("Armstrong and Aldrin") and texts[1] == (
        "Commander Neil Armstrong\nPilot Buzz Aldrin")            # three annotators agree, one differs
    assert all_["5001"].answers == ("July 20 , 1969", "July 20")
    split = {q.qid: q for q in _load(same_section=False).queries}
    assert "5003" in split and split["5003"].answers == ("Neil Armstrong",)
    no_long = {q.qid: q for q in _load(require_long_answer=False).queries}
    assert no_long["5004"].evidence == () and no_long["5004"].answers == ()
    section = _load(answer_scope="section")
    doc = section.documents[0]
    ev = section.queries[0].evidence[0]
    assert doc.text[ev.start:ev.end].startswith("Landing\n\nArmstrong")
    assert doc.text[ev.start:ev.end].endswith("Buzz Aldrin")


def test_min_tokens_counts_text_tokens_after_the_drop(hub, tmp_path):
    _, served = hub
    long_rows = []
    for rid, n in (("9001", 10000), ("9002", 9999)):
        page = build.long_page(f"Long{rid}", n) + "\n<H2> References </H2>\n<P> " + "r " * 50 + "</P>"
        doc = build.document(f"Long{rid}", page, f"https://example.org/{rid}")
        la = build.long_answer(doc, "P", "w1x0 w1x1")
        long_rows.append(build.row(rid, doc, f"question {rid}", [(la, None, -1)]))
    served["rows"] = long_rows
    ds = NaturalQuestions().load()  # min_tokens=10000 by default
    assert [q.qid for q in ds.queries] == ["9001"]
    assert ds.documents[0].meta["n_tokens"] == 10000
    assert ds.report["queries_skipped_min_tokens"] == 1


def test_local_parquet_folder_matches_jsonl(tmp_path, fixture_ds):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "dev"
    folder.mkdir()
    rows = _rows()
    pq.write_table(pa.Table.from_pylist(rows[:3]), folder / "validation-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(rows[3:]), folder / "validation-00001-of-00002.parquet")
    ds = _load(folder)
    assert [d.text for d in ds.documents] == [d.text for d in fixture_ds.documents]
    assert [(q.qid, q.evidence, q.answers) for q in ds.queries] == [
        (q.qid, q.evidence, q.answers) for q in fixture_ds.queries]
    assert ds.report["rows_read"] == 6
    nq = NaturalQuestions(path=folder, min_tokens=0)
    assert nq.fingerprint() == NaturalQuestions(path=folder, min_tokens=0).fingerprint()
    assert nq.fingerprint() != NaturalQuestions(path=folder, min_tokens=1).fingerprint()


def _google(row):
    """The same row in Google's original jsonl layout."""
    t, a = row["document"]["tokens"], row["annotations"]
    return {
        "example_id": int(row["id"]), "question_text": row["question"]["text"],
        "question_tokens": row["question"]["tokens"], "document_title": row["document"]["title"],
        "document_url": row["document"]["url"], "document_html": row["document"]["html"],
        "document_tokens": [{"token": tok, "html_token": h, "start_byte": s, "end_byte": e}
                            for tok, h, s, e in zip(t["token"], t["is_html"], t["start_byte"],
                                                    t["end_byte"])],
        "long_answer_candidates": [dict(zip(row["long_answer_candidates"], v)) for v in
                                   zip(*row["long_answer_candidates"].values())],
        "annotations": [{"annotation_id": int(i), "long_answer": la,
                         "short_answers": [{"start_token": s, "end_token": e, "start_byte": sb,
                                            "end_byte": eb} for s, e, sb, eb in
                                           zip(sa["start_token"], sa["end_token"],
                                               sa["start_byte"], sa["end_byte"])],
                         "yes_no_answer": {-1: "NONE", 0: "NO", 1: "YES"}[yn]}
                        for i, la, sa, yn in zip(a["id"], a["long_answer"], a["short_answers"],
                                                 a["yes_no_answer"])],
    }


def test_google_release_layout_reads_the_same(tmp_path, fixture_ds):
    import gzip

    path = tmp_path / "nq-dev-00.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in _rows():
            f.write(json.dumps(_google(r)) + "\n")
    ds = _load(path)
    assert [(q.qid, q.evidence, q.answers) for q in ds.queries] == [
        (q.qid, q.evidence, q.answers) for q in fixture_ds.queries]
    assert from_google_row(_google(_rows()[0]))["document"]["tokens"][0]["is_html"] is True


def test_same_page_is_one_document_and_revisions_are_told_apart(tmp_path):
    rows = _rows()
    ds = _load(_write(tmp_path / "a.jsonl", rows))
    assert {q.doc_ids for q in ds.queries} == {("Apollo 11",), ("Great Barrier Reef",)}
    other = copy.deepcopy(rows[5])  # the reef page, another revision: one token differs
    other["id"] = "5007"
    tokens = other["document"]["tokens"]["token"]
    tokens[tokens.index("Cairns")] = "Townsville"
    ds = _load(_write(tmp_path / "b.jsonl", rows + [other]))
    ids = [d.doc_id for d in ds.documents]
    assert ids[:2] == ["Apollo 11", "Great Barrier Reef"] and ids[2].startswith("Great Barrier Reef @")
    assert ds.report["docs_title_collisions"] == 1


def test_limits_stop_the_scan(hub):
    calls, served = hub
    consumed = []

    def stream():
        for r in _rows():
            consumed.append(r["id"])
            yield r

    served["rows"] = list(stream())  # list: non-streaming; reset below for the stream
    consumed.clear()
    ds = NaturalQuestions(min_tokens=0, limit_docs=1).load()
    assert [q.qid for q in ds.queries] == ["5001"] and ds.report["n_docs"] == 1
    assert ds.report["rows_read"] == 5          # 5005 (a second page) ends the scan, unused
    served["rows"] = stream()                   # a generator breaks if read past the limit
    ds = NaturalQuestions(min_tokens=0, limit_queries=2, streaming=True).load()
    assert [q.qid for q in ds.queries] == ["5001", "5005"] and calls[-1][2]["streaming"] is True
    assert consumed == ["5001", "5002", "5003", "5004", "5005"]
    served["rows"] = _rows()
    seeded = NaturalQuestions(min_tokens=0, limit_queries=2, seed=3).load()
    assert seeded.report["rows_read"] == 6 and len(seeded.queries) == 2
    assert [q.qid for q in seeded.queries] == [
        q.qid for q in NaturalQuestions(min_tokens=0, limit_queries=2, seed=3).load().queries]


@pytest.mark.parametrize("edit, field, problem", [
    (lambda r: r["document"].pop("tokens"), "document.tokens", "missing required field"),
    (lambda r: r["document"]["tokens"]["is_html"].pop(), "document.tokens.is_html", "entries"),
    (lambda r: r["document"]["tokens"]["token"].__setitem__(3, 7), "document.tokens.token[3]",
     "must be a string"),
    (lambda r: r.pop("annotations"), "annotations", "missing required field"),
    (lambda r: r["annotations"]["long_answer"][0].update(end_token=10 ** 6),
     "annotations.long_answer[0]", "not inside the document"),
    (lambda r: r["annotations"]["long_answer"][0].update(candidate_index=0),
     "annotations.long_answer[0].candidate_index", "candidate 0 spans"),
    (lambda r: r["annotations"]["yes_no_answer"].__setitem__(0, 5),
     "annotations.yes_no_answer[0]", "-1/0/1"),
    (lambda r: r["question"].pop("text"), "question.text", "missing required field"),
])
def test_malformed_rows_name_dataset_row_and_field(tmp_path, edit, field, problem):
    rows = _rows()
    edit(rows[0])
    with pytest.raises(DataError) as e:
        _load(_write(tmp_path / "bad.jsonl", rows))
    assert (e.value.dataset, e.value.row, e.value.field) == ("nq", "5001", field)
    assert problem in str(e.value) and "bad.jsonl line 1" in str(e.value)


def test_empty_document_and_bad_json(tmp_path):
    rows = _rows()[4:5]
    toks = rows[0]["document"]["tokens"]
    toks["is_html"] = [True] * len(toks["token"])
    with pytest.raises(DataError, match=r"'5005'.*'document.tokens'.*no text tokens"):
        _load(_write(tmp_path / "empty.jsonl", rows))
    (tmp_path / "broken.jsonl").write_text('{"id": "1"\n')
    with pytest.raises(DataError, match=r"'nq'.*broken.jsonl line 1.*malformed JSON"):
        _load(tmp_path / "broken.jsonl")


def test_missing_data_says_how_to_get_it(monkeypatch, tmp_path, make_cfg):
    def offline(*a, **kw):
        raise ConnectionError("Hub unreachable")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(ConfigError) as e:
        build_components(make_cfg("dataset=nq")).dataset.load()
    msg = str(e.value)
    assert HUB_ID in msg and "dataset.path=" in msg and "Hub unreachable" in msg
    assert "streaming" in msg
    with pytest.raises(ConfigError, match="no file, folder or glob"):
        _load(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="dataset.path=<folder> is needed"):
        NaturalQuestions(source="path")
    assert NaturalQuestions(path=None).hub  # null: the default source, the Hub
    with pytest.raises(ConfigError, match="annotation must be"):
        NaturalQuestions(annotation="majority")


def test_make_cfg_composes_and_loads(make_cfg):
    cfg = make_cfg("dataset=nq", f"dataset.path={ROWS_FILE}", "dataset.min_tokens=0",
                   "dataset.drop_sections=[See also]")
    assert cfg.dataset.config == "dev" and cfg.dataset.heading_levels == 3
    loader = build_components(cfg).dataset
    ds = loader.load()
    assert len(ds.queries) == 3 and "References" in ds.documents[0].text
    assert "See also" not in ds.documents[0].text
    assert len(loader.fingerprint()) == 64
    defaults = make_cfg("dataset=nq").dataset
    assert (defaults.source, defaults.path, defaults.min_tokens, list(defaults.drop_sections)) == (
        None, None, 10000, ["See also", "Notes", "References"])
    assert build_components(make_cfg("dataset=nq")).dataset.source == "hub"

