"""GutenQA (LumberChunker, Duarte et al. 2024) in its publisher's form: 100 Gutenberg books,
30 "needle" questions each.

    Hub LumberChunker/GutenQA
        gutenqa_chunks.parquet   {Book Name, Book ID, Chunk ID, Chapter, Chunk}   (book order)
        questions.parquet        {Book Name, Book ID, Chunk ID, Question, Answer,
                                  Chunk Must Contain}
        GutenQA.parquet          older layout: the chunk rows carrying the three question
                                 columns (null on chunks without a question)
    Hub LumberChunker/GutenQA_Paragraphs
        GutenQA_paragraphs.parquet  {Book Name, Book ID, Chapter, Chunk}  one row a paragraph

A book is one Document: its chunks in ``Chunk ID`` order joined with "\\n", which is also its
paragraphs joined with "\\n" (checked per book; on a mismatch the paragraph table is ignored
and counted). Sections: level 1 = chapter (a run of paragraphs with the same ``Chapter``),
level 2 = paragraph. Without the paragraph table, paragraphs are the text's lines and chapters
come from the chunks; a chunk labelled "A and B" crosses a chapter break at an unknown place,
so chapter B is started at that chunk (counted as an approximate boundary).

A question's evidence is ``Chunk Must Contain``: aligned in its gold chunk first, then in the
whole book (exact, normalised, then fuzzy: not every snippet is verbatim, which is why LGMGC
relabelled them); the shares go to the load report. The gold ``Chunk ID`` and its span stay in
the query's meta (LumberChunker's DCG@k / Recall@k score the retrieved gold chunk), and every
book keeps its LumberChunker chunk spans in ``meta["lumberchunker_spans"]``. Task "T0": HiChunk
counts GutenQA as evidence-sparse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.data.align import (FUZZY_MIN_SCORE, AlignmentReport, align_evidence,
                                check_fuzzy_min_score, configured_matchers)
from harness.data.base import SAMPLES_DIR, DatasetLoader, Read, mean, rows_digest
from harness.data.rows import RowFields, Rows, read_rows
from harness.data.sampling import check_limit
from harness.types import Document, Query, Section, Span

BUNDLED = SAMPLES_DIR / "gutenqa"
HUB_ID = "LumberChunker/GutenQA"
HUB_PARAGRAPHS_ID = "LumberChunker/GutenQA_Paragraphs"
CHUNKS_FILE, QUESTIONS_FILE = "gutenqa_chunks.parquet", "questions.parquet"
PARAGRAPHS_FILE, LEGACY_FILE = "GutenQA_paragraphs.parquet", "GutenQA.parquet"
# File stems in a local folder; the bundled sample names its legacy table differently.
_STEMS = {"chunks": ("gutenqa_chunks",), "questions": ("questions",),
          "paragraphs": ("GutenQA_paragraphs",), "legacy": ("GutenQA", "GutenQA_combined_legacy")}
_SUFFIXES = (".parquet", ".jsonl", ".json")
_QUESTION_COLUMNS = ("Question", "Answer", "Chunk Must Contain")
JOIN = "\n"


def _find(folder: Path, stems: tuple[str, ...]) -> Path | None:
    for stem in stems:
        for suffix in _SUFFIXES:
            if (folder / f"{stem}{suffix}").is_file():
                return folder / f"{stem}{suffix}"
    return None


class GutenQA(DatasetLoader):
    """``source`` (null: ``path`` when ``path`` is set, else bundled): ``bundled`` = the bundled
    real sample (one book, 30 questions); ``hub`` = the Hub datasets above via
    ``datasets.load_dataset`` (``revision`` pins a commit); ``path`` = the publisher's files in
    the folder ``path`` (``.parquet``, or ``.jsonl`` / ``.json`` with the same columns).

    ``limit_docs`` books and then ``limit_queries`` of their questions are kept: the first ones,
    or a random draw when ``seed`` is set. ``limit_chunks`` cuts each book to the text of its
    first N chunk-table rows (its opening: a smaller stand-in) and keeps the questions asked on
    them. ``paragraphs=False`` skips the paragraph table.
    ``fuzzy_min_score`` (0-100, None = off) is the fuzzy matcher's threshold.
    """

    version = 3
    sources = ("bundled", "hub", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "gutenqa",
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, limit_chunks: int | None = None, paragraphs: bool = True,
                 fuzzy_min_score: float | None = FUZZY_MIN_SCORE, hub_id: str = HUB_ID,
                 hub_paragraphs_id: str = HUB_PARAGRAPHS_ID, revision: str | None = None,
                 source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed)
        self.limit_chunks = check_limit("dataset.limit_chunks", limit_chunks, minimum=1)
        self.paragraphs = bool(paragraphs)
        self.fuzzy_min_score = check_fuzzy_min_score(fuzzy_min_score)
        self.hub_id, self.hub_paragraphs_id, self.revision = hub_id, hub_paragraphs_id, revision
        self.set_source(source, path, hub_id)
        self._hub_cache: dict[str, Rows | None] | None = None

    # -- sources -------------------------------------------------------------------------

    def how_to_get(self) -> str:
        return (
            f"Get GutenQA one of these ways: "
            f"dataset.source=hub where the Hub is reachable (downloads {CHUNKS_FILE} and "
            f"{QUESTIONS_FILE} from the Hugging Face dataset {self.hub_id}, and "
            f"{PARAGRAPHS_FILE} from {self.hub_paragraphs_id}); "
            f"or download those files and pass dataset.path=<folder holding them>; or "
            f"dataset.source=bundled (the default) for the bundled one-book sample ({BUNDLED}).")

    def _files(self) -> dict[str, Path | None]:
        """The files a folder provides: chunks + questions, or the legacy single table."""
        if not self.path.is_dir():
            raise self.unavailable(f"folder {self.path} does not exist")
        found = {kind: _find(self.path, stems) for kind, stems in _STEMS.items()}
        if not self.paragraphs:
            found["paragraphs"] = None
        if found["chunks"] and found["questions"]:
            found["legacy"] = None
        elif found["legacy"]:
            found["chunks"] = found["questions"] = None
        else:
            raise self.unavailable(
                f"{self.path} holds neither {CHUNKS_FILE} + {QUESTIONS_FILE} nor {LEGACY_FILE} "
                f"(.parquet, .jsonl or .json)")
        return found

    def _hub_table(self, repo: str, filename: str) -> Rows:
        rows = self.hub_rows(f"could not load {filename} from the Hugging Face dataset {repo}",
                             repo, data_files=filename, split="train", revision=self.revision)
        return [(f"{repo}/{filename} row {i}", r) for i, r in enumerate(rows)]

    def _tables(self) -> dict[str, Rows | None]:
        """Raw rows per table: ``chunks``, ``questions``, ``paragraphs`` (None if absent)."""
        if self.hub:
            if self._hub_cache is None:  # fingerprint() and load() share one download
                self._hub_cache = {
                    "chunks": self._hub_table(self.hub_id, CHUNKS_FILE),
                    "questions": self._hub_table(self.hub_id, QUESTIONS_FILE),
                    "paragraphs": (self._hub_table(self.hub_paragraphs_id, PARAGRAPHS_FILE)
                                   if self.paragraphs else None)}
            return self._hub_cache
        files = self._files()
        tables = {kind: (list(read_rows(p, self.name)) if p else None) for kind, p in files.items()}
        if tables.pop("legacy") is not None:
            legacy = list(read_rows(files["legacy"], self.name))
            tables["chunks"] = legacy
            # A legacy row asks a question when any question column is filled.
            tables["questions"] = [(loc, r) for loc, r in legacy if isinstance(r, dict)
                                   and any(r.get(c) is not None for c in _QUESTION_COLUMNS)]
        return tables

    # -- mapping -------------------------------------------------------------------------

    def _books(self, rows: Rows) -> dict[str, dict[str, Any]]:
        """Book name -> {book_id, chunks: [(chunk_id, chapter, text)] in Chunk ID order}."""
        books: dict[str, dict[str, Any]] = {}
        for location, raw in rows:
            f = RowFields(self.name, location, raw, "Book Name")
            book = f.get("Book Name", str)
            chunk_id = f.get("Chunk ID", int)
            f.row = f"{book} chunk {chunk_id}"
            entry = books.setdefault(book, {"book_id": f.get("Book ID", int, None), "chunks": {}})
            if chunk_id in entry["chunks"]:
                raise f.error("Chunk ID", f"duplicate Chunk ID {chunk_id} in book {book!r}")
            if f.get("Book ID", int, None) != entry["book_id"]:
                raise f.error("Book ID", f"book {book!r} has Book ID {entry['book_id']!r} "
                                         f"on its other rows, {raw.get('Book ID')!r} here")
            entry["chunks"][chunk_id] = (f.get("Chapter", str, ""), f.get("Chunk", str))
        for entry in books.values():
            entry["chunks"] = sorted((cid, *v) for cid, v in entry["chunks"].items())
        return books

    def _paragraphs(self, rows: Rows | None) -> dict[str, list[tuple[str, str]]]:
        """Book name -> [(chapter, paragraph text)] in file (= book) order."""
        out: dict[str, list[tuple[str, str]]] = {}
        for location, raw in rows or ():
            f = RowFields(self.name, location, raw, "Book Name")
            out.setdefault(f.get("Book Name", str), []).append(
                (f.get("Chapter", str, ""), f.get("Chunk", str)))
        return out

    def _document(self, book: str, entry: dict[str, Any], paragraphs: list[tuple[str, str]] | None,
                  counters: dict[str, int]) -> Document:
        texts = [text for _, _, text in entry["chunks"]]
        text = JOIN.join(texts)
        chunk_spans, offset = [], 0
        for t in texts:
            chunk_spans.append((offset, offset + len(t)))
            offset += len(t) + len(JOIN)
        if paragraphs is not None and JOIN.join(p for _, p in paragraphs) != text:
            counters["books_paragraphs_mismatch"] += 1  # the chunks are the text; keep going
            paragraphs = None
        if paragraphs is not None:
            units, offset = [], 0
            for chapter, p in paragraphs:
                units.append((chapter, offset, offset + len(p)))
                offset += len(p) + len(JOIN)
            chapters = _runs(units)
        else:
            counters["books_structure_from_chunks"] += 1
            chapters = _chunk_chapters(entry["chunks"], chunk_spans, counters)
            units, offset = [], 0
            for line in text.split("\n"):
                units.append(("", offset, offset + len(line)))
                offset += len(line) + 1
        sections = [Section(s, e, 1, title) for title, s, e in chapters if title and s < e]
        sections += [Section(s, e, 2) for _, s, e in units if s < e]
        sections.sort(key=lambda s: (s.start, s.level))
        return Document(
            doc_id=book, text=text, title=book.replace("_", " "), sections=tuple(sections),
            language="en",
            meta={"book_id": entry["book_id"],
                  "lumberchunker_chunk_ids": [c for c, _, _ in entry["chunks"]],
                  "lumberchunker_spans": [list(s) for s in chunk_spans],
                  "structure_source": "chunks" if paragraphs is None else "paragraphs"})

    # -- loading -------------------------------------------------------------------------

    def _questions(self, rows: Rows,
                   books: dict[str, dict[str, Any]]) -> list[tuple[RowFields, str, int]]:
        """(row, qid, chunk id) per question, in file order; unknown books and chunks are errors."""
        out, per_book = [], {}
        for location, raw in rows:
            f = RowFields(self.name, location, raw, "")
            book = f.get("Book Name", str)
            if book not in books:
                raise f.error("Book Name", f"no chunks of book {book!r}")
            chunk_id = f.get("Chunk ID", int)
            if chunk_id not in {c for c, _, _ in books[book]["chunks"]}:
                raise f.error("Chunk ID", f"book {book!r} has no chunk {chunk_id}")
            book_id = f.get("Book ID", int, None)
            if book_id is not None and book_id != books[book]["book_id"]:
                raise f.error("Book ID", f"book {book!r} has Book ID {books[book]['book_id']!r} "
                                         f"in the chunk table, {book_id!r} here")
            n = per_book[book] = per_book.get(book, -1) + 1
            f.row = qid = f"{book}#{n}"
            # every row is checked, also those a limit leaves out
            f.get("Question", str), f.get("Answer", str), f.get("Chunk Must Contain", str, "")
            out.append((f, qid, chunk_id))
        return out

    def read(self) -> Read:
        tables = self._tables()
        books = self._books(tables["chunks"])
        questions = self._questions(tables["questions"], books)
        paragraphs = self._paragraphs(tables["paragraphs"]) if tables["paragraphs"] else None

        counters = {"books_paragraphs_mismatch": 0, "books_structure_from_chunks": 0,
                    "chapter_boundaries_approximate": 0, "evidence_missing": 0,
                    "evidence_in_gold_chunk": 0,
                    **({"chunks_dropped_limit_chunks": 0, "queries_dropped_limit_chunks": 0}
                       if self.limit_chunks is not None else {})}
        if self.limit_chunks is not None:
            books, paragraphs, questions = self._openings(books, paragraphs, questions, counters)
        kept_books = self.keep_docs(list(books))
        documents = [self._document(b, books[b],
                                    None if paragraphs is None else paragraphs.get(b, []),
                                    counters) for b in kept_books]
        by_id = {d.doc_id: d for d in documents}
        on_kept = self.on_kept_docs(questions, by_id, lambda q: (q[0].raw["Book Name"],))
        limited = self.keep_queries(on_kept)

        alignment = AlignmentReport()
        matchers = configured_matchers(self.fuzzy_min_score)
        queries = [self._query(f, qid, chunk_id, by_id[f.raw["Book Name"]], alignment, matchers,
                               counters) for f, qid, chunk_id in limited]
        return documents, queries, {
            "words_per_doc": mean([len(d.text.split()) for d in documents]),
            **alignment.as_report("evidence"), **counters}

    def _openings(self, books, paragraphs, questions, counters):
        """Each book cut to its first ``limit_chunks`` chunks; the paragraphs that make up that
        text (chunks are runs of whole paragraphs) and the questions asked on those chunks."""
        cut_books, cut_paragraphs = {}, None if paragraphs is None else {}
        for book, entry in books.items():
            chunks = entry["chunks"][:self.limit_chunks]
            counters["chunks_dropped_limit_chunks"] += len(entry["chunks"]) - len(chunks)
            cut_books[book] = {**entry, "chunks": chunks}
            if paragraphs is not None:
                size, kept, length = len(JOIN.join(text for _, _, text in chunks)), [], -len(JOIN)
                for chapter, p in paragraphs.get(book, []):
                    length += len(JOIN) + len(p)
                    if length > size:
                        break
                    kept.append((chapter, p))
                cut_paragraphs[book] = kept  # a mismatch is counted by _document, as for a whole book
        kept_ids = {book: {c for c, _, _ in entry["chunks"]} for book, entry in cut_books.items()}
        asked = [q for q in questions if q[2] in kept_ids[q[0].raw["Book Name"]]]
        counters["queries_dropped_limit_chunks"] += len(questions) - len(asked)
        return cut_books, cut_paragraphs, asked

    def _query(self, f: RowFields, qid: str, chunk_id: int, doc: Document,
               alignment: AlignmentReport, matchers, counters: dict[str, int]) -> Query:
        index = doc.meta["lumberchunker_chunk_ids"].index(chunk_id)
        lo, hi = doc.meta["lumberchunker_spans"][index]
        snippet = f.get("Chunk Must Contain", str, "")
        meta = {"book_id": doc.meta["book_id"], "chunk_id": chunk_id, "gold_chunk_span": [lo, hi],
                "evidence_method": []}
        evidence, unaligned = (), ()
        if not snippet.strip():
            counters["evidence_missing"] += 1
        else:
            found = alignment.add(align_evidence(doc.text, snippet, lo, hi, matchers))
            if found:
                start, end, method = found
                evidence = (Span(doc.doc_id, start, end),)
                meta["evidence_method"] = [method]
                counters["evidence_in_gold_chunk"] += lo <= start and end <= hi
            else:
                unaligned = (snippet,)
        return Query(qid=qid, question=f.get("Question", str), answers=(f.get("Answer", str),),
                     doc_ids=(doc.doc_id,), evidence=evidence, task="T0", meta=meta,
                     unaligned_evidence=unaligned, evidence_wording=(snippet,) if evidence else ())

    def params(self) -> dict:
        hub = ({"hub_id": self.hub_id, "hub_paragraphs_id": self.hub_paragraphs_id,
                "revision": self.revision} if self.hub else {})
        cut = {} if self.limit_chunks is None else {"limit_chunks": self.limit_chunks}
        return {"paragraphs": self.paragraphs, "fuzzy_min_score": self.fuzzy_min_score, **cut, **hub}

    def source_files(self) -> list[Path]:
        return [] if self.hub else [p for p in self._files().values() if p]

    def content_digest(self) -> str:
        if not self.hub:
            return super().content_digest()
        return rows_digest([kind, raw] for kind, rows in sorted(self._tables().items())
                           for _, raw in rows or ())


def _runs(units: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Consecutive units with the same label merged: (label, start of first, end of last)."""
    runs: list[tuple[str, int, int]] = []
    for label, s, e in units:
        if runs and runs[-1][0] == label:
            runs[-1] = (label, runs[-1][1], e)
        else:
            runs.append((label, s, e))
    return runs


def _chunk_chapters(chunks, spans, counters: dict[str, int]) -> list[tuple[str, int, int]]:
    """Chapters from chunk labels. "A and B" right after chapter A crosses the A/B break
    somewhere inside the chunk; B is started at the chunk (counted as approximate)."""
    units, current = [], None
    for (_, chapter, _), (s, e) in zip(chunks, spans):
        if current is not None and chapter.startswith(f"{current} and "):
            counters["chapter_boundaries_approximate"] += 1
            chapter = chapter[len(current) + len(" and "):]
        units.append((chapter, s, e))
        current = chapter
    return _runs(units)
