"""Every cache entry carries a checksum: a truncated or overwritten entry is reported (one line
naming the key and the file) and recomputed, never used; an entry from before checksums is a
plain miss. On a real run through the command line too."""

import errno
import hashlib
import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from harness.cache import MAGIC, MAGIC_V1, Cache
from harness.types import ConfigError
from tests.conftest import TINY_LEXICAL
from tests.test_cli import ENV

KEY = "ab" * 32


def entry(cache: Cache, namespace: str = "stage"):
    return cache.dir / namespace / KEY[:2] / KEY


def test_truncated_entry_is_reported_and_missed(tmp_path, capsys):
    c = Cache(tmp_path)
    c.put("stage", KEY, {"x": list(range(100))})
    data = entry(c).read_bytes()
    for cut in (len(data) - 10, len(MAGIC) + 5):  # inside the payload, inside the checksum
        entry(c).write_bytes(data[:cut])
        assert c.get("stage", KEY) is None and not entry(c).exists()  # removed: the stage recomputes it
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cache entry stage/{KEY} is damaged" in err and str(entry(c)) in err
    assert c.misses["stage"] == 2 and c.hits["stage"] == 0


def test_same_size_overwrite_is_caught(tmp_path, capsys):
    c = Cache(tmp_path)
    c.put_arrays("embeddings", {KEY: np.arange(8)})
    (pack,) = (tmp_path / "embeddings" / "packs").iterdir()
    data = bytearray(pack.read_bytes())
    data[-4:] = np.float32(99).tobytes()  # another vector of the same size
    pack.write_bytes(bytes(data))
    assert Cache(tmp_path).get_arrays("embeddings", [KEY]) == [None]  # another process: nothing decoded yet
    err = capsys.readouterr().err
    assert "its checksum does not match" in err and str(pack) in err and not pack.exists()
    c = Cache(tmp_path)
    c.put_arrays("embeddings", {KEY: np.arange(8)})  # recomputed
    assert c.get_arrays("embeddings", [KEY])[0].tolist() == list(range(8))


def test_entry_without_checksum_is_a_quiet_miss(tmp_path, capsys):
    c = Cache(tmp_path)
    entry(c).parent.mkdir(parents=True)
    entry(c).write_bytes(pickle.dumps("written by an older version"))
    assert c.get("stage", KEY) is None and capsys.readouterr().err == ""
    c.put("stage", KEY, "again")
    assert c.get("stage", KEY) == "again"


def run(tmp_path):
    p = subprocess.run([sys.executable, "-m", "harness", *TINY_LEXICAL, f"cache.dir={tmp_path / 'cache'}", "tracking=none"],
                       cwd=tmp_path, env=ENV, text=True, capture_output=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout, p.stderr


def table(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("│") and "seconds" not in line]


@pytest.mark.slow
def test_damaged_entries_of_a_real_run_are_recomputed(tmp_path):
    first, _ = run(tmp_path)
    cache = tmp_path / "cache"
    (evaluate,) = [p for p in (cache / "evaluate").rglob("*") if p.is_file()]
    data = evaluate.read_bytes()
    evaluate.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # other bytes, the same size
    chunk = next(p for p in (cache / "chunk_doc").rglob("*") if p.is_file())
    chunk.write_bytes(chunk.read_bytes()[:-7])  # truncated: the pack of the four documents' chunks
    again, err = run(tmp_path)
    warnings = [line for line in err.splitlines() if line.startswith("chunkbench: warning: cache entry ")]
    assert len(warnings) == 2 and any(str(evaluate) in w for w in warnings) and any(str(chunk) in w for w in warnings)
    assert "[evaluate] computed" in again and "[chunk] 0/4 documents from cache" in again
    assert table(again) == table(first)  # the same results as the first run, not the damaged ones


OTHER = "cd" * 32


def test_entries_swapped_between_keys_are_caught(tmp_path, capsys):
    c = Cache(tmp_path)
    c.put("stage", KEY, "the value of KEY")
    c.put("stage", OTHER, "the value of OTHER")
    a, b = entry(c), c.dir / "stage" / OTHER[:2] / OTHER
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b), b.write_bytes(data_a)  # each whole: the payload's checksum alone passes
    assert c.get("stage", KEY) is None and c.get("stage", OTHER) is None and not a.exists()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("written under another key" in line for line in err)
    c.put("stage", KEY, "the value of KEY")  # recomputed
    assert c.get("stage", KEY) == "the value of KEY"


def test_entry_of_the_previous_format_is_still_read(tmp_path, capsys):
    c = Cache(tmp_path)
    payload = pickle.dumps("written by version 1")
    entry(c).parent.mkdir(parents=True)
    entry(c).write_bytes(MAGIC_V1 + hashlib.sha256(payload).digest() + payload)
    assert c.get("stage", KEY) == "written by version 1" and capsys.readouterr().err == ""
    entry(c).write_bytes(MAGIC_V1 + hashlib.sha256(payload).digest() + payload[:-1])
    assert c.get("stage", KEY) is None and "its checksum does not match" in capsys.readouterr().err


def test_entry_path_that_is_a_folder_or_unreadable_is_named(tmp_path, monkeypatch):
    c = Cache(tmp_path)
    entry(c).mkdir(parents=True)  # not the cache's to remove
    with pytest.raises(ConfigError, match=f"cache entry {entry(c)} is a folder, not a file: remove it"):
        c.get("stage", KEY)
    with pytest.raises(ConfigError, match=f"cache entry {entry(c)} is a folder"):
        c.put("stage", KEY, "value")
    entry(c).rmdir()
    c.put("stage", KEY, "value")

    def denied(self):  # as chmod 0 by another user (root, who runs the tests here, reads every file)
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr("harness.cache.Path.read_bytes", denied)
    with pytest.raises(ConfigError, match=f"cache entry {entry(c)} cannot be read \\(Permission denied\\)"):
        c.get("stage", KEY)


def test_lock_folder_that_is_a_file_is_named(tmp_path):
    c = Cache(tmp_path)
    (tmp_path / ".locks").write_text("not a folder")
    with pytest.raises(ConfigError, match=f"cannot take the cache lock {tmp_path / '.locks'}/stage/{KEY} "):
        with c.lock("stage", KEY):
            pass
    assert (tmp_path / ".locks").read_text() == "not a folder"  # the user's file, left as it was


def test_full_disk_names_cache_dir_and_keeps_earlier_entries(tmp_path, monkeypatch):
    c = Cache(tmp_path)
    c.put("stage", KEY, "stored before")

    class Full(io.BufferedWriter):
        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("harness.cache.os.fdopen", lambda fd, mode: Full(io.FileIO(fd, "w")))
    with pytest.raises(ConfigError, match=f"under cache.dir={tmp_path} \\(No space left on device\\)"):
        c.put("stage", OTHER, "never stored")
    monkeypatch.undo()
    assert c.get("stage", KEY) == "stored before" and c.get("stage", OTHER) is None
    assert not list(tmp_path.rglob(".tmp-*"))  # the half-written entry removed
