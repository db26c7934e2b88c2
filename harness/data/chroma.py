"""Chroma's general chunking evaluation (Smith & Troynikov, "Evaluating Chunking Strategies for
Retrieval", Chroma technical report, 2024), in its publisher's layout.

Publisher layout (repository ``brandonstarxel/chunking_evaluation``, folder
``chunking_evaluation/evaluation_framework/general_evaluation_data/``):

    corpora/<corpus_id>.md   one corpus a file: chatlogs, finance, pubmed, state_of_the_union,
                             wikitexts (1.45 MB in all)
    questions_df.csv         columns question, references, corpus_id; ``references`` is a JSON
                             list of {content, start_index, end_index}: each excerpt and its
                             character offsets in the corpus file as Python reads it

One Document per corpus (``doc_id`` = the corpus id), one Query per CSV row (``qid`` = the row's
index, as the authors' code numbers questions; ``task`` = the corpus id, so the record keeps
per-corpus means beside the pooled ones). Every excerpt must be exactly the corpus text at its
offsets: a row whose excerpt is not is refused in one line (the authors reject such questions at
generation; the released 790 excerpts all match).

The report pools the corpora into one collection: a question retrieves from every corpus's chunks
(``retriever.scope=corpus``) and only its own corpus's chunks can score. ``corpora`` picks corpora
(the rest, and their questions, are left out).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from harness.data.base import SAMPLES_DIR, DatasetLoader, Read
from harness.types import ConfigError, DataError, Document, Query, Span

BUNDLED = SAMPLES_DIR / "chroma_evaluation"
CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
QUESTIONS = "questions_df.csv"
REPO = "github.com/brandonstarxel/chunking_evaluation"


class ChromaEvaluation(DatasetLoader):
    """Chroma's five corpora and 472 generated questions with excerpt character spans.

    ``source`` (null: ``path`` when ``path`` is set, else bundled): ``bundled`` = the whole
    released set, shipped with ChunkBench (MIT); ``path`` = a folder in the publisher's layout
    (``corpora/`` and ``questions_df.csv``), e.g. a checkout's ``general_evaluation_data``.
    """

    title = "Chroma general evaluation"
    sources = ("bundled", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED
    bundled_release = True   # the whole released set, checksummed (SHA256SUMS)

    def __init__(self, path: str | Path | None = None, name: str = "chroma",
                 corpora: Sequence[str] | None = None, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None,
                 source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed)
        if corpora is not None:
            corpora = [corpora] if isinstance(corpora, str) else list(corpora)
            if not corpora or not all(isinstance(c, str) and c for c in corpora):
                raise ConfigError(f"dataset {name!r}: dataset.corpora must be a non-empty list of "
                                  f"corpus ids (or null: all), got {corpora!r}")
        self.corpora = None if corpora is None else tuple(dict.fromkeys(corpora))
        self.set_source(source, path)

    def how_to_get(self) -> str:
        return (f"Chroma's evaluation data is in {REPO}, folder chunking_evaluation/"
                f"evaluation_framework/general_evaluation_data/ (corpora/*.md and {QUESTIONS}); "
                f"pass dataset.path=<that folder>, or leave dataset.path unset for the bundled copy")

    def _questions_file(self) -> Path:
        return self.path / QUESTIONS

    def _corpus_file(self, corpus: str) -> Path:
        return self.path / "corpora" / f"{corpus}.md"

    def _rows(self) -> list[dict[str, str]]:
        questions = self._questions_file()
        if not questions.is_file():
            raise self.unavailable(f"the question file {questions} does not exist")
        try:
            with questions.open(encoding="utf-8", newline="") as f:
                reader = csv.DictReader(f)
                missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or ())
                if missing:
                    raise DataError(self.name, QUESTIONS, ", ".join(sorted(missing)),
                                    f"column missing (columns are {reader.fieldnames})")
                return list(reader)
        except UnicodeDecodeError as e:
            raise DataError(self.name, QUESTIONS, "(whole file)", f"not UTF-8 ({e.reason} at byte {e.start})") from None

    def _corpus_ids(self, rows: list[dict[str, str]]) -> list[str]:
        present = list(dict.fromkeys(r["corpus_id"] for r in rows))
        if self.corpora is None:
            return present
        unknown = [c for c in self.corpora if c not in present]
        if unknown:
            raise ConfigError(f"dataset {self.name!r}: dataset.corpora names {unknown}, which no "
                              f"question of {self._questions_file()} uses (corpora: {present})")
        return list(self.corpora)

    def read(self) -> Read:
        rows = self._rows()
        ids = self._corpus_ids(rows)
        texts: dict[str, str] = {}
        for corpus in ids:
            path = self._corpus_file(corpus)
            if not path.is_file():
                raise self.unavailable(f"the corpus file {path} does not exist")
            # Universal newlines, as the authors' open(path).read(): the offsets count that text.
            try:
                texts[corpus] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as e:
                raise DataError(self.name, corpus, "text", f"{path} is not UTF-8 ({e.reason} at byte {e.start})") from None
        documents = self.keep_docs([Document(doc_id=c, text=texts[c], title=c) for c in ids])
        kept = {d.doc_id for d in documents}
        queries = [self._query(i, r, texts) for i, r in enumerate(rows) if r["corpus_id"] in ids]
        queries = self.keep_queries(self.on_kept_docs(queries, kept, lambda q: q.doc_ids))
        self.count("queries_dropped_corpora", len(rows) - sum(r["corpus_id"] in ids for r in rows))
        return documents, queries, {"n_excerpts": sum(len(q.evidence) for q in queries)}

    def _query(self, index: int, row: dict[str, str], texts: dict[str, str]) -> Query:
        qid, corpus = str(index), row["corpus_id"]
        try:
            refs = json.loads(row["references"])
        except json.JSONDecodeError as e:
            raise DataError(self.name, qid, "references", f"not JSON ({e})") from None
        if not isinstance(refs, list) or not refs:
            raise DataError(self.name, qid, "references", "must be a non-empty JSON list of excerpts")
        text, spans = texts[corpus], []
        for j, ref in enumerate(refs):
            try:
                start, end, content = int(ref["start_index"]), int(ref["end_index"]), ref["content"]
            except (TypeError, KeyError, ValueError) as e:
                raise DataError(self.name, qid, f"references[{j}]",
                                f"needs content, start_index and end_index ({type(e).__name__}: {e})") from None
            if text[start:end] != content:
                raise DataError(self.name, qid, f"references[{j}]",
                                f"corpus {corpus!r} holds {text[start:end][:60]!r} at [{start}, {end}), "
                                f"not the excerpt {content[:60]!r}")
            spans.append(Span(corpus, start, end))
        return Query(qid=qid, question=row["question"], doc_ids=(corpus,), evidence=tuple(spans),
                     task=corpus, meta={"corpus_id": corpus})

    def source_files(self) -> list[Path]:
        rows = self._rows()
        return [self._questions_file(), *(self._corpus_file(c) for c in self._corpus_ids(rows))]

    def params(self) -> dict:
        return {"corpora": None if self.corpora is None else list(self.corpora)}
