"""RAGBench loader, on hand-written rows in the Hub schema (tests/fixtures/ragbench/<subset>/
test.jsonl, every field of rungalileo/ragbench), read from a folder, from Parquet in the
Hub repo's layout, and through a stand-in for ``datasets.load_dataset``."""

import json

import pytest

from harness.data.align import normalise
from harness.data.ragbench import HUB_ID, PAPER_SUBSETS, SUBSETS, RAGBench, clean_key
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "ragbench"
BOTH = ["expertqa", "techqa"]


def _rows(subset):
    return [json.loads(x) for x in (FIXTURES / subset / "test.jsonl").read_text().splitlines()]


def _write(folder, subset, rows, split="test"):
    (folder / subset).mkdir(parents=True, exist_ok=True)
    (folder / subset / f"{split}.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return folder


@pytest.fixture(scope="module")
def ds():
    return RAGBench(FIXTURES, subset=BOTH).load()


def _doc(ds, doc_id):
    return next(d for d in ds.documents if d.doc_id == doc_id)


def test_counts_ids_and_dedupe(ds):
    r = ds.report
    assert (r["n_docs"], r["n_queries"]) == (7, 5)
    assert (r["passages"], r["passages_empty"], r["passages_duplicate"]) == (9, 1, 1)
    assert [q.qid for q in ds.queries] == ["expertqa/1001", "expertqa/1002", "expertqa/1003",
                                           "techqa/TECHQA_0001", "techqa/TECHQA_0002"]
    # the passage rows 1001 and 1002 share is one document, named after its first use
    shared = _doc(ds, "expertqa/1001/1")
    assert shared.meta["rows"] == [["1001", 1], ["1002", 0]]
    assert ds.queries[1].doc_ids == ("expertqa/1001/1", "expertqa/1002/1")
    assert ds.queries[2].doc_ids == ("expertqa/1003/0",)  # its empty passage is skipped
    raw = _rows("expertqa")
    assert shared.text == raw[0]["documents"][1] == raw[1]["documents"][0]
    assert all(d.sections == () and d.language == "en" for d in ds.documents)
    # Table 5's columns: S/D from RAGBench's own sentences, E/Q = relevant keys per query
    assert r["sentences_per_doc"] == pytest.approx(22 / 7)
    assert r["evidence_per_query"] == pytest.approx(14 / 5)  # unknown keys count too


def test_query_fields_and_response_kept_out_of_answers(ds):
    raw = {f"{s}/{r['id']}": r for s in BOTH for r in _rows(s)}
    for q in ds.queries:
        row = raw[q.qid]
        assert q.question == row["question"] and q.task == q.qid.split("/")[0]
        assert q.answers == ()  # an LLM's answer, not gold
        assert q.meta["response"] == row["response"]
        assert q.meta["adherence_score"] == row["adherence_score"]
        assert q.meta["row_id"] == row["id"]
    with_answers = RAGBench(FIXTURES, subset="expertqa", response_as_answer=True).load()
    assert [q.answers for q in with_answers.queries] == [(r["response"],) for r in _rows("expertqa")]


def test_evidence_spans_are_the_keyed_sentences(ds):
    raw = {f"{s}/{r['id']}": r for s in BOTH for r in _rows(s)}
    checked = 0
    for q in ds.queries:
        row = raw[q.qid]
        sentences = {k: s for group in row["documents_sentences"] for k, s in group}
        texts = q.evidence_texts({d.doc_id: d for d in ds.documents})[:len(q.evidence)]
        assert len(q.evidence) == len(q.meta["evidence_method"]) and "evidence_text" not in q.meta
        for span, key, method, text in zip(q.evidence, q.meta["evidence_keys"],
                                           q.meta["evidence_method"], texts):
            got = _doc(ds, span.doc_id).text[span.start:span.end]
            assert got == text
            assert (got == sentences[key]) if method == "exact" else (
                normalise(got) == normalise(sentences[key]))
            assert span.doc_id in q.doc_ids
            checked += 1
    assert checked == 13


def test_keys_cleaned_repeats_resolved_unknowns_counted(ds):
    r = ds.report
    assert [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")] == [12, 1, 0, 1]
    assert r["evidence_total"] == 14 and r["evidence_unaligned_share"] == pytest.approx(1 / 14)
    assert (r["evidence_keys_cleaned"], r["evidence_keys_unknown"]) == (2, 1)
    q1001, q1002, q1003, _, q_none = ds.queries
    assert q1001.meta["evidence_keys"] == ["0a", "0b", "0c", "1b"]  # "0b." cleaned
    # "1c" repeats "1a" verbatim: its span is the second occurrence
    take = _doc(ds, "expertqa/1002/1")
    first = take.text.index("Take the tablet")
    assert q1002.evidence[0].start > first
    assert q1002.evidence[0].start == take.text.index("Take the tablet", first + 1)
    assert q1002.meta["unknown_evidence_keys"] == ["3a"]  # kept, not dropped
    assert q1002.meta["evidence_keys"] == ["1c", "0c", "1d"]  # "1d," cleaned
    assert q1003.meta["evidence_method"] == ["normalised", "exact"]  # whitespace differs
    assert q_none.evidence == () and r["queries_without_evidence"] == 1
    assert clean_key(" 12ab.,") == "12ab" and clean_key("0B") == "0b"


def test_no_dedupe_keeps_every_passage():
    ds = RAGBench(FIXTURES, subset="expertqa", dedupe=False).load()
    assert [d.doc_id for d in ds.documents] == [
        "expertqa/1001/0", "expertqa/1001/1", "expertqa/1002/0", "expertqa/1002/1", "expertqa/1003/0"]
    assert ds.queries[1].evidence[1].doc_id == "expertqa/1002/0"


def test_parquet_in_the_hub_repo_layout(ds, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for s in BOTH:
        (tmp_path / s).mkdir()
        pq.write_table(pa.Table.from_pylist(_rows(s)), tmp_path / s / "test-00000-of-00001.parquet")
    got = RAGBench(tmp_path, subset=BOTH).load()
    assert [(q.qid, q.evidence) for q in got.queries] == [(q.qid, q.evidence) for q in ds.queries]
    assert [d.text for d in got.documents] == [d.text for d in ds.documents]


def _fake_hub(monkeypatch, calls):
    import datasets

    def load_dataset(repo, name=None, split=None, revision=None, **kwargs):
        calls.append((repo, name, split, revision))
        return datasets.Dataset.from_list(_rows(name))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def test_hub_path_loads_each_config(ds, monkeypatch):
    calls = []
    _fake_hub(monkeypatch, calls)
    loader = RAGBench(subset=BOTH, revision="abc123")
    fp = loader.fingerprint()
    got = loader.load()
    assert calls == [(HUB_ID, "expertqa", "test", "abc123"), (HUB_ID, "techqa", "test", "abc123")]
    assert [(q.qid, q.evidence, q.meta["evidence_keys"]) for q in got.queries] == [
        (q.qid, q.evidence, q.meta["evidence_keys"]) for q in ds.queries]
    assert got.report == ds.report
    assert fp == RAGBench(subset=BOTH, revision="abc123").fingerprint()
    assert fp != RAGBench(subset=BOTH).fingerprint() != RAGBench(subset="techqa").fingerprint()


def test_real_load_dataset_on_a_copy_of_the_hub_repo(ds, tmp_path, monkeypatch):
    """The loader's Hub call, run by the real ``datasets`` against the repo's layout (README
    configs + <subset>/<split>-00000-of-00001.parquet) in a local folder."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo = tmp_path / "ragbench"
    configs = ""
    for s in BOTH:
        (repo / s).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(_rows(s)), repo / s / "test-00000-of-00001.parquet")
        configs += f"- config_name: {s}\n  data_files:\n  - split: test\n    path: {s}/test-*\n"
    (repo / "README.md").write_text(f"---\nconfigs:\n{configs}---\n")
    real = datasets.load_dataset
    monkeypatch.setattr(datasets, "load_dataset",
                        lambda *a, **k: real(*a, cache_dir=str(tmp_path / "cache"), **k))
    got = RAGBench("hub", subset=BOTH, hub_id=str(repo)).load()
    assert [(q.qid, q.evidence) for q in got.queries] == [(q.qid, q.evidence) for q in ds.queries]


def test_missing_data_says_how_to_get_it(make_cfg, tmp_path):
    comps = build_components(make_cfg("dataset=ragbench", "dataset.subset=techqa"))
    assert isinstance(comps.dataset, RAGBench) and comps.dataset.subsets == ("techqa",)
    with pytest.raises(ConfigError) as e:  # the real load_dataset, offline in tests
        comps.dataset.fingerprint()
    msg = str(e.value)
    assert HUB_ID in msg and "'techqa'" in msg and "dataset.path=" in msg
    with pytest.raises(ConfigError, match="does not exist.*dataset.path="):
        RAGBench(tmp_path / "nowhere").load()
    with pytest.raises(ConfigError, match="holds no test-"):
        RAGBench(tmp_path, subset="covidqa").load()


def test_config_compose_and_validation(make_cfg):
    loader = build_components(make_cfg("dataset=ragbench")).dataset
    assert loader.subsets == PAPER_SUBSETS and loader.split == "test" and loader.hub
    loader = build_components(make_cfg("dataset=ragbench", f"dataset.path={FIXTURES}",
                                       "dataset.subset=[expertqa,techqa]")).dataset
    assert loader.load().report["n_queries"] == 5
    with pytest.raises(ConfigError, match="not a RAGBench config"):
        build_components(make_cfg("dataset=ragbench", "dataset.subset=squad"))
    with pytest.raises(ConfigError, match="split"):
        RAGBench(split="dev")
    with pytest.raises(ConfigError, match="twice"):
        RAGBench(subset=["techqa", "techqa"])
    assert len(SUBSETS) == 12


def test_limits_and_seeded_sampling():
    first = RAGBench(FIXTURES, subset=BOTH, limit_queries=2).load()
    assert [q.qid for q in first.queries] == ["expertqa/1001", "expertqa/1002"]
    # only passages a kept row uses remain
    assert {d.doc_id for d in first.documents} == {"expertqa/1001/0", "expertqa/1001/1", "expertqa/1002/1"}
    assert first.report["docs_dropped_unreferenced"] == 4
    few_docs = RAGBench(FIXTURES, subset=BOTH, limit_docs=2).load()
    assert [q.qid for q in few_docs.queries] == ["expertqa/1001"]
    assert few_docs.report["queries_dropped_limit_docs"] == 4
    picks = set()
    for seed in range(5):
        a = RAGBench(FIXTURES, subset=BOTH, limit_queries=2, seed=seed).load()
        b = RAGBench(FIXTURES, subset=BOTH, limit_queries=2, seed=seed).load()
        assert [q.qid for q in a.queries] == [q.qid for q in b.queries]
        picks.add(tuple(q.qid for q in a.queries))
    assert len(picks) > 1


def _broken(tmp_path, edit, subset="expertqa", **kwargs):
    rows = _rows(subset)
    edit(rows)
    _write(tmp_path, subset, rows)
    with pytest.raises(DataError) as e:
        RAGBench(tmp_path, subset=subset, name="rb", **kwargs).load()
    return e.value


def test_malformed_rows_name_dataset_row_and_field(tmp_path):
    e = _broken(tmp_path, lambda rows: rows[1].pop("question"))
    assert (e.dataset, e.row, e.field) == ("rb", "expertqa/1002", "question")
    e = _broken(tmp_path, lambda rows: rows[0]["documents_sentences"].pop())
    assert (e.row, e.field) == ("expertqa/1001", "documents_sentences")
    e = _broken(tmp_path, lambda rows: rows[0]["documents_sentences"][1].__setitem__(0, ["1a"]))
    assert (e.row, e.field) == ("expertqa/1001", "documents_sentences[1][0]")
    e = _broken(tmp_path, lambda rows: rows[2].__setitem__("all_relevant_sentence_keys", "0b"))
    assert (e.row, e.field) == ("expertqa/1003", "all_relevant_sentence_keys")
    e = _broken(tmp_path, lambda rows: rows[2].__setitem__("id", "1001"), duplicate_ids="error")
    assert (e.row, e.field) == ("expertqa/1001", "id") and "duplicate" in str(e)
    # merging two rows' labels needs the same passages: other passages are refused, naming the row
    e = _broken(tmp_path, lambda rows: rows[2].__setitem__("id", "1001"), duplicate_ids="union")
    assert (e.row, e.field) == ("expertqa/1001", "documents")
    e = _broken(tmp_path, lambda rows: rows[0].pop("id"))
    assert (e.row, e.field) == ("test.jsonl line 1", "id")
    e = _broken(tmp_path, lambda rows: rows[1]["documents"].__setitem__(1, 7))
    assert (e.row, e.field) == ("expertqa/1002", "documents")
    # a blank question is caught by the data model, still naming the row
    e = _broken(tmp_path, lambda rows: rows[0].__setitem__("question", "  "))
    assert (e.row, e.field) == ("expertqa/1001", "question")


def test_bad_encoding_names_the_line(tmp_path):
    _write(tmp_path, "techqa", _rows("techqa"))
    path = tmp_path / "techqa" / "test.jsonl"
    path.write_bytes(path.read_bytes() + b'{"id": "x\xff"}\n')
    with pytest.raises(DataError) as e:
        RAGBench(tmp_path, subset="techqa").load()
    assert e.value.row == "test.jsonl line 3" and "UTF-8" in str(e.value)


def test_empty_passages_are_counted_skips(tmp_path):
    def edit(rows):
        rows[0]["documents"][1] = "   "  # keys 1b point into it
        rows[2]["documents"] = ["", ""]  # nothing left of this row
    rows = _rows("expertqa")
    edit(rows)
    ds = RAGBench(_write(tmp_path, "expertqa", rows), subset="expertqa").load()
    r = ds.report
    assert r["evidence_in_empty_passage"] == 1 and r["queries_no_passage"] == 1
    assert [q.qid for q in ds.queries] == ["expertqa/1001", "expertqa/1002"]
    q = ds.queries[0]
    assert q.unaligned_evidence == ("It also inhibits the cyclooxygenase enzymes.",)
    assert q.meta["unaligned_evidence_keys"] == ["1b"] and len(q.evidence) == 3
    docs = {d.doc_id: d for d in ds.documents}
    assert q.evidence_texts(docs)[-1] == "It also inhibits the cyclooxygenase enzymes."


def test_fingerprint_tracks_files_and_parameters(tmp_path):
    folder = _write(tmp_path, "techqa", _rows("techqa"))
    a = RAGBench(folder, subset="techqa").fingerprint()
    assert a == RAGBench(folder, subset="techqa").fingerprint()
    assert a != RAGBench(folder, subset="techqa", dedupe=False).fingerprint()
    assert a != RAGBench(folder, subset="techqa", limit_queries=1).fingerprint()
    rows = _rows("techqa")
    rows[0]["question"] += "?"
    _write(folder, "techqa", rows)
    assert a != RAGBench(folder, subset="techqa").fingerprint()


def test_the_bundled_test_splits_are_the_hub_files_and_load():
    """DelucionQA's and ExpertQA's test files, bundled for Qu et al.'s Table 11 (CC-BY-4.0):
    unchanged (SHA256SUMS), and read as a path in the Hub layout with Table 5's filters."""
    import hashlib

    from harness.data.base import SAMPLES_DIR

    folder = SAMPLES_DIR / "ragbench"
    for line in (folder / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    counts = {}
    for subset in ("delucionqa", "expertqa"):
        ds = RAGBench(path=folder, subset=[subset], require_evidence=True, duplicate_ids="first").load()
        counts[subset] = (ds.report["n_docs"], ds.report["n_queries"])
    # Qu et al. Table 5 gives ExpertQA 777 and DelucionQA 235 documents
    assert counts == {"delucionqa": (235, 92), "expertqa": (777, 191)}
