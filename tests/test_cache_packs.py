"""Packs: entries computed together share one file; another process finds them, a damaged pack is
reported and recomputed, and entries stored one file each before packs existed are still read.
(What a real run leaves: tests/test_run_output.py.)"""


import os

import numpy as np
import pytest

from harness.cache import Cache, make_key
from harness.cache_packs import PACK_MAGIC, decode_pack, encode_pack, pack_keys

KEYS = [make_key("embedding", "m", str(i)) for i in range(300)]


def files(folder):
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_a_pack_round_trips_and_lists_its_keys(tmp_path):
    entries = {KEYS[0]: b"one", KEYS[1]: b"", KEYS[2]: b"three" * 100}
    payload = encode_pack(entries)
    assert payload.startswith(PACK_MAGIC) and decode_pack(payload) == entries
    assert decode_pack(payload[:-1]) is None and decode_pack(b"not a pack") is None
    (tmp_path / "p").write_bytes(b"h" * 7 + payload)
    assert pack_keys(tmp_path / "p", 7) == list(entries)
    (tmp_path / "cut").write_bytes(b"h" * 7 + payload[:30])  # its table cut short: no keys, no error
    assert pack_keys(tmp_path / "cut", 7) == []


def test_one_batch_is_one_file_and_another_process_reads_it(tmp_path):
    c = Cache(tmp_path)
    vectors = {k: np.full(4, i, dtype=np.float32) for i, k in enumerate(KEYS)}
    c.put_arrays("embeddings", vectors)
    assert len(files(tmp_path / "embeddings")) == 1
    other = Cache(tmp_path)
    got = other.get_arrays("embeddings", [KEYS[299], "0" * 64, KEYS[0]])
    assert got[0].tolist() == [299.0] * 4 and got[1] is None and got[2].tolist() == [0.0] * 4
    assert other.counts() == {"embeddings": {"hits": 2, "misses": 1}}
    assert other.stored("embeddings", KEYS[5]) and not other.stored("embeddings", "0" * 64)


def test_a_pack_written_after_the_first_look_is_found(tmp_path):
    reader, writer = Cache(tmp_path), Cache(tmp_path)
    assert reader.get_arrays("embeddings", KEYS[:2]) == [None, None]  # indexed the (missing) folder
    writer.put_arrays("embeddings", {KEYS[0]: np.ones(2)})
    assert reader.get_arrays("embeddings", KEYS[:1])[0].tolist() == [1.0, 1.0]
    writer.put_arrays("embeddings", {KEYS[1]: np.zeros(2)})  # the folder changed again
    assert reader.get_arrays("embeddings", KEYS[1:2])[0].tolist() == [0.0, 0.0]


def test_entries_stored_alone_before_packs_are_still_read(tmp_path):
    c = Cache(tmp_path)
    key = KEYS[7]
    c._write("embeddings", key, lambda f: f.write(np.arange(3, dtype=np.float32).tobytes()))
    assert (tmp_path / "embeddings" / key[:2] / key).is_file()
    got = Cache(tmp_path).get_arrays("embeddings", [key, KEYS[8]])
    assert got[0].tolist() == [0.0, 1.0, 2.0] and got[1] is None


def test_a_damaged_pack_is_reported_removed_and_recomputed(tmp_path, capsys):
    Cache(tmp_path).put_objects("chunk_doc", {k: {"doc": i} for i, k in enumerate(KEYS[:10])})
    (pack,) = files(tmp_path / "chunk_doc")
    pack.write_bytes(pack.read_bytes()[:-3])
    c = Cache(tmp_path)
    assert c.get_objects("chunk_doc", KEYS[:10]) == [None] * 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is damaged" in err and str(pack) in err and not pack.exists()
    c.put_objects("chunk_doc", {KEYS[0]: "again"})
    assert Cache(tmp_path).get_objects("chunk_doc", KEYS[:2]) == ["again", None]


def test_writing_packs_flushes_by_count_and_keeps_what_was_done_before_an_error(tmp_path):
    c = Cache(tmp_path)
    with pytest.raises(RuntimeError):
        with c.writing_packs("chunk_doc", every=4) as put:
            for i, key in enumerate(KEYS[:10]):
                put(key, i)
            raise RuntimeError("the 11th document's chunker failed")
    assert len(files(tmp_path / "chunk_doc")) == 3  # 4 + 4, and the 2 pending when it failed
    assert Cache(tmp_path).get_objects("chunk_doc", KEYS[:10]) == list(range(10))


def test_a_key_stored_again_reads_as_the_last_write_in_another_process(tmp_path):
    """A refreshed stage stores its documents again in a new pack beside the old one: as with an
    entry stored alone, the last write is what every process reads."""
    first = Cache(tmp_path)
    first.put_objects("chunk_doc", {KEYS[0]: "old", KEYS[1]: "other"})
    os.utime(next((tmp_path / "chunk_doc" / "packs").iterdir()), ns=(1, 1))  # written long ago
    first.put_objects("chunk_doc", {KEYS[0]: "new"})
    assert first.get_objects("chunk_doc", KEYS[:2]) == ["new", "other"]
    assert Cache(tmp_path).get_objects("chunk_doc", KEYS[:2]) == ["new", "other"]
