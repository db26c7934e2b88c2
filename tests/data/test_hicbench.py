"""HiChunk's unified layout (qas/<subset>.jsonl + docs/<subset>/<_id>.txt), on a small
fixture written in exactly that layout, malformed rows included."""

import json

import pytest
from hydra import compose, initialize_config_dir

from harness.data.hicbench import HiChunkLayout, header_sections
from harness.pipeline.components import build_components
from harness.types import ConfigError, DataError
from tests.conftest import CONFIGS

REPORT = """# Annual Report 2023
The company had a good year.

## Revenue
Revenue rose by 12 percent to 4.2 billion dollars in 2023, driven by cloud services.
Costs were flat.

### Cloud
The cloud segment doubled its customer base over the year, mostly in Europe and Asia.

## Outlook
Management expects “moderate” growth in 2024 and plans two new data centres.

# Appendix
Tables follow.
"""
PLAIN = "A LongBench context has no headers at all.\nIt is one flat passage about rivers and lakes.\n"
CHINESE = "# 年度报告\n公司今年的收入增长了百分之十二，主要来自云服务。\n\n## 展望\n管理层预计明年将温和增长。\n"

ROWS = [
    {"input": "How did revenue develop?", "answers": ["It rose 12% to $4.2bn."],
     "facts": ["Revenue rose by 12 percent", "Revenue reached 4.2 billion dollars"],
     "evidences": [
         "# Revenue",  # a header line, quoted with its "# " as HiCBench does
         "Revenue rose by 12 percent to 4.2 billion dollars in 2023, driven by cloud services.",
         'Management expects "moderate" growth in 2024 and plans two new data centres.',
         "The cloud segment doubled its customer base during the year, mostly in Europe and Asia.",
     ], "all_classes": ["T1"], "_id": "report"},
    {"input": "What is the outlook?", "answers": ["Moderate growth."], "facts": [],
     "evidences": ["The moon is made of green cheese, as every annual report has always said."],
     "all_classes": ["T2"], "_id": "report"},
    {"input": "What is the passage about?", "answers": ["Rivers", "Lakes"],
     "all_classes": None, "_id": "plain"},
    {"input": "收入增长了多少？", "answers": ["百分之十二"], "facts": ["收入增长百分之十二"],
     "evidences": ["公司今年的收入增长了百分之十二，主要来自云服务。"], "all_classes": [], "_id": "zh"},
    {"input": "What does the empty file say?", "answers": ["Nothing."], "facts": [],
     "evidences": ["anything"], "all_classes": ["T1"], "_id": "empty"},
]
DOCS = {"report": REPORT, "plain": PLAIN, "zh": CHINESE, "empty": "  \n"}


def write_layout(root, rows=ROWS, docs=DOCS, subset="HiCBench", docs_folder="docs"):
    (root / "qas").mkdir(parents=True, exist_ok=True)
    (root / "qas" / f"{subset}.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    folder = root / docs_folder / subset
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, text in docs.items():
        (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def layout(tmp_path):
    return write_layout(tmp_path / "dataset")


@pytest.fixture
def loaded(layout):
    return HiChunkLayout(layout).load()


def test_counts_and_skips(loaded):
    r = loaded.report
    assert loaded.name == "hichunk/HiCBench"
    assert [d.doc_id for d in loaded.documents] == ["report", "plain", "zh"]
    assert [q.qid for q in loaded.queries] == ["report#0", "report#1", "plain#2", "zh#3"]
    assert (r["n_docs"], r["n_queries"]) == (3, 4)
    assert (r["docs_skipped_empty"], r["queries_skipped_empty_doc"]) == (1, 1)
    assert r["queries_without_evidence"] == 1 and r["n_sections"] == 5 + 0 + 2


def test_headers_become_sections(loaded):
    doc = loaded.documents[0]
    assert doc.text == REPORT  # header lines stay in the text
    got = [(s.level, s.title, doc.text[s.start:s.end].split("\n")[0]) for s in doc.sections]
    assert got == [(1, "Annual Report 2023", "# Annual Report 2023"), (2, "Revenue", "## Revenue"),
                   (3, "Cloud", "### Cloud"), (2, "Outlook", "## Outlook"),
                   (1, "Appendix", "# Appendix")]
    spans = {s.title: doc.text[s.start:s.end] for s in doc.sections}
    # A section runs to the next header of the same or a higher level.
    assert spans["Annual Report 2023"].endswith("two new data centres.")
    assert spans["Revenue"].endswith("mostly in Europe and Asia.")
    assert spans["Cloud"] == ("### Cloud\nThe cloud segment doubled its customer base over the "
                              "year, mostly in Europe and Asia.")
    assert spans["Appendix"] == "# Appendix\nTables follow."
    assert loaded.documents[1].sections == ()
    assert [(s.level, s.title) for s in loaded.documents[2].sections] == [(1, "年度报告"), (2, "展望")]


def test_header_rule_follows_hichunk():
    # A "#" at the start of a line is a chunk point even without a space; indented is not.
    text = "intro\n#Tight\nbody\n  # indented\n####Deep #\nend"
    assert [(s.level, s.title) for s in header_sections(text)] == [(1, "Tight"), (4, "Deep")]


def test_fields_map(loaded):
    q = loaded.queries[0]
    assert (q.question, q.answers, q.doc_ids, q.task) == (
        "How did revenue develop?", ("It rose 12% to $4.2bn.",), ("report",), "T1")
    assert q.facts == ("Revenue rose by 12 percent", "Revenue reached 4.2 billion dollars")
    assert q.meta["all_classes"] == ["T1"] and q.meta["index"] == 0
    plain = loaded.queries[2]
    assert plain.answers == ("Rivers", "Lakes") and plain.facts == () and plain.evidence == ()
    assert plain.meta["all_classes"] is None and plain.task == ""
    assert loaded.queries[1].task == "T2"
    assert [d.language for d in loaded.documents] == ["en", "en", "zh"]


def test_evidence_alignment(loaded):
    r = loaded.report
    counts = [r[f"evidence_{m}"] for m in ("exact", "normalised", "fuzzy", "unaligned")]
    assert counts == [3, 1, 1, 1] and r["evidence_total"] == 6
    doc = loaded.documents[0]
    q = loaded.queries[0]
    assert q.meta["evidence_method"] == ["exact", "exact", "normalised", "fuzzy"]
    texts = [doc.text[s.start:s.end] for s in q.evidence]
    assert texts == q.evidence_texts({doc.doc_id: doc}) and "evidence_text" not in q.meta
    assert texts[0] == "Revenue"  # HiChunk strips the "# " before matching
    assert texts[2] == "Management expects “moderate” growth in 2024 and plans two new data centres."
    assert texts[3] == ("The cloud segment doubled its customer base over the year, mostly in "
                        "Europe and Asia.")
    missing = loaded.queries[1]  # evidence not in the document: counted, kept as text
    assert missing.evidence == ()
    assert missing.unaligned_evidence == (ROWS[1]["evidences"][0],)
    assert missing.evidence_texts({}) == [ROWS[1]["evidences"][0]]
    zh = loaded.queries[3]
    assert loaded.documents[2].text[zh.evidence[0].start:zh.evidence[0].end] == ROWS[3]["evidences"][0]


def test_any_subset_and_the_doc_folder_spelling(tmp_path):
    root = write_layout(tmp_path / "d", subset="qasper_all", docs_folder="doc")
    ds = HiChunkLayout(root, subset="qasper_all", fuzzy_min_score=None).load()
    assert ds.name == "hichunk/qasper_all" and ds.report["n_queries"] == 4
    assert ds.report["evidence_fuzzy"] == 0 and ds.report["evidence_unaligned"] == 2
    with pytest.raises(ConfigError, match="HiCBench.jsonl does not exist.*subset"):
        HiChunkLayout(root).load()


def test_filters_limits_and_seed(layout):
    ds = HiChunkLayout(layout, min_words=20).load()
    assert [d.doc_id for d in ds.documents] == ["report"]
    assert ds.report["docs_dropped_min_words"] == 2 and ds.report["queries_dropped_doc_filters"] == 2
    ds = HiChunkLayout(layout, limit_docs=1, limit_queries=1).load()
    assert [q.qid for q in ds.queries] == ["report#0"] and ds.report["docs_dropped_limit_docs"] == 2
    seen = set()
    for seed in range(8):
        a = HiChunkLayout(layout, limit_docs=2, seed=seed).load()
        assert [d.doc_id for d in a.documents] == [
            d.doc_id for d in HiChunkLayout(layout, limit_docs=2, seed=seed).load().documents]
        seen.add(tuple(d.doc_id for d in a.documents))
    assert len(seen) > 1


def test_tasks_keep_one_columns_questions(layout):
    t2 = HiChunkLayout(layout, tasks=["T2"]).load()
    assert [q.qid for q in t2.queries] == ["report#1"] and [d.doc_id for d in t2.documents] == ["report"]
    assert t2.report["queries_dropped_tasks"] == 4  # T1 (2, one on the empty document), untagged, zh
    both = HiChunkLayout(layout, tasks=["T1", "T2"]).load()
    assert [q.task for q in both.queries] == ["T1", "T2"]
    with pytest.raises(ConfigError, match="tasks must be a list"):
        HiChunkLayout(layout, tasks="T1")


def test_path_is_required_and_says_why(tmp_path):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("config", overrides=[f"cache.dir={tmp_path}", "tracking=none",
                                            "dataset=hicbench"])
    with pytest.raises(ConfigError) as e:
        build_components(cfg)
    msg = str(e.value)
    assert "dataset.path" in msg and "gated" in msg and "TencentYoutuResearch/HiChunk" in msg
    assert "qas/HiCBench.jsonl" in msg and "docs/HiCBench/<_id>.txt" in msg
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("config", overrides=[f"cache.dir={tmp_path}", "tracking=none",
                                            "dataset=hicbench", f"dataset.path={tmp_path}",
                                            "dataset.subset=GutenQA"])
    loader = build_components(cfg).dataset
    assert isinstance(loader, HiChunkLayout) and loader.subset == "GutenQA"


def _error(root, name="hc"):
    with pytest.raises(DataError) as e:
        HiChunkLayout(root, name=name).load()
    return e.value


def _rows(**changes):
    rows = [dict(r) for r in ROWS]
    for i, change in changes.items():
        rows[int(i[1:])] = change(rows[int(i[1:])])
    return rows


def test_missing_and_mistyped_fields(tmp_path):
    def without(key):
        return lambda r: {k: v for k, v in r.items() if k != key}

    root = write_layout(tmp_path / "a", _rows(r2=without("input")))
    e = _error(root)
    assert (e.dataset, e.row, e.field) == ("hc", "plain", "input")
    assert "HiCBench.jsonl line 3" in str(e) and "missing" in str(e)
    with pytest.raises(DataError, match="input"):  # also when a limit leaves the row out
        HiChunkLayout(root, limit_docs=1).load()
    e = _error(write_layout(tmp_path / "b", _rows(r1=without("_id"))))
    assert (e.row, e.field) == ("HiCBench.jsonl line 2", "_id")
    e = _error(write_layout(tmp_path / "c", _rows(r0=lambda r: {**r, "answers": "one"})))
    assert (e.row, e.field) == ("report", "answers") and "list of strings" in str(e)
    e = _error(write_layout(tmp_path / "d", _rows(r3=lambda r: {**r, "evidences": [1, 2]})))
    assert (e.row, e.field) == ("zh", "evidences")
    e = _error(write_layout(tmp_path / "e", _rows(r0=lambda r: {**r, "_id": "../escape"})))
    assert e.field == "_id" and "docs/HiCBench" in str(e)


def test_missing_document_file(tmp_path):
    docs = {k: v for k, v in DOCS.items() if k != "zh"}
    root = write_layout(tmp_path / "x", docs=docs)
    e = _error(root)
    assert (e.row, e.field) == ("zh", "_id") and "zh.txt" in str(e)
    HiChunkLayout(root).fingerprint()  # still computable; the error comes from load


def test_bad_encoding(tmp_path):
    root = write_layout(tmp_path / "enc")
    (root / "docs/HiCBench/plain.txt").write_bytes("caf\u00e9 au lait".encode("latin-1"))
    e = _error(root)
    assert (e.dataset, e.row, e.field) == ("hc", "plain", "_id")
    assert "not valid UTF-8" in str(e) and "plain.txt" in str(e)

    root = write_layout(tmp_path / "enc2")
    qas = root / "qas/HiCBench.jsonl"
    lines = qas.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"outlook", "outl\u00f6ok".encode("latin-1"))
    qas.write_bytes(b"\n".join(lines))
    e = _error(root)
    assert (e.row, e.field) == ("HiCBench.jsonl line 2", "(whole row)") and "UTF-8" in str(e)

    lines[1] = b'{"input": "broken'
    qas.write_bytes(b"\n".join(lines))
    assert "malformed JSON" in str(_error(root))


def test_crlf_and_bom_read_as_text_mode_does(tmp_path):
    docs = dict(DOCS, report="\ufeff" + REPORT.replace("\n", "\r\n"))
    root = tmp_path / "crlf"
    write_layout(root, docs={})
    for doc_id, text in docs.items():
        (root / "docs/HiCBench" / f"{doc_id}.txt").write_bytes(text.encode("utf-8"))
    ds = HiChunkLayout(root).load()
    assert ds.documents[0].text == REPORT and ds.report["evidence_exact"] == 3


def test_fingerprint_tracks_files_and_parameters(layout):
    a = HiChunkLayout(layout).fingerprint()
    assert a == HiChunkLayout(layout).fingerprint() != HiChunkLayout(layout, min_words=5).fingerprint()
    (layout / "docs/HiCBench/plain.txt").write_text(PLAIN + "More.\n")
    assert a != HiChunkLayout(layout).fingerprint()
