"""MultiFieldQA_zh as QChunker uses it: LongBench's rows (tests/fixtures/qchunker/longbench),
identical contexts merged."""

import json
import zipfile

import pytest

from harness.data.multifieldqa_zh import MultiFieldQAZh
from harness.types import ConfigError
from tests.data.qchunker_files import FIX, load_error

def test_multifieldqa_longbench_rows():
    rows = [json.loads(x) for x in (FIX / "longbench" / "multifieldqa_zh.jsonl").read_text().splitlines()]
    ds = MultiFieldQAZh(FIX / "longbench").load()
    ids = [f"multifieldqa_zh/{r['_id']}" for r in rows]  # LongBench's ids: <subset>/<_id>
    assert [d.doc_id for d in ds.documents] == ids[:2]
    assert [d.text for d in ds.documents] == [rows[0]["context"], rows[1]["context"]]
    assert ds.report["docs_duplicate_contexts"] == 1 and ds.documents[0].language == "zh"
    assert [(q.qid, q.question, q.answers, q.doc_ids, q.task) for q in ds.queries] == [
        (ids[i], r["input"], tuple(r["answers"]), (ids[0 if i != 1 else 1],),
         "multifieldqa_zh") for i, r in enumerate(rows)]
    assert ds.documents[0].meta["length"] == rows[0]["length"]
    ds = MultiFieldQAZh(FIX / "longbench", qa_only=True).load()
    assert ds.documents == [] and all(not q.doc_ids for q in ds.queries)


def test_multifieldqa_hub_zip_and_mirror_names(tmp_path, monkeypatch):
    import huggingface_hub

    rows = [json.loads(x) for x in (FIX / "longbench" / "multifieldqa_zh.jsonl").read_text().splitlines()]
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data/multifieldqa_zh.jsonl",
                   "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    calls = []

    def download(repo_id, filename, repo_type=None, revision=None, **kw):
        calls.append((repo_id, filename, repo_type, revision))
        return str(archive)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    ds = MultiFieldQAZh("hub").load()
    assert calls == [("THUDM/LongBench", "data.zip", "dataset", None)]
    assert [q.qid for q in ds.queries] == [f"multifieldqa_zh/{r['_id']}" for r in rows] and len(ds.documents) == 2
    mirror = tmp_path / "mirror"  # parquet mirrors call "input" "question"
    mirror.mkdir()
    (mirror / "multifieldqa_zh.jsonl").write_text("".join(
        json.dumps({("question" if k == "input" else k): v for k, v in r.items()},
                   ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert [q.question for q in MultiFieldQAZh(mirror).load().queries] == [r["input"] for r in rows]

    def offline(**kw):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(ConfigError, match="THUDM/LongBench.*OSError"):
        MultiFieldQAZh("hub").fingerprint()


def test_malformed_rows(tmp_path):
    (tmp_path / "multifieldqa_zh.jsonl").write_text(
        json.dumps({"input": "问？", "answers": ["答"], "_id": "abc"}) + "\n", encoding="utf-8")
    e = load_error(MultiFieldQAZh(tmp_path))
    assert (e.dataset, e.row, e.field) == ("multifieldqa_zh", "multifieldqa_zh/abc", "context")
