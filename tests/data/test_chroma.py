"""Chroma's general evaluation: the bundled release (whole, checksummed) and the publisher's layout."""

import csv
import hashlib
import json
from pathlib import Path

import pytest

from harness.data.chroma import BUNDLED, CORPORA, ChromaEvaluation
from harness.types import ConfigError, DataError


def test_bundled_release_is_whole_and_unchanged():
    for line in (BUNDLED / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        assert hashlib.sha256((BUNDLED / name).read_bytes()).hexdigest() == digest, name
    ds = ChromaEvaluation().load()
    assert sorted(d.doc_id for d in ds.documents) == list(CORPORA)
    per_corpus = {c: sum(q.task == c for q in ds.queries) for c in CORPORA}
    assert per_corpus == {"wikitexts": 144, "pubmed": 99, "finance": 97, "state_of_the_union": 76, "chatlogs": 56}
    assert ds.report["n_excerpts"] == 790 and ds.report["n_queries"] == 472
    rows = list(csv.DictReader((BUNDLED / "questions_df.csv").open(encoding="utf-8", newline="")))
    docs = {d.doc_id: d.text for d in ds.documents}
    for q, row in zip(ds.queries, rows, strict=True):
        assert q.question == row["question"] and q.doc_ids == (row["corpus_id"],)
        assert [docs[s.doc_id][s.start:s.end] for s in q.evidence] == [r["content"] for r in json.loads(row["references"])]
    assert [q.qid for q in ds.queries] == [str(i) for i in range(472)]


def test_corpora_pick_documents_and_their_questions():
    ds = ChromaEvaluation(corpora=["chatlogs", "state_of_the_union"]).load()
    assert [d.doc_id for d in ds.documents] == ["chatlogs", "state_of_the_union"]
    assert len(ds.queries) == 56 + 76 and ds.report["queries_dropped_corpora"] == 472 - 132
    assert ChromaEvaluation(corpora=["chatlogs"]).fingerprint() != ChromaEvaluation().fingerprint()
    with pytest.raises(ConfigError, match=r"dataset.corpora names \['news'\]"):
        ChromaEvaluation(corpora=["chatlogs", "news"]).load()
    with pytest.raises(ConfigError, match="dataset.corpora must be a non-empty list"):
        ChromaEvaluation(corpora=[])


def _folder(tmp: Path, refs: list[dict], corpus_text: str = "Alpha beta. Gamma delta.\nEpsilon.") -> Path:
    (tmp / "corpora").mkdir()
    (tmp / "corpora" / "tiny.md").write_text(corpus_text, encoding="utf-8")
    with (tmp / "questions_df.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "references", "corpus_id"])
        w.writerow(["What is gamma?", json.dumps(refs), "tiny"])
    return tmp


def test_a_folder_in_the_publishers_layout(tmp_path):
    folder = _folder(tmp_path, [{"content": "Gamma delta.", "start_index": 12, "end_index": 24}])
    ds = ChromaEvaluation(path=folder).load()
    (q,) = ds.queries
    assert (q.qid, q.task, [(s.doc_id, s.start, s.end) for s in q.evidence]) == ("0", "tiny", [("tiny", 12, 24)])


def test_bad_rows_name_the_row_and_field(tmp_path):
    folder = _folder(tmp_path, [{"content": "Gamma delta.", "start_index": 11, "end_index": 23}])
    with pytest.raises(DataError) as e:
        ChromaEvaluation(path=folder).load()
    assert (e.value.row, e.value.field) == ("0", "references[0]") and "not the excerpt 'Gamma delta.'" in str(e.value)
    (folder / "questions_df.csv").write_text("question,corpus_id\nq,tiny\n", encoding="utf-8")
    with pytest.raises(DataError, match="'references': column missing"):
        ChromaEvaluation(path=folder).load()
    (folder / "questions_df.csv").write_bytes("question,references,corpus_id\nq\xe9,[],tiny\n".encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8"):
        ChromaEvaluation(path=folder).load()
    (folder / "questions_df.csv").write_text("question,references,corpus_id\nq,[],tiny\n", encoding="utf-8")
    with pytest.raises(DataError, match="must be a non-empty JSON list"):
        ChromaEvaluation(path=folder).load()
    (folder / "corpora" / "tiny.md").unlink()
    with pytest.raises(ConfigError, match="tiny.md does not exist"):
        ChromaEvaluation(path=folder).load()
    with pytest.raises(ConfigError, match="questions_df.csv does not exist.*chunking_evaluation"):
        ChromaEvaluation(path=tmp_path / "nowhere").load()


CHROMA_RECURSIVE = ["chunker=recursive", "chunker.style=langchain", "chunker.unit=tokens", "chunker.tokenizer=cl100k",
                    "chunker.separators=['\n\n','\n','.','?','!',' ','']", "chunker.size=200", "chunker.overlap=0"]


@pytest.mark.slow
def test_chatlogs_precision_omega_is_the_reports(tmp_path):
    """End to end on the real Chatlogs corpus (40 KB, 56 questions): Precision_Ω reads the chunks and
    excerpts only, so Recursive 200/0 must give the report's Table 1 appendix value, 25.7 ± 12.2
    (Chatlogs, text-embedding-3-large, which this column does not read), with BM25 retrieval."""
    import harness

    r = harness.evaluate(["dataset=chroma", "dataset.corpora=[chatlogs]", "retriever=bm25", "retriever.scope=corpus",
                          "context=topk", "context.k=5", "metrics=chroma", "responder=none",
                          f"cache.dir={tmp_path / 'cache'}", *CHROMA_RECURSIVE], record=False)
    assert r.metrics["n_queries"] == 56
    assert round(100 * r.metrics["span_precision_omega"], 1) == 25.7
    import statistics

    omega = [row["span_precision_omega"] for row in r.per_query]
    assert round(100 * statistics.pstdev(omega), 1) == 12.2   # the report's np.std: population
