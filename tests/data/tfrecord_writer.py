"""A minimal writer of TFRecord files of SequenceExamples, for tests: written from the format's
definition, independent of the reader in harness.data.tfrecord (only its masked CRC is shared,
checked on its own in test_tfrecord)."""

import gzip
import struct

from harness.data.tfrecord import masked_crc32c


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ld(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _feature(values):
    if all(isinstance(v, str) for v in values):   # an empty list is written as a BytesList
        return _ld(1, b"".join(_ld(1, v.encode()) for v in values))
    if all(isinstance(v, int) for v in values):
        return _ld(3, _ld(1, b"".join(_varint(v) for v in values)))
    return _ld(2, _ld(1, b"".join(struct.pack("<f", v) for v in values)))


def _entry(key, value):
    return _ld(1, _ld(1, key.encode()) + _ld(2, value))


def sequence_example(page):
    """Context features: the scalar fields; feature lists: the per-section lists."""
    context = b"".join(_entry(k, _feature([v])) for k, v in page.items() if not isinstance(v, list))
    lists = b"".join(
        _entry(k, b"".join(_ld(1, _feature(step if isinstance(step, list) else [step]))
                           for step in v))
        for k, v in page.items() if isinstance(v, list))
    return _ld(1, context) + _ld(2, lists)


def tfrecord(payloads):
    out = bytearray()
    for p in payloads:
        header = struct.pack("<Q", len(p))
        out += header + struct.pack("<I", masked_crc32c(header)) + p
        out += struct.pack("<I", masked_crc32c(p))
    return bytes(out)


def write_tfrecord(path, pages, compress=True):
    data = tfrecord([sequence_example(p) for p in pages])
    path.write_bytes(gzip.compress(data) if compress else data)
    return path
