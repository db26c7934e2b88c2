"""The content-addressed cache: keys, atomic writes, concurrent writers."""

import multiprocessing as mp

import numpy as np

from harness.cache import Cache, make_key


def test_keys_are_canonical():
    assert make_key("s", 1, {"a": 1, "b": [1, 2]}) == make_key("s", 1, {"b": [1, 2], "a": 1})
    assert make_key("s", 1, {"a": 1}) != make_key("s", 2, {"a": 1})


def test_put_get_and_counts(tmp_path):
    c = Cache(tmp_path)
    assert c.get("stage", "k" * 64) is None
    c.put("stage", "k" * 64, {"x": [1, 2]})
    assert c.get("stage", "k" * 64) == {"x": [1, 2]}
    c.put_arrays("emb", {"e" * 64: np.arange(3)})
    assert c.get_arrays("emb", ["e" * 64])[0].tolist() == [0.0, 1.0, 2.0]
    assert c.counts() == {"emb": {"hits": 1, "misses": 0}, "stage": {"hits": 1, "misses": 1}}
    assert not list(tmp_path.rglob(".tmp-*"))


def test_timed_entries_report_the_seconds_they_save(tmp_path):
    c = Cache(tmp_path)
    c.put_timed("llm", "a" * 64, "reply", 2.5)
    c.put("llm", "b" * 64, "an untimed reply")  # written before entries were timed
    assert c.get_timed("llm", "a" * 64) == "reply" and c.get_timed("llm", "b" * 64) == "an untimed reply"
    assert c.get_timed("llm", "c" * 64) is None and c.reused_seconds == 2.5


def _writer(args):
    d, i = args
    c = Cache(d)
    big = list(range(200_000))
    for _ in range(20):
        c.put("stage", "same" * 16, big)
        got = c.get("stage", "same" * 16)
        assert got is None or got == big  # never a half-written entry
    return i


def test_concurrent_writers_of_one_key_never_corrupt_it(tmp_path):
    with mp.get_context("spawn").Pool(2) as pool:
        assert sorted(pool.map(_writer, [(tmp_path, 0), (tmp_path, 1)])) == [0, 1]
    assert Cache(tmp_path).get("stage", "same" * 16) == list(range(200_000))
    assert not list(tmp_path.rglob(".tmp-*"))


def test_a_key_lock_makes_the_second_holder_wait(tmp_path):
    """Two holders of one key's lock (separate opens, as two processes would be) run one after
    the other; another key's lock does not wait."""
    import threading
    import time

    cache, events = Cache(tmp_path), []
    inside = threading.Event()

    def first():
        with cache.lock("chunk", "k" * 64):
            inside.set()
            time.sleep(0.3)
            events.append("first done")

    t = threading.Thread(target=first)
    t.start()
    inside.wait()
    with cache.lock("chunk", "other" * 8):
        events.append("other key")
    with cache.lock("chunk", "k" * 64):
        events.append("second in")
    t.join()
    assert events == ["other key", "first done", "second in"]
    assert not cache.stored("chunk", "k" * 64)  # a lock is no entry
