"""``chunkbench synth`` against a scripted OpenAI-compatible server: every span is its excerpt,
every rejection is counted by its reason, the set runs as dataset=local, a rerun asks nothing,
an interrupted run resumes, and bad input is one line with nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness import cli
from tests.conftest import REPO
from tests.http_fake import JSONHandler, LocalServer

DOC = ("The Harlow Bridge was built in 1887 by the engineer Mary Coates. It spans the river Tane at its "
       "narrowest point. The town council voted in 1954 to widen the bridge for motor traffic. The widened "
       "bridge reopened in 1957 with two lanes and a footpath. A toll was charged until 1921, when the county "
       "bought the bridge from its owners. Each summer the town holds a fair on the meadow beside the bridge.\n")
OATH = "I will not use the word 'and' in the question unless it is part of a proper noun."
BUILT = "The Harlow Bridge was built in 1887 by the engineer Mary Coates."


def reply(question: str, *references: str) -> str:
    return json.dumps({"oath": OATH, "question": question, "references": list(references)})


# one reply per call, in the order the calls are made; the reason each is rejected, if it is
SCRIPT = [
    (reply("Who built the Harlow Bridge?", BUILT), None),
    (reply("What colour is the Harlow Bridge?", "The Harlow Bridge is painted purple."), "excerpt_not_found"),
    (reply("Who was the builder of the Harlow Bridge?", BUILT), "duplicate"),
    ('{"question": "When did the council vote?", "references": ["The town council', "malformed_json"),
    ("Sure! Here is a good question about the bridge for you.", "not_json"),
    (reply("When was the bridge built and who built it?", BUILT), "compound_question"),
    # the prompt's own example writes single quotes: read as well
    ("{'question': 'When did the town council vote to widen the bridge?', "
     "'references': ['The town council voted in 1954 to widen the bridge for motor traffic.']}", None),
    (reply("What is the capital city of Peru?", "It spans the river Tane at its narrowest point."), "not_relevant"),
]


class ScriptedServer:
    """Answers the n-th chat request with ``script[n]`` (cycling); ``fail_at``: that request gets
    a 400 (the run stops there); ``hang``: no request is ever answered."""

    def __init__(self, fail_at: int | None = None, hang: bool = False, script=SCRIPT):
        self.requests: list[dict] = []
        self.script = script
        self.fail_at, self.hang = fail_at, hang
        self.release = threading.Event()
        outer = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.hang:
                    outer.release.wait(30)
                    return
                n = len(outer.requests)
                outer.requests.append(body)
                if n == outer.fail_at:
                    return self._send(400, {"error": {"message": "scripted failure"}})
                msg = {"role": "assistant", "content": outer.script[n % len(outer.script)][0]}
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.release.set()
        self.local.close()


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "harlow.md").write_text(DOC, encoding="utf-8")
    return folder


def synth(docs: Path, out: Path, url: str, cache: Path, *extra: str, questions: int = len(SCRIPT)) -> list[str]:
    return ["synth", str(docs), "--out", str(out), f"synth.questions={questions}", f"cache.dir={cache}",
            "llm@roles.synth.llm=openai", "roles.synth.llm.model=scripted", f"roles.synth.llm.base_url={url}",
            "roles.synth.llm.max_retries=0", *extra]


def test_synth_writes_exact_spans_and_counts_each_rejection(docs, tmp_path, capsys):
    server = ScriptedServer()
    try:
        out = tmp_path / "set"
        cli.main(synth(docs, out, server.url, tmp_path / "cache", "roles.synth.llm.api_key=sk-synth-secret-42"))
    finally:
        server.close()
    printed = capsys.readouterr().out
    written = "".join(p.read_text() for p in out.iterdir())
    assert "sk-synth-secret-42" not in printed + written  # the key reaches neither the output nor the set
    assert f"2 of {len(SCRIPT)} questions kept" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    from harness.synth.generate import REASONS

    expected = {reason: 1 for _, reason in SCRIPT if reason}
    assert manifest["rejected"] == {reason: expected.get(reason, 0) for reason in REASONS}
    assert manifest["counts"] == {"asked": 8, "parsed": 5, "excerpts_found": 4, "relevant": 3, "not_duplicate": 2}
    assert manifest["llm_usage"]["calls"] == 8 and manifest["llm_usage"]["prompt_tokens"] == 800
    assert manifest["settings"]["relevance_threshold"] == 0.40 and manifest["settings"]["duplicate_threshold"] == 0.70
    assert manifest["llm"]["model"] == "scripted" and len(manifest["settings"]["prompt_sha256"]) == 64
    assert "api_key" not in json.dumps(manifest) and server.url not in json.dumps(manifest)
    documents = {d["doc_id"]: d["text"] for d in map(json.loads, (out / "documents.jsonl").read_text().splitlines())}
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert [q["question"] for q in queries] == ["Who built the Harlow Bridge?",
                                                "When did the town council vote to widen the bridge?"]
    excerpts = [BUILT, "The town council voted in 1954 to widen the bridge for motor traffic."]
    for q, excerpt in zip(queries, excerpts):
        (e,) = q["evidence"]
        assert documents[e["doc_id"]][e["start"]:e["end"]] == excerpt  # the span is the excerpt, exactly
    # every request carried the report's prompt and, after the first kept question, the questions so far
    assert "Who built the Harlow Bridge?" in server.requests[1]["messages"][-1]["content"]
    assert "Who built the Harlow Bridge?" not in server.requests[0]["messages"][-1]["content"]


def test_a_rerun_asks_nothing_and_an_interrupted_run_resumes(docs, tmp_path, capsys):
    cache = tmp_path / "cache"
    broken = ScriptedServer(fail_at=3)
    try:
        with pytest.raises(SystemExit) as stop:
            cli.main(synth(docs, tmp_path / "first", broken.url, cache))
    finally:
        broken.close()
    assert stop.value.code == 2 and "scripted failure" in capsys.readouterr().err
    assert not (tmp_path / "first").exists()
    healthy = ScriptedServer()
    healthy.requests = [{}] * 3  # the script resumes at the call that failed
    try:
        cli.main(synth(docs, tmp_path / "first", healthy.url, cache))
        assert len(healthy.requests) == len(SCRIPT)  # calls 0-2 came from the cache
        cli.main(synth(docs, tmp_path / "again", healthy.url, cache))
        assert len(healthy.requests) == len(SCRIPT)  # nothing asked
    finally:
        healthy.close()
    assert (tmp_path / "first" / "queries.jsonl").read_text() == (tmp_path / "again" / "queries.jsonl").read_text()
    assert json.loads((tmp_path / "again" / "manifest.json").read_text())["llm_usage"]["cached"] == len(SCRIPT)


def test_fuzzy_match_is_named_and_records_how_far_it_moved(docs, tmp_path):
    from harness.synth.evidence import ExcerptMatcher
    from harness.synth.slices import Slice

    where = Slice("harlow.md", 0, len(DOC))
    loose = "The Harlow bridge was built in 1887 by engineer Mary Coates."
    assert ExcerptMatcher("exact").place(DOC, where, (loose,)) is None
    (placed,) = ExcerptMatcher("fuzzy", 85).place(DOC, where, (loose,))
    assert placed.method == "fuzzy" and placed.distance > 0
    assert DOC[placed.span.start:placed.span.end].startswith("The Harlow Bridge")


@pytest.mark.slow  # a whole run in a subprocess (about 50 s here)
def test_the_set_runs_as_a_local_dataset(docs, tmp_path):
    server = ScriptedServer()
    try:
        cli.main(synth(docs, tmp_path / "set", server.url, tmp_path / "cache"))
    finally:
        server.close()
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "harness", "dataset=local", f"dataset.path={tmp_path / 'set'}",
                          "retriever=bm25", "tracking=none", f"cache.dir={tmp_path / 'cache'}"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "evidence_recall" in run.stdout + run.stderr


def files_beside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


@pytest.mark.parametrize("case, message", [
    ("empty", "the folder is empty"),
    ("binary", "image.png: a binary file, not text"),
    ("one_word", "harlow.md: 1 word, too short"),
    ("other_kind", "notes.docx: not a kind synth reads"),
    ("bad_row", "'documents.jsonl', row 'a', field 'text'"),
])
def test_bad_documents_are_one_line_and_nothing_is_written(tmp_path, capsys, case, message):
    folder = tmp_path / "docs"
    folder.mkdir()
    if case == "binary":
        (folder / "harlow.md").write_text(DOC)
        (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    elif case == "one_word":
        (folder / "harlow.md").write_text("Bridge\n")
    elif case == "bad_row":
        (folder / "documents.jsonl").write_text('{"doc_id": "a"}\n')
    elif case == "other_kind":
        (folder / "notes.docx").write_text("some words " * 20)
    before = files_beside(folder)
    with pytest.raises(SystemExit) as stop:
        cli.main(["synth", str(folder), "--out", str(tmp_path / "set"), f"cache.dir={tmp_path / 'cache'}"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert files_beside(folder) == before
    assert not [p for p in tmp_path.iterdir() if p.name == "set" or p.name.startswith(".set")]


def test_a_server_that_never_answers_ends_in_one_line_after_its_timeout(docs, tmp_path, capsys):
    server = ScriptedServer(hang=True)
    try:
        with pytest.raises(SystemExit) as stop:
            cli.main(synth(docs, tmp_path / "set", server.url, tmp_path / "cache",
                           "roles.synth.llm.timeout=1", "roles.synth.llm.deadline=2"))
    finally:
        server.close()
    *progress, err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and err.startswith("chunkbench: error: llm=openai") and "llm.timeout=1 s" in err
    assert all("synth: ask" in line for line in progress)  # the progress bar, and nothing else
    assert not [p for p in tmp_path.iterdir() if p.name in ("set",) or p.name.startswith(".set")]


def test_an_existing_out_folder_is_refused_before_any_work(docs, tmp_path, capsys):
    out = tmp_path / "set"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(SystemExit):
        cli.main(["synth", str(docs), "--out", str(out)])
    assert "already exists" in capsys.readouterr().err and (out / "mine.txt").read_text() == "keep me"


def test_synth_is_listed_in_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "synth" in capsys.readouterr().out


def test_text_files_and_a_documents_jsonl_are_read_together(tmp_path):
    from harness.synth.documents import read_documents

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "harlow.md").write_text(DOC)
    (tmp_path / ".hidden.txt").write_text("skipped")
    (tmp_path / "documents.jsonl").write_text(json.dumps({"doc_id": "d1", "text": DOC, "title": "Harlow"}) + "\n")
    docs = read_documents(tmp_path, min_words=10)
    assert [(d.doc_id, d.title) for d in docs] == [("d1", "Harlow"), ("notes/harlow.md", "harlow")]
    assert all(d.text == DOC for d in docs)


@pytest.mark.parametrize("setting, message", [
    ("synth.spread=everywhere", "synth.spread: one of stratified, random"),
    ("synth.relevance_threshold=2", "synth.relevance_threshold: a cosine similarity in [-1, 1]"),
    ("synth.match=close", "synth.match: one of exact, fuzzy"),
    ("llm=none", "synth.llm: synth asks a language model"),
])
def test_a_bad_setting_is_one_line_before_any_call(docs, tmp_path, capsys, setting, message):
    with pytest.raises(SystemExit) as stop:
        cli.main(["synth", str(docs), "--out", str(tmp_path / "set"), f"cache.dir={tmp_path / 'cache'}", setting])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "set").exists()


def test_match_fuzzy_keeps_a_near_excerpt_and_records_how_far_it_moved(docs, tmp_path):
    near = "The Harlow bridge was built in 1887 by engineer Mary Coates."  # not the document's words exactly
    server = ScriptedServer(script=[(reply("Who built the Harlow Bridge?", near), None)])
    try:
        for match in ("exact", "fuzzy"):
            cli.main(synth(docs, tmp_path / match, server.url, tmp_path / "cache", f"synth.match={match}",
                           "synth.fuzzy_min_score=85", questions=1))
    finally:
        server.close()
    assert (tmp_path / "exact" / "queries.jsonl").read_text() == ""  # the report's rule: rejected
    (q,) = [json.loads(line) for line in (tmp_path / "fuzzy" / "queries.jsonl").read_text().splitlines()]
    (e,) = q["evidence"]
    assert DOC[e["start"]:e["end"]].startswith("The Harlow Bridge was built")
    (moved,) = q["meta"]["excerpt_alignment"]
    assert moved["method"] == "fuzzy" and moved["distance"] > 0 and q["evidence_wording"] == [near]
    assert json.loads((tmp_path / "fuzzy" / "manifest.json").read_text())["settings"]["match"] == "fuzzy"
