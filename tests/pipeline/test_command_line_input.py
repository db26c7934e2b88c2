"""What a command line can say that a run used to take silently or answer with a traceback or a
line pointing the wrong way (issue 51, items 6-8): each one line `chunkbench: error: ...`, exit 2,
before any stage runs, or one warning line and the run. The issue's user: a one-document folder."""

import json
import os
import subprocess
import sys

import pytest

from harness.__main__ import check_output_dirs
from harness.registry import check_overrides, repeated_keys
from harness.types import ConfigError
from tests.test_cli import ENV

DOC = {"doc_id": "d1", "text": "The river Thames flows through London. Tower Bridge crosses it."}
QUERY = {"qid": "q1", "question": "Which river flows through London?", "doc_ids": ["d1"],
         "evidence": [{"doc_id": "d1", "start": 0, "end": 38}]}


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "D"
    d.mkdir()
    (d / "documents.jsonl").write_text(json.dumps(DOC) + "\n")
    (d / "queries.jsonl").write_text(json.dumps(QUERY) + "\n")
    return d


def chunkbench(tmp_path, *argv, env=None):
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=tmp_path, env={**ENV, **(env or {})},
                          text=True, capture_output=True, timeout=300)


def issue_run(tmp_path, data, *overrides, env=None):
    """``chunkbench run dataset=local dataset.path=D retriever=bm25 cache.dir=D/cache tracking.uri=sqlite:///D/store.db``"""
    return chunkbench(tmp_path, "dataset=local", f"dataset.path={data}", "retriever=bm25", f"cache.dir={data / 'cache'}",
                      f"tracking.uri=sqlite:///{data / 'store.db'}", *overrides, env=env)


def one_line(p, *named):
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr[-3000:]
    assert p.stderr.startswith("chunkbench: error: ") and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert all(n in p.stderr for n in named), p.stderr
    return p.stderr


@pytest.mark.parametrize("overrides, named", [
    (["retriever.k1=nan"], ["retriever.k1 must be a finite number >= 0", "k1=nan"]),
    (["retriever.top_k=null"], ["retriever.top_k must be an integer > 0, got None"]),
    (["context.separator=null"], ["context.separator must be a string", "got None"]),
    (["~chunker"], ["~chunker: deletes chunker, which every run reads", "chunker=NAME"]),
    (["experiment=../config"], ["experiment=../config: no such choice; the choices: hichunk_fc200"]),
    (["dataset.path=~/x"], ["dataset.path=~/x: Hydra's override syntax cannot read this value unquoted",
                            """quote it: 'dataset.path="~/x"'"""]),
    (["dataset.path=/data/a=b,c"], ["""quote it: 'dataset.path="/data/a=b,c"'"""]),
    (["dataset.path=/data/a,b"], ["dataset.path=/data/a,b: a comma makes a list of values, which only a sweep runs "
                                  "(add -m)", """quote it: 'dataset.path="/data/a,b"'"""]),
    (["hydra.job.chdir=true"], ["hydra.job.chdir=true: ChunkBench reads dataset.path, cache.dir and tracking.uri "
                                "from the folder it is started in"]),
], ids=lambda v: v[0] if isinstance(v, list) and "=" in v[0] or "~" in v[0] else None)
def test_refused_in_one_line_before_any_stage(tmp_path, data, overrides, named):
    """Before: nan and null ran or failed with a TypeError or AttributeError traceback, ~chunker with
    omegaconf's ConfigKeyError, experiment=../config named "experiment=tracking/local", the paths
    Hydra's lexer error, and chdir "dataset.path=. has no documents file"."""
    one_line(issue_run(tmp_path, data, *overrides), *named)
    assert not (data / "cache" / "chunk_doc").exists() and not (data / "store.db").exists()


def test_a_key_given_twice_is_said(tmp_path, data):
    p = issue_run(tmp_path, data, "chunker.size=100", "tracking=none", "chunker.size=50")
    assert p.returncode == 0, p.stderr[-3000:]
    assert ("chunkbench: warning: chunker.size=100 then chunker.size=50: the same key given more than once; "
            "the last is used") in p.stderr


def test_repeated_keys_by_hand():
    assert repeated_keys(["a.b=1", "c=2"]) is None
    assert repeated_keys(["a.b=1", "+a.b=2", "c=2", "c=3"]) == ("a.b=1 then +a.b=2; c=2 then c=3: the same key given "
                                                                "more than once; the last is used")
    check_overrides(["dataset.path=/a,b"], sweep=True)  # a sweep's list: Hydra runs each
    with pytest.raises(ConfigError, match="only a sweep runs"):
        check_overrides(["dataset.path=/a,b"], sweep=False)


def test_an_exported_tracking_uri_the_run_does_not_record_in_is_said(tmp_path, data):
    p = issue_run(tmp_path, data, env={"MLFLOW_TRACKING_URI": "http://user:pw@login-node:5000"})
    assert p.returncode == 0, p.stderr[-3000:]
    note = [line for line in p.stderr.splitlines() if line.startswith("chunkbench: note:")]
    assert note == [f"chunkbench: note: MLFLOW_TRACKING_URI=http://user:***@login-node:5000 is set, but this run "
                    f"records in tracking.uri=sqlite:///{data / 'store.db'}: profile=cluster reads the variable (or "
                    f"give 'tracking.uri=${{oc.env:MLFLOW_TRACKING_URI}}')"]
    assert (data / "store.db").exists() and "pw" not in p.stdout + p.stderr


def test_a_cache_entry_that_is_a_device_is_one_line(tmp_path, data):
    """Before: the run read /dev/zero until memory or patience ran out."""
    assert issue_run(tmp_path, data, "tracking=none").returncode == 0
    entry = next((data / "cache" / "load").glob("*/*"))
    entry.unlink()
    entry.symlink_to("/dev/zero")
    one_line(issue_run(tmp_path, data, "tracking=none"), f"cache entry {entry} is a character device (/dev/zero)",
             "remove it")


def test_an_output_folder_hydra_cannot_write_is_one_line(tmp_path, data):
    """Hydra saves the config in outputs/ under the working folder: where that cannot be written (a
    full disk; here a file in its place) the run stops in one line, not in Hydra's traceback."""
    (tmp_path / "outputs").write_text("")
    one_line(issue_run(tmp_path, data, "tracking=none"), "hydra.run.dir=outputs cannot be made or written",
             "Hydra saves the run's config there")


def test_a_full_disk_is_found_by_a_write(tmp_path, monkeypatch):
    """A full disk still makes an empty file: the check writes, and names ENOSPC."""
    import tempfile

    real = tempfile.NamedTemporaryFile

    class Full:
        def __init__(self, *a, **k):
            self.f = real(*a, **k)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", Full)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^hydra.run.dir=outputs cannot be made or written \(No space left"):
        check_output_dirs([])
    with pytest.raises(ConfigError, match=r"^hydra.sweep.dir=multirun cannot"):
        check_output_dirs([], sweep=True)
    check_output_dirs(["profile=cluster"], sweep=True)  # the profile's own sweep folder: its preflight checks it
    assert os.listdir(tmp_path) == []
