"""LongBench's MultiFieldQA_zh as QChunker (github.com/Robot2050/QChunker) evaluates it (see
the class). What QChunker's sets share, and why they are mapped as they are, is in
``harness.data.qchunker_family``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.data.base import SAMPLES_DIR, Read, files_digest
from harness.data.longbench import LongBench
from harness.data.qchunker_family import QChunkerLoader, qa_pair
from harness.data.rows import RowFields, read_rows
from harness.types import ConfigError

BUNDLED = SAMPLES_DIR / "multifieldqa_zh"
LONGBENCH_HUB_ID = "THUDM/LongBench"
_QCHUNKER_MFQA_NAMES = ("multifieldqa_zh.json", "evaldata/multifieldqa_zh.json",
                        "multifieldqa_zh_qchunker_evaldata.json")


class MultiFieldQAZh(QChunkerLoader):
    """LongBench's MultiFieldQA_zh (200 questions, one long Chinese document each), as QChunker
    uses it: all contexts chunked into one corpus (its chunk scripts read them as a JSON list of
    strings), every question retrieving from all of it.

    ``source`` (null: ``path`` when ``path`` is set, else bundled):

    - ``bundled``: QChunker's own copy (``evaldata/multifieldqa_zh.json``), which keeps only
      ``{question, answer}``: without contexts it loads only with ``qa_only=True``;
    - ``hub``: LongBench's rows from the Hub's ``data.zip`` (``hub_id``), read by
      :class:`harness.data.longbench.LongBench`;
    - ``path``: a folder holding QChunker's copy (then as ``bundled``), else a local copy of
      LongBench's rows (a folder or the data.zip file), read by ``LongBench``.

    LongBench's identical contexts are merged into one document (counted), so the corpus holds
    each text once, and each question keeps its own context as ``doc_ids``.
    """
    title = "MultiFieldQA-zh"

    version = 3
    sources = ("bundled", "hub", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "multifieldqa_zh",
                 subset: str = "multifieldqa_zh", qa_only: bool = False,
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, hub_id: str = LONGBENCH_HUB_ID,
                 revision: str | None = None, source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed, qa_only, None)
        self.subset = subset
        self.hub_id, self.revision = hub_id, revision
        self.set_source(source, path, hub_id)
        self.qa_file = None if self.hub else self._qchunker_file(self.path)
        if self.source == "bundled" and self.qa_file is None:
            raise self.unavailable(f"the bundled sample {self.path} holds none of "
                                   f"{', '.join(_QCHUNKER_MFQA_NAMES)}")
        self.longbench = None if self.qa_file else LongBench(
            path=self.path, source=self.source, subset=subset, name=name, passages=False,
            hub_id=hub_id, revision=revision)

    @staticmethod
    def _qchunker_file(folder: Path) -> Path | None:
        """QChunker's QA-only file, when ``folder`` (the bundled sample or a given folder)
        holds it."""
        return next((folder / n for n in _QCHUNKER_MFQA_NAMES if (folder / n).is_file()), None)

    def how_to_get(self) -> str:
        return (f"Get LongBench's {self.subset} rows with dataset.source=hub where the Hugging "
                f"Face Hub is reachable (data.zip from {self.hub_id}), or download that data.zip "
                f"and pass dataset.path=<it or its folder>; dataset.source=bundled (the default) "
                f"is QChunker's question/answer pairs alone, which load with dataset.qa_only=true.")

    def _checked_qa_file(self) -> Path:
        if not self.qa_only:
            raise ConfigError(
                f"dataset {self.name!r}: {self.qa_file} is QChunker's QA-only copy of {self.subset} "
                f"(question/answer pairs without LongBench's contexts), so there are no documents to "
                f"chunk or retrieve. Get LongBench's rows with dataset.source=hub where the Hugging Face "
                f"Hub is reachable (data.zip from {LONGBENCH_HUB_ID}), or download that data.zip and "
                f"pass dataset.path=<it or its folder>; or set dataset.qa_only=true to load the "
                f"question/answer pairs alone (no retrieval).")
        return self.qa_file

    def read(self) -> Read:
        if self.qa_file is not None:
            path = self._checked_qa_file()
            queries = [qa_pair(RowFields(self.name, loc, raw, ""), f"{path.stem}#{i}", self.subset)
                       for i, (loc, raw) in enumerate(read_rows(path, self.name))]
            return self._finish([], queries, {"docs_duplicate_contexts": 0})
        row_docs, row_queries, _ = self.longbench.read()
        documents, first_with_text, renamed = [], {}, {}
        for d in row_docs:
            kept = first_with_text.setdefault(d.text, d.doc_id)
            renamed[d.doc_id] = kept
            if kept == d.doc_id:
                documents.append(d)
        queries = [replace(q, doc_ids=() if self.qa_only else tuple(renamed[d] for d in q.doc_ids))
                   for q in row_queries]
        return self._finish([] if self.qa_only else documents, queries,
                            {"docs_duplicate_contexts": len(row_docs) - len(documents)})

    def params(self) -> dict:
        return {**super().params(), "subset": self.subset}

    def content_digest(self) -> str:
        if self.qa_file is not None:
            return files_digest([self._checked_qa_file()])
        return self.longbench.fingerprint()
