"""The data model every stage speaks. Depends on nothing else in the package.

Spans are half-open character offsets ``[start, end)`` into ``Document.text``.
Records are frozen dataclasses; ``validate()`` methods raise :class:`DataError`
naming the dataset, the row and the field, so a bad input row is easy to find.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


class DataError(ValueError):
    """A record breaks the data model. The message names dataset, row and field."""

    def __init__(self, dataset: str, row: str, field_name: str, problem: str):
        self.dataset, self.row, self.field = dataset, row, field_name
        super().__init__(f"dataset {dataset!r}, row {row!r}, field {field_name!r}: {problem}")


class ConfigError(ValueError):
    """A component was configured with a bad parameter. The message names the parameter."""


class ServiceError(RuntimeError):
    """A model server failed (down, stuck, refusing, answering nonsense): the message is one line
    naming the server, what it answered and what to do, and the run ends with it."""


class ChunkerFailed(RuntimeError):
    """A chunker raised on a document: the message names the chunker, the document and the error,
    so a table's grid records the point as failed and goes on (the documents chunked before it
    stay cached)."""


class Unavailable(ConfigError):
    """A model, tokenizer or file named right that cannot be had here (not downloaded, the Hub
    unreachable): a full-scale table check reports it as a status, a run as a failed point."""


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    level: int
    title: str = ""


@dataclass(frozen=True)
class Span:
    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    title: str = ""
    sections: tuple[Section, ...] = ()
    language: str = "en"
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def validate(self, dataset: str) -> Document:
        row = str(self.doc_id)
        if not isinstance(self.doc_id, str) or not self.doc_id:
            raise DataError(dataset, row, "doc_id", "must be a non-empty string")
        if not isinstance(self.text, str):
            raise DataError(dataset, row, "text", f"must be a string, got {type(self.text).__name__}")
        n = len(self.text)
        for i, s in enumerate(self.sections):
            if not (0 <= s.start < s.end <= n):
                raise DataError(dataset, row, f"sections[{i}]",
                                f"span [{s.start}, {s.end}) is not inside the text (length {n})")
            if s.level < 1:
                raise DataError(dataset, row, f"sections[{i}]", f"level must be >= 1, got {s.level}")
        return self


@dataclass(frozen=True)
class Query:
    """A question. Its evidence is ``evidence``, spans of the documents, plus
    ``unaligned_evidence``: snippets the dataset gives as evidence that could not be aligned to
    a span (kept as text, never dropped). ``evidence_texts(documents)`` gives both as strings.
    ``evidence_wording``: the dataset's own snippet each span was aligned from, in order, where
    the dataset gave text (a fuzzy alignment's span words it differently); empty where it gave
    spans. ``evidence_as_given(documents)`` gives the evidence in the dataset's words."""

    qid: str
    question: str
    answers: tuple[str, ...] = ()
    doc_ids: tuple[str, ...] = ()
    evidence: tuple[Span, ...] = ()
    facts: tuple[str, ...] = ()
    task: str = ""
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    unaligned_evidence: tuple[str, ...] = ()
    evidence_wording: tuple[str, ...] = ()

    def validate(self, dataset: str, docs: dict[str, Document]) -> Query:
        row = str(self.qid)
        if not isinstance(self.qid, str) or not self.qid:
            raise DataError(dataset, row, "qid", "must be a non-empty string")
        if not isinstance(self.question, str) or not self.question.strip():
            raise DataError(dataset, row, "question", "must be a non-empty string")
        for d in self.doc_ids:
            if d not in docs:
                raise DataError(dataset, row, "doc_ids", f"unknown document {d!r}")
        for i, e in enumerate(self.evidence):
            doc = docs.get(e.doc_id)
            if doc is None:
                raise DataError(dataset, row, f"evidence[{i}]", f"unknown document {e.doc_id!r}")
            if not (0 <= e.start < e.end <= len(doc.text)):
                raise DataError(dataset, row, f"evidence[{i}]",
                                f"span [{e.start}, {e.end}) is not inside document "
                                f"{e.doc_id!r} (length {len(doc.text)})")
        for i, text in enumerate(self.unaligned_evidence):
            if not isinstance(text, str):
                raise DataError(dataset, row, f"unaligned_evidence[{i}]",
                                f"must be a string, got {type(text).__name__}")
        if self.evidence_wording and len(self.evidence_wording) != len(self.evidence):
            raise DataError(dataset, row, "evidence_wording",
                            f"has {len(self.evidence_wording)} snippets for {len(self.evidence)} spans")
        return self

    def evidence_texts(self, documents: Mapping[str, Document]) -> list[str]:
        """Evidence as strings: the spans' text in ``documents`` (by doc id), in order, then the
        snippets that could not be aligned."""
        return ([documents[s.doc_id].text[s.start:s.end] for s in self.evidence]
                + list(self.unaligned_evidence))

    def evidence_as_given(self, documents: Mapping[str, Document]) -> list[str]:
        """Evidence in the dataset's words: ``evidence_wording`` (the spans' text where the
        dataset gave spans), then the snippets that could not be aligned."""
        spans = self.evidence_wording or [documents[s.doc_id].text[s.start:s.end] for s in self.evidence]
        return list(spans) + list(self.unaligned_evidence)


PART_SEPARATOR = " "


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit (or a structure node) of one document.

    - ``start/end``: the span; ``text == doc.text[start:end]`` for a contiguous chunk.
    - ``parts``: set only for a non-contiguous chunk (a cluster of sentences from
      different places): its disjoint spans in order, ``start/end`` their hull and
      ``text`` their texts joined by ``PART_SEPARATOR``. ``spans`` is what metrics read.
    - ``level`` and ``parent_id``: the hierarchy (0 = no level; a child points at the
      chunk that contains it). ``indexed=False`` marks a structure node that is not
      retrieved itself but can be returned by an assembler (a section above its leaves).
    - ``view``: ``"text"`` for document text. A chunk of any other view (a summary,
      keywords) describes the content chunk named by its ``parent_id``, carries that
      chunk's span, and its ``text`` is the view's text, not the document's.
    - ``children``: set only on a summary node of a tree whose nodes may have several
      parents (RAPTOR's soft clustering), which ``parent_id`` cannot express: the ids of the
      nodes it summarises, one level down. Such a node has a view other than ``"text"``, no
      ``parent_id``, and its ``spans`` are the union of its children's: it stands for itself
      (assemblers return it, span metrics read its spans, i.e. its leaves' document text).
    - ``rewritten``: the text was rewritten by a model (QChunker's knowledge completion):
      the chunk keeps its source span, which span metrics credit, while text metrics and
      the responder read the new text.
    """

    chunk_id: str
    doc_id: str
    text: str
    start: int
    end: int
    level: int = 0
    parent_id: str | None = None
    view: str = "text"
    parts: tuple[tuple[int, int], ...] = ()
    indexed: bool = True
    children: tuple[str, ...] = ()
    rewritten: bool = False

    @property
    def span(self) -> Span:
        return Span(self.doc_id, self.start, self.end)

    @property
    def spans(self) -> tuple[Span, ...]:
        """The document text this chunk holds: its parts, or its one span."""
        if self.parts:
            return tuple(Span(self.doc_id, s, e) for s, e in self.parts)
        return (self.span,)

    def spans_upto(self, n: int) -> tuple[Span, ...]:
        """The document spans of ``text[:n]`` (the chunk cut to its first ``n`` characters).
        A tree summary's text is not document text: any part of it stands for all its spans.
        A rewritten chunk's text has no character alignment with its source: the cut keeps the
        same share of its span."""
        if self.children:
            return self.spans if n > 0 else ()
        if self.rewritten and n < len(self.text):
            end = self.start + (self.end - self.start) * max(n, 0) // len(self.text)
            return (Span(self.doc_id, self.start, end),) if end > self.start else ()
        if not self.parts:
            return (Span(self.doc_id, self.start, self.start + min(n, self.end - self.start)),)
        out, left = [], n
        for s, e in self.parts:
            if left <= 0:
                break
            out.append(Span(self.doc_id, s, s + min(left, e - s)))
            left -= e - s + len(PART_SEPARATOR)
        return tuple(out)


class Ranked(Sequence):
    """A retriever's ranking, best first: a sequence of (chunk id, score) pairs, kept as a tuple of
    the ids (the chunks' own strings, shared) and an array of float64 scores. As pairs, 16,000
    rankings of 100 hits held 137 MiB and took 126 MiB more to pickle; as this, 29 and 49 (issue 35).
    Equal to any sequence of the same pairs, so rankings cached as tuples of pairs read the same."""

    __slots__ = ("ids", "scores")

    def __init__(self, ids: Iterable[str] = (), scores: Iterable[float] | bytes = ()):
        self.ids = tuple(ids)
        self.scores = array("d", scores) if not isinstance(scores, bytes) else array("d")
        if isinstance(scores, bytes):
            self.scores.frombytes(scores)
        if len(self.ids) != len(self.scores):
            raise ValueError(f"Ranked: {len(self.ids)} ids and {len(self.scores)} scores")

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, float]]) -> Ranked:
        pairs = list(pairs)
        return cls((p[0] for p in pairs), (p[1] for p in pairs))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Ranked(self.ids[i], self.scores[i])
        return self.ids[i], self.scores[i]

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return zip(self.ids, self.scores)

    def __eq__(self, other) -> bool:
        if isinstance(other, Ranked):
            return self.ids == other.ids and self.scores == other.scores
        return isinstance(other, (tuple, list)) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Ranked({list(self)!r})"

    def __reduce__(self):
        return Ranked, (self.ids, self.scores.tobytes())


@dataclass(frozen=True)
class Retrieved:
    """``ranked``: the chunks best first, a :class:`Ranked` (a tuple of pairs in entries cached
    before it, read the same way: iterated, sliced, measured)."""

    qid: str
    ranked: Sequence[tuple[str, float]]
    seconds: float = 0.0


@dataclass(frozen=True)
class Ranking:
    """The retriever's ranking as the context read it (recorded by the assemble stage, so
    ranking metrics never resolve it again): ``chunk_ids`` are content chunks after view and
    ``expand`` resolution, contained chunks skipped; ``by_view`` lists per view (in order of
    first hit) the content chunks its hits stand for, for MC-indexing's multi-view top k."""

    qid: str
    chunk_ids: tuple[str, ...]
    expand: str = "none"
    by_view: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Context:
    """What the responder sees. ``spans`` are the document spans actually included
    (they differ from the chunks' spans when the last chunk was truncated to the budget);
    ``ranking`` is the resolved ranking the context was built from."""

    qid: str
    chunk_ids: tuple[str, ...]
    text: str
    n_tokens: int
    spans: tuple[Span, ...] = ()
    merges: int = 0
    ranking: Ranking | None = None


@dataclass(frozen=True)
class Answer:
    qid: str
    text: str
    n_prompt_tokens: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class DocChunks:
    """One document's chunking: its chunks, the seconds it took, and what the chunker had to
    repair (LLM chunkers' fallbacks)."""

    chunks: list[Chunk]
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)


def to_dict(record: Any) -> dict[str, Any]:
    """A JSON-ready dict of any record above (tuples become lists)."""
    return asdict(record)
