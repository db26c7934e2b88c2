"""The content-addressed cache: entries written atomically, alone or in packs.

Keys are sha256 digests of canonical JSON (stage name, stage version, the config
slice the stage reads, the keys of its inputs). Entries live under
``<dir>/<namespace>/<key[:2]>/<key>``; small entries computed together (an embedding batch, a run
of chunked documents) share one pack file under ``<dir>/<namespace>/packs/``
(:mod:`harness.cache_packs`), and entries stored one file each before packs existed are still read. A writer renames a finished temp file into
place, so a reader (another process of a sweep, possibly on a shared filesystem)
sees either nothing or a whole entry; two writers of one key write the same bytes,
so the last rename wins harmlessly. A killed run leaves at most a stray temp file.

Each entry starts with :data:`MAGIC`, the sha256 of its namespace and key, and the sha256 of its
payload. An entry whose payload does not match (truncated, overwritten, damaged on disk) or that
was written under another key (entries swapped or copied between keys: each is whole, so the
payload's checksum alone passes) is reported in one warning line naming the key and the file,
removed, and recomputed as a miss. An entry of the previous format (:data:`MAGIC_V1`: no key
digest) is still read, its payload checked; one written before checksums (no header) is a plain
miss, recomputed once.

What the cache cannot fix by recomputing ends the run in one line (:class:`ConfigError`) naming
the path: an entry path that is a folder or that this user may not read (removing another user's
file or a folder in a shared cache is not the cache's to do, and recomputing it every run would
hide the problem), a lock folder that is a file, and a write that fails (a full disk under
``cache.dir``: the entry's temp file is removed, the entries stored before stay whole).

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
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.cache_packs import PackIndex, decode_pack, encode_pack, packable
from harness.files import not_regular
from harness.revision import unpinned_dropped
from harness.secrets import is_secret_name
from harness.types import ConfigError


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def make_key(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


MAGIC = b"chunkbench-cache-2\n"  # then key_digest (32 bytes), the payload's sha256 (32 bytes), the payload
MAGIC_V1 = b"chunkbench-cache-1\n"  # then the payload's sha256, then the payload: still read
DIGEST_BYTES = 32
HEADER_BYTES = len(MAGIC) + 2 * DIGEST_BYTES
PACKS = "packs"  # the folder of a namespace's packs (a key's folder is its first two hex digits)
DECODED_PACKS = 8  # packs kept decoded: a document's lookups after another's often fall in one pack


def key_digest(namespace: str, key: str) -> bytes:
    """What an entry carries of the key it was written under."""
    return hashlib.sha256(f"{namespace}/{key}".encode()).digest()


def entry_problem(data: bytes, expected_key: bytes) -> tuple[bytes | None, str | None]:
    """(payload, None) for a whole entry written under ``expected_key``; else (None, the problem),
    the problem None for an entry written before checksums (nothing to report)."""
    if data.startswith(MAGIC):
        owner, data = data[len(MAGIC):len(MAGIC) + DIGEST_BYTES], data[len(MAGIC) + DIGEST_BYTES:]
        if len(owner) < DIGEST_BYTES:
            return None, "truncated"
    elif data.startswith(MAGIC_V1):  # no key to check: a cache written by the previous version stays usable
        owner, data = expected_key, data[len(MAGIC_V1):]
    else:
        return None, None
    if len(data) < DIGEST_BYTES:
        return None, "truncated"
    digest, payload = data[:DIGEST_BYTES], data[DIGEST_BYTES:]
    if hashlib.sha256(payload).digest() != digest:
        return None, "its checksum does not match (truncated or overwritten)"
    if owner != expected_key:
        return None, "written under another key: swapped or copied"
    return payload, None
CACHE_TARGET = "harness.cache.open_cache"  # the `_target_` of the top-level `cache:` config node
_OPEN: dict[Path, "Cache"] = {}


def open_cache(dir: str | os.PathLike) -> "Cache":
    """The process's one :class:`Cache` for ``dir`` (built by Hydra from the ``cache:`` node)."""
    path = Path(dir).expanduser().absolute()  # a quoted cache.dir="~/cache" is the home folder's
    if path not in _OPEN:
        _OPEN[path] = Cache(path)
    return _OPEN[path]


def without_services(value: Any) -> Any:
    """A config slice without its cache nodes and its secrets: where the cache lives and the
    key a server takes are no part of a result, so they stay out of every cache key. A model
    node's null ``revision`` (the default branch) stays out too, so keys from before the key
    existed stand (:func:`harness.revision.unpinned_dropped`)."""
    if isinstance(value, dict):
        return {k: without_services(v) for k, v in unpinned_dropped(value).items()
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


class HashingWriter:
    """A file's ``write`` that also hashes what passes through it (pickle writes in frames)."""

    def __init__(self, f):
        self.f, self.sha = f, hashlib.sha256()

    def write(self, data) -> int:
        self.sha.update(data)
        return self.f.write(data)


class Cache:
    """Stage outputs (pickles) and per-text arrays (embeddings), with hit/miss counts
    per namespace that the run record reports, and the compute seconds of the timed
    entries read back (``reused_seconds``)."""

    def __init__(self, dir: str | os.PathLike):
        self.dir = Path(dir)
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()
        self.reused_seconds = 0.0
        self._indexes: dict[str, PackIndex] = {}
        self._decoded: OrderedDict[tuple[str, str], dict[str, bytes]] = OrderedDict()

    def _path(self, namespace: str, key: str) -> Path:
        return self.dir / namespace / key[:2] / key

    def _write(self, namespace: str, key: str, fill: Callable[[HashingWriter], Any],
               path: Path | None = None) -> None:
        """Store the payload ``fill`` writes. It goes to the file as it is made (a pickle of a
        200 MB dataset is never a second 200 MB in memory); its checksum follows into the header."""
        path = path or self._path(namespace, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        except OSError as e:
            raise self._unwritable(path, e) from None
        try:
            with os.fdopen(fd, "wb") as f:
                header = MAGIC + key_digest(namespace, key)
                f.write(header + bytes(hashlib.sha256().digest_size))  # the checksum's place
                writer = HashingWriter(f)
                fill(writer)
                f.seek(len(header))
                f.write(writer.sha.digest())
            os.replace(tmp, path)
        except BaseException as e:
            Path(tmp).unlink(missing_ok=True)  # the half-written entry; those stored before stay whole
            if isinstance(e, OSError):
                raise self._unwritable(path, e) from None
            raise

    def _unwritable(self, path: Path, e: OSError) -> ConfigError:
        """A write the cache cannot recover from (full disk, read-only or foreign folder, a folder
        where the entry goes): the run stops in one line rather than with a traceback."""
        if path.is_dir():
            return ConfigError(f"cache entry {path} is a folder, not a file: remove it (cache.dir={self.dir})")
        return ConfigError(f"cannot write the cache entry {path} under cache.dir={self.dir} "
                           f"({e.strerror or e}): free space or fix permissions there, or point cache.dir elsewhere; "
                           f"the entries stored before are intact")

    def _read(self, namespace: str, key: str) -> bytes | None:
        """The entry's bytes, or None; counts a hit or a miss for ``namespace``."""
        path = self._path(namespace, key)
        if (kind := not_regular(path)) and kind != "a folder":  # reading /dev/zero never ends, a FIFO blocks
            raise ConfigError(f"cache entry {path} is {kind}, not a file the cache wrote: remove it "
                              f"(cache.dir={self.dir})")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = None
        except IsADirectoryError:
            raise ConfigError(f"cache entry {path} is a folder, not a file: remove it (cache.dir={self.dir})") from None
        except OSError as e:  # another user's entry in a shared cache: not ours to remove or overwrite
            raise ConfigError(f"cache entry {path} cannot be read ({e.strerror or e}): fix its permissions "
                              f"or point cache.dir elsewhere") from None
        payload = None if data is None else self._checked(path, data, key_digest(namespace, key))
        if payload is None:
            self.misses[namespace] += 1
            return None
        self.hits[namespace] += 1
        return payload

    @staticmethod
    def _checked(path: Path, data: bytes, expected_key: bytes) -> bytes | None:
        """The payload of a whole entry of this key; None (the entry removed, a damaged one
        reported) otherwise."""
        payload, problem = entry_problem(data, expected_key)
        if payload is not None:
            return payload
        if problem:  # none: written before entries carried a checksum, recomputed without a word
            print(f"chunkbench: warning: cache entry {path.parent.parent.name}/{path.name} is damaged ({problem}): "
                  f"removed and recomputed ({path})", file=sys.stderr, flush=True)
        path.unlink(missing_ok=True)
        return None

    def get(self, namespace: str, key: str) -> Any | None:
        """The stored object, or None."""
        data = self._read(namespace, key)
        return None if data is None else pickle.loads(data)

    def stored(self, namespace: str, key: str) -> bool:
        """Whether the entry exists, alone or in a pack (counted neither as a hit nor as a miss)."""
        return self.stored_all(namespace, [key])

    def stored_all(self, namespace: str, keys: Iterable[str]) -> bool:
        index = self._index(namespace)
        keys = list(keys)
        if any(k not in index.where for k in keys):
            index.refresh()
        return all(k in index.where or self._path(namespace, k).exists() for k in keys)

    @contextmanager
    def writing_packs(self, namespace: str, every: int = 256, seconds: float = 10.0
                      ) -> Iterator[Callable[[str, Any], None]]:
        """A ``put(key, value)`` for many small objects, stored as packs of ``every`` entries or of
        what ``seconds`` computed, whichever comes first (a killed run loses at most that much);
        what is pending is stored when the block ends, an error included."""
        pending: dict[str, Any] = {}
        since = time.monotonic()

        def flush() -> None:
            nonlocal since
            if pending:
                self.put_objects(namespace, pending)
                pending.clear()
            since = time.monotonic()

        def put(key: str, value: Any) -> None:
            pending[key] = value
            if len(pending) >= every or time.monotonic() - since >= seconds:
                flush()

        try:
            yield put
        finally:
            flush()

    # Packs: the entries one computation produced together, one file (harness.cache_packs).
    def _index(self, namespace: str) -> PackIndex:
        if namespace not in self._indexes:
            self._indexes[namespace] = PackIndex(self.dir / namespace / PACKS, HEADER_BYTES)
            self._indexes[namespace].refresh()
        return self._indexes[namespace]

    def _pack(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """A pack's entries (checked as any entry is), or None when it is gone or damaged."""
        if (namespace, name) in self._decoded:
            self._decoded.move_to_end((namespace, name))
            return self._decoded[(namespace, name)]
        path = self.dir / namespace / PACKS / name
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None
        payload = self._checked(path, data, key_digest(f"{namespace}/{PACKS}", name))
        entries = None if payload is None else decode_pack(payload)
        if entries is None:
            return None
        self._decoded[(namespace, name)] = entries
        if len(self._decoded) > DECODED_PACKS:
            self._decoded.popitem(last=False)
        return entries

    def get_many(self, namespace: str, keys: Iterable[str]) -> list[bytes | None]:
        """Each key's payload or None, from packs first, then from entries stored alone; a hit or
        a miss counted per key."""
        keys = list(keys)
        index = self._index(namespace)
        if any(k not in index.where for k in keys):
            index.refresh()
        out: list[bytes | None] = [None] * len(keys)
        for i, key in enumerate(keys):
            name = index.where.get(key)
            entries = None if name is None else self._pack(namespace, name)
            if name is not None and entries is None:
                index.drop(name)
            if entries is not None and key in entries:
                out[i] = entries[key]
                self.hits[namespace] += 1
            else:
                out[i] = self._read(namespace, key)
        return out

    def put_many(self, namespace: str, payloads: Mapping[str, bytes]) -> None:
        """Store ``payloads`` (key -> bytes) as one pack; keys a pack cannot hold are stored alone."""
        alone = {k: v for k, v in payloads.items() if not packable(k)}
        for key, payload in alone.items():
            self._write(namespace, key, lambda f, p=payload: f.write(p))
        packed = {k: payloads[k] for k in sorted(payloads) if k not in alone}
        if not packed:
            return
        name = hashlib.sha256("".join(packed).encode()).hexdigest()
        folder = self.dir / namespace / PACKS
        try:
            before = folder.stat().st_mtime_ns
        except FileNotFoundError:
            before = None
        self._write(f"{namespace}/{PACKS}", name, lambda f: f.write(encode_pack(packed)), folder / name)
        self._index(namespace).wrote(name, list(packed), before)

    def get_objects(self, namespace: str, keys: Iterable[str]) -> list[Any | None]:
        return [None if d is None else pickle.loads(d) for d in self.get_many(namespace, keys)]

    def put_objects(self, namespace: str, values: Mapping[str, Any]) -> None:
        self.put_many(namespace, {k: pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for k, v in values.items()})

    @contextmanager
    def lock(self, namespace: str, key: str) -> Iterator[None]:
        """Hold the key's exclusive lock: another process that asks for it waits until this one
        has stored the entry (or died)."""
        path = self.dir / ".locks" / namespace / key
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(path, "a")
        except OSError as e:  # a file where the lock folder goes is the user's: not removed
            raise ConfigError(f"cannot take the cache lock {path} ({e.strerror or e}): {self.dir / '.locks'} "
                              f"and the folders under it must be folders this user can write") from None
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def put(self, namespace: str, key: str, value: Any) -> None:
        self._write(namespace, key, lambda f: pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL))

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
    def get_arrays(self, namespace: str, keys: Iterable[str]) -> list[np.ndarray | None]:
        return [None if d is None else np.frombuffer(d, dtype=np.float32) for d in self.get_many(namespace, keys)]

    def put_arrays(self, namespace: str, values: Mapping[str, np.ndarray]) -> None:
        self.put_many(namespace, {k: np.ascontiguousarray(v, dtype=np.float32).tobytes() for k, v in values.items()})

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
