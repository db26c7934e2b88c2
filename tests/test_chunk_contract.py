"""Issue 46: what a chunker returns is held to the chunk contract at the chunk stage, whoever wrote
it (an object given to harness.evaluate, a class named by chunker._target_, a challenger): a
broken chunking fails its run in one line naming the chunker, the document and the chunk, and is
never scored; a chunker past chunker_timeout_s fails the same way."""

import csv
import io
import os
import re
import subprocess
import sys

import pytest

from harness.pipeline import stages
from harness.pipeline.runner import Pipeline
from harness.chunking.contract import BROKE_CONTRACT, ChunkContractError
from harness.types import ConfigError, DocChunks

from tests.conftest import REPO, TINY_LEXICAL
from tests.report.test_challenge import TABLE
from tests.report.test_tables import write_table

BROKEN = '''
import time
from dataclasses import replace

from harness.chunking.base import Chunker, spans_to_chunks
from harness.types import Chunk


class Broken(Chunker):
    """Two halves of each document, broken as ``mode`` says on the documents whose id holds ``only``."""

    def __init__(self, mode: str = "fine", only: str = ""):
        self.mode, self.only = mode, only

    def chunk(self, docs):
        return None if self.mode == "chunk_returns_none" else super().chunk(docs)

    def chunk_document(self, doc):
        n, half = len(doc.text), len(doc.text) // 2
        a, b = spans_to_chunks(doc, [(0, half), (half, n)])
        space = doc.text.index(" ", 1)
        if self.only not in doc.doc_id:
            return [a, b]
        return {
            "fine": lambda: [a, b],
            "tuple_of_chunks": lambda: (a, b),
            "past_end": lambda: [Chunk(f"{doc.doc_id}#0", doc.doc_id, doc.text, 0, n + 50)],
            "negative_start": lambda: [replace(a, start=-3), b],
            "text_elsewhere": lambda: [replace(a, text="words the document does not hold"), b],
            "duplicate_ids": lambda: [a, replace(b, chunk_id=a.chunk_id)],
            "out_of_order": lambda: [b, a],
            "whitespace_only": lambda: [replace(a, text=" ", start=space, end=space + 1), b],
            "none": lambda: None,
            "tuples_of_non_chunks": lambda: ((0, half), (half, n)),
            "generator": lambda: (c for c in (a, b)),
            "str": lambda: doc.text,
            "empty": lambda: [],
            "ids_across_documents": lambda: [replace(a, chunk_id="0"), replace(b, chunk_id="1")],
            "never_returns": lambda: time.sleep(3600),
        }[self.mode]()
'''

# mode -> what the one line says after "document '<id>'"
CASES = {
    "past_end": r", chunk 0 \('[^']+#0', span \[0, \d+\)\): span not inside the text \(length \d+\)",
    "negative_start": r", chunk 0 \('[^']+#0', span \[-3, \d+\)\): span not inside the text \(length \d+\)",
    "text_elsewhere": r", chunk 0 \('[^']+#0', span \[0, \d+\)\): text differs from the span's text",
    "duplicate_ids": r": chunk ids are not unique",
    "out_of_order": r", chunk 1 \('[^']+#0', span \[0, \d+\)\): out of document order",
    "whitespace_only": r", chunk 0 \('[^']+#0', span \[\d+, \d+\)\): part \[\d+, \d+\) is empty or starts or ends "
                       r"with whitespace",
    "none": r": its entry is None, not a list of chunks",
    "tuples_of_non_chunks": r", chunk 0: a tuple, not a harness.types.Chunk",
    "generator": r": its entry is a generator, not a list of chunks",
    "str": r": its entry is a str, not a list of chunks",
    "empty": r": no chunks for a document of \d+ characters",
    "never_returns": r": not chunked within chunker_timeout_s=0.5 s",
}
LIMIT = "chunker_timeout_s=0.5"


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """The module of broken chunkers, in a folder outside the repository, importable as
    ``broken_chunkers``; its path."""
    path = tmp_path / "elsewhere" / "broken_chunkers.py"
    path.parent.mkdir()
    path.write_text(BROKEN)
    monkeypatch.syspath_prepend(str(path.parent))
    yield path
    sys.modules.pop("broken_chunkers", None)


def one_line(e: pytest.ExceptionInfo) -> str:
    message = str(e.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("mode", CASES)
def test_a_broken_chunker_object_fails_in_one_line_naming_it_and_the_document(broken, tmp_path, mode):
    import harness
    from broken_chunkers import Broken

    with pytest.raises(ChunkContractError) as e:
        harness.evaluate([*TINY_LEXICAL, f"cache.dir={tmp_path / 'cache'}", LIMIT], chunker=Broken(mode), record=False)
    assert re.fullmatch(rf"Broken {BROKE_CONTRACT}: document '[a-z]+/[^']+'{CASES[mode]}", one_line(e))


@pytest.mark.parametrize("mode", CASES)
def test_a_broken_chunker_named_by_target_fails_the_same_way(broken, make_cfg, mode):
    cfg = make_cfg("chunker=custom", "chunker._target_=broken_chunkers.Broken", f"++chunker.mode={mode}",
                   "retriever=bm25", LIMIT)
    with pytest.raises(ChunkContractError, match=rf"^Broken {BROKE_CONTRACT}: document '[a-z]+/[^']+'{CASES[mode]}$"):
        Pipeline(cfg, log=lambda *_: None).run()


@pytest.mark.parametrize("mode, message", [
    ("chunk_returns_none", r"chunk\(\) returned None, not a list of each document's chunks"),
    ("ids_across_documents", r"chunk id '0' is in document '[^']+' and in document '[^']+': ids must be unique "
                             r"across documents"),
])
def test_a_broken_run_of_chunks_is_named_too(broken, make_cfg, mode, message):
    cfg = make_cfg("chunker=custom", "chunker._target_=broken_chunkers.Broken", f"++chunker.mode={mode}",
                   "retriever=bm25")
    with pytest.raises(ChunkContractError, match=rf"^Broken {BROKE_CONTRACT}: {message}$"):
        Pipeline(cfg, log=lambda *_: None).run()


def test_a_tuple_of_chunks_is_taken_as_a_list(broken, make_cfg):
    cfg = make_cfg("chunker=custom", "chunker._target_=broken_chunkers.Broken", "++chunker.mode=tuple_of_chunks",
                   "retriever=bm25")
    result = Pipeline(cfg, log=lambda *_: None).run()
    assert result.metrics["n_chunks"] == 2 * result.metrics["n_docs"] > 0


def test_a_broken_entry_already_in_the_cache_is_refused_on_read(broken, make_cfg, tmp_path):
    """An entry stored before the check existed (or by code that did not check) is checked when read."""
    cfg = make_cfg("chunker=custom", "chunker._target_=broken_chunkers.Broken", "retriever=bm25")
    pipeline = Pipeline(cfg, log=lambda *_: None)
    pipeline.run()
    doc = pipeline.outputs["load"].documents[0]
    entry = pipeline.outputs["chunk"][doc.doc_id]
    stage = next(s for s in stages.STAGES if s.name == "chunk")
    key = pipeline.key(stage)  # the per-document key, as the runner derives it
    from harness.pipeline.runner import config_slice, document_key

    doc_key = document_key(stage, [config_slice(pipeline.cfg, "chunker")], doc, stage.fingerprint(pipeline.c))
    assert key and pipeline.cache.get_objects("chunk_doc", [doc_key]) == [entry]
    pipeline.cache.put_objects("chunk_doc", {doc_key: DocChunks(list(reversed(entry.chunks)), entry.seconds)})
    with pytest.raises(ChunkContractError, match=rf"^Broken {BROKE_CONTRACT}: document '{doc.doc_id}', chunk 1 .*: "
                                                 r"out of document order$"):
        Pipeline(cfg, log=lambda *_: None).run()


@pytest.mark.parametrize("value", ["0", "-1", "abc", "true"])
def test_a_bad_time_limit_is_one_line(make_cfg, value):
    from harness.pipeline.components import build_components

    with pytest.raises(ConfigError, match=r"^chunker_timeout_s: a number of seconds above 0, or null for no limit"):
        build_components(make_cfg(f"chunker_timeout_s={value}", "retriever=bm25"))


def test_the_command_line_says_it_in_one_line_and_exits_2(broken, tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{broken.parent}:{REPO}"}
    done = subprocess.run([sys.executable, "-m", "harness", *TINY_LEXICAL, "tracking=none", "chunker=custom",
                           "chunker._target_=broken_chunkers.Broken", "++chunker.mode=text_elsewhere",
                           f"cache.dir={tmp_path / 'cache'}"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"chunkbench: error: Broken {BROKE_CONTRACT}: document ")
    assert "Traceback" not in done.stderr and "evidence_recall" not in done.stdout


def test_a_challenger_that_breaks_the_contract_anywhere_is_refused_everywhere(broken, tmp_path):
    """It breaks the contract on the textbook pages only (and takes no size, so it runs once per
    group): its news point finishes, yet it gets no rank and no verdict anywhere, and the report
    says why."""
    from harness.report.challenge import run
    from harness.report.challenge.cluster import Given

    t = write_table(tmp_path, TABLE)
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    extra = [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
    said = []
    ch = Given(f"{broken}:Broken", ("chunker.mode=out_of_order", "chunker.only=textbook"), "broken")
    with pytest.raises(ConfigError, match=r"^broken is refused, not ranked: Broken broke the chunk contract"):
        run.challenge(ch, [t], "smoke", extra, uri, tmp_path / "report", log=said.append)
    assert "[demo/t1] challenged: 1 finished, 1 failed" in said[-1]
    report = next((tmp_path / "report" / "broken").glob("*/README.md")).parent  # written before the error
    text = (report / "README.md").read_text()
    reason = f"Broken {BROKE_CONTRACT}: document 'textbook/"
    assert f"failed (1 point: `broken|textbook`): {reason}" in text
    assert f"**Refused, not ranked**: {reason}" in text and "mean rank" not in text.lower()
    ranks = list(csv.DictReader(io.StringIO((report / "ranks.csv").read_text())))
    assert len(ranks) == 2 and all(r["rank"] == "" and r["note"].startswith("refused: " + reason) for r in ranks)
    assert (report / "comparisons.csv").read_text().strip().count("\n") == 0  # the header alone
