"""The chunk contract every run holds a chunker to, whoever wrote it (built in, an adapter, a class
named by ``chunker._target_``, an object given to ``harness.evaluate``, a challenger): the chunk
stage checks what :meth:`Chunker.chunk` returns before anything is stored or scored.

A module of its own, apart from :mod:`harness.chunking.base`: a chunker's cache key holds the code
of the ``harness`` modules it imports (:mod:`harness.code_digest`), and no chunker imports this one,
so the check can change without recomputing every stored chunking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.chunking.base import check_chunks
from harness.types import Chunk, ChunkerFailed, Document

# In every ChunkContractError's message, so in the one-line reason a failed point is recorded with
# too: what tells a broken chunker from one that raised (a challenge refuses the former).
BROKE_CONTRACT = "broke the chunk contract"


class ChunkContractError(ChunkerFailed):
    """A chunker broke the chunk contract: what it returned fails :func:`check_output`, or a
    document took it longer than ``chunker_timeout_s``. One line naming the chunker, the document,
    the chunk and what is wrong; nothing is scored from such a chunking."""


def check_output(docs: Sequence[Document], output: Any) -> list[list[Chunk]]:
    """What :meth:`Chunker.chunk` returned for ``docs``, held to the contract and given back as
    lists: one list (a tuple is taken as one) of chunks per document, each passing
    :func:`check_document`. None, a string, a generator or any other iterable is refused rather
    than read: the interface promises lists, and a generator read here could not be read again.
    Raises ValueError naming the document and the chunk."""
    if not isinstance(output, (list, tuple)):
        raise ValueError(f"chunk() returned {_kind(output)}, not a list of each document's chunks")
    if len(output) != len(docs):
        raise ValueError(f"chunk() returned {len(output)} entries for {len(docs)} documents "
                         f"({', '.join(repr(d.doc_id) for d in docs)})")
    for doc, chunks in zip(docs, output):
        if not isinstance(chunks, (list, tuple)):
            raise ValueError(f"document {doc.doc_id!r}: its entry is {_kind(chunks)}, not a list of chunks")
        check_document(doc, chunks)
    return [list(chunks) for chunks in output]


def check_document(doc: Document, chunks: Sequence[Any]) -> None:
    """One document's chunks: :class:`Chunk` objects with integer spans and string ids and text,
    passing :func:`check_chunks` (spans inside the text holding its text, whitespace-trimmed and
    not blank, unique ids, document order; not ``covering``: chunks may overlap), and at least one
    for a document that has text."""
    for i, c in enumerate(chunks):
        if not isinstance(c, Chunk):
            raise ValueError(f"document {doc.doc_id!r}, chunk {i}: {_kind(c)}, not a harness.types.Chunk")
        if not (_integer(c.start) and _integer(c.end) and isinstance(c.chunk_id, str) and isinstance(c.text, str)):
            raise ValueError(f"document {doc.doc_id!r}, chunk {i} ({c.chunk_id!r}): start and end must be "
                             f"integers, chunk_id and text strings (got {type(c.start).__name__}, "
                             f"{type(c.end).__name__}, {type(c.chunk_id).__name__}, {type(c.text).__name__})")
    if not chunks and doc.text.strip():
        raise ValueError(f"document {doc.doc_id!r}: no chunks for a document of {len(doc.text)} characters")
    check_chunks(doc, chunks)


def check_unique_ids(chunks_by_doc: Mapping[str, Sequence[Chunk]]) -> None:
    """Chunk ids unique across documents too: retrieval and assembly look chunks up by id over the
    whole run, where a repeated id would stand for another document's chunk."""
    seen: dict[str, str] = {}
    for doc_id, chunks in chunks_by_doc.items():
        for c in chunks:
            if seen.setdefault(c.chunk_id, doc_id) != doc_id:
                raise ValueError(f"chunk id {c.chunk_id!r} is in document {seen[c.chunk_id]!r} and in document "
                                 f"{doc_id!r}: ids must be unique across documents")


def _integer(value: Any) -> bool:
    # numpy's integers by class: numbers.Integral's ABC check would be most of this module's cost
    return isinstance(value, (int, np.integer))


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"
