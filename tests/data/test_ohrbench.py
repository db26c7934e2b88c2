import json
import shutil

import pytest
from rapidfuzz import fuzz

from harness.data.align import FUZZY_MIN_SCORE, normalise
from harness.data.ohrbench import OHRBench
from harness.types import ConfigError, DataError
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "ohr_bench"


@pytest.fixture(scope="module")
def sample():
    return OHRBench().load()


def _sample_rows():
    return [json.loads(line) for line in (SAMPLE / "qas.jsonl").read_text().splitlines()]


def test_bundled_sample_counts(sample):
    assert sample.name == "ohrbench"
    assert len(sample.documents) == 8
    assert len(sample.queries) == 242
    assert sample.report["n_docs"] == 8 and sample.report["n_queries"] == 242


def test_documents_are_pages_with_sections(sample):
    doc = next(d for d in sample.documents if d.doc_id == "finance/AMAZON_2019_10K")
    pages = json.loads((SAMPLE / "retrieval_base/gt/finance/AMAZON_2019_10K.json").read_text())
    assert doc.text == "\n\n".join(p["text"] for p in pages)
    assert (doc.title, doc.language, doc.meta) == ("AMAZON_2019_10K", "en", {"domain": "finance"})
    for section, page in zip(doc.sections, [p for p in pages if p["text"]]):
        assert doc.text[section.start:section.end] == page["text"]
        assert (section.level, section.title) == (1, f"page {page['page_idx']}")


def test_queries_map_upstream_fields(sample):
    row = _sample_rows()[0]
    q = next(q for q in sample.queries if q.qid == row["ID"])
    assert (q.question, q.answers, q.doc_ids, q.task) == (
        row["questions"], (row["answers"],), (row["doc_name"],), "T0")
    for key in ("doc_type", "answer_form", "evidence_source", "evidence_page_no", "is_extra_qa"):
        assert q.meta[key] == row[key]


def test_every_snippet_is_aligned_or_reported(sample):
    docs = {d.doc_id: d for d in sample.documents}
    snippets = {r["ID"]: r["evidence_context"] for r in _sample_rows()}
    for q in sample.queries:
        if q.evidence:
            (span,) = q.evidence
            text = docs[span.doc_id].text[span.start:span.end]
            a, b = normalise(text), normalise(snippets[q.qid])
            assert a == b or fuzz.ratio(a.lower(), b.lower()) >= FUZZY_MIN_SCORE
            assert q.unaligned_evidence == ()
        else:
            assert q.unaligned_evidence == (snippets[q.qid],)
        assert "evidence_text" not in q.meta and "unaligned_evidence" not in q.meta
        assert len(q.evidence_texts(docs)) == 1  # never dropped


def test_alignment_shares(sample):
    r = sample.report
    shares = [r[f"evidence_{m}_share"] for m in ("exact", "normalised", "fuzzy", "unaligned")]
    assert abs(sum(shares) - 1) < 1e-9
    assert r["evidence_exact"] == 167  # the sample README's verbatim count
    counts = [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")]
    assert counts == [167, 8, 55, 12] and sum(counts) == 242
    assert r["evidence_page_not_found"] == 0


def test_evidence_prefers_the_evidence_page(sample):
    docs = {d.doc_id: d for d in sample.documents}
    rows = {r["ID"]: r for r in _sample_rows()}
    for q in sample.queries:
        if q.evidence:
            doc, page_no = docs[q.doc_ids[0]], rows[q.qid]["evidence_page_no"]
            page = next(s for s in doc.sections if s.title == f"page {page_no}")
            snippet = rows[q.qid]["evidence_context"]
            if snippet in doc.text[page.start:page.end]:
                assert page.start <= q.evidence[0].start < q.evidence[0].end <= page.end


def test_min_words_and_domain_filters():
    ds = OHRBench(min_words=4000).load()
    kept = {d.doc_id for d in ds.documents}
    assert all(len(d.text.split()) >= 4000 for d in ds.documents)
    assert ds.report["docs_dropped_min_words"] == 8 - len(kept) > 0
    assert all(q.doc_ids[0] in kept for q in ds.queries)
    assert ds.report["queries_dropped_doc_filters"] == 242 - len(ds.queries)

    news = OHRBench(domains=["news"]).load()
    assert {d.meta["domain"] for d in news.documents} == {"news"}
    assert news.report["docs_dropped_domains"] == 6 and len(news.queries) == 6


def test_limit_docs_and_limit_queries():
    ds = OHRBench(limit_docs=2, limit_queries=5).load()
    assert len(ds.documents) == 2 and len(ds.queries) == 5
    assert ds.report["docs_dropped_limit_docs"] == 6
    assert ds.report["queries_dropped_limit_queries"] > 0


def _copy(tmp_path):
    dst = tmp_path / "ohr"
    shutil.copytree(SAMPLE, dst)
    return dst


def test_missing_document_file_is_a_clear_error(tmp_path):
    dst = _copy(tmp_path)
    (dst / "retrieval_base/gt/manual/mi_phone.json").unlink()
    first = next(r for r in _sample_rows() if r["doc_name"] == "manual/mi_phone")
    with pytest.raises(DataError) as e:
        OHRBench(dst, name="broken").load()
    assert (e.value.dataset, e.value.row, e.value.field) == ("broken", first["ID"], "doc_name")
    assert "mi_phone.json" in str(e.value)
    OHRBench(dst).fingerprint()  # still computable, so the error surfaces from load


def test_bad_row_and_json_layout(tmp_path):
    dst = _copy(tmp_path)
    rows = _sample_rows()
    rows[3]["evidence_page_no"] = "twelve"
    (dst / "qas.jsonl").unlink()
    (dst / "qas.json").write_text(json.dumps(rows))  # the upstream file is a JSON list
    with pytest.raises(DataError) as e:
        OHRBench(dst).load()
    assert (e.value.row, e.value.field) == (rows[3]["ID"], "evidence_page_no")
    del rows[3]["evidence_page_no"], rows[3]["ID"]
    (dst / "qas.json").write_text(json.dumps(rows))
    with pytest.raises(DataError) as e:
        OHRBench(dst).load()
    assert (e.value.row, e.value.field) == ("qas.json item 3", "ID")


def test_fingerprint_tracks_files_and_parameters(tmp_path):
    dst = _copy(tmp_path)
    a = OHRBench(dst).fingerprint()
    assert a == OHRBench(dst).fingerprint()
    assert a != OHRBench(dst, min_words=10).fingerprint()
    path = dst / "retrieval_base/gt/news/06_13.json"
    pages = json.loads(path.read_text())
    pages[0]["text"] += " edited"
    path.write_text(json.dumps(pages))
    assert a != OHRBench(dst).fingerprint()


def test_missing_folder_names_the_path(tmp_path):
    with pytest.raises(ConfigError, match="dataset 'ohrbench': none of .*qas.jsonl, .*qas.json exists"):
        OHRBench(tmp_path / "nowhere").load()


def test_seeded_limits_draw_the_same_sample_every_time():
    a = OHRBench(limit_docs=3, limit_queries=10, seed=7).load()
    b = OHRBench(limit_docs=3, limit_queries=10, seed=7).load()
    first = OHRBench(limit_docs=3, limit_queries=10).load()
    assert [d.doc_id for d in a.documents] == [d.doc_id for d in b.documents]
    assert [q.qid for q in a.queries] == [q.qid for q in b.queries] and len(a.queries) == 10
    assert len(a.documents) == 3 and a.report["docs_dropped_limit_docs"] == 5
    others = [OHRBench(limit_docs=3, seed=s).load() for s in range(1, 6)]
    assert any([d.doc_id for d in o.documents] != [d.doc_id for d in first.documents] for o in [a, *others])
    assert OHRBench(limit_docs=3, seed=7).fingerprint() != OHRBench(limit_docs=3).fingerprint()
