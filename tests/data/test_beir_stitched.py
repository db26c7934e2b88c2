"""Stitched BEIR documents (Qu et al., App. C), on a hand-written source in BEIR's layout
(tests/fixtures/beir_stitched/minibeir: corpus.jsonl, queries.jsonl, qrels/test.tsv), read
from the folder and through stand-ins for ``datasets.load_dataset``."""

import gzip
import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.data.beir_stitched import SEP, BeirStitched, pack, render
from harness.pipeline.components import build_components
from harness.text import sentence_spans
from harness.types import ConfigError, DataError
from tests.conftest import FIXTURES

SOURCE = FIXTURES / "beir_stitched" / "minibeir"
TARGET = 10  # sentences per stitched document, small for a 17-document source


def _jsonl(name, folder=SOURCE):
    return [json.loads(x) for x in (folder / name).read_text().splitlines()]


def _corpus():
    return {r["_id"]: r for r in _jsonl("corpus.jsonl")}


def _load(**kw):
    kw.setdefault("sentences_per_doc", TARGET)
    return BeirStitched(path=kw.pop("path", SOURCE), **kw).load()


@pytest.fixture(scope="module")
def ds():
    return _load()


def _sections(ds):
    """Source id -> (stitched doc, section) for every section of every document."""
    return {s.title: (d, s) for d in ds.documents for s in d.sections}


def test_every_source_document_appears_once_and_maps_back(ds):
    corpus = _corpus()
    sections = _sections(ds)
    assert sum(len(d.sections) for d in ds.documents) == len(sections) == 17
    assert set(sections) == set(corpus) - {"40000"}  # the empty one is skipped, and counted
    assert ds.report["source_docs_empty"] == 1
    for sid, (doc, s) in sections.items():
        assert s.level == 1
        assert doc.text[s.start:s.end] == render(corpus[sid]["title"], corpus[sid]["text"])
    for doc in ds.documents:
        assert doc.text == SEP.join(doc.text[s.start:s.end] for s in doc.sections)
        assert doc.meta["source_ids"] == [s.title for s in doc.sections]
        assert doc.meta["n_sentences"] == sum(doc.meta["source_sentences"])
    # the title is the first sentence of its block (Fig. 6); a title-only doc is one sentence
    doc, s = sections["4983"]
    assert doc.text[s.start:].startswith("Microstructural development of human newborn "
                                         "cerebral white matter\n\nDiffusion tensor")
    doc, s = sections["25912"]  # no title: the block is the text alone
    assert doc.text[s.start:s.end] == corpus["25912"]["text"]
    doc, _ = sections["38485"]  # title only: one sentence
    assert doc.meta["source_sentences"][doc.meta["source_ids"].index("38485")] == 1


def test_no_sentence_crosses_two_source_documents(ds):
    for doc in ds.documents:
        spans = sentence_spans(doc.text)
        assert len(spans) == doc.meta["n_sentences"]
        for a, b in spans:
            assert any(s.start <= a and b <= s.end for s in doc.sections), doc.text[a:b]


def test_sentence_target_and_table4_statistics(ds):
    r = ds.report
    assert (r["n_docs"], r["n_queries"], r["n_source_docs"]) == (7, 6, 17)
    assert r["source_sentences_per_doc"] == pytest.approx(68 / 17)
    assert r["sentences_per_doc"] == pytest.approx(68 / 7)
    biggest = max(max(d.meta["source_sentences"]) for d in ds.documents)
    for d in ds.documents[:-1]:  # every document but the last is near the target
        assert TARGET - biggest / 2 <= d.meta["n_sentences"] < TARGET + biggest / 2
    assert r["relevant_docs_per_query"] == pytest.approx(8 / 6)
    assert r["relevant_source_docs_per_query"] == pytest.approx(8 / 6)


def test_qrels_map_to_stitched_documents_and_spans(ds):
    sections = _sections(ds)
    expected = {"1": {"4983": 1}, "3": {"5836": 1}, "5": {"33370": 2, "25912": 1},
                "13": {"41782": 1}, "36": {"56390": 2, "53877": 1}, "42": {"49556": 1}}
    assert {q.qid: q.meta["qrels"] for q in ds.queries} == expected
    texts = {r["_id"]: r["text"] for r in _jsonl("queries.jsonl")}
    for q in ds.queries:
        assert q.question == texts[q.qid] and q.task == "scifact"
        relevant = q.meta["relevant_source_ids"]
        assert set(q.doc_ids) == {sections[s][0].doc_id for s in relevant}
        assert len(set(q.doc_ids)) == len(q.doc_ids)
        assert sorted((e.doc_id, e.start, e.end) for e in q.evidence) == sorted(
            (sections[s][0].doc_id, sections[s][1].start, sections[s][1].end) for s in relevant)
        by_id = {d.doc_id: d for d in ds.documents}
        assert q.evidence_texts(by_id) == [by_id[e.doc_id].text[e.start:e.end] for e in q.evidence]
        assert q.unaligned_evidence == () and "evidence_text" not in q.meta
    r = ds.report
    assert (r["qrels_total"], r["qrels_below_min_relevance"], r["qrels_unknown_query"],
            r["qrels_unknown_doc"], r["qrels_empty_doc"]) == (13, 2, 1, 1, 1)
    assert r["queries_with_relevant_docs"] == 6
    assert r["evidence_exact"] == r["evidence_total"] == 8
    # min_relevance=2 keeps only the graded-2 judgements
    strict = _load(min_relevance=2)
    assert {q.qid: list(q.meta["qrels"]) for q in strict.queries} == {"5": ["33370"], "36": ["56390"]}


def test_seeded_stitching_is_deterministic():
    def grouping(ds):
        return [d.meta["source_ids"] for d in ds.documents]

    a, b = _load(seed=7), _load(seed=7)
    assert grouping(a) == grouping(b)
    assert [d.text for d in a.documents] == [d.text for d in b.documents]
    assert [(q.qid, q.evidence) for q in a.queries] == [(q.qid, q.evidence) for q in b.queries]
    assert a.report == b.report
    assert len({tuple(map(tuple, grouping(_load(seed=s)))) for s in range(4)}) > 1
    in_order = _load(seed=None)  # no seed: corpus order, not random
    corpus_order = [i for i in _corpus() if i != "40000"]
    assert [i for g in grouping(in_order) for i in g] == corpus_order


def test_query_sample_corpus_cap_and_limit_docs():
    ds = _load(limit_queries=2, seed=3)
    assert len(ds.queries) == 2 and ds.report["queries_dropped_limit_queries"] == 4
    assert [q.qid for q in ds.queries] == [q.qid for q in _load(limit_queries=2, seed=3).queries]
    # corpus_docs: every relevant doc of the kept queries, plus seeded distractors
    capped = _load(limit_queries=2, seed=3, corpus_docs=6)
    stitched = {s for d in capped.documents for s in d.meta["source_ids"]}
    assert len(stitched) == 6 == capped.report["source_docs_stitched"]
    for q in capped.queries:
        assert set(q.meta["relevant_source_ids"]) <= stitched
    assert [q.qid for q in capped.queries] == [q.qid for q in ds.queries]
    assert _load(corpus_docs=0).report["source_docs_stitched"] == 8  # the relevant ones only
    small = _load(limit_docs=2, seed=None)
    assert small.report["n_docs"] == 2
    kept = {d.doc_id for d in small.documents}
    assert all(set(q.doc_ids) <= kept for q in small.queries)
    assert small.report["queries_dropped_limit_docs"] == 6 - len(small.queries)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), max_size=60), st.integers(1, 120))
def test_pack_property(lengths, target):
    groups = pack(lengths, target)
    assert [i for g in groups for i in g] == list(range(len(lengths)))  # each once, in order
    assert all(groups)
    m = max(lengths, default=0)
    for k, g in enumerate(groups):
        total = sum(lengths[i] for i in g)
        if k < len(groups) - 1:
            assert target - m / 2 <= total
            assert len(g) == 1 or total < target + m / 2
        elif len(g) > 1:  # the last group, perhaps with a leftover merged into it
            assert total < max(target + m / 2, 2 * target)


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "cells", "drug", "heart", "gene"])
_SENTENCE = st.lists(_WORDS, min_size=2, max_size=6).map(lambda w: " ".join(w).capitalize() + ".")


@st.composite
def _source(draw):
    n = draw(st.integers(1, 12))
    corpus = [{"_id": f"d{i}", "title": draw(st.sampled_from(["", "A title", "Another title"])),
               "text": " ".join(draw(st.lists(_SENTENCE, min_size=1, max_size=6)))}
              for i in range(n)]
    queries = [{"_id": f"q{j}", "text": f"question {j}"} for j in range(draw(st.integers(1, 4)))]
    qrels = [(q["_id"], draw(st.sampled_from(corpus))["_id"], draw(st.integers(0, 2)))
             for q in queries for _ in range(draw(st.integers(1, 3)))]
    return corpus, queries, qrels


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_source(), st.integers(1, 15), st.integers(0, 3))
def test_stitching_invariants_property(source, target, seed):
    corpus, queries, qrels = source
    loader = BeirStitched(corpus="gen", sentences_per_doc=target, seed=seed)
    loader._hub_cache = {  # the tables the Hub path would have read
        "corpus": [(f"row {i}", r) for i, r in enumerate(corpus)],
        "queries": [(f"row {i}", r) for i, r in enumerate(queries)],
        "qrels": [(f"line {i}", q, d, s) for i, (q, d, s) in enumerate(qrels)]}
    ds = loader.load()
    by_id = {r["_id"]: r for r in corpus}
    seen = [s.title for d in ds.documents for s in d.sections]
    assert sorted(seen) == sorted(by_id)  # every source document exactly once
    for d in ds.documents:
        for s in d.sections:
            assert d.text[s.start:s.end] == render(by_id[s.title]["title"], by_id[s.title]["text"])
    where = {s.title: (d.doc_id, s.start, s.end) for d in ds.documents for s in d.sections}
    relevant = {}
    for q, d, score in qrels:
        if score >= 1:
            relevant.setdefault(q, set()).add(d)
    assert {q.qid for q in ds.queries} == set(relevant)
    for q in ds.queries:
        assert set(q.meta["relevant_source_ids"]) == relevant[q.qid]
        assert {(e.doc_id, e.start, e.end) for e in q.evidence} == {where[d] for d in relevant[q.qid]}
        assert set(q.doc_ids) == {where[d][0] for d in relevant[q.qid]}


def _as_hub_repo(tmp_path):
    """The Hub repos' files: BeIR/scifact (corpus/queries .jsonl.gz) and BeIR/scifact-qrels."""
    corpus_repo, qrels_repo = tmp_path / "BeIR-scifact", tmp_path / "BeIR-scifact-qrels"
    corpus_repo.mkdir()
    qrels_repo.mkdir()
    for kind in ("corpus", "queries"):
        with gzip.open(corpus_repo / f"{kind}.jsonl.gz", "wb") as f:
            f.write((SOURCE / f"{kind}.jsonl").read_bytes())
    shutil.copy(SOURCE / "qrels" / "test.tsv", qrels_repo / "test.tsv")
    return corpus_repo, qrels_repo


def test_hub_path_reads_the_beir_files(ds, tmp_path, monkeypatch):
    """The loader's three Hub calls, run by the real ``datasets`` on local copies of the
    repos' files (the hf:// URL and repo id are redirected there)."""
    import datasets

    corpus_repo, qrels_repo = _as_hub_repo(tmp_path)
    real, calls = datasets.load_dataset, []

    def load_dataset(path, *args, **kwargs):
        calls.append((path, kwargs.get("data_files"), kwargs.get("split")))
        if path == "json":
            name = kwargs["data_files"].rsplit("/", 1)[1]
            kwargs["data_files"] = str(corpus_repo / name)
        elif path == "BeIR/scifact-qrels":
            path = str(qrels_repo)
        return real(path, *args, cache_dir=str(tmp_path / "cache"), **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    loader = BeirStitched(sentences_per_doc=TARGET)
    fp = loader.fingerprint()
    got = loader.load()
    assert calls == [("json", "hf://datasets/BeIR/scifact/corpus.jsonl.gz", "train"),
                     ("json", "hf://datasets/BeIR/scifact/queries.jsonl.gz", "train"),
                     ("BeIR/scifact-qrels", {"test": "test.tsv"}, "test")]  # one download
    assert [d.text for d in got.documents] == [d.text for d in ds.documents]
    assert [(q.qid, q.doc_ids, q.evidence) for q in got.queries] == [
        (q.qid, q.doc_ids, q.evidence) for q in ds.queries]
    assert fp == BeirStitched(sentences_per_doc=TARGET).fingerprint()
    assert fp != BeirStitched(sentences_per_doc=TARGET, seed=1).fingerprint()
    rev = BeirStitched(sentences_per_doc=TARGET, revision="abc")
    rev.fingerprint()
    assert calls[-3][1] == "hf://datasets/BeIR/scifact@abc/corpus.jsonl.gz"


def test_numeric_ids_from_the_hub_become_strings(ds, monkeypatch):
    import datasets

    def load_dataset(path, *args, **kwargs):  # what a type-guessing reader gives back
        if path == "json":
            return datasets.Dataset.from_list(_jsonl(kwargs["data_files"].rsplit("/", 1)[1]
                                                     .replace(".gz", "")))
        lines = (SOURCE / "qrels" / "test.tsv").read_text().splitlines()[1:]
        return datasets.Dataset.from_list(
            [{"query-id": int(q), "corpus-id": int(d), "score": int(s)}
             for q, d, s in (x.split("\t") for x in lines)])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    got = BeirStitched(sentences_per_doc=TARGET).load()
    assert [(q.qid, q.evidence) for q in got.queries] == [(q.qid, q.evidence) for q in ds.queries]


def test_missing_data_says_how_to_get_it(make_cfg, tmp_path):
    cfg = make_cfg("dataset=beir_stitched", "dataset.corpus=nfcorpus", "retriever.scope=corpus")
    comps = build_components(cfg)
    assert isinstance(comps.dataset, BeirStitched) and comps.retriever.scope == "corpus"
    with pytest.raises(ConfigError) as e:  # the real load_dataset, offline in tests
        comps.dataset.fingerprint()
    msg = str(e.value)
    assert "BeIR/nfcorpus" in msg and "nfcorpus.zip" in msg and "dataset.path=" in msg
    with pytest.raises(ConfigError, match="no BeIR copy.*dataset.path="):
        build_components(make_cfg("dataset=beir_stitched", "dataset.corpus=miracl"))
    with pytest.raises(ConfigError, match="does not exist"):
        BeirStitched(path=tmp_path / "nowhere").load()
    shutil.copytree(SOURCE, tmp_path / "src")
    (tmp_path / "src" / "qrels" / "test.tsv").unlink()
    with pytest.raises(ConfigError, match="qrels/test.tsv"):
        BeirStitched(path=tmp_path / "src").load()


def test_config_compose(make_cfg):
    loader = build_components(make_cfg("dataset=beir_stitched")).dataset
    assert (loader.corpus, loader.source, loader.split, loader.sentences_per_doc,
            loader.limit_queries, loader.seed, loader.hub_id, loader.hub_qrels_id) == (
        "scifact", "hub", "test", 100, 100, 0, "BeIR/scifact", "BeIR/scifact-qrels")
    # BEIR's zips unpack to <folder>/<corpus>/: the parent folder works too
    loader = build_components(make_cfg("dataset=beir_stitched", "dataset.corpus=minibeir",
                                       f"dataset.path={SOURCE.parent}",
                                       f"dataset.sentences_per_doc={TARGET}")).dataset
    assert loader.load().report["n_queries"] == 6
    with pytest.raises(ConfigError, match="sentences_per_doc"):
        BeirStitched(sentences_per_doc=0)


def _copy(tmp_path):
    folder = tmp_path / "src"
    shutil.copytree(SOURCE, folder)
    return folder


def _edit_corpus(folder, edit):
    rows = _jsonl("corpus.jsonl", folder)
    edit(rows)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_malformed_input_names_dataset_row_and_field(tmp_path):
    folder = _copy(tmp_path)

    def fails(**kw):
        with pytest.raises(DataError) as e:
            BeirStitched(path=folder, name="bs", **kw).load()
        return e.value

    _edit_corpus(folder, lambda rows: rows[3].pop("text"))
    e = fails()
    assert (e.dataset, e.row, e.field) == ("bs", "18670", "text")
    shutil.rmtree(folder)
    folder = _copy(tmp_path)
    _edit_corpus(folder, lambda rows: rows.append(dict(rows[0])))
    e = fails()
    assert (e.row, e.field) == ("4983", "_id") and "duplicate" in str(e)
    _edit_corpus(folder, lambda rows: rows[-1].pop("_id"))
    assert (fails().row, fails().field) == ("corpus.jsonl line 19", "_id")
    _edit_corpus(folder, lambda rows: rows.pop())
    with (folder / "corpus.jsonl").open("ab") as f:
        f.write(b'{"_id": "x", "text": "caf\xe9"}\n')
    e = fails()
    assert e.row == "corpus.jsonl line 19" and "UTF-8" in str(e)

    folder = tmp_path / "qrels_bad"
    shutil.copytree(SOURCE, folder)
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "9\t4983\n")
    e = fails()
    assert (e.row, e.field) == ("qrels/test.tsv line 15", "(whole line)")
    qrels.write_text(qrels.read_text().replace("9\t4983\n", "9\t4983\thigh\n"))
    e = fails()
    assert (e.row, e.field) == ("qrels/test.tsv line 15", "score")

    queries = folder / "queries.jsonl"
    queries.write_text(queries.read_text().replace('"text": "Telomerase extends telomeres."',
                                                   '"text": " "'))
    qrels.write_text(qrels.read_text().replace("9\t4983\thigh\n", ""))
    e = fails()
    assert (e.row, e.field) == ("42", "question")


def test_miracl_style_docid_and_trec_qrels(ds, tmp_path):
    folder = tmp_path / "miracl"
    (folder / "qrels").mkdir(parents=True)
    rows = _jsonl("corpus.jsonl")
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"docid": r["_id"], "title": r["title"], "text": r["text"]}) + "\n" for r in rows))
    shutil.copy(SOURCE / "queries.jsonl", folder)
    lines = (SOURCE / "qrels" / "test.tsv").read_text().splitlines()[1:]
    (folder / "qrels" / "train.tsv").write_text(
        "".join(f"{q}\tQ0\t{d}\t{s}\n" for q, d, s in (x.split("\t") for x in lines)))
    got = BeirStitched(corpus="miracl", path=folder, split="train",
                       sentences_per_doc=TARGET).load()
    assert [d.meta["source_ids"] for d in got.documents] == [d.meta["source_ids"] for d in ds.documents]
    assert [(q.qid, q.meta["qrels"], [(e.start, e.end) for e in q.evidence]) for q in got.queries] == [
        (q.qid, q.meta["qrels"], [(e.start, e.end) for e in q.evidence]) for q in ds.queries]
    assert got.documents[0].doc_id == "miracl/stitched-00000"
