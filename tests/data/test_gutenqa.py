"""GutenQA loader, on the bundled real book (Emma) in the publisher's row schema."""

import json
import shutil

import pytest
from hydra import compose, initialize_config_dir
from rapidfuzz import fuzz

from harness.data.align import FUZZY_MIN_SCORE, normalise
from harness.data.gutenqa import HUB_ID, HUB_PARAGRAPHS_ID, GutenQA
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import CONFIGS

SAMPLE = GutenQA().path
BOOK = "Emma_-_Jane_Austen"


def _rows(name, folder=SAMPLE):
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def _write(folder, name, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


@pytest.fixture(scope="module")
def sample():
    return GutenQA().load()


def _cfg(tmp_path, *overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("config", overrides=[f"cache.dir={tmp_path / 'cache'}", "tracking=none",
                                            "dataset=gutenqa", *overrides])


def test_bundled_sample_counts(sample):
    r = sample.report
    assert sample.name == "gutenqa"
    assert (len(sample.documents), len(sample.queries)) == (1, 30)
    assert (r["n_docs"], r["n_queries"], r["words_per_doc"]) == (1, 30, 157317)
    assert r["docs_dropped_limit_docs"] == r["queries_dropped_limit_queries"] == 0


def test_book_is_its_chunks_with_chapters_and_paragraphs(sample):
    (doc,) = sample.documents
    chunks = _rows("gutenqa_chunks.jsonl")
    paragraphs = _rows("GutenQA_paragraphs.jsonl")
    assert doc.text == "\n".join(c["Chunk"] for c in chunks) == "\n".join(p["Chunk"] for p in paragraphs)
    assert (doc.doc_id, doc.title, doc.meta["book_id"]) == (BOOK, "Emma - Jane Austen", -1)
    assert doc.meta["structure_source"] == "paragraphs"
    chapters = [s for s in doc.sections if s.level == 1]
    paras = [s for s in doc.sections if s.level == 2]
    assert len(chapters) == 55 and len(paras) == len(paragraphs) == 2287
    assert [doc.text[s.start:s.end] for s in paras] == [p["Chunk"] for p in paragraphs]
    assert chapters[0].title == "VOLUME I. CHAPTER I" and chapters[-1].title == "VOLUME III. CHAPTER XIX"
    for ch in chapters:  # a chapter is exactly its paragraphs
        inside = [p for p, s in zip(paragraphs, paras) if ch.start <= s.start and s.end <= ch.end]
        assert {p["Chapter"] for p in inside} == {ch.title}
        assert doc.text[ch.start:ch.end] == "\n".join(p["Chunk"] for p in inside)
    spans = doc.meta["lumberchunker_spans"]
    assert [doc.text[s:e] for s, e in spans] == [c["Chunk"] for c in chunks]


def test_questions_map_fields(sample):
    rows = _rows("questions.jsonl")
    (doc,) = sample.documents
    for i, (q, row) in enumerate(zip(sample.queries, rows)):
        assert q.qid == f"{BOOK}#{i}"
        assert (q.question, q.answers, q.doc_ids, q.task) == (
            row["Question"], (row["Answer"],), (BOOK,), "T0")
        start, end = q.meta["gold_chunk_span"]
        assert q.meta["chunk_id"] == row["Chunk ID"]
        assert doc.text[start:end] == _rows("gutenqa_chunks.jsonl")[row["Chunk ID"]]["Chunk"]


def test_alignment_shares_on_the_real_book(sample):
    """25 snippets are verbatim, 1 differs in a no-break space, 4 in quote style or case."""
    r = sample.report
    counts = [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")]
    assert counts == [25, 1, 4, 0] and r["evidence_total"] == 30
    assert r["evidence_fuzzy_share"] == pytest.approx(4 / 30)
    assert r["evidence_in_gold_chunk"] == 30 and r["evidence_missing"] == 0
    (doc,) = sample.documents
    for q, row in zip(sample.queries, _rows("questions.jsonl")):
        (span,) = q.evidence
        text, snippet = doc.text[span.start:span.end], row["Chunk Must Contain"]
        assert q.evidence_texts({doc.doc_id: doc}) == [text] and q.unaligned_evidence == ()
        method = q.meta["evidence_method"][0]
        if method == "exact":
            assert text == snippet
        elif method == "normalised":
            assert normalise(text) == normalise(snippet)
        else:
            assert fuzz.ratio(normalise(text).lower(), normalise(snippet).lower()) >= FUZZY_MIN_SCORE


def test_fuzzy_off_keeps_snippets_as_text():
    ds = GutenQA(fuzzy_min_score=None).load()
    assert (ds.report["evidence_fuzzy"], ds.report["evidence_unaligned"]) == (0, 4)
    rows = _rows("questions.jsonl")
    unaligned = [q for q in ds.queries if not q.evidence]
    assert [q.unaligned_evidence for q in unaligned] == [
        (rows[int(q.qid.split("#")[1])]["Chunk Must Contain"],) for q in unaligned]
    docs = {d.doc_id: d for d in ds.documents}
    assert all(len(q.evidence_texts(docs)) == 1 for q in ds.queries)  # never dropped


def test_structure_from_chunks_without_paragraphs(sample):
    """Chunk labels "A and B" cross a chapter break; B then starts at that chunk, which is
    where the true break is, to within one chunk."""
    ds = GutenQA(paragraphs=False).load()
    (doc,), (true_doc,) = ds.documents, sample.documents
    assert doc.text == true_doc.text and doc.meta["structure_source"] == "chunks"
    assert ds.report["books_structure_from_chunks"] == 1
    assert ds.report["chapter_boundaries_approximate"] == 26
    approx = [s for s in doc.sections if s.level == 1]
    true = [s for s in true_doc.sections if s.level == 1]
    assert [s.title for s in approx] == [s.title for s in true]
    chunk_ends = sorted(e for _, e in doc.meta["lumberchunker_spans"])
    for a, t in zip(approx, true):
        assert a.start <= t.start
        assert not any(a.start < e < t.start for e in chunk_ends)  # same chunk
    lines = doc.text.split("\n")
    assert sum(s.level == 2 for s in doc.sections) == sum(1 for x in lines if x)


def test_legacy_single_table_gives_the_same_dataset(sample, tmp_path):
    folder = tmp_path / "legacy"
    folder.mkdir()
    shutil.copy(SAMPLE / "GutenQA_combined_legacy.jsonl", folder)
    shutil.copy(SAMPLE / "GutenQA_paragraphs.jsonl", folder)
    ds = GutenQA(folder).load()
    assert [d.text for d in ds.documents] == [d.text for d in sample.documents]
    assert [d.sections for d in ds.documents] == [d.sections for d in sample.documents]
    assert [(q.qid, q.question, q.answers, q.evidence) for q in ds.queries] == [
        (q.qid, q.question, q.answers, q.evidence) for q in sample.queries]


def test_parquet_folder(sample, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, stem in [("gutenqa_chunks.jsonl", "gutenqa_chunks"), ("questions.jsonl", "questions")]:
        pq.write_table(pa.Table.from_pylist(_rows(name)), tmp_path / f"{stem}.parquet")
    ds = GutenQA(tmp_path).load()  # no paragraph table: structure from the chunks
    assert [q.evidence for q in ds.queries] == [q.evidence for q in sample.queries]
    assert ds.report["books_structure_from_chunks"] == 1


def _fake_hub(monkeypatch, calls):
    import datasets

    tables = {(HUB_ID, "gutenqa_chunks.parquet"): "gutenqa_chunks.jsonl",
              (HUB_ID, "questions.parquet"): "questions.jsonl",
              (HUB_PARAGRAPHS_ID, "GutenQA_paragraphs.parquet"): "GutenQA_paragraphs.jsonl"}

    def load_dataset(repo, data_files=None, split=None, revision=None, **kwargs):
        calls.append((repo, data_files, split, revision))
        return datasets.Dataset.from_list(_rows(tables[(repo, data_files)]))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def test_hub_path_reads_the_publisher_files(sample, monkeypatch):
    calls = []
    _fake_hub(monkeypatch, calls)
    loader = GutenQA("hub", revision="abc123")
    fp = loader.fingerprint()
    ds = loader.load()
    assert sorted(calls) == sorted([(HUB_ID, "gutenqa_chunks.parquet", "train", "abc123"),
                                    (HUB_ID, "questions.parquet", "train", "abc123"),
                                    (HUB_PARAGRAPHS_ID, "GutenQA_paragraphs.parquet", "train",
                                     "abc123")])  # one download for fingerprint and load
    assert [d.text for d in ds.documents] == [d.text for d in sample.documents]
    assert [d.sections for d in ds.documents] == [d.sections for d in sample.documents]
    assert [(q.qid, q.evidence) for q in ds.queries] == [(q.qid, q.evidence) for q in sample.queries]
    assert fp == GutenQA("hub", revision="abc123").fingerprint() != GutenQA("hub").fingerprint()


def test_hub_unreachable_says_how_to_get_the_data(tmp_path):
    # The real datasets.load_dataset: the tests run with HF_DATASETS_OFFLINE=1.
    comps = build_components(_cfg(tmp_path, "dataset.path=hub"))
    with pytest.raises(ConfigError) as e:
        comps.dataset.fingerprint()  # the pipeline's first call
    msg = str(e.value)
    assert HUB_ID in msg and "dataset.path=" in msg and "gutenqa_chunks.parquet" in msg
    with pytest.raises(ConfigError, match="does not exist.*dataset.source=hub"):
        GutenQA(tmp_path / "nowhere").load()
    with pytest.raises(ConfigError, match="holds neither"):
        GutenQA(tmp_path).load()


def test_config_default_is_the_bundled_sample(tmp_path):
    loader = build_components(_cfg(tmp_path, "dataset.limit_queries=3")).dataset
    assert isinstance(loader, GutenQA) and loader.path == SAMPLE and loader.limit_queries == 3
    with pytest.raises(ConfigError, match="seed"):
        build_components(_cfg(tmp_path, "dataset.seed=abc"))


def _two_books(tmp_path):
    """Emma plus a small second book built from Emma's first 12 chunks."""
    chunks, questions = _rows("gutenqa_chunks.jsonl"), _rows("questions.jsonl")
    tiny = [dict(c, **{"Book Name": "Tiny_-_Book", "Book ID": 7}) for c in chunks[:12]]
    tiny_q = [dict(q, **{"Book Name": "Tiny_-_Book", "Book ID": 7}) for q in questions[:1]]
    _write(tmp_path, "gutenqa_chunks.jsonl", tiny + chunks)
    _write(tmp_path, "questions.jsonl", tiny_q + questions)
    return tmp_path


def test_limits_and_seeded_sampling(tmp_path):
    folder = _two_books(tmp_path)
    full = GutenQA(folder, paragraphs=False).load()
    assert [d.doc_id for d in full.documents] == ["Tiny_-_Book", BOOK]
    assert len(full.queries) == 31 and full.queries[0].qid == "Tiny_-_Book#0"

    first = GutenQA(folder, limit_docs=1, limit_queries=5).load()
    assert [d.doc_id for d in first.documents] == ["Tiny_-_Book"] and len(first.queries) == 1
    assert first.report["queries_dropped_doc_filters"] == 30

    picks = {}
    for seed in range(6):
        a = GutenQA(folder, limit_queries=5, seed=seed).load()
        b = GutenQA(folder, limit_queries=5, seed=seed).load()
        qids = [q.qid for q in a.queries]
        assert qids == [q.qid for q in b.queries] and len(qids) == 5  # reproducible
        order = [q.qid for q in full.queries]
        assert qids == sorted(qids, key=order.index)  # file order kept
        picks[seed] = tuple(qids)
    assert len(set(picks.values())) > 1
    assert len({d.doc_id for s in range(6)
                for d in GutenQA(folder, limit_docs=1, seed=s).load().documents}) == 2


def test_malformed_rows_name_dataset_row_and_field(tmp_path):
    chunks, questions = _rows("gutenqa_chunks.jsonl"), _rows("questions.jsonl")

    def load(chunks_rows, question_rows):
        _write(tmp_path, "gutenqa_chunks.jsonl", chunks_rows)
        _write(tmp_path, "questions.jsonl", question_rows)
        with pytest.raises(DataError) as e:
            GutenQA(tmp_path, name="broken", paragraphs=False).load()
        return e.value

    bad = [dict(q) for q in questions]
    bad[3]["Chunk ID"] = 9999
    e = load(chunks, bad)
    assert (e.dataset, e.row, e.field) == ("broken", "questions.jsonl line 4", "Chunk ID")
    assert "no chunk 9999" in str(e)

    bad = [dict(q) for q in questions]
    del bad[5]["Question"]
    e = load(chunks, bad)
    assert (e.row, e.field) == (f"{BOOK}#5", "Question")
    with pytest.raises(DataError, match="Question"):  # also when a limit leaves the row out
        GutenQA(tmp_path, limit_queries=1, paragraphs=False).load()

    bad = [dict(q) for q in questions]
    bad[0]["Book Name"] = "Unknown_Book"
    assert load(chunks, bad).field == "Book Name"

    e = load(chunks + [dict(chunks[10])], questions)
    assert (e.row, e.field) == (f"{BOOK} chunk 10", "Chunk ID") and "duplicate" in str(e)

    bad_chunks = [dict(c) for c in chunks]
    bad_chunks[2]["Chunk"] = None
    assert (load(bad_chunks, questions).row, load(bad_chunks, questions).field) == (
        f"{BOOK} chunk 2", "Chunk")


def test_missing_evidence_and_paragraph_mismatch_are_counted(tmp_path):
    chunks, questions = _rows("gutenqa_chunks.jsonl"), _rows("questions.jsonl")
    questions[0]["Chunk Must Contain"] = None
    paragraphs = _rows("GutenQA_paragraphs.jsonl")[:-1]  # the book's last paragraph lost
    _write(tmp_path, "gutenqa_chunks.jsonl", chunks)
    _write(tmp_path, "questions.jsonl", questions)
    _write(tmp_path, "GutenQA_paragraphs.jsonl", paragraphs)
    ds = GutenQA(tmp_path).load()
    r = ds.report
    assert (r["evidence_missing"], r["evidence_total"], r["n_queries"]) == (1, 29, 30)
    assert r["books_paragraphs_mismatch"] == 1 and r["books_structure_from_chunks"] == 1
    assert ds.queries[0].evidence == () and ds.queries[0].unaligned_evidence == ()


def test_fingerprint_tracks_files_and_parameters(tmp_path):
    folder = _two_books(tmp_path)
    a = GutenQA(folder).fingerprint()
    assert a == GutenQA(folder).fingerprint()
    assert a != GutenQA(folder, seed=1).fingerprint() != GutenQA(folder, fuzzy_min_score=90).fingerprint()
    rows = _rows("questions.jsonl", folder)
    rows[0]["Answer"] += " Edited."
    _write(folder, "questions.jsonl", rows)
    assert a != GutenQA(folder).fingerprint()


def test_limit_chunks_keeps_the_books_opening_and_its_questions(sample):
    """Emma cut to Volume I (its first 150 chunk rows): the text is those chunks, the paragraph
    table still matches it (sections are chapters and paragraphs), and only the 11 questions whose
    gold chunk is among them remain, each aligned at the same place as in the whole book."""
    chunks = _rows("gutenqa_chunks.jsonl")
    cut = GutenQA(limit_chunks=150).load()
    doc, whole = cut.documents[0], sample.documents[0]
    assert doc.text == "\n".join(r["Chunk"] for r in chunks[:150]) and whole.text.startswith(doc.text)
    assert doc.meta["structure_source"] == "paragraphs" and cut.report["books_paragraphs_mismatch"] == 0
    inside = [(s.start, min(s.end, len(doc.text)), s.level, s.title) for s in whole.sections if s.start < len(doc.text)]
    assert [(s.start, s.end, s.level, s.title) for s in doc.sections] == inside
    asked = [q for q in sample.queries if q.meta["chunk_id"] < 150]
    assert [q.qid for q in cut.queries] == [q.qid for q in asked] and len(asked) == 11
    assert [q.evidence for q in cut.queries] == [q.evidence for q in asked]
    r = cut.report
    assert (r["chunks_dropped_limit_chunks"], r["queries_dropped_limit_chunks"]) == (476 - 150, 19)
    assert GutenQA(limit_chunks=150).fingerprint() != GutenQA().fingerprint()
    with pytest.raises(ConfigError, match="dataset.limit_chunks"):
        GutenQA(limit_chunks=0)
