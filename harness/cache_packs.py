"""Packs: many small entries of one cache namespace in one file.

An embedding is 1.5-3 KB and a rule chunker's output for one document a few KB; stored one file
each, a 200 MB corpus leaves tens of thousands of files (one per vector, one per document), which
shared filesystems (NFS, Lustre) serve slowly and count against inode quotas. A pack holds the
entries one computation produced together (an embedding batch, a run of chunked documents):

    PACK_MAGIC, count (uint32 LE), count x (key: 32 raw bytes, length: uint64 LE), the payloads

Keys are the cache's sha256 hex digests. The pack is itself an ordinary cache entry (atomic
rename, checksum, owner digest: :mod:`harness.cache`) under ``<namespace>/packs/<pack id>``, so a
reader sees a whole pack or none, and a damaged one is reported, removed and its entries
recomputed. :class:`PackIndex` maps keys to packs by reading each pack's table once; it re-lists
the folder only when the folder changed (its mtime), so a job of a sweep finds the packs other jobs
wrote without listing the folder at every lookup.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

PACK_MAGIC = b"chunkbench-pack-1\n"
_COUNT = struct.Struct("<I")
_ROW = struct.Struct("<32sQ")
KEY_HEX = 64


def packable(key: str) -> bool:
    """A key a pack can hold: the cache's sha256 hex digests (anything else is stored alone)."""
    if len(key) != KEY_HEX:
        return False
    try:
        bytes.fromhex(key)
    except ValueError:
        return False
    return True


def encode_pack(entries: dict[str, bytes]) -> bytes:
    """One pack's bytes; ``entries`` maps packable keys to payloads."""
    table = b"".join(_ROW.pack(bytes.fromhex(k), len(v)) for k, v in entries.items())
    return PACK_MAGIC + _COUNT.pack(len(entries)) + table + b"".join(entries.values())


def _table(head: bytes) -> tuple[list[tuple[str, int]], int] | None:
    """The (key, length) rows of a pack beginning with ``head``, and where its payloads start;
    None when ``head`` is not a pack's beginning or is cut short."""
    if not head.startswith(PACK_MAGIC) or len(head) < len(PACK_MAGIC) + _COUNT.size:
        return None
    (count,) = _COUNT.unpack_from(head, len(PACK_MAGIC))
    start = len(PACK_MAGIC) + _COUNT.size
    end = start + count * _ROW.size
    if len(head) < end:
        return None
    rows = [(key.hex(), length) for key, length in _ROW.iter_unpack(head[start:end])]
    return rows, end


def decode_pack(payload: bytes) -> dict[str, bytes] | None:
    """A whole pack's entries, or None when ``payload`` is not a pack (or is cut short)."""
    parsed = _table(payload)
    if parsed is None:
        return None
    rows, offset = parsed
    out = {}
    for key, length in rows:
        out[key] = payload[offset:offset + length]
        offset += length
    return out if offset == len(payload) else None


def pack_keys(path: Path, skip: int) -> list[str]:
    """The keys of the pack stored at ``path`` (its table only: the payloads, and the checksum that
    covers them, are read when an entry is); ``skip`` is the cache entry's header length. A file
    that is not a pack, or is cut short, has no keys here: reading it as an entry reports it."""
    try:
        with open(path, "rb") as f:
            f.seek(skip)
            head = f.read(len(PACK_MAGIC) + _COUNT.size)
            if len(head) == len(PACK_MAGIC) + _COUNT.size and head.startswith(PACK_MAGIC):
                head += f.read(_COUNT.unpack_from(head, len(PACK_MAGIC))[0] * _ROW.size)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return []
    parsed = _table(head)
    return [] if parsed is None else [key for key, _ in parsed[0]]


class PackIndex:
    """Which pack of one namespace's folder holds which key."""

    def __init__(self, folder: Path, skip: int):
        self.folder, self.skip = folder, skip
        self.where: dict[str, str] = {}
        self.seen: set[str] = set()
        self.mtime: int | None = None

    def refresh(self) -> None:
        """Read the tables of the packs written since the last look (by this process or another)."""
        try:
            mtime = self.folder.stat().st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self.mtime:
            return
        self.mtime = mtime  # before listing: a pack that lands meanwhile changes it again
        new = [n for n in os.listdir(self.folder) if n not in self.seen and not n.startswith(".")]  # .tmp-*: being written
        for name in sorted(new, key=self._written):  # a key stored again (a refreshed stage): the last write wins
            self.add(name, pack_keys(self.folder / name, self.skip))

    def _written(self, name: str) -> int:
        try:
            return (self.folder / name).stat().st_mtime_ns
        except FileNotFoundError:
            return 0

    def add(self, name: str, keys: list[str]) -> None:
        self.seen.add(name)
        for key in keys:
            self.where[key] = name

    def wrote(self, name: str, keys: list[str], mtime_before: int | None) -> None:
        """Record a pack this process wrote. When nothing else had changed the folder since the
        last look, the folder's new mtime is this write's, so the next lookup need not list it
        (a pack another job renamed in at the same moment is then found at the folder's next
        change; until then its entries are computed again, as before packs existed)."""
        self.add(name, keys)
        if mtime_before is not None and mtime_before == self.mtime:
            try:
                self.mtime = self.folder.stat().st_mtime_ns
            except FileNotFoundError:
                pass

    def drop(self, name: str) -> None:
        """Forget a pack that is gone or damaged (its entries become misses, computed again)."""
        self.seen.discard(name)
        self.where = {k: v for k, v in self.where.items() if v != name}
