"""The chunking leaderboard (issue 48): the suite file, its bundled data, the measures, and a tiny
suite end to end through `chunkbench leaderboard` (runs recorded, a broken chunker refused, a
second call reading the record)."""

import csv
import hashlib
import io
import math
from types import SimpleNamespace

import pytest

from harness.chunking.base import Chunker
from harness.report.challenge.own_data import BASELINES
from harness.report.challenge.significance import Comparison
from harness.report.leaderboard import measures, suite
from harness.report.tables import grid
from harness.types import Chunk, ConfigError

SAMPLES = suite.REPO / "harness" / "data" / "samples"
BUNDLED = {"ragbench": "ragbench", "chroma": "chroma_evaluation", "gutenqa": "gutenqa", "ohrbench": "ohr_bench"}


class PastTheEnd(Chunker):
    """Breaks the span contract: its one chunk ends past the document's text."""

    def chunk_document(self, doc):
        return [Chunk(f"{doc.doc_id}#0", doc.doc_id, doc.text, 0, len(doc.text) + 50)]


def test_the_suite_names_its_version_datasets_and_contenders():
    s = suite.load("leaderboard")
    assert s.id == f"leaderboard-v{s.version}" and isinstance(s.version, int)
    assert s.sizes == (128, 512)
    assert {d.key for d in s.datasets} == {"covidqa", "delucionqa", "expertqa", "chroma", "gutenqa_emma", "ohrbench"}
    assert {"beir_scifact"} == {p.key for p in s.pending} and all(p.why for p in s.pending)
    for d in s.datasets:
        assert d.primary and d.licence and d.source, d.key
    assert {d.key: d.primary for d in s.datasets}["gutenqa_emma"] == "dcg_at_5"
    names = {c.name for c in s.contenders}
    assert set(BASELINES) | {"multi_granular"} <= names   # every ChunkBench chunker that needs no LLM
    assert {c.family for c in s.contenders} == {"chunkbench", "langchain", "llama_index", "chonkie", "semchunk",
                                                "semantic_text_splitter"}
    assert len(s.contenders) == 2 * len(names) and len({c.key for c in s.contenders}) == len(s.contenders)
    fixed = s.contender("fixed@512")
    assert fixed.overrides == ("chunker=fixed", "chunker.size=512", "context=budget")
    lc = s.contender("langchain_recursive@128")
    assert "chunker.kwargs={chunk_size:512,chunk_overlap:0}" in lc.overrides   # 128 tokens x 4 characters
    assert s.contender("multi_granular@128").overrides[-1] == "context=parent_max"
    assert all(r.why for r in s.refused)


def test_every_contender_and_dataset_of_the_suite_composes():
    """One point per contender and one per dataset composed as a run composes it: a misspelt
    override or a chunker parameter that does not exist fails here, before any CPU-hour."""
    s = suite.load("leaderboard")
    spec = suite.table(s)
    points = spec.runs("smoke")
    assert len(points) == len(s.contenders) * len(s.datasets)
    first = {}
    for p in points:
        if p.row == s.contenders[0].key or p.group == s.datasets[0].key:
            first[p.key] = p
    for p in first.values():
        cfg = grid.compose(spec, p, "smoke")
        assert cfg.context.budget == 1024 and cfg.retriever.scope == "corpus", p.key
        assert cfg.embedder.model == "bundled"


@pytest.mark.parametrize("dataset", sorted(BUNDLED))
def test_the_suites_data_is_bundled_with_licence_source_and_checksums(dataset):
    folder = SAMPLES / BUNDLED[dataset]
    source = (folder / "SOURCE.md").read_text(encoding="utf-8")
    assert "licence" in source.lower() or "license" in source.lower()
    sums = (folder / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    assert sums
    for line in sums:
        digest, name = line.split(maxsplit=1)
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


def test_covidqa_is_bundled_and_read_as_the_bundled_source():
    from harness.data.ragbench import RAGBench

    ds = RAGBench(subset=["covidqa"], source="bundled", require_evidence=True, limit_queries=3).load()
    assert ds.report["n_queries"] == 3 and ds.documents
    with pytest.raises(ConfigError, match="dataset.path"):
        RAGBench(subset=["covidqa"], source="bundled", path="/elsewhere")


def test_select_keeps_the_contenders_and_datasets_named():
    s = suite.load("leaderboard")
    part = suite.select(s, "fixed,chonkie_*@128", "covid*,chroma")
    assert [c.key for c in part.contenders] == ["fixed@128", "fixed@512", "chonkie_tokens@128", "chonkie_sentence@128",
                                                "chonkie_recursive@128", "chonkie_semantic@128"]
    assert [d.key for d in part.datasets] == ["covidqa", "chroma"]
    with pytest.raises(ConfigError, match="matches no contender"):
        suite.select(s, "nothing_like_it")
    with pytest.raises(ConfigError, match="matches no dataset"):
        suite.select(s, None, "nowhere")


def test_a_suite_file_with_an_unknown_key_or_no_primary_fails_in_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nversion: 1\nsizes: [64]\ndatasets: {a: {overrides: [dataset=chroma]}}\n"
                    "contenders: {fixed: {overrides: [chunker=fixed]}}\n")
    with pytest.raises(ConfigError, match="needs overrides and a primary metric"):
        suite.load(path)
    path.write_text("name: bad\nversion: 1\nsizes: [64]\ncolour: red\n")
    with pytest.raises(ConfigError, match="unknown keys"):
        suite.load(path)


def test_ranks_share_ties_and_rank_the_highest_first():
    assert measures.ranks({"a": 0.5, "b": 0.9, "c": 0.5, "d": 0.1}) == {"b": 1, "a": 2.5, "c": 2.5, "d": 4}


def _comparison(a, b, p_holm, lo, hi, diff):
    c = Comparison("d", b, "m", a, a, a, None, None, None, False)
    c.p_holm, c.ci_low, c.ci_high, c.diff, c.margin = p_holm, lo, hi, diff, 2.0
    return c


def test_the_matrix_counts_each_side_of_every_pair():
    found = {"d1": [_comparison("x", "y", 0.001, 3, 9, 6), _comparison("x", "z", 0.5, -1, 1, 0)],
             "d2": [_comparison("x", "y", 0.5, -10, 10, 0)]}
    m = measures.matrix(found)
    assert m[("y", "x")] == {"win": 1, "tie": 0, "loss": 0, "inconclusive": 1}
    assert m[("x", "y")] == {"win": 0, "tie": 0, "loss": 1, "inconclusive": 1}
    assert m[("x", "z")]["tie"] == m[("z", "x")]["tie"] == 1


def test_costs_are_per_mb_of_documents_and_averaged_over_datasets():
    def run(seconds_per_doc, n_docs, size_max):
        return SimpleNamespace(info=SimpleNamespace(status="FINISHED"), data=SimpleNamespace(metrics={
            "chunk_seconds_per_doc": seconds_per_doc, "n_docs": n_docs, "chunks_per_doc": 4.0,
            "chunk_size_mean": 100.0, "chunk_size_max": size_max, "chunker_cost_embed_texts": 2.0 * n_docs}))

    rendered = SimpleNamespace(runs={"c|a": run(0.5, 10, 120), "c|b": run(0.1, 100, 300)})
    cost = measures.costs(rendered, "c", ["a", "b"], {"a": 2.0, "b": 5.0})
    assert math.isclose(cost["seconds_per_mb"], (0.5 * 10 / 2 + 0.1 * 100 / 5) / 2)
    assert cost["chunk_tokens_max"] == 300 and cost["embed_texts_per_doc"] == 2.0


TINY = """
name: tiny
version: 1
title: Tiny leaderboard
shared: [embedder=bundled, retriever=dense, retriever.scope=corpus, responder=none, context.budget=256,
         context.unit=tokens, context.tokenizer=bundled, context.overflow=truncate]
budget: 256 tokens
sizes: [64]
datasets:
  news:
    label: OHR-Bench news
    overrides: [dataset=ohrbench, "dataset.domains=[news]", dataset.limit_queries=12, metrics=retrieval]
    primary: evidence_recall
    secondary: [span_iou]
    licence: apache-2.0
    source: the bundled sample
  delucionqa:
    label: DelucionQA
    overrides: [dataset=ragbench, dataset.source=bundled, dataset.subset=delucionqa, dataset.require_evidence=true,
                dataset.limit_docs=12, metrics=retrieval]
    primary: evidence_recall
    licence: CC-BY-4.0
    source: the bundled test split
pending:
  later: {label: A later dataset, why: not bundled yet}
contenders:
  fixed: {label: Fixed, family: chunkbench, overrides: [chunker=fixed, "chunker.size={size}"]}
  langchain_recursive: {label: LangChain recursive, family: langchain,
                        overrides: [chunker=langchain, chunker.splitter=RecursiveCharacterTextSplitter, "chunker.kwargs={chunk_size:{chars},chunk_overlap:0}"]}
  past_the_end: {label: Past the end, family: test, overrides: [chunker=custom, "chunker._target_=tests.report.test_leaderboard.PastTheEnd"]}
refused:
  semchunk: {label: semchunk, why: no adapter yet}
"""


@pytest.mark.slow
def test_a_tiny_suite_end_to_end(tmp_path, capsys):
    from harness.cli import main

    (tmp_path / "tiny.yaml").write_text(TINY)
    out, uri = tmp_path / "board", f"sqlite:///{tmp_path / 'mlruns.db'}"
    args = ["leaderboard", "--suite", str(tmp_path / "tiny.yaml"), "--uri", uri, "--out", str(out),
            "--set", f"cache.dir={tmp_path / 'cache'}"]
    main(args)
    first = capsys.readouterr().out
    assert "[leaderboard/tiny-v1] 4 finished, 2 failed" in first
    readme = (out / "README.md").read_text()
    assert "Suite **tiny-v1**" in readme and "A later dataset (`later`): not bundled yet" in readme
    assert "`past_the_end@64`: refused: news: " in readme and "broke the chunk contract" in readme
    assert "semchunk (`semchunk`): no adapter yet" in readme
    rows = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    assert [r["contender"] for r in rows][-1] == "past_the_end@64" and rows[-1]["status"].startswith("refused")
    ranked = rows[:2]
    assert {r["contender"] for r in ranked} == {"fixed@64", "langchain_recursive@64"}
    for r in ranked:
        assert r["status"] == "ranked" and r["datasets"] == "2" and float(r["seconds_per_mb"]) > 0
        assert 0 <= float(r["news"]) <= 100 and float(r["news_low"]) <= float(r["news"]) <= float(r["news_high"])
        assert int(r["wins"]) + int(r["ties"]) + int(r["losses"]) + int(r["inconclusive"]) == 2
    assert sorted(float(r["mean_rank"]) for r in ranked)[0] >= 1
    matrix = list(csv.DictReader(io.StringIO((out / "matrix.csv").read_text())))
    assert {(m["contender"], m["against"]) for m in matrix} == {("fixed@64", "langchain_recursive@64"),
                                                                ("langchain_recursive@64", "fixed@64")}
    assert (out / "pareto.png").stat().st_size > 0
    main(args)   # the record holds every point: nothing runs again, the same table comes out
    second = capsys.readouterr().out
    assert second.count("already recorded") == 4 and "0 runs computed" in (out / "README.md").read_text()
    rerows = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    assert [(r["contender"], r["news"], r["delucionqa"]) for r in rerows] == \
        [(r["contender"], r["news"], r["delucionqa"]) for r in rows]
