"""WikiWeb2M loader: pages from TFRecord SequenceExamples or a JSONL export, the section tree,
and answer scopes from a QA file. Fixtures: tests/fixtures/wikiweb2m/pages.jsonl (four pages
with the upstream feature names, also written into a TFRecord by tests/data/tfrecord_writer)
and qa.jsonl. The TFRecord reader itself: test_tfrecord."""

import json

import pytest

from harness.data.wikiweb2m import WikiWeb2M
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import FIXTURES as ALL_FIXTURES
from tests.data.tfrecord_writer import sequence_example, tfrecord
from tests.data.tfrecord_writer import write_tfrecord as _write_tfrecord

FIXTURES = ALL_FIXTURES / "wikiweb2m"
PAGES, QA = FIXTURES / "pages.jsonl", FIXTURES / "qa.jsonl"
SUCCULENT = "https://en.wikipedia.org/wiki/Succulent_plant"


def _pages():
    return [json.loads(line) for line in PAGES.read_text(encoding="utf-8").splitlines()]


def _qa():
    return [json.loads(line) for line in QA.read_text(encoding="utf-8").splitlines()]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def shard(tmp_path):
    return _write_tfrecord(tmp_path / "wikiweb2m-test.tfrecord.gz", _pages())


def _load(path=PAGES, **kw):
    kw.setdefault("qa_path", QA)
    kw.setdefault("min_tokens", 0)
    return WikiWeb2M(path=path, **kw).load()


@pytest.fixture(scope="module")
def ds():
    return _load()


# -- the loader --------------------------------------------------------------------------------

def test_tfrecord_and_jsonl_export_load_the_same(shard, ds):
    from_tf = _load(shard)
    assert [(d.doc_id, d.text, d.sections) for d in from_tf.documents] == [
        (d.doc_id, d.text, d.sections) for d in ds.documents]
    assert [(q.qid, q.evidence, q.answers) for q in from_tf.queries] == [
        (q.qid, q.evidence, q.answers) for q in ds.queries]
    plain = _write_tfrecord(shard.parent / "plain.tfrecord", _pages(), compress=False)
    assert [d.text for d in _load(plain).documents] == [d.text for d in ds.documents]


def test_counts_and_report(ds):
    r = ds.report
    assert [d.doc_id for d in ds.documents] == ["Succulent plant", "Half Dome"]
    assert [q.qid for q in ds.queries] == ["succ-leaves", "succ-definition", "dome-geology",
                                           "succ-appearance", "succ-care"]
    assert (r["n_docs"], r["n_queries"]) == (2, 5)
    assert r["queries_page_not_found"] == 1        # lost-page
    assert r["pages_skipped_bad_tree"] == 1        # Broken tree: a child before its parent
    assert r["queries_dropped_doc_filters"] == 1   # its question
    assert r["pages_read"] == 4
    assert (r["evidence_total"], r["evidence_exact"], r["evidence_normalised"],
            r["evidence_unaligned"]) == (5, 4, 1, 0)
    assert (r["evidence_from_offsets"], r["evidence_from_section"]) == (1, 2)
    assert r["sections_per_doc"] == 4.0
    assert all(isinstance(v, (int, float)) for v in r.values())


def test_section_tree(ds):
    page = _pages()[0]
    doc = ds.documents[0]
    assert doc.title == "Succulent plant" and doc.meta["page_url"] == SUCCULENT
    assert [(s.level, s.title) for s in doc.sections] == [
        (1, "Succulent plant"), (2, "Definition"), (2, "Appearance"), (3, "Leaves"),
        (2, "Cultivation")]
    texts = page["section_text"]
    assert doc.text == "\n\n".join(f"{t}\n{x}" for t, x in zip(page["section_title"], texts))
    root, definition, appearance, leaves, cultivation = doc.sections
    assert (root.start, root.end) == (0, len(doc.text))
    assert doc.text[appearance.start:appearance.end] == (
        f"Appearance\n{texts[2]}\n\nLeaves\n{texts[3]}")          # a section holds its subsections
    assert doc.text[leaves.start:leaves.end] == f"Leaves\n{texts[3]}"
    meta = doc.meta["sections"][3]
    assert (meta["index"], meta["section_depth"], meta["section_heading_level"],
            meta["section_parent_index"], meta["level"]) == (3, 2, 3, 2, 3)
    assert doc.text[meta["text_start"]:meta["text_end"]] == texts[3]


def test_answer_scopes_map_to_spans(ds):
    doc = ds.documents[0]
    texts = _pages()[0]["section_text"]
    q = {q.qid: q for q in ds.queries}

    def span_text(qid):
        (e,) = q[qid].evidence
        return ds.documents[0 if e.doc_id == doc.doc_id else 1].text[e.start:e.end]

    assert span_text("succ-leaves") == texts[3]                            # verbatim string
    assert q["succ-leaves"].meta["evidence_method"] == ["exact"]
    start = texts[1].index("Botanists")
    assert span_text("succ-definition") == texts[1][start:]                # {start, end}
    assert span_text("dome-geology") == _pages()[1]["section_text"][1]     # a section index
    assert span_text("succ-appearance") == texts[2]                        # no scope: the section
    care = span_text("succ-care")                                          # quotes, spaces differ
    assert care.startswith("Succulents are favored") and care.endswith("bright light")
    assert q["succ-care"].meta["evidence_method"] == ["normalised"]
    assert q["dome-geology"].answers == ("By exfoliation of granite along joints.",)
    assert q["succ-leaves"].task == "Explanatory" and q["succ-leaves"].doc_ids == ("Succulent plant",)
    assert q["succ-leaves"].meta["section_index"] == 3


def test_filters_split_tokens_and_limits(tmp_path):
    no_qa = dict(qa_path=None, require_qa=False)
    everything = _load(**no_qa)
    assert [d.doc_id for d in everything.documents] == ["Succulent plant", "Half Dome",
                                                        "Yosemite Valley"]
    assert everything.queries == [] and everything.report["pages_skipped_bad_tree"] == 1
    assert [d.doc_id for d in _load(split="test", **no_qa).documents] == [
        "Succulent plant", "Half Dome"]
    assert _load(split="test", **no_qa).report["pages_skipped_split"] == 1
    words = {d.doc_id: len(d.text.split()) for d in everything.documents}
    mid = (words["Succulent plant"] + words["Half Dome"]) // 2
    big = _load(min_tokens=mid)
    assert [d.doc_id for d in big.documents] == ["Succulent plant"]
    assert big.report["docs_skipped_min_tokens"] == 1 and big.report["queries_dropped_doc_filters"] == 2
    small = _load(max_tokens=mid)
    assert [q.qid for q in small.queries] == ["dome-geology"]
    first = _load(limit_docs=1, **no_qa)
    assert [d.doc_id for d in first.documents] == ["Succulent plant"]
    assert first.report["pages_read"] == 1                     # the scan stops at the limit
    assert len(_load(limit_queries=2).queries) == 2
    seeded = [q.qid for q in _load(limit_queries=2, seed=7).queries]
    assert seeded == [q.qid for q in _load(limit_queries=2, seed=7).queries]
    # with a QA file only the pages it names are decoded; the scan ends once all are found
    qa = _write_jsonl(tmp_path / "qa.jsonl", _qa()[:1])
    assert _load(qa_path=qa).report["pages_read"] == 1


def test_a_page_in_two_files_is_read_once(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    _write_jsonl(folder / "a.jsonl", _pages()[:2])
    _write_tfrecord(folder / "wikiweb2m-test.tfrecord.gz-00001-of-00002", _pages()[:1])
    ds = _load(folder, qa_path=None, require_qa=False)
    assert [d.doc_id for d in ds.documents] == ["Succulent plant", "Half Dome"]
    assert ds.report["pages_duplicate"] == 1


def test_without_qa_a_retrieval_run_is_refused(make_cfg, shard):
    with pytest.raises(ConfigError) as e:
        build_components(make_cfg("dataset=wikiweb2m", f"dataset.path={shard}")).dataset.load()
    msg = str(e.value)
    assert "did not publish" in msg and "dataset.qa_path=" in msg and "require_qa=false" in msg
    with pytest.raises(ConfigError, match="did not publish"):
        WikiWeb2M(path=shard).fingerprint()


def test_missing_pages_say_how_to_get_them(tmp_path):
    with pytest.raises(ConfigError) as e:
        WikiWeb2M(qa_path=QA).load()
    msg = str(e.value)
    assert "storage.googleapis.com/gresearch/wit/wikiweb2m/" in msg
    assert "wikiweb2m-test.tfrecord.gz" in msg and "dataset.path=" in msg and "TensorFlow" in msg
    with pytest.raises(ConfigError, match="no TFRecord"):
        _load(tmp_path / "empty_dir_glob_*.tfrecord.gz")
    with pytest.raises(ConfigError, match="qa_path .* does not exist"):
        _load(qa_path=tmp_path / "nope.jsonl")
    other = _write_jsonl(tmp_path / "other.jsonl", [{**_qa()[5]}])
    with pytest.raises(ConfigError, match="none of the 1 QA rows"):
        _load(qa_path=other)


def test_broken_tfrecord_frames(tmp_path):
    good = tfrecord([sequence_example(p) for p in _pages()[:2]])
    bad_len = tmp_path / "bad_len.tfrecord"
    bad_len.write_bytes(good[:8] + b"\0\0\0\0" + good[12:])
    with pytest.raises(DataError, match=r"'wikiweb2m'.*bad_len.tfrecord record 0.*length CRC"):
        _load(bad_len)
    truncated = tmp_path / "truncated.tfrecord"
    truncated.write_bytes(good[:-10])
    with pytest.raises(DataError, match=r"truncated.tfrecord record 1.*truncated record"):
        _load(truncated)
    flipped = bytearray(good)
    flipped[40] ^= 0xFF
    corrupt = tmp_path / "corrupt.tfrecord"
    corrupt.write_bytes(bytes(flipped))
    with pytest.raises(DataError, match=r"corrupt.tfrecord record 0.*data CRC"):
        _load(corrupt, verify_data_crc=True)
    junk = tmp_path / "junk.tfrecord"
    junk.write_bytes(tfrecord([b"\x0a\x05ab"]))
    with pytest.raises(DataError, match=r"junk.tfrecord record 0.*not a SequenceExample"):
        _load(junk)


@pytest.mark.parametrize("edit, field, problem", [
    (lambda p: p.pop("section_text"), "section_text", "missing required field"),
    (lambda p: p["section_parent_index"].pop(), "section_parent_index", "has 4 entries"),
    (lambda p: p["section_depth"].__setitem__(1, "one"), "section_depth[1]", "must be an integer"),
    (lambda p: p["section_index"].__setitem__(1, 0), "section_index[1]", "duplicate"),
    (lambda p: p["section_title"].__setitem__(2, 3), "section_title[2]", "must be a string"),
])
def test_malformed_pages_name_dataset_row_and_field(tmp_path, edit, field, problem):
    pages = _pages()
    edit(pages[0])
    path = _write_jsonl(tmp_path / "pages.jsonl", pages)
    for source in (path, _write_tfrecord(tmp_path / "wikiweb2m-x.tfrecord.gz", pages)):
        if field == "section_title[2]" and source.suffix == ".gz":
            continue  # a TFRecord BytesList cannot hold a number
        with pytest.raises(DataError) as e:
            _load(source)
        assert (e.value.dataset, e.value.row, e.value.field) == ("wikiweb2m", SUCCULENT, field)
        assert problem in str(e.value)


def test_bad_encoding_in_a_record(tmp_path):
    page = _pages()[0]
    raw = sequence_example(page).replace("Leaves".encode(), b"Lea\xffes")
    path = tmp_path / "wikiweb2m-test.tfrecord"
    path.write_bytes(tfrecord([raw]))
    with pytest.raises(DataError, match=r"'section_title\[3\]'.*not valid UTF-8"):
        _load(path)


@pytest.mark.parametrize("edit, field, problem", [
    (lambda r: r.update(section_index=9), "section_index", "has no section 9"),
    (lambda r: r.update(answer_scope={"start": 0, "end": 10 ** 4}), "answer_scope", "not inside"),
    (lambda r: r.update(answer_scope=[1, 2]), "answer_scope", "must be a section index"),
    (lambda r: r.pop("question"), "question", "missing required field"),
    (lambda r: r.update(answer_scope=2), "answer_scope", "section_index is 1"),
])
def test_malformed_qa_rows(tmp_path, edit, field, problem):
    rows = _qa()
    edit(rows[1])
    with pytest.raises(DataError) as e:
        _load(qa_path=_write_jsonl(tmp_path / "qa.jsonl", rows))
    assert (e.value.dataset, e.value.row, e.value.field) == ("wikiweb2m", "succ-definition", field)
    assert problem in str(e.value)


def test_make_cfg_composes_and_fingerprints(make_cfg, shard, tmp_path):
    cfg = make_cfg("dataset=wikiweb2m", f"dataset.path={shard.parent}", f"dataset.qa_path={QA}",
                   "dataset.min_tokens=0", "dataset.split=test")
    loader = build_components(cfg).dataset
    ds = loader.load()
    assert (len(ds.documents), len(ds.queries)) == (2, 5)
    qa = _write_jsonl(tmp_path / "qa2.jsonl", _qa()[:3])
    other = WikiWeb2M(path=shard.parent, qa_path=qa, min_tokens=0, split="test")
    assert loader.fingerprint() != other.fingerprint()
    assert loader.fingerprint() == build_components(cfg).dataset.fingerprint()
    defaults = make_cfg("dataset=wikiweb2m").dataset
    assert (defaults.path, defaults.qa_path, defaults.min_tokens, defaults.require_qa) == (
        None, None, 10000, True)


def test_an_answer_context_not_in_the_page_is_kept_as_text(tmp_path):
    missing = "Penguins migrate across the frozen desert every winter in long silent columns."
    rows = [{**_qa()[0], "answer_scope": missing}]
    ds = _load(qa_path=_write_jsonl(tmp_path / "qa.jsonl", rows))
    (q,) = ds.queries
    assert q.evidence == () and q.unaligned_evidence == (missing,)
    assert q.meta["evidence_method"] == [] and "evidence_text" not in q.meta
    assert q.evidence_texts({d.doc_id: d for d in ds.documents}) == [missing]
    assert ds.report["evidence_unaligned"] == 1 and ds.report["tokens_per_answer"] == 0.0
