"""The content-addressed cache: one file per entry, written atomically.

Keys are sha256 digests of canonical JSON (stage name, stage version, the config
slice the stage reads, the keys of its inputs). Entries live under
``<dir>/<namespace>/<key[:2]>/<key>``. A writer renames a finished temp file into
place, so a reader (another process of a sweep, possibly on a shared filesystem)
sees either nothing or a whole entry; two writers of one key write the same bytes,
so the last rename wins harmlessly. A killed run leaves at most a stray temp file.

Each entry starts with :data:`MAGIC` and the sha256 of its payload. An entry whose payload does
not match (truncated, overwritten, damaged on disk) is reported in one warning line naming the
key and the file, removed, and recomputed as a miss; an entry written before checksums (no
header) is a plain miss, recomputed once.

Concurrent jobs of a sweep that need the same entry do not both compute it: :meth:`Cache.lock`
is an exclusive ``flock`` on a per-key lock file under ``<dir>/.locks``; the runner takes it
around computing a stage, and a job that waited finds the entry stored when the lock is
released. The kernel drops the lock of a killed job, so nothing is ever left locked. flock
works across hosts on NFS (Linux emulates it with POSIX locks) and on Lustre mounted with
``-o flock``.

The cache is a ground-floor service: components that keep fine-grained entries (the
embedder's vectors, the LLM's calls) receive it through their constructor
(``cache: ${cache}`` in their config), and :func:`open_cache` gives every component of a
process the same instance per folder, so hit and miss counts are the run's.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.secrets import is_secret_name


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def make_key(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


MAGIC = b"chunkbench-cache-1\n"  # then the payload's sha256 (32 bytes), then the payload
DIGEST_BYTES = 32
CACHE_TARGET = "harness.cache.open_cache"  # the `_target_` of the top-level `cache:` config node
_OPEN: dict[Path, "Cache"] = {}


def open_cache(dir: str | os.PathLike) -> "Cache":
    """The process's one :class:`Cache` for ``dir`` (built by Hydra from the ``cache:`` node)."""
    path = Path(dir).absolute()
    if path not in _OPEN:
        _OPEN[path] = Cache(path)
    return _OPEN[path]


def without_services(value: Any) -> Any:
    """A config slice without its cache nodes and its secrets: where the cache lives and the
    key a server takes are no part of a result, so they stay out of every cache key."""
    if isinstance(value, dict):
        return {k: without_services(v) for k, v in value.items()
                if not (isinstance(v, dict) and v.get("_target_") == CACHE_TARGET) and not is_secret_name(k)}
    if isinstance(value, list):
        return [without_services(v) for v in value]
    return value


@dataclass(frozen=True)
class Timed:
    """An entry with the seconds it took to compute (an LLM call): a stage that reuses it can
    still report what computing it costs."""

    value: Any
    seconds: float


class Cache:
    """Stage outputs (pickles) and per-text arrays (embeddings), with hit/miss counts
    per namespace that the run record reports, and the compute seconds of the timed
    entries read back (``reused_seconds``)."""

    def __init__(self, dir: str | os.PathLike):
        self.dir = Path(dir)
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()
        self.reused_seconds = 0.0

    def _path(self, namespace: str, key: str) -> Path:
        return self.dir / namespace / key[:2] / key

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(data).digest())
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self, namespace: str, key: str) -> bytes | None:
        """The entry's bytes, or None; counts a hit or a miss for ``namespace``."""
        path = self._path(namespace, key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = None
        payload = None if data is None else self._checked(path, data)
        if payload is None:
            self.misses[namespace] += 1
            return None
        self.hits[namespace] += 1
        return payload

    @staticmethod
    def _checked(path: Path, data: bytes) -> bytes | None:
        """The payload of a whole entry; None (the entry removed, a damaged one reported) otherwise."""
        if not data.startswith(MAGIC):
            problem = None  # written before entries carried a checksum: recomputed, nothing to report
        elif len(data) < len(MAGIC) + DIGEST_BYTES:
            problem = "truncated"
        else:
            digest, payload = data[len(MAGIC):len(MAGIC) + DIGEST_BYTES], data[len(MAGIC) + DIGEST_BYTES:]
            if hashlib.sha256(payload).digest() == digest:
                return payload
            problem = "its checksum does not match (truncated or overwritten)"
        if problem:
            print(f"chunkbench: warning: cache entry {path.parent.parent.name}/{path.name} is damaged ({problem}): "
                  f"removed and recomputed ({path})", file=sys.stderr, flush=True)
        path.unlink(missing_ok=True)
        return None

    def get(self, namespace: str, key: str) -> Any | None:
        """The stored object, or None."""
        data = self._read(namespace, key)
        return None if data is None else pickle.loads(data)

    def stored(self, namespace: str, key: str) -> bool:
        """Whether the entry exists (counted neither as a hit nor as a miss)."""
        return self._path(namespace, key).exists()

    @contextmanager
    def lock(self, namespace: str, key: str) -> Iterator[None]:
        """Hold the key's exclusive lock: another process that asks for it waits until this one
        has stored the entry (or died)."""
        path = self.dir / ".locks" / namespace / key
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def put(self, namespace: str, key: str, value: Any) -> None:
        self._write(self._path(namespace, key), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def get_timed(self, namespace: str, key: str) -> Any | None:
        """A :class:`Timed` entry's value (its seconds added to ``reused_seconds``); an entry
        stored untimed is returned as it is."""
        entry = self.get(namespace, key)
        if isinstance(entry, Timed):
            self.reused_seconds += entry.seconds
            return entry.value
        return entry

    def put_timed(self, namespace: str, key: str, value: Any, seconds: float) -> None:
        self.put(namespace, key, Timed(value, seconds))

    # Arrays are stored raw (float32) rather than pickled: small, fast, and portable.
    def get_array(self, namespace: str, key: str) -> np.ndarray | None:
        data = self._read(namespace, key)
        return None if data is None else np.frombuffer(data, dtype=np.float32)

    def put_array(self, namespace: str, key: str, value: np.ndarray) -> None:
        self._write(self._path(namespace, key), np.ascontiguousarray(value, dtype=np.float32).tobytes())

    def counts(self, since: dict[str, dict[str, int]] | None = None) -> dict[str, dict[str, int]]:
        """Hits and misses per namespace (those after the ``since`` snapshot: one run's, when
        several runs of a sweep share the process and so the instance)."""
        since = since or {}
        out = {}
        for n in sorted(set(self.hits) | set(self.misses)):
            before = since.get(n, {"hits": 0, "misses": 0})
            hits, misses = self.hits[n] - before["hits"], self.misses[n] - before["misses"]
            if hits or misses:
                out[n] = {"hits": hits, "misses": misses}
        return out
