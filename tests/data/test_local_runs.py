"""Own data through the whole pipeline and the command line (issue 16 items 1 and 7): a bundled
dataset exported with write_local scores as its own loader does, and bad data input ends in one
line `chunkbench: error: ...`, exit code 2, before any stage runs."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from harness.data.local import write_local
from harness.data.ohrbench import OHRBench
from harness.pipeline.runner import Pipeline

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
SCORES = ("evidence_recall", "evidence_span_recall", "span_recall")


def run(cfg):
    return Pipeline(cfg, log=lambda *_: None).run()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The default run's four OHR-Bench documents (20 questions) in the README's schema."""
    folder = tmp_path_factory.mktemp("exported")
    write_local(OHRBench(domains=["news", "textbook"]).load(), folder)
    return folder


@pytest.mark.slow
def test_exported_dataset_scores_as_its_own_loader(make_cfg, exported):
    own = run(make_cfg())  # dataset=ohrbench, TINY
    local = run(make_cfg("dataset=local", f"dataset.path={exported}"))
    assert local.metrics["n/evidence_recall"] == own.metrics["n/evidence_recall"] == 20
    for name in SCORES:  # fuzzy-aligned evidence is looked up in the dataset's words, as upstream
        assert local.metrics[name] == pytest.approx(own.metrics[name]), name
        assert local.metrics[f"n/{name}"] == own.metrics[f"n/{name}"], name


def _bad_folders(root, exported):
    """name -> folder of one kind of bad input, built from the exported sample."""
    docs = [json.loads(line) for line in (exported / "documents.jsonl").read_text().splitlines()]

    def folder(name, documents_text=None):
        f = root / name
        f.mkdir()
        shutil.copy(exported / "queries.jsonl", f)
        if documents_text is not None:
            (f / "documents.jsonl").write_text(documents_text, encoding="utf-8")
        return f

    out = {"json": folder("json", json.dumps(docs, indent=2)),
           "one_line_json": folder("one_line_json", json.dumps(docs) + "\n"),
           "empty": folder("empty", ""), "blank": folder("blank", "\n   \n\n"),
           "dir": folder("dir")}
    (out["dir"] / "documents.jsonl").mkdir()
    broken = [dict(d) for d in docs]
    broken[1]["text"] = broken[1]["text"][:50] + "\ud800" + broken[1]["text"][50:]
    # json.dumps escapes it as \ud800, which json.loads reads back as a lone surrogate
    out["surrogate"] = folder("surrogate", "".join(json.dumps(d) + "\n" for d in broken))
    out["unreadable"] = folder("unreadable", (exported / "documents.jsonl").read_text())
    (out["unreadable"] / "documents.jsonl").chmod(0)
    (root / "a_file").write_text("x")
    return out


CASES = {  # case -> (overrides, what the one line must say)
    "missing_path": (["dataset=local"], "dataset.path is required"),
    "no_such_path": (["dataset=local", "dataset.path={root}/nowhere"], "nowhere does not exist"),
    "path_is_a_file": (["dataset=local", "dataset.path={root}/a_file"], "a_file is a file: give the folder"),
    "documents_is_a_dir": (["dataset=local", "dataset.path={dir}"], "documents.jsonl is a folder, not a file"),
    "unreadable": (["dataset=local", "dataset.path={unreadable}"], "documents.jsonl cannot be read"),
    "json_not_jsonl": (["dataset=local", "dataset.path={json}"], "not JSON Lines: write one record per line"),
    "one_line_json": (["dataset=local", "dataset.path={one_line_json}"], "not JSON Lines"),
    "lone_surrogate": (["dataset=local", "dataset.path={surrogate}"],
                       "row 'news/06_13', field 'text': holds a lone surrogate '\\ud800' at character 50"),
    "empty_file": (["dataset=local", "dataset.path={empty}"], "documents.jsonl holds no records"),
    "blank_file": (["dataset=local", "dataset.path={blank}"], "documents.jsonl holds no records"),
    "limit_docs_0": (["dataset.limit_docs=0"], "dataset.limit_docs must be null or an integer >= 1, got 0"),
    "limit_queries_0": (["dataset=local", "dataset.path={exported}", "dataset.limit_queries=0"],
                        "dataset.limit_queries must be null or an integer >= 1"),
    "unknown_domain": (["dataset.domains=[news,nope]"],
                       "dataset.domains: no domain 'nope' in .*qas.jsonl; its domains are finance, law, "
                       "manual, news, paper, textbook"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_bad_data_input_is_one_line_and_exit_2(tmp_path, exported, case):
    if case == "unreadable" and os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading the file")
    import re

    folders = _bad_folders(tmp_path, exported)
    overrides, message = CASES[case]
    args = [o.format(root=tmp_path, exported=exported, **folders) for o in overrides]
    cache = tmp_path / "cache"
    p = subprocess.run([sys.executable, "-m", "harness", *args, "tracking=none", f"cache.dir={cache}"],
                       cwd=tmp_path, env=ENV, text=True, capture_output=True, timeout=300)
    assert p.returncode == 2, p.stderr[-3000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chunkbench: error: "), p.stderr[-3000:]
    assert re.search(message if case == "unknown_domain" else re.escape(message), lines[0]), lines[0]
    assert "[chunk]" not in p.stdout  # refused before any stage after loading
