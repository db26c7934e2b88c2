"""TFRecord files of ``tensorflow.SequenceExample`` records, read without TensorFlow.

A TFRecord file is a run of records: uint64 length, uint32 masked CRC-32C of the length, the
payload, uint32 masked CRC-32C of the payload (``read_tfrecords``; gzip is recognised by its
magic bytes). A payload's protobuf wire format is decoded here for the few message types a
SequenceExample needs (SequenceExample, Features, FeatureLists, FeatureList, Feature,
Bytes/Float/Int64List). A broken frame is a ``DataError`` naming the record; a payload that does
not decode raises ValueError for the caller to name.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from harness.data.rows import WHOLE_ROW
from harness.types import DataError

# -- CRC-32C (Castagnoli), as TFRecord frames use it -------------------------------------------


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masking: rotate right by 15 bits and add a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# -- TFRecord framing --------------------------------------------------------------------------


def _open_binary(path: Path) -> BinaryIO:
    """gzip by its magic bytes, not by name: the train shards end in ``-0000k-of-00005``."""
    with path.open("rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else path.open("rb")


def read_tfrecords(path: Path, dataset: str, verify_data_crc: bool = False
                   ) -> Iterator[tuple[str, bytes]]:
    """``(location, payload)`` per record; a broken frame is a DataError naming the record."""
    with _open_binary(path) as f:
        k = 0
        while True:
            location = f"{path.name} record {k}"
            try:
                header = f.read(12)
            except (OSError, EOFError) as e:  # gzip: bad or truncated stream
                raise DataError(dataset, location, WHOLE_ROW, f"unreadable: {e}") from None
            if not header:
                return
            if len(header) < 12:
                raise DataError(dataset, location, WHOLE_ROW,
                                f"truncated TFRecord header ({len(header)} of 12 bytes)")
            (length,), (length_crc,) = struct.unpack("<Q", header[:8]), struct.unpack("<I", header[8:])
            if masked_crc32c(header[:8]) != length_crc:
                raise DataError(dataset, location, WHOLE_ROW,
                                "length CRC mismatch: not a TFRecord file, or a corrupt one")
            try:
                payload, footer = f.read(length), f.read(4)
            except (OSError, EOFError) as e:
                raise DataError(dataset, location, WHOLE_ROW, f"unreadable: {e}") from None
            if len(payload) < length or len(footer) < 4:
                raise DataError(dataset, location, WHOLE_ROW,
                                f"truncated record ({len(payload)} of {length} bytes)")
            if verify_data_crc and masked_crc32c(payload) != struct.unpack("<I", footer)[0]:
                raise DataError(dataset, location, WHOLE_ROW, "data CRC mismatch: corrupt record")
            yield location, payload
            k += 1


# -- protobuf wire format ----------------------------------------------------------------------


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def _fields(buf: memoryview) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value): an int for varints, a memoryview otherwise."""
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise ValueError(f"unsupported wire type {wire} (field {number})")
        if pos > n:
            raise ValueError(f"field {number} runs past the end of its message")
        yield number, wire, value


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def decode_feature(buf: memoryview) -> list:
    """A ``Feature``: its bytes, float or int64 values (oneof kind: 1, 2, 3)."""
    values: list = []
    for number, wire, value in _fields(buf):
        if wire != 2 or number not in (1, 2, 3):
            continue
        values = []  # the last kind set wins, as protobuf's oneof does
        for n2, w2, v2 in _fields(value):
            if n2 != 1:
                continue
            if number == 1 and w2 == 2:
                values.append(bytes(v2))
            elif number == 2 and w2 == 2:  # packed floats
                values.extend(x for (x,) in struct.iter_unpack("<f", v2))
            elif number == 2 and w2 == 5:
                values.append(struct.unpack("<f", v2)[0])
            elif number == 3 and w2 == 2:  # packed varints
                pos = 0
                while pos < len(v2):
                    x, pos = _varint(v2, pos)
                    values.append(_signed(x))
            elif number == 3 and w2 == 0:
                values.append(_signed(v2))
            else:
                raise ValueError(f"feature kind {number} has a value of wire type {w2}")
    return values


def _map_entries(buf: memoryview) -> Iterator[tuple[str, memoryview]]:
    """``map<string, Message>`` field 1 of ``buf``: (key, value bytes) per entry."""
    for number, wire, entry in _fields(buf):
        if number != 1 or wire != 2:
            continue
        key, value = "", memoryview(b"")
        for n2, w2, v2 in _fields(entry):
            if n2 == 1 and w2 == 2:
                key = bytes(v2).decode("utf-8")
            elif n2 == 2 and w2 == 2:
                value = v2
        yield key, value


def split_sequence_example(data: bytes) -> tuple[dict[str, memoryview], dict[str, memoryview]]:
    """Context features and feature lists of a ``SequenceExample``, values still encoded (the
    loader decodes the context first and skips pages it does not need)."""
    context: dict[str, memoryview] = {}
    lists: dict[str, memoryview] = {}
    for number, wire, value in _fields(memoryview(data)):
        if wire == 2 and number == 1:
            context.update(_map_entries(value))
        elif wire == 2 and number == 2:
            lists.update(_map_entries(value))
    return context, lists


def decode_feature_list(buf: memoryview) -> list[list]:
    """A ``FeatureList``: one value list per step (here: per section)."""
    return [decode_feature(v) for n, w, v in _fields(buf) if n == 1 and w == 2]
