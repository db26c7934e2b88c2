"""Evidence given as offsets that a score would take silently: checked where a loader reads them.

Offsets count characters (code points, Python's ``len``), so nothing about a span's ends can
be proven wrong; what can be seen is a span that is implausible as evidence:

- one over whitespace only: no look-up can find it and no chunk can hold more of it than its
  neighbours do. It is dropped and counted (``evidence_spans_whitespace``).
- one that starts or ends inside a word (a letter or digit on both sides, in a script written
  with spaces between words) or inside a character sequence (before a combining mark, a
  variation selector, a skin tone or after a zero-width joiner). Offsets counted in UTF-16
  units (JavaScript's and Java's string indices) land there: each emoji or other character
  beyond U+FFFF before a span moves it one character on. Kept, counted
  (``evidence_spans_cut``) and named in one warning with the first of them.

A query left with no evidence is counted too (``queries_no_evidence``): the evidence metrics
score it n/a, not 0, on such data (:mod:`harness.metrics.evidence`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence

from harness.types import Document, Query, Span

WHITESPACE, CUT, NO_EVIDENCE = "evidence_spans_whitespace", "evidence_spans_cut", "queries_no_evidence"
# Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, CJK, kana, Hangul
# syllables, full-width forms): any character boundary there may end a word.
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_JOINS_PREVIOUS = re.compile("[\u200d\ufe00-\ufe0f\U0001f3fb-\U0001f3ff\U000e0100-\U000e01ef]")


def whitespace_only(span: Span, doc: Document | None) -> bool:
    return doc is not None and 0 <= span.start < span.end <= len(doc.text) and not doc.text[span.start:span.end].strip()


def _in_word(text: str, at: int) -> bool:
    before, after = text[at - 1], text[at]
    return (before.isalnum() and after.isalnum() and not _UNSPACED.match(before)
            and not _UNSPACED.match(after))


def _in_sequence(text: str, at: int) -> bool:
    after = text[at]
    return (unicodedata.category(after).startswith("M") or bool(_JOINS_PREVIOUS.match(after))
            or text[at - 1] == "\u200d")


def cut_at(text: str, start: int, end: int) -> bool:
    """Whether the span ``[start, end)`` of ``text`` starts or ends inside a word or a
    character sequence (module doc); False where it is not inside the text."""
    if not 0 <= start < end <= len(text):
        return False
    return any(0 < at < len(text) and (_in_word(text, at) or _in_sequence(text, at)) for at in (start, end))


def from_utf16(text: str, offset: int) -> int:
    """The character offset of UTF-16 unit ``offset`` of ``text`` (each character beyond U+FFFF
    is two units)."""
    units = 0
    for i, ch in enumerate(text):
        if units >= offset:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def cut_spans(queries: Sequence[Query], docs: Mapping[str, Document]) -> Iterator[tuple[Query, int]]:
    """(query, evidence index) of each span that :func:`cut_at` flags."""
    for q in queries:
        for i, s in enumerate(q.evidence):
            if s.doc_id in docs and cut_at(docs[s.doc_id].text, s.start, s.end):
                yield q, i


def cut_warning(name: str, n: int, queries: Sequence[Query], docs: Mapping[str, Document]) -> str | None:
    """The one line naming the first of the ``n`` spans :func:`cut_spans` finds, and whether its
    offsets read as UTF-16 units; None when none is found."""
    first = next(cut_spans(queries, docs), None)
    if not n or first is None:
        return None
    q, i = first
    span = q.evidence[i]
    text = docs[span.doc_id].text
    start, end = from_utf16(text, span.start), from_utf16(text, span.end)
    why = ("; read as UTF-16 units (JavaScript's or Java's string indices: one more per emoji or other "
           f"character beyond U+FFFF before the span) it would be {text[start:end][:60]!r}"
           if (start, end) != (span.start, span.end) and not cut_at(text, start, end) else "")
    return (f"dataset {name!r}: {n} evidence span{'s' if n > 1 else ''} start{'' if n > 1 else 's'} or "
            f"end{'' if n > 1 else 's'} inside a word or a character sequence (the first: query {q.qid!r} "
            f"evidence[{i}], {text[span.start:span.end][:60]!r} of document {span.doc_id!r}){why}; offsets "
            f"count characters (code points, Python's len): check how the file's offsets were made")


def report_warnings(name: str, report: Mapping[str, float], queries: Sequence[Query],
                    documents: Sequence[Document]) -> list[str]:
    """The load's warning lines for the counts a loader put in its ``report`` (module doc)."""
    lines = []
    if n := int(report.get(NO_EVIDENCE, 0)):
        lines.append(f"dataset {name!r}: {n} of {len(queries)} queries give no evidence: the evidence and span "
                     f"metrics score them n/a, left out of their means (`scored` counts the rest)")
    if n := int(report.get(WHITESPACE, 0)):
        lines.append(f"dataset {name!r}: {n} evidence span{'s' if n > 1 else ''} cover{'' if n > 1 else 's'} "
                     f"only whitespace: dropped (no look-up can find such evidence)")
    if n := int(report.get(CUT, 0)):
        line = cut_warning(name, n, queries, {d.doc_id: d for d in documents})
        lines.extend([line] if line else [])
    return lines
