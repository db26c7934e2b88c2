"""A dataset in the harness's own schema, read from (and written to) a local folder.

Layout (JSONL preferred; Parquet accepted, where ``meta`` may be a JSON string):

    documents.jsonl | documents.parquet
        {doc_id, text, title?, sections?: [{start, end, level, title?}], language?, meta?}
    queries.jsonl | queries.parquet
        {qid, question, answers?: [str], doc_ids?: [str],
         evidence?: [{doc_id, start, end} | {doc_id, text}],
         facts?: [str], task?, unaligned_evidence?: [str], evidence_wording?: [str], meta?}

Evidence is a character span of its document, or its text, aligned to a span as every loader
aligns evidence snippets (exact, then normalised, then fuzzy: :mod:`harness.data.align`); the
load report counts how each was aligned, and a text no document holds is kept as
``unaligned_evidence`` (evidence recall still reads it) and counted as unaligned.

``unaligned_evidence`` holds evidence snippets that could not be aligned to a span;
``evidence_wording`` (optional, one per span) the dataset's own words for each span where they
differ from the span's text (a fuzzy alignment): ``evidence_recall`` looks those up, so an
exported dataset scores as its own loader does. Files written
before it was a field kept it in ``meta["unaligned_evidence"]`` (with the spans' text in
``meta["evidence_text"]``): both are still read, the first into the field, the second dropped
(the spans' text is the documents' own, ``Query.evidence_texts(documents)``).

``write_local`` produces this layout from any loaded ``Dataset``, so every upstream family can
be exported once and re-read without its original loader.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.data.align import AlignmentReport, align_evidence
from harness.data.base import Dataset, DatasetLoader, Read, query_doc_ids
from harness.data.evidence_checks import CUT, NO_EVIDENCE, WHITESPACE, cut_spans, whitespace_only
from harness.data.languages import language_problem
from harness.data.rows import WHOLE_ROW, RowFields, read_rows
from harness.files import not_regular
from harness.types import ConfigError, DataError, Document, Query, Section, Span

# Evidence that older files kept in a query's meta (see the module docstring).
_OLD_META_EVIDENCE = ("evidence_text", "unaligned_evidence")


def parse_document(f: RowFields) -> Document:
    sections = []
    for i, s in enumerate(f.get("sections", "dict_list", [])):
        at = f"sections[{i}]"
        sections.append(Section(
            start=f.get("start", int, source=s, label=f"{at}.start"),
            end=f.get("end", int, source=s, label=f"{at}.end"),
            level=f.get("level", int, source=s, label=f"{at}.level"),
            title=f.get("title", str, "", source=s, label=f"{at}.title")))
    language = f.get("language", str, "en")
    if problem := language_problem(language):
        raise f.error("language", problem)
    return Document(
        doc_id=f.get("doc_id", str), text=f.get("text", str), title=f.get("title", str, ""),
        sections=tuple(sections), language=language, meta=f.meta())


@dataclass(frozen=True)
class QueryRow:
    """A query row as read: its evidence given as offsets placed, that given as text (evidence
    index, doc_id, text) aligned once the documents are kept (:meth:`LocalDataset.read`)."""

    query: Query
    texts: tuple[tuple[int, str, str], ...]
    fields: RowFields

    @property
    def qid(self) -> str:
        return self.query.qid

    def doc_ids(self) -> list[str]:
        return [*query_doc_ids(self.query), *(d for _, d, _ in self.texts)]


def parse_query(f: RowFields) -> QueryRow:
    evidence, texts = [], []
    for i, e in enumerate(f.get("evidence", "dict_list", [])):
        at = f"evidence[{i}]"
        doc_id = f.get("doc_id", str, source=e, label=f"{at}.doc_id")
        if e.get("text") is not None:  # text to align: {doc_id, text}
            if e.get("start") is not None or e.get("end") is not None:
                raise f.error(at, "give start and end, or text, not both")
            text = f.get("text", str, source=e, label=f"{at}.text")
            if not text.strip():
                raise f.error(f"{at}.text", "is empty")
            texts.append((i, doc_id, text))
        else:
            evidence.append(Span(doc_id=doc_id, start=f.get("start", int, source=e, label=f"{at}.start"),
                                 end=f.get("end", int, source=e, label=f"{at}.end")))
    meta = f.meta()
    unaligned = f.get("unaligned_evidence", "str_list", None)
    old = f.get("unaligned_evidence", "str_list", None, source=meta,
                label="meta.unaligned_evidence")
    if unaligned is not None and old is not None:
        raise f.error("unaligned_evidence", "given twice: as a field and in meta")
    wording = tuple(f.get("evidence_wording", "str_list", ()))
    if wording and texts:
        raise f.error("evidence_wording", "not with evidence given as text (the text is its wording)")
    meta = {k: v for k, v in meta.items() if k not in _OLD_META_EVIDENCE}
    return QueryRow(Query(
        qid=f.get("qid", str), question=f.get("question", str),
        answers=tuple(f.get("answers", "str_list", ())),
        doc_ids=tuple(f.get("doc_ids", "str_list", ())), evidence=tuple(evidence),
        facts=tuple(f.get("facts", "str_list", ())), task=f.get("task", str, ""), meta=meta,
        unaligned_evidence=tuple(unaligned if unaligned is not None else old or ()),
        evidence_wording=wording), tuple(texts), f)


def aligned(row: QueryRow, docs: dict[str, Document], alignment: AlignmentReport,
            dropped: Counter) -> Query:
    """``row``'s query with its text evidence aligned as every loader aligns snippets (exact,
    normalised, fuzzy; :func:`harness.data.align.align_evidence`), in the order given: a snippet
    no document holds is kept as ``unaligned_evidence`` and counted, as the other loaders do. A
    span over whitespace only is dropped and counted in ``dropped``
    (:mod:`harness.data.evidence_checks`)."""
    q = row.query
    if q.evidence_wording and len(q.evidence_wording) != len(q.evidence):
        raise row.fields.error("evidence_wording", f"has {len(q.evidence_wording)} snippets for "
                                                   f"{len(q.evidence)} spans")
    texts = {i: (d, t) for i, d, t in row.texts}
    given = iter(zip(q.evidence, q.evidence_wording or [None] * len(q.evidence)))
    spans, wording, unaligned = [], [], []
    for i in range(len(q.evidence) + len(texts)):  # in the order the row gives them
        if i not in texts:
            span, words = next(given)
            if whitespace_only(span, docs.get(span.doc_id)):
                dropped[WHITESPACE] += 1
                continue
            spans.append(span)
            wording.append(words if words is not None else
                           docs[span.doc_id].text[span.start:span.end] if span.doc_id in docs else "")
            continue
        doc_id, text = texts[i]
        if doc_id not in docs:
            raise row.fields.error(f"evidence[{i}].doc_id", f"unknown document {doc_id!r}")
        found = alignment.add(align_evidence(docs[doc_id].text, text))
        if found:
            spans.append(Span(doc_id, found[0], found[1]))
            wording.append(text)
        else:
            unaligned.append(text)
    keeps_wording = bool(row.texts or q.evidence_wording)  # spans alone are their own wording
    return replace(q, evidence=tuple(spans), evidence_wording=tuple(wording) if keeps_wording else (),
                   unaligned_evidence=(*q.unaligned_evidence, *unaligned))


def _read_records(path: Path, dataset: str, id_field: str, parse) -> list:
    records, seen = [], set()
    for location, raw in read_rows(path, dataset):
        f = RowFields(dataset, location, raw, id_field)
        if isinstance(raw.get(id_field), str) and not raw[id_field].strip():  # else named only as row ''
            raise f.error(id_field, f"is empty ({raw[id_field]!r}): every record needs a non-empty {id_field}")
        record = parse(f)
        key = getattr(record, id_field)
        if key in seen:
            raise f.error(id_field, f"duplicate {id_field} {key!r}")
        seen.add(key)
        records.append(record)
    return records


class LocalDataset(DatasetLoader):
    """Documents and queries from a folder in the common schema (see the module docstring).

    ``limit_docs`` keeps the first N documents and only the queries whose documents
    (``doc_ids`` and evidence) are all kept; ``limit_queries`` then keeps the first N remaining
    queries; with ``seed``, N drawn at random.
    """
    title = "local data"

    version = 5  # 3: evidence_wording; 4: evidence given as text, aligned; 5: evidence checks
    no_evidence = "nan"  # a query without evidence is n/a: no paper's rule of 0 to match
    sources = ("path",)  # dataset.path is required: there is no sample and no Hub copy
    default_source = "path"

    def __init__(self, path: str | Path | None = None, name: str = "local",
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed)
        self.set_source(source, path)
        self.source_files()  # a missing, unreadable or misplaced file fails before any work

    def how_to_get(self) -> str:
        return ("Give a folder with documents.jsonl and queries.jsonl "
                "(python -m harness dataset=local dataset.path=DIR)")

    def source_files(self) -> list[Path]:
        where = f"dataset.path={self.path}"
        if not self.path.exists():
            raise ConfigError(f"{where} does not exist: give the folder that holds documents.jsonl "
                              f"and queries.jsonl")
        if not self.path.is_dir():
            raise ConfigError(f"{where} is {not_regular(self.path) or 'a file'}: give the folder that holds "
                              f"documents.jsonl and queries.jsonl side by side")
        files = []
        for stem in ("documents", "queries"):
            found = [p for p in (self.path / f"{stem}{s}" for s in (".jsonl", ".parquet")) if p.exists()]
            if not found:
                raise ConfigError(f"{where} has no {stem} file: put {stem}.jsonl (or "
                                  f"{stem}.parquet) in it")
            if len(found) > 1:  # one of them would be read and the other ignored
                raise ConfigError(f"{where} holds both {stem}.jsonl and {stem}.parquet: keep one "
                                  f"(move the other out of the folder)")
            path = found[0]
            if kind := not_regular(path):
                raise ConfigError(f"{where}: {path.name} is {kind}, not a file: it must be one "
                                  f"JSONL (or Parquet) file of {stem}")
            try:
                path.open("rb").close()
            except OSError as e:
                raise ConfigError(f"{where}: {path.name} cannot be read ({e.strerror}): check its "
                                  f"permissions (chmod a+r {path})") from None
            files.append(path)
        return files

    def read(self) -> Read:
        docs_path, queries_path = self.source_files()
        documents = _read_records(docs_path, self.name, "doc_id", parse_document)
        rows = _read_records(queries_path, self.name, "qid", parse_query)
        for path, records in ((docs_path, documents), (queries_path, rows)):
            if not records:
                raise DataError(self.name, path.name, WHOLE_ROW,
                                f"{path} holds no records (empty or blank): a run needs at least "
                                f"one document and one question")
        documents = self.keep_docs(documents)
        if self.limit_docs is None:  # a query on a document no file holds: validation names it
            self.count("queries_dropped_limit_docs", 0)
        else:
            rows = self.on_kept_docs(rows, {d.doc_id for d in documents}, QueryRow.doc_ids,
                                     "queries_dropped_limit_docs")
        rows = self.keep_queries(rows)
        alignment, by_id, checks = AlignmentReport(), {d.doc_id: d for d in documents}, Counter()
        queries = [aligned(r, by_id, alignment, checks) for r in rows]  # the kept ones: the counts are theirs
        return documents, queries, {
            **alignment.as_report("evidence"),
            "n_evidence_spans": sum(len(q.evidence) for q in queries),
            "n_unaligned_evidence": sum(len(q.unaligned_evidence) for q in queries),
            WHITESPACE: checks[WHITESPACE], CUT: sum(1 for _ in cut_spans(queries, by_id)),
            NO_EVIDENCE: sum(not q.evidence and not q.unaligned_evidence for q in queries)}


def document_record(d: Document) -> dict[str, Any]:
    return {"doc_id": d.doc_id, "text": d.text, "title": d.title,
            "sections": [{"start": s.start, "end": s.end, "level": s.level, "title": s.title}
                         for s in d.sections],
            "language": d.language, "meta": dict(d.meta)}


def query_record(q: Query) -> dict[str, Any]:
    return {"qid": q.qid, "question": q.question, "answers": list(q.answers),
            "doc_ids": list(q.doc_ids),
            "evidence": [{"doc_id": e.doc_id, "start": e.start, "end": e.end} for e in q.evidence],
            "facts": list(q.facts), "task": q.task,
            "unaligned_evidence": list(q.unaligned_evidence),
            "evidence_wording": list(q.evidence_wording), "meta": dict(q.meta)}


def write_local(dataset: Dataset, folder: str | Path, fmt: str = "jsonl") -> Path:
    """Write ``dataset`` as ``folder/documents.<fmt>`` + ``folder/queries.<fmt>``.

    The other format's files are removed, so a reader that prefers JSONL never picks up a
    stale copy. Meta must be JSON-serialisable (Parquet stores it as a JSON string).
    """
    if fmt not in ("jsonl", "parquet"):
        raise ConfigError(f"fmt must be 'jsonl' or 'parquet', got {fmt!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    other = "parquet" if fmt == "jsonl" else "jsonl"
    for stem, records in (("documents", [document_record(d) for d in dataset.documents]),
                          ("queries", [query_record(q) for q in dataset.queries])):
        (folder / f"{stem}.{other}").unlink(missing_ok=True)
        path = folder / f"{stem}.{fmt}"
        if fmt == "jsonl":
            with path.open("w", encoding="utf-8") as f:
                for r in records:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            for r in records:  # free-form meta does not fit one struct column type
                r["meta"] = json.dumps(r["meta"], ensure_ascii=False)
            pq.write_table(pa.Table.from_pylist(records), path)
    return folder
