"""Reading the publishers' row files, with errors that name the dataset, the row and the field.

``read_rows`` is the one row reader of every loader (.jsonl / .jsonl.gz, .json lists, .parquet);
``RowFields`` gives typed access to one raw row, and every failure is a ``DataError`` naming
dataset, row and field. ``read_qrels`` reads BEIR's / TREC's relevance files;
``find_file`` / ``expand_paths`` locate the files.
"""

from __future__ import annotations

import glob
import gzip
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness.types import DataError

_MISSING = object()
# Half of a UTF-16 pair on its own: JSON's "\ud800" decodes to one, and it cannot be encoded
# (hashed, cached, tokenized) later.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
WHOLE_ROW = "(whole row)"
# json's decoder recurses once per nesting level and stops at Python's recursion limit (~1000)
TOO_DEEP = ("JSON nested too deeply to read (lists or objects inside each other past Python's "
            "recursion limit, about 1000 levels): flatten that value")
Rows = list[tuple[str, Any]]  # (location for errors, raw row)


def read_rows(path: Path, dataset: str, id_field: str | None = None) -> Iterator[tuple[str, Any]]:
    """``(location, raw row)`` per record of a .jsonl / .jsonl.gz, .json (a list) or .parquet file.

    The one row reader of every loader. ``location`` ("queries.jsonl line 7") names the row
    when its id is unreadable; JSON lines are decoded one at a time, so a byte that is not
    UTF-8 or a broken line names its line (and, with ``id_field``, its row id and field).
    Parquet is read by record batch, so a large shard is never held whole.
    """
    name = path.name
    if name.endswith((".jsonl", ".jsonl.gz")):
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rb") as f:
            yield from json_lines(f, name, dataset, id_field)
    elif name.endswith(".json"):
        rows = read_json_file(path, dataset, id_field)
        if not isinstance(rows, list):
            raise DataError(dataset, name, WHOLE_ROW, "must be a JSON list of objects")
        for i, raw in enumerate(rows):
            yield f"{name} item {i}", raw
    elif name.endswith(".parquet"):
        yield from parquet_rows(path, dataset)
    else:
        raise ValueError(f"unsupported file type: {path}")


def parquet_rows(path: Path, dataset: str) -> Iterator[tuple[str, Any]]:
    """``(location, row)`` per row of a Parquet file, read by record batch; a file pyarrow cannot
    read (not Parquet, truncated, a corrupt page) is one DataError naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    i = 0
    try:
        # to_pylist gives plain lists/dicts and None for nulls (pandas would give arrays and NaN).
        for batch in pq.ParquetFile(path).iter_batches(batch_size=256):
            for raw in batch.to_pylist():
                yield f"{path.name} row {i}", raw
                i += 1
    except (pa.ArrowException, OSError) as e:  # ArrowInvalid, ArrowIOError (an OSError): pyarrow's read errors
        where = f"{path.name} row {i}" if i else path.name
        raise DataError(dataset, where, WHOLE_ROW, f"{path} is not a readable Parquet file "
                        f"({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
                        f"write it again, e.g. with pyarrow.parquet.write_table") from None


def json_lines(lines: Iterable[bytes], label: str, dataset: str,
               id_field: str | None = None) -> Iterator[tuple[str, Any]]:
    """``(location, row)`` per non-blank line of JSONL bytes (a file opened "rb", or
    ``io.BytesIO(data)``); ``label`` names the source in locations."""
    first = True
    for lineno, line in enumerate(lines, 1):
        location = f"{label} line {lineno}"
        try:
            text = line.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise encoding_error(dataset, location, line, e, id_field) from None
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            if first and text.strip() in ("[", "{"):  # json.dump(rows, f, indent=...)
                raise not_json_lines(dataset, label, location) from None
            raise DataError(dataset, location, WHOLE_ROW, malformed_line(e)) from None
        except RecursionError:
            raise DataError(dataset, location, WHOLE_ROW, TOO_DEEP) from None
        if first and isinstance(row, list) and row and all(isinstance(r, dict) for r in row):
            raise not_json_lines(dataset, label, location)  # json.dump(rows, f) on one line
        first = False
        yield location, row


def malformed_line(e: json.JSONDecodeError) -> str:
    """A broken JSON line's problem without json's own "line 1": the file's line is the row's
    location, and a second line number would contradict it."""
    return f"malformed JSON: {e.msg} (column {e.colno})"


def not_json_lines(dataset: str, label: str, location: str) -> DataError:
    return DataError(dataset, location, WHOLE_ROW,
                     f"{label} holds one JSON document (a list or a pretty-printed object), not "
                     f"JSON Lines: write one record per line, e.g. "
                     f"`for r in rows: f.write(json.dumps(r) + \"\\n\")`")


def read_json_file(path: Path, dataset: str, id_field: str | None = None, keyed: bool = False) -> Any:
    """A whole JSON file; ``keyed``: it is a dict of rows by id (for error messages)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        location = f"{path.name} line {line}"
        raise encoding_error(dataset, location, data, e, id_field, keyed) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(dataset, f"{path.name} line {e.lineno}", WHOLE_ROW,
                        f"malformed JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise DataError(dataset, path.name, WHOLE_ROW, TOO_DEEP) from None


def encoding_error(dataset: str, location: str, data: bytes, error: UnicodeDecodeError,
                   id_field: str | None, keyed: bool = False) -> DataError:
    """A DataError for bytes that are not UTF-8, naming the row and field where possible: the
    data is decoded again with U+FFFD for the bad bytes, and if that parses, the row's id and
    the field holding the replacement character are named (``keyed``: a dict of rows by id)."""
    problem = f"not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start} of {location})"
    row, field_name = location, WHOLE_ROW
    try:
        raw = json.loads(data.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        raw = None
    path = _path_of(raw, "\ufffd") if raw is not None else None
    if path and keyed:
        row, field_name = str(path[0]), _field_label(path[1:])
    elif path:
        field_name = _field_label(path)
        if id_field and isinstance(raw, dict) and isinstance(raw.get(id_field), str) and raw[id_field]:
            row = raw[id_field]
    return DataError(dataset, row, field_name, problem)


def _path_of(value: Any, needle: str) -> list[str | int] | None:
    """The keys and indices leading to the first string in ``value`` that contains ``needle``."""
    if isinstance(value, str):
        return [] if needle in value else None
    items = (value.items() if isinstance(value, dict)
             else enumerate(value) if isinstance(value, list) else ())
    for key, child in items:
        found = _path_of(child, needle)
        if found is not None:
            return [key, *found]
    return None


def _field_label(path: list[str | int]) -> str:
    """``["qas", "question", 2]`` -> ``qas.question[2]``."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or WHOLE_ROW


def _is_kind(value: Any, kind: Any) -> bool:
    if kind is int:  # bool is an int subclass, but True is no offset
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "str_list":
        return isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)
    if kind == "dict_list":
        return isinstance(value, (list, tuple)) and all(isinstance(x, dict) for x in value)
    return isinstance(value, kind)


def _kind_name(kind: Any) -> str:
    names = {"str_list": "a list of strings", "dict_list": "a list of objects",
             str: "a string", int: "an integer", bool: "a boolean", dict: "an object"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


class RowFields:
    """Typed access to one raw row; every failure is a DataError naming dataset, row and field."""

    def __init__(self, dataset: str, location: str, raw: Any, id_field: str):
        if not isinstance(raw, dict):
            raise DataError(dataset, location, WHOLE_ROW,
                            f"must be a JSON object, got {type(raw).__name__}")
        self.dataset, self.location, self.raw = dataset, location, raw
        rid = raw.get(id_field)
        self.row = rid if isinstance(rid, str) and rid else location

    def error(self, field_name: str, problem: str) -> DataError:
        where = "" if self.row == self.location else f" (at {self.location})"
        return DataError(self.dataset, self.row, field_name, problem + where)

    def get(self, name: str, kind: Any, default: Any = _MISSING, *,
            source: dict | None = None, label: str | None = None) -> Any:
        """``source[name]`` (default: the row) checked against ``kind``; null counts as absent.

        ``label`` is the field named in errors (e.g. "sections[2].start" for a nested value).
        """
        source = self.raw if source is None else source
        label = label or name
        value = source.get(name)
        if value is None:
            if default is _MISSING:
                raise self.error(label, "missing required field")
            return default
        if not _is_kind(value, kind):
            raise self.error(label, f"must be {_kind_name(kind)}, got {type(value).__name__}")
        for i, text in ([(None, value)] if kind is str else enumerate(value) if kind == "str_list" else ()):
            if (bad := _LONE_SURROGATE.search(text)) is not None:
                where = label if i is None else f"{label}[{i}]"
                raise self.error(where, f"holds a lone surrogate {bad.group()!r} at character "
                                        f"{bad.start()} (a broken \\ud800-\\udfff escape, which no "
                                        f"UTF-8 text can hold): fix or drop that character in the file")
        return value

    def meta(self, name: str = "meta") -> dict[str, Any]:
        """An object; a JSON string holding one is accepted (how Parquet stores free-form meta)."""
        value = self.raw.get(name)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise self.error(name, f"malformed JSON string: {e}") from None
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(name, f"must be an object, got {type(value).__name__}")
        return value


def structs(f: RowFields, value: Any, label: str) -> list[dict[str, Any]]:
    """A Hugging Face "sequence of structs" field of ``f`` as a list of dicts, from either
    nesting: the Hub's dict of parallel lists, or a raw JSON list of objects. Null is an empty
    sequence; ``label`` names the field in errors."""
    if value is None:
        return []
    if isinstance(value, list):
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise f.error(f"{label}[{i}]", f"must be an object, got {type(item).__name__}")
        return value
    if isinstance(value, dict):
        lengths = {}
        for key, column in value.items():
            if column is None:
                continue
            if not isinstance(column, list):
                raise f.error(f"{label}.{key}", f"must be a list, got {type(column).__name__}")
            lengths[key] = len(column)
        if len(set(lengths.values())) > 1:
            raise f.error(label, f"parallel lists differ in length: {lengths}")
        n = next(iter(lengths.values()), 0)
        return [{k: (None if v is None else v[i]) for k, v in value.items()} for i in range(n)]
    raise f.error(label, f"must be a list of objects or an object of lists, got "
                         f"{type(value).__name__}")


def read_qrels(path: Path, dataset: str) -> list[tuple[str, str, str, Any]]:
    """(location, query id, corpus id, raw score) per line of a BEIR or TREC qrels file."""
    out = []
    for lineno, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        location = f"{path.parent.name}/{path.name} line {lineno}"
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as e:
            raise DataError(dataset, location, "(whole line)", f"not UTF-8: {e}") from None
        if not line.strip():
            continue
        cols = line.split("\t") if "\t" in line else line.split()
        if lineno == 1 and cols[-1].strip().lower() in ("score", "rel", "relevance"):
            continue  # BEIR's header: query-id corpus-id score
        if len(cols) == 3:
            qid, did, score = cols
        elif len(cols) == 4:  # TREC: qid iteration docid relevance
            qid, _, did, score = cols
        else:
            raise DataError(dataset, location, "(whole line)",
                            f"expected 3 columns (query-id, corpus-id, score) or 4 (TREC), "
                            f"got {len(cols)}")
        out.append((location, qid.strip(), did.strip(), score.strip()))
    return out


def find_file(folder: Path, stem: str, suffixes: tuple[str, ...]) -> Path:
    """The first of ``folder/stem.<suffix>`` that exists; FileNotFoundError naming all tried."""
    tried = [folder / f"{stem}{s}" for s in suffixes]
    for p in tried:
        if p.is_file():
            return p
    raise FileNotFoundError(f"none of {', '.join(str(p) for p in tried)} exists")


def iter_row_files(paths: Iterable[Path], dataset: str) -> Iterator[tuple[str, Any]]:
    """``(location, row)`` from each file in the order given (see ``read_rows``)."""
    for path in paths:
        yield from read_rows(path, dataset)


def expand_paths(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """A file, a glob pattern, or every file under a folder (recursively) whose name ends in
    one of ``suffixes``; sorted, so the row order is the same on every machine."""
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(suffixes))
    return sorted(Path(p) for p in glob.glob(str(path)) if Path(p).is_file())
