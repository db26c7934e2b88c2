"""The user's documents, read from a folder: ``.txt`` and ``.md`` files (one document each, its
path under the folder as its id) and ``documents.jsonl`` in the local format (one per row).

Everything that would make a poor corpus is refused here, in one line naming the file: an empty
folder, a file that is not text, a document too short to ask about, a file of another kind. A
hidden file (``.DS_Store``, ``.git/``) is skipped.
"""

from __future__ import annotations

from pathlib import Path

from harness.data.local import parse_document
from harness.data.rows import RowFields, read_rows
from harness.types import ConfigError, Document

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
JSONL = "documents.jsonl"
SNIFF_BYTES = 8192  # NUL in the first 8 KiB: binary (git's and grep's test)


def read_documents(folder: Path, min_words: int) -> list[Document]:
    """Every document under ``folder``, in path order; a ConfigError naming the file otherwise."""
    if isinstance(min_words, bool) or not isinstance(min_words, int) or min_words < 1:
        raise ConfigError(f"synth.min_doc_words: a whole number, 1 or more, got {min_words!r}")
    if not folder.exists():
        raise ConfigError(f"{folder}: no such folder: give the folder that holds your documents")
    if not folder.is_dir():
        raise ConfigError(f"{folder}: a file, not a folder: give the folder that holds it")
    files = sorted(p for p in folder.rglob("*")
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if not files:
        raise ConfigError(f"{folder}: the folder is empty: put .txt, .md or a documents.jsonl in it")
    documents: list[Document] = []
    for path in files:
        documents += _read_file(path, folder)
    texts = {p.relative_to(folder).as_posix() for p in files if p.name != JSONL}
    seen: set[str] = set()
    for d in documents:
        if d.doc_id in seen:
            raise ConfigError(f"{folder}: two documents have the id {d.doc_id!r}: ids must be unique")
        seen.add(d.doc_id)
        words = len(d.text.split())
        if words < min_words:
            where = folder / d.doc_id if d.doc_id in texts else f"{folder / JSONL}, document {d.doc_id!r}"
            raise ConfigError(f"{where}: {words} word{'s' * (words != 1)}, too short to ask "
                              f"about (a document needs {min_words}: synth.min_doc_words)")
    return documents


def _read_file(path: Path, folder: Path) -> list[Document]:
    rel = path.relative_to(folder).as_posix()
    with path.open("rb") as f:
        head = f.read(SNIFF_BYTES)
    if b"\0" in head:
        raise ConfigError(f"{path}: a binary file, not text: synth reads .txt, .md and documents.jsonl "
                          f"(convert it to text first, or move it out of the folder)")
    if path.name == JSONL:
        return [parse_document(RowFields(rel, location, raw, "doc_id")) for location, raw in read_rows(path, rel)]
    if path.suffix.lower() not in TEXT_SUFFIXES:
        raise ConfigError(f"{path}: not a kind synth reads (.txt, .md, documents.jsonl): convert it to text, "
                          f"or move it out of the folder")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start}): save it as UTF-8") from None
    return [Document(doc_id=rel, text=text, title=path.stem)]
