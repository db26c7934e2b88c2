"""HChemSafety, one of QChunker's evaluation sets (github.com/Robot2050/QChunker), in its
publisher's layout (see the class). What QChunker's sets share, and why they are mapped as they
are, is in ``harness.data.qchunker_family``.
"""

from __future__ import annotations

from pathlib import Path

from harness.data.base import SAMPLES_DIR, Read
from harness.data.qchunker_family import LANGUAGE, QCHUNKER_REPO, QChunkerLoader, qa_pair
from harness.data.rows import WHOLE_ROW, RowFields, read_json_file, read_rows
from harness.types import DataError, Document

BUNDLED = SAMPLES_DIR / "hchemsafety"


class HChemSafety(QChunkerLoader):
    """HChemSafety, QChunker's hazardous-chemical safety set (paper Section 3.5, Appendix E:
    documents crawled, LLM-refined, then QA generated from a knowledge graph over them).

    Publisher layout, folder ``HChemSafety/`` of the QChunker repository:
        QA_test.json   JSON list of ``{question, answer}`` (200; the set Table 1 reports;
                       identical to ``evaldata/huagong_test.json``). ``QA_HQ.json`` and the
                       unzipped ``QA_all.zip`` have the same rows.
        doc_test.json  the retrieval corpus: a JSON list of document strings (QChunker's chunk
                       scripts load it and chunk each string), or the unzipped ``doc_all.zip``.

    A question names no document, so ``doc_ids`` is empty: QChunker retrieves over the whole
    chunked corpus. ``source`` (null: ``path`` when ``path`` is set, else bundled): ``bundled``
    = the bundled 200 QA pairs (no documents); ``path`` = the folder ``path``, ``HChemSafety/``
    or the repository root holding it. This loader reads no Hub copy.
    """

    version = 2
    sources = ("bundled", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "hchemsafety",
                 qa_file: str = "QA_test.json", docs_file: str = "doc_test.json",
                 qa_only: bool = False, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None,
                 source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed, qa_only, None)
        self.qa_file, self.docs_file = qa_file, docs_file
        self.set_source(source, path)

    def how_to_get(self) -> str:
        return (
            f"HChemSafety is published in {QCHUNKER_REPO}, "
            f"folder HChemSafety/ ({self.qa_file} for the questions, {self.docs_file} or the "
            f"unzipped doc_all.zip for the corpus; the repository README also names the Hugging "
            f"Face dataset Robot2050/QChunker). Download that folder and pass "
            f"dataset.path=<folder>; or set dataset.qa_only=true to load the questions alone "
            f"(responder-only baselines, no retrieval).")

    def _folder(self) -> Path:
        if self.source == "bundled":
            return self.path
        if not self.path.is_dir():
            raise self.unavailable(f"folder {self.path} does not exist")
        nested = self.path / "HChemSafety"
        return nested if nested.is_dir() and not (self.path / self.qa_file).is_file() else self.path

    def _files(self) -> tuple[Path, Path | None]:
        folder = self._folder()
        qa = folder / self.qa_file
        if not qa.is_file():
            raise self.unavailable(f"the question file {qa} does not exist")
        if self.qa_only:
            return qa, None
        docs = folder / self.docs_file
        if not docs.is_file():
            what = ("the bundled sample holds only the 200 real QA pairs of "
                    "HChemSafety/QA_test.json; " if self.source == "bundled" else "")
            raise self.unavailable(
                f"{what}the retrieval corpus {docs} does not exist (upstream it is "
                f"HChemSafety/{self.docs_file}, at least 4 MiB), and without documents there is "
                f"nothing to chunk or retrieve")
        return qa, docs

    def _documents(self, path: Path) -> list[Document]:
        data = read_json_file(path, self.name)
        if not isinstance(data, list):
            raise DataError(self.name, path.name, WHOLE_ROW,
                            f"must be a JSON list of document strings, got {type(data).__name__}")
        docs = []
        for i, text in enumerate(data):
            row = f"{path.stem}#{i}"
            if not isinstance(text, str):
                raise DataError(self.name, row, "text",
                                f"must be a document string, got {type(text).__name__} "
                                f"(at {path.name} item {i})")
            if not text.strip():
                raise DataError(self.name, row, "text",
                                f"empty document: nothing to chunk (at {path.name} item {i})")
            docs.append(Document(doc_id=row, text=text, language=LANGUAGE, meta={"index": i}))
        return docs

    def read(self) -> Read:
        qa_path, docs_path = self._files()
        queries = [qa_pair(RowFields(self.name, loc, raw, ""), f"{qa_path.stem}#{i}", "hchemsafety")
                   for i, (loc, raw) in enumerate(read_rows(qa_path, self.name))]
        documents = self._documents(docs_path) if docs_path else []
        return self._finish(documents, queries, {})

    def source_files(self) -> list[Path]:
        return [p for p in self._files() if p]

    def params(self) -> dict:
        return {**super().params(), "qa_file": self.qa_file, "docs_file": self.docs_file}
