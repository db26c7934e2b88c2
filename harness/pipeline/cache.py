"""The content-addressed cache: one file per entry, written atomically.

Keys are sha256 digests of canonical JSON (stage name, stage version, the config
slice the stage reads, the keys of its inputs). Entries live under
``<dir>/<namespace>/<key[:2]>/<key>``. A writer renames a finished temp file into
place, so a reader (another process of a sweep, possibly on a shared filesystem)
sees either nothing or a whole entry; two writers of one key write the same bytes,
so the last rename wins harmlessly. A killed run leaves at most a stray temp file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def make_key(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Cache:
    """Stage outputs (pickles) and per-text arrays (embeddings), with hit/miss counts
    per namespace that the run record reports."""

    def __init__(self, dir: str | os.PathLike):
        self.dir = Path(dir)
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()

    def _path(self, namespace: str, key: str) -> Path:
        return self.dir / namespace / key[:2] / key

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self, namespace: str, key: str) -> bytes | None:
        """The entry's bytes, or None; counts a hit or a miss for ``namespace``."""
        try:
            data = self._path(namespace, key).read_bytes()
        except FileNotFoundError:
            self.misses[namespace] += 1
            return None
        self.hits[namespace] += 1
        return data

    def get(self, namespace: str, key: str) -> Any | None:
        """The stored object, or None."""
        data = self._read(namespace, key)
        return None if data is None else pickle.loads(data)

    def put(self, namespace: str, key: str, value: Any) -> None:
        self._write(self._path(namespace, key), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    # Arrays are stored raw (float32) rather than pickled: small, fast, and portable.
    def get_array(self, namespace: str, key: str) -> np.ndarray | None:
        data = self._read(namespace, key)
        return None if data is None else np.frombuffer(data, dtype=np.float32)

    def put_array(self, namespace: str, key: str, value: np.ndarray) -> None:
        self._write(self._path(namespace, key), np.ascontiguousarray(value, dtype=np.float32).tobytes())

    def counts(self) -> dict[str, dict[str, int]]:
        names = sorted(set(self.hits) | set(self.misses))
        return {n: {"hits": self.hits[n], "misses": self.misses[n]} for n in names}
