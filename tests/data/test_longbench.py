"""LongBench loader on hand-written rows in data.zip's schema (tests/fixtures/longbench/data/
<subset>.jsonl) and a parquet mirror's (tests/fixtures/longbench/mirror)."""

import json
import shutil
import zipfile

import pytest

from harness.data.longbench import HUB_FILE, HUB_ID, QA_SUBSETS, LongBench, passage_sections
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "longbench"
DATA = FIXTURES / "data"
COUNTS = {"narrativeqa": 1, "qasper": 1, "multifieldqa_en": 1, "multifieldqa_zh": 2,
          "hotpotqa": 3, "2wikimqa": 1, "musique": 1, "dureader": 1}
HOTPOT = "8a1f0c3d9e2b4a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a"


def _rows(subset, folder=DATA):
    return [json.loads(line) for line in (folder / f"{subset}.jsonl").read_text().splitlines()]


def _write(folder, subset, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{subset}.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return folder


def _zip(path, folder=DATA):
    with zipfile.ZipFile(path, "w") as z:
        for f in sorted(folder.glob("*.jsonl")):
            z.write(f, f"data/{f.name}")
    return path


@pytest.fixture(scope="module")
def ds():
    return LongBench(FIXTURES).load()


def _summary(d):
    return ([(x.doc_id, x.text, x.sections, x.language, x.meta) for x in d.documents],
            [(q.qid, q.question, q.answers, q.doc_ids, q.task, q.meta) for q in d.queries])


def test_hub_path_downloads_data_zip(ds, tmp_path, monkeypatch):
    import huggingface_hub

    calls = []
    zip_path = _zip(tmp_path / HUB_FILE)

    def hf_hub_download(repo_id, filename, repo_type=None, revision=None, **kwargs):
        calls.append((repo_id, filename, repo_type, revision))
        return str(zip_path)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    loader = LongBench(revision="v1")
    fp = loader.fingerprint()
    hub = loader.load()
    assert calls == [(HUB_ID, "data.zip", "dataset", "v1")]  # one download for both
    assert _summary(hub) == _summary(ds) and hub.report == ds.report
    assert fp == LongBench(revision="v1").fingerprint() != LongBench().fingerprint()


def test_counts_and_field_mapping(ds):
    assert [ds.report[f"queries_{s}"] for s in QA_SUBSETS] == [COUNTS[s] for s in QA_SUBSETS]
    assert (ds.report["n_docs"], ds.report["n_queries"]) == (11, 11)
    assert [q.task for q in ds.queries] == [s for s in QA_SUBSETS for _ in range(COUNTS[s])]
    row = _rows("hotpotqa")[0]
    q = next(q for q in ds.queries if q.qid == f"hotpotqa/{HOTPOT}")
    doc = next(d for d in ds.documents if d.doc_id == q.qid)
    assert (q.question, q.answers, q.doc_ids) == (row["input"], tuple(row["answers"]), (doc.doc_id,))
    assert doc.text == row["context"] and doc.language == "en"
    assert doc.meta == {"subset": "hotpotqa", "_id": HOTPOT, "length": row["length"],
                        "dataset": "hotpotqa", "all_classes": None, "answer_prefix": None}
    assert q.meta["language"] == "en" and q.evidence == () and q.evidence_texts({}) == []
    langs = {d.doc_id.split("/")[0]: d.language for d in ds.documents}
    assert [s for s, lang in langs.items() if lang == "zh"] == ["multifieldqa_zh", "dureader"]
    assert ds.report["evidence_total"] == 0 and ds.report["evidence_unaligned"] == 0
    assert ds.report["queries_answer_in_context"] == 9  # "yes" and narrativeqa's free answers
    assert ds.report["length_per_doc"] == pytest.approx(
        sum(r["length"] for s in QA_SUBSETS for r in _rows(s)) / 11)


def test_passages_become_level_one_sections(ds):
    docs = {d.doc_id: d for d in ds.documents}
    doc = docs[f"hotpotqa/{HOTPOT}"]
    assert [(s.level, s.title) for s in doc.sections] == [(1, "Passage 1"), (1, "Passage 2"),
                                                          (1, "Passage 3")]
    for i, s in enumerate(doc.sections, 1):
        assert doc.text[s.start:s.end].startswith(f"Passage {i}:\n")
    assert doc.text[doc.sections[1].start:doc.sections[1].end].endswith("19th century.")
    zh = next(d for d in ds.documents if d.doc_id.startswith("dureader/"))
    assert [zh.text[s.start:s.end].split("\n")[0] for s in zh.sections] == ["文章1", "文章2"]
    # "Passage 1", then "Passage 3": not the layout expected, so no sections at all
    assert docs["hotpotqa/0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a"].sections == ()
    assert (ds.report["docs_with_passage_sections"], ds.report["docs_passages_unreliable"]) == (5, 1)
    single = [d for d in ds.documents if d.doc_id.split("/")[0] not in
              ("hotpotqa", "2wikimqa", "musique", "dureader")]
    assert len(single) == 5 and all(d.sections == () for d in single)
    off = LongBench(FIXTURES, subset="hotpotqa", passages=False).load()
    assert all(d.sections == () for d in off.documents) and off.report["n_sections"] == 0
    assert passage_sections("Intro text\nPassage 1:\nx") is None  # text before the first marker


def test_local_layouts_give_the_same_rows(ds, tmp_path):
    assert _summary(LongBench(DATA).load()) == _summary(ds)  # the unzipped data/ itself
    zipped = _zip(tmp_path / HUB_FILE)
    assert _summary(LongBench(zipped).load()) == _summary(ds)  # the zip file
    assert _summary(LongBench(tmp_path).load()) == _summary(ds)  # a folder holding data.zip


def test_parquet_mirror_with_question_field(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows("2wikimqa", FIXTURES / "mirror")
    assert "input" not in rows[0] and rows[0]["question"]
    (tmp_path / "2wikimqa").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "2wikimqa" / "test-00000-of-00001.parquet")
    for folder in (tmp_path, FIXTURES / "mirror"):
        got = LongBench(folder, subset="2wikimqa").load()
        (q,) = got.queries
        assert (q.question, q.meta["answer_prefix"]) == (rows[0]["question"], "Answer:")
        assert got.documents[0].text == rows[0]["context"] and len(got.documents[0].sections) == 2


def test_subset_choice(make_cfg):
    assert LongBench(FIXTURES, subset="hotpotqa").subsets == ("hotpotqa",)
    assert LongBench(FIXTURES, subset="hotpotqa_e").subsets == ("hotpotqa_e",)
    got = LongBench(FIXTURES, subset=["qasper", "dureader"]).load()
    assert [q.task for q in got.queries] == ["qasper", "dureader"]
    for bad in ("gov_report", ["qasper", "qasper"], [], "dureader_e"):
        with pytest.raises(ConfigError, match="subset"):
            LongBench(FIXTURES, subset=bad)
    cfg = make_cfg("dataset=longbench", f"dataset.path={FIXTURES}",
                   "dataset.subset=[narrativeqa,qasper]")
    loader = build_components(cfg).dataset
    assert isinstance(loader, LongBench) and loader.subsets == ("narrativeqa", "qasper")
    assert [q.task for q in loader.load().queries] == ["narrativeqa", "qasper"]
    cfg = make_cfg("dataset=longbench", f"dataset.path={FIXTURES}", "dataset.subset=hotpotqa",
                   "dataset.limit_queries=2")
    assert len(build_components(cfg).dataset.load().queries) == 2
    with pytest.raises(ConfigError, match="subset"):
        build_components(make_cfg("dataset=longbench", "dataset.subset=lcc"))


def test_limits_and_seeded_sampling(ds):
    first = LongBench(FIXTURES, limit_docs=3).load()
    assert [q.qid for q in first.queries] == [q.qid for q in ds.queries[:3]]
    assert first.report["docs_dropped_limit_docs"] == 8
    two = LongBench(FIXTURES, limit_queries=2).load()
    assert len(two.documents) == len(two.queries) == 2  # a row's document goes with its question
    assert two.report["docs_dropped_limit_queries"] == 9
    order = [q.qid for q in ds.queries]
    draws = set()
    for seed in range(5):
        qids = [q.qid for q in LongBench(FIXTURES, limit_queries=4, seed=seed).load().queries]
        assert qids == [q.qid for q in LongBench(FIXTURES, limit_queries=4, seed=seed).load().queries]
        assert qids == sorted(qids, key=order.index)
        draws.add(tuple(qids))
    assert len(draws) > 1


def _load_error(folder, subset, rows):
    _write(folder, subset, rows)
    with pytest.raises(DataError) as e:
        LongBench(folder, subset=subset, name="broken").load()
    return e.value


def test_malformed_rows_name_dataset_row_and_field(tmp_path):
    rows = _rows("hotpotqa")
    del rows[1]["context"]
    e = _load_error(tmp_path, "hotpotqa", rows)
    assert (e.dataset, e.row, e.field) == ("broken", f"hotpotqa/{rows[1]['_id']}", "context")
    assert "hotpotqa.jsonl line 2" in str(e)

    rows = _rows("hotpotqa")
    del rows[0]["input"]
    e = _load_error(tmp_path, "hotpotqa", rows)
    assert (e.row, e.field) == (f"hotpotqa/{HOTPOT}", "input") and "question" in str(e)

    rows = _rows("hotpotqa")
    rows[2]["answers"] = [1, 2]
    assert _load_error(tmp_path, "hotpotqa", rows).field == "answers"

    rows = _rows("hotpotqa")
    rows[2]["length"] = "long"
    assert _load_error(tmp_path, "hotpotqa", rows).field == "length"

    rows = _rows("hotpotqa")
    rows[2]["_id"] = HOTPOT
    e = _load_error(tmp_path, "hotpotqa", rows)
    assert (e.row, e.field) == (f"hotpotqa/{HOTPOT}", "_id") and "duplicate" in str(e)

    rows = _rows("hotpotqa")
    del rows[0]["_id"]
    e = _load_error(tmp_path, "hotpotqa", rows)
    assert (e.row, e.field) == ("hotpotqa.jsonl line 1", "_id")


def test_bad_encoding_names_row_and_field(tmp_path):
    data = (DATA / "multifieldqa_zh.jsonl").read_bytes()
    head, sep, tail = data.partition("总部位于杭州".encode())
    (tmp_path / "multifieldqa_zh.jsonl").write_bytes(head + sep[:4] + tail)  # a cut character
    with pytest.raises(DataError) as e:
        LongBench(tmp_path, subset="multifieldqa_zh").load()
    rid = _rows("multifieldqa_zh")[0]["_id"]
    assert (e.value.dataset, e.value.row, e.value.field) == ("longbench", rid, "context")
    assert "not valid UTF-8" in str(e.value) and "multifieldqa_zh.jsonl line 1" in str(e.value)


def test_empty_context_is_skipped_and_counted(tmp_path):
    rows = _rows("hotpotqa")
    rows[1]["context"] = " \n "
    _write(tmp_path, "hotpotqa", rows)
    got = LongBench(tmp_path, subset="hotpotqa").load()
    assert [q.qid for q in got.queries] == [f"hotpotqa/{r['_id']}" for r in rows if r is not rows[1]]
    assert (got.report["docs_skipped_empty"], got.report["queries_skipped_empty_doc"]) == (1, 1)


def test_missing_data_says_how_to_get_it(make_cfg, tmp_path):
    # The real hf_hub_download: the tests run with HF_HUB_OFFLINE=1.
    loader = build_components(make_cfg("dataset=longbench", "dataset.subset=qasper")).dataset
    with pytest.raises(ConfigError) as e:
        loader.fingerprint()  # the pipeline's first call
    msg = str(e.value)
    assert HUB_ID in msg and "data.zip" in msg and "dataset.path=" in msg
    with pytest.raises(ConfigError, match="does not exist.*dataset.path="):
        LongBench(tmp_path / "nowhere").load()
    with pytest.raises(ConfigError, match="holds none of musique.jsonl"):
        LongBench(_write(tmp_path / "partial", "qasper", _rows("qasper")),
                  subset=["qasper", "musique"]).load()
    zipped = _zip(tmp_path / "z.zip", FIXTURES / "mirror")
    with pytest.raises(ConfigError, match="no member data/qasper.jsonl"):
        LongBench(zipped, subset="qasper").load()


def test_fingerprint_tracks_files_and_parameters(tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(DATA, folder)
    a = LongBench(folder).fingerprint()
    assert a == LongBench(folder).fingerprint()
    assert a != LongBench(folder, subset="qasper").fingerprint()
    assert a != LongBench(folder, seed=2).fingerprint()
    assert a != LongBench(folder, passages=False).fingerprint()
    rows = _rows("qasper", folder)
    rows[0]["answers"].append("PTB")
    _write(folder, "qasper", rows)
    assert a != LongBench(folder).fingerprint()
