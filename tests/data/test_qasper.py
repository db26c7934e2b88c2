"""Qasper loader on hand-written papers in the publisher's schemas: the Hub rows (columnar
sequences, tests/fixtures/qasper/hub) and the raw v0.3 JSON (tests/fixtures/qasper/raw)."""

import json
import shutil

import pytest

from harness.data.hicbench import header_sections
from harness.data.qasper import HUB_CONFIG, HUB_ID, Qasper
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "qasper"
HUB_ROWS, RAW = FIXTURES / "hub", FIXTURES / "raw"
QIDS = ["q-seed-lexicon", "q-labelled-data", "q-languages", "q-propagation", "q-accuracy",
        "q-mixed-languages", "q-public", "q-layers"]


def _rows(name="test.jsonl", folder=HUB_ROWS):
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def _write(folder, rows, name="test.jsonl"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return folder


def _features():
    """The Hub's feature spec of allenai/qasper (its dataset card), so a fixture row that
    strays from the schema fails to load."""
    from datasets import Features, Sequence, Value

    s = Value("string")
    answer = {"unanswerable": Value("bool"), "extractive_spans": Sequence(s), "yes_no": Value("bool"),
              "free_form_answer": s, "evidence": Sequence(s), "highlighted_evidence": Sequence(s)}
    return Features({
        "id": s, "title": s, "abstract": s,
        "full_text": Sequence({"section_name": s, "paragraphs": Sequence(s)}),
        "qas": Sequence({"question": s, "question_id": s, "nlp_background": s,
                         "topic_background": s, "paper_read": s, "search_query": s,
                         "question_writer": s,
                         "answers": Sequence({"answer": answer, "annotation_id": s, "worker_id": s})}),
        "figures_and_tables": Sequence({"caption": s, "file": s}),
    })


@pytest.fixture(scope="module")
def ds():
    return Qasper(HUB_ROWS).load()


def _fake_hub(monkeypatch, calls):
    import datasets

    def load_dataset(repo, config=None, split=None, revision=None, **kwargs):
        calls.append((repo, config, split, revision))
        return datasets.Dataset.from_list(_rows(f"{split}.jsonl"), features=_features())

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def test_hub_path_reads_the_hub_rows(ds, monkeypatch):
    calls = []
    _fake_hub(monkeypatch, calls)
    loader = Qasper(revision="abc123")
    fp = loader.fingerprint()
    hub = loader.load()
    assert calls == [(HUB_ID, HUB_CONFIG, "test", "abc123")]  # one download for both
    assert [(d.doc_id, d.text, d.sections) for d in hub.documents] == [
        (d.doc_id, d.text, d.sections) for d in ds.documents]
    assert [(q.qid, q.answers, q.evidence, q.task, q.meta) for q in hub.queries] == [
        (q.qid, q.answers, q.evidence, q.task, q.meta) for q in ds.queries]
    assert hub.report == ds.report
    assert fp == Qasper(revision="abc123").fingerprint() != Qasper().fingerprint()
    val = Qasper(split="validation").load()
    assert calls[-1] == (HUB_ID, HUB_CONFIG, "validation", None)
    assert [d.doc_id for d in val.documents] == ["9902.00001"]


def test_counts_and_field_mapping(ds):
    assert ds.name == "qasper"
    assert [d.doc_id for d in ds.documents] == ["9901.00001", "9901.00002", "9901.00003"]
    assert [q.qid for q in ds.queries] == QIDS
    assert (ds.report["n_docs"], ds.report["n_queries"]) == (3, 8)
    q = {q.qid: q for q in ds.queries}
    seed = q["q-seed-lexicon"]
    assert (seed.question, seed.doc_ids, seed.task) == ("What is the seed lexicon?", ("9901.00001",),
                                                        "extractive")
    # one answer per annotator, read as Qasper's evaluator does
    assert seed.answers == ("15 positive and 15 negative predicates",
                            "15 positive, 15 negative predicates")
    assert (q["q-labelled-data"].answers, q["q-labelled-data"].task) == (("No",), "boolean")
    assert (q["q-languages"].answers, q["q-languages"].task) == (("Unanswerable",) * 2, "none")
    assert q["q-propagation"].task == "abstractive"
    assert (q["q-mixed-languages"].task, q["q-layers"].task) == ("mixed", "mixed")
    assert q["q-public"].answers == ("Yes",)  # the empty annotation gives no answer
    assert ds.report["annotations_empty"] == 1
    kinds = ("extractive", "abstractive", "boolean", "none", "mixed")
    assert [ds.report[f"task_{t}"] for t in kinds] == [2, 1, 2, 1, 2]
    assert (seed.meta["nlp_background"], seed.meta["question_writer"]) == ("two", "w-writer-1")
    ann = seed.meta["annotations"][1]
    assert (ann["annotation_id"], ann["worker_id"], ann["type"]) == ("a-1-2", "w-annot-2", "extractive")
    assert ann["highlighted_evidence"] == ["15 positive and 15 negative predicates"]
    doc = ds.documents[0]
    assert doc.meta["figures_and_tables"] == [
        {"file": "1-Table1-1.png", "caption": "Table 1: Accuracy on the ACP test set."}]
    assert (doc.language, doc.meta["split"], doc.meta["n_paragraphs"]) == ("en", "test", 12)


def test_text_is_hichunk_qasper_all_layout(ds):
    """Title, abstract, then "#" x depth headers over each section's paragraphs, "\\n"-joined;
    an entry without a name adds its paragraphs to the section before."""
    doc = ds.documents[2]
    assert doc.text == (
        "Probing Attention Heads for Negation\n"
        "We test whether attention heads track the scope of negation.\n"
        "# Introduction\n"
        "\n"  # Introduction has no paragraphs of its own
        "## Motivation\n"
        "Negation flips the meaning of a sentence but is rare in training data.\n"
        "# Probing Setup\n"
        "We train a linear probe on each head of a 12-layer encoder.")
    first = ds.documents[0].text
    assert "# Method\nWe extract" in first
    assert "initial scores.\nThe scores are propagated" in first  # the unnamed entry


def test_sections_are_header_levels_with_spans(ds):
    doc = ds.documents[0]
    assert [(s.level, s.title) for s in doc.sections] == [
        (1, "Introduction"), (1, "Related Work"), (2, "Sentiment Analysis"),
        (3, "Lexicon Induction"), (1, "Method"), (2, "Setup"), (2, "Results"), (1, "Conclusion")]
    for d in ds.documents:  # HiChunk's "#" rule reads the same starts and levels (its gold chunk points)
        assert [(s.start, s.level, s.title) for s in d.sections] == [
            (s.start, s.level, s.title) for s in header_sections(d.text)]
        for s in d.sections:
            assert d.text[s.start:s.end].startswith("#" * s.level + " " + s.title + "\n")
            assert not d.text[s.start:s.end].endswith(("\n", " "))
    related, sentiment, lexicon = doc.sections[1:4]
    assert related.start < sentiment.start < lexicon.start
    assert lexicon.end == sentiment.end == related.end
    assert doc.text[related.end + 1:].startswith("# Method")
    # "Experiments ::: Setup" has no "Experiments" entry: no header is invented (as in HiChunk), and
    # Method ends before it, where the "#" rule would run Method on over Setup and Results
    assert ds.report["sections_missing_parent"] == 2
    method, setup = doc.sections[4:6]
    assert doc.text[method.end + 1:].startswith("## Setup") and setup.start > method.end
    assert next(s for s in header_sections(doc.text) if s.title == "Method").end > setup.end
    assert ds.report["lines_looking_like_headers"] == 0
    title, abstract = doc.meta["title_span"], doc.meta["abstract_span"]
    assert doc.text[slice(*title)] == doc.title == "Learning Sentiment Lexicons from Discourse Markers"
    assert doc.text[slice(*abstract)].startswith("We propose")
    assert doc.sections[0].start == abstract[1] + 1


def test_evidence_alignment(ds):
    r = ds.report
    counts = [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")]
    assert counts == [6, 1, 0, 2] and r["evidence_total"] == 9
    assert r["evidence_exact_share"] == pytest.approx(6 / 9)
    assert r["evidence_unaligned_share"] == pytest.approx(2 / 9)
    assert r["evidence_float_selected"] == 1
    q = {q.qid: q for q in ds.queries}
    docs = {d.doc_id: d for d in ds.documents}
    seed = q["q-seed-lexicon"]  # two annotators, one paragraph: one span
    (span,) = seed.evidence
    assert docs[span.doc_id].text[span.start:span.end] == (
        "A seed lexicon of 15 positive and 15 negative predicates assigns initial scores.")
    assert seed.unaligned_evidence == ("FLOAT SELECTED: Table 1: Accuracy on the ACP test set.",)
    assert len(seed.evidence_texts(docs)) == 2  # the caption is kept, never dropped
    (span,) = q["q-propagation"].evidence  # double space in the evidence string
    assert q["q-propagation"].meta["evidence_method"] == ["normalised"]
    assert docs[span.doc_id].text[span.start:span.end] == (
        "The scores are propagated with a BiGRU encoder trained on the pairs.")
    acc = q["q-accuracy"]
    assert len(acc.evidence) == 1 and acc.unaligned_evidence == (
        "Our model outperforms all baselines by a wide margin on every test set.",)
    assert q["q-languages"].evidence == () and q["q-languages"].evidence_texts(docs) == []
    assert q["q-public"].evidence_texts(docs) == ["The corpus is freely available for research."]


def test_raw_release_json_gives_the_same_dataset(ds):
    raw = Qasper(RAW).load()
    assert [(d.doc_id, d.text, d.sections, d.meta) for d in raw.documents] == [
        (d.doc_id, d.text, d.sections, d.meta) for d in ds.documents]
    assert [(q.qid, q.answers, q.evidence, q.task, q.meta) for q in raw.queries] == [
        (q.qid, q.answers, q.evidence, q.task, q.meta) for q in ds.queries]
    single = Qasper(RAW / "qasper-test-v0.3.json").load()  # a file path works too
    assert [q.qid for q in single.queries] == QIDS
    with pytest.raises(ConfigError, match="no file for split 'validation'.*dataset.path="):
        Qasper(RAW, split="validation").load()


def test_parquet_shards_in_hub_layout(ds, tmp_path):
    import datasets

    folder = tmp_path / "qasper"
    folder.mkdir()
    table = datasets.Dataset.from_list(_rows(), features=_features())
    table.select([0, 1]).to_parquet(str(folder / "test-00000-of-00002.parquet"))
    table.select([2]).to_parquet(str(folder / "test-00001-of-00002.parquet"))
    got = Qasper(tmp_path).load()
    assert [(q.qid, q.evidence, q.meta) for q in got.queries] == [
        (q.qid, q.evidence, q.meta) for q in ds.queries]
    assert [d.text for d in got.documents] == [d.text for d in ds.documents]


def test_filters_and_sampling():
    r = Qasper(HUB_ROWS, drop_unanswerable=True).load()
    assert "q-languages" not in [q.qid for q in r.queries] and len(r.queries) == 7
    assert r.report["queries_dropped_unanswerable"] == 1  # q-layers: one annotator answered
    r = Qasper(HUB_ROWS, require_evidence=True).load()
    assert [q.qid for q in r.queries] == [x for x in QIDS if x != "q-languages"]
    assert r.report["queries_dropped_no_evidence"] == 1

    first = Qasper(HUB_ROWS, limit_docs=1, limit_queries=3).load()
    assert [d.doc_id for d in first.documents] == ["9901.00001"]
    assert [q.qid for q in first.queries] == QIDS[:3]
    rep = first.report
    assert (rep["docs_dropped_limit_docs"], rep["queries_dropped_doc_filters"],
            rep["queries_dropped_limit_queries"]) == (2, 3, 2)
    draws = set()
    for seed in range(5):
        a = Qasper(HUB_ROWS, limit_queries=3, seed=seed).load()
        qids = [q.qid for q in a.queries]
        assert qids == [q.qid for q in Qasper(HUB_ROWS, limit_queries=3, seed=seed).load().queries]
        assert qids == sorted(qids, key=QIDS.index)
        draws.add(tuple(qids))
    assert len(draws) > 1
    with pytest.raises(ConfigError, match="split"):
        Qasper(HUB_ROWS, split="dev")


def _load_error(tmp_path, rows, **kw):
    with pytest.raises(DataError) as e:
        Qasper(_write(tmp_path / "bad", rows), name="broken", **kw).load()
    return e.value


def test_malformed_rows_name_dataset_row_and_field(tmp_path):
    rows = _rows()
    del rows[1]["qas"]
    e = _load_error(tmp_path, rows)
    assert (e.dataset, e.row, e.field) == ("broken", "9901.00002", "qas")

    rows = _rows()
    rows[0]["qas"]["question_id"][3] = None
    e = _load_error(tmp_path, rows)
    assert (e.row, e.field) == ("paper 9901.00001, qas[3]", "question_id")

    rows = _rows()
    rows[0]["qas"]["answers"][0]["answer"][1]["evidence"] = "not a list"
    e = _load_error(tmp_path, rows, limit_queries=1)  # checked also when a limit leaves it out
    assert (e.row, e.field) == ("q-seed-lexicon", "answers[1].answer.evidence")

    rows = _rows()
    rows[2]["full_text"]["paragraphs"].pop()
    e = _load_error(tmp_path, rows)
    assert (e.row, e.field) == ("9901.00003", "full_text") and "differ in length" in str(e)

    rows = _rows()
    rows[2]["qas"]["question_id"][0] = "q-seed-lexicon"
    e = _load_error(tmp_path, rows)
    assert (e.row, e.field) == ("q-seed-lexicon", "question_id") and "9901.00001" in str(e)

    rows = _rows()
    rows.append(dict(rows[0]))
    assert _load_error(tmp_path, rows).field == "id"


def test_bad_encoding_names_row_and_field(tmp_path):
    lines = (HUB_ROWS / "test.jsonl").read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"streaming API", b"streaming \xff API")
    folder = tmp_path / "enc"
    folder.mkdir()
    (folder / "test.jsonl").write_bytes(b"\n".join(lines))
    with pytest.raises(DataError) as e:
        Qasper(folder).load()
    assert (e.value.dataset, e.value.row, e.value.field) == (
        "qasper", "9901.00002", "full_text.paragraphs[1][0]")
    assert "0xff" in str(e.value) and "test.jsonl line 2" in str(e.value)

    raw = (RAW / "qasper-test-v0.3.json").read_bytes().replace(b"Negation flips", b"Negation \xfe flips")
    (folder / "test.jsonl").unlink()
    (folder / "qasper-test-v0.3.json").write_bytes(raw)
    with pytest.raises(DataError) as e:
        Qasper(folder).load()
    assert (e.value.row, e.value.field) == ("9901.00003", "full_text[1].paragraphs[0]")


def test_empty_paper_is_skipped_and_counted(tmp_path):
    rows = _rows()
    rows[1]["abstract"] = ""
    rows[1]["full_text"] = {"section_name": ["Introduction"], "paragraphs": [["  "]]}
    r = Qasper(_write(tmp_path, rows)).load()
    assert [d.doc_id for d in r.documents] == ["9901.00001", "9901.00003"]
    assert (r.report["docs_skipped_empty"], r.report["queries_skipped_empty_doc"]) == (1, 2)
    assert len(r.queries) == 6 and r.report["queries_dropped_doc_filters"] == 0


def test_missing_data_says_how_to_get_it(make_cfg, tmp_path):
    # The real datasets.load_dataset: the tests run with HF_DATASETS_OFFLINE=1.
    loader = build_components(make_cfg("dataset=qasper")).dataset
    assert isinstance(loader, Qasper) and loader.hub
    with pytest.raises(ConfigError) as e:
        loader.fingerprint()  # the pipeline's first call
    assert HUB_ID in str(e.value) and "dataset.path=" in str(e.value)
    with pytest.raises(ConfigError, match="does not exist.*dataset.path="):
        Qasper(tmp_path / "nowhere").load()
    with pytest.raises(ConfigError, match="no file for split 'test'"):
        Qasper(tmp_path).load()


def test_config_composes_with_a_local_path(make_cfg):
    cfg = make_cfg("dataset=qasper", f"dataset.path={HUB_ROWS}", "dataset.limit_queries=2")
    loader = build_components(cfg).dataset
    assert isinstance(loader, Qasper) and (loader.split, loader.limit_queries) == ("test", 2)
    got = loader.load()
    assert (len(got.documents), [q.qid for q in got.queries]) == (3, QIDS[:2])
    with pytest.raises(ConfigError, match="split"):
        build_components(make_cfg("dataset=qasper", "dataset.split=dev"))


def test_fingerprint_tracks_files_and_parameters(tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(HUB_ROWS, folder)
    a = Qasper(folder).fingerprint()
    assert a == Qasper(folder).fingerprint()
    assert a != Qasper(folder, drop_unanswerable=True).fingerprint()
    assert a != Qasper(folder, seed=1).fingerprint()
    assert a != Qasper(folder, split="validation").fingerprint()
    rows = _rows(folder=folder)
    rows[0]["title"] += " (edited)"
    _write(folder, rows)
    assert a != Qasper(folder).fingerprint()
