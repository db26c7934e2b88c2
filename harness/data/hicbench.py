"""HiChunk's unified dataset layout (github.com/TencentYoutuResearch/HiChunk), which HiChunk
uses for every set it evaluates: HiCBench, qasper_all, OHRBench_sub, GutenQA, gov_report_5w and
the LongBench subsets (narrativeqa, qasper, multifieldqa_en, ...).

    <path>/qas/<subset>.jsonl          rows {input, answers, facts?, evidences?, all_classes, _id}
    <path>/docs/<subset>/<_id>.txt     the document (the README says doc/, the code docs/;
                                       both are accepted)

``_id`` names the document; several rows (questions) may share it. A query's id is
``<_id>#<row index>``, the row index being HiChunk's ``index`` (0-based position in the file).

Structure: every line that starts with "#" is a gold chunk point, its level the number of
leading "#" (HiChunk's own rule, which also scores chunk-point F1 by whether a predicted chunk
starts with that many "#"). A section runs from its header line to the next header of the
same or a higher level. Header lines stay in the text: they are part of the document HiChunk
chunks, a chunk is expected to start with one, and evidence sentences may quote them.

Evidence: each ``evidences`` string, with the leading "# " that HiChunk's evidence recall strips,
is aligned in the document (exact, normalised, then fuzzy); an evidence that cannot be aligned
is kept as text and counted, never dropped. Line endings are read as Python's text mode
reads them (CRLF -> LF), as HiChunk does.

Malformed input: a missing or mistyped field, a missing document file or a file that is not
UTF-8 is a DataError naming the dataset, the row (its ``_id``, and its file line) and the
field. An empty document (nothing but whitespace) has nothing to chunk or retrieve: it is
skipped with its questions and both are counted in the report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.data.align import (FUZZY_MIN_SCORE, AlignmentReport, align_evidence,
                                check_fuzzy_min_score, configured_matchers)
from harness.data.base import DatasetLoader, Read, mean
from harness.data.rows import WHOLE_ROW, RowFields, malformed_line
from harness.data.sampling import check_limit
from harness.types import ConfigError, DataError, Document, Query, Section, Span

REPO = "github.com/TencentYoutuResearch/HiChunk"
_HEADER = re.compile(r"^(#+)(.*)$", re.MULTILINE)
_TASK = re.compile(r"T\d+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def header_sections(text: str) -> tuple[Section, ...]:
    """One section per header line: level = number of leading "#", title = the rest; the
    span runs to the next header of the same or a higher level (trailing whitespace cut)."""
    heads = [(m.start(), len(m.group(1)), m.group(2).strip(" #\t")) for m in _HEADER.finditer(text)]
    sections = []
    for i, (start, level, title) in enumerate(heads):
        end = next((s for s, lv, _ in heads[i + 1:] if lv <= level), len(text))
        end = len(text[start:end].rstrip()) + start
        sections.append(Section(start, end, level, title))
    return tuple(sections)


def _language(text: str) -> str:
    """"zh" when CJK characters make up a fifth of the first 2,000 non-space characters."""
    sample = "".join(text.split())[:2000]
    return "zh" if sample and len(_CJK.findall(sample)) >= 0.2 * len(sample) else "en"


def _decode(data: bytes) -> str:
    """UTF-8 (a BOM is dropped) with universal newlines, as Python's text mode reads files."""
    text = data.decode("utf-8-sig")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# What eval.py looks up for each of HiChunk's files (its evidence recall); the other files (LongBench's
# subsets) are scored on their answers.
EVAL_PY_UNITS = {"HiCBench": "evidence", "OHRBench_sub": "evidence", "GutenQA": "evidence",
                 "qasper_all": "sentences"}


class HiChunkLayout(DatasetLoader):
    """``path``: the folder holding ``qas/`` and ``docs/`` (HiChunk's ``dataset/``), required:
    ``source`` can only be ``path`` (no Hub copy is reachable, no sample is bundled);
    ``subset``: the file stem (``HiCBench``, ``qasper_all``, ``GutenQA``, ``narrativeqa`` ...).

    ``min_words`` drops shorter documents (HiChunk: OHR-Bench > 4k words, Gov-report > 5k);
    ``limit_docs`` documents (in order of first mention) and then ``limit_queries`` of their
    questions are kept, the first ones or a seeded draw. ``language``: None = detected per
    document. ``task``: None = the ``T<n>`` tag in ``all_classes`` when there is exactly one.
    ``tasks``: keep only the questions of these tasks (HiCBench's T1 / T2 columns), before the
    limits; documents left without a question are dropped.
    """
    title = "HiCBench"

    version = 3
    sources = ("path",)
    default_source = "path"

    @classmethod
    def evidence_unit(cls, subset: str | None = None) -> str:
        return EVAL_PY_UNITS.get(str(subset), "answers")

    def __init__(self, path: str | Path | None = None, subset: str = "HiCBench",
                 name: str | None = None, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None, min_words: int = 0,
                 fuzzy_min_score: float | None = FUZZY_MIN_SCORE, language: str | None = None,
                 task: str | None = None, tasks: list[str] | None = None,
                 source: str | None = None):
        if not isinstance(subset, str) or not subset or "/" in subset or subset.startswith("."):
            raise ConfigError(f"subset must be a file stem such as HiCBench, got {subset!r}")
        self.subset = subset
        super().__init__(type(self).described_name({"name": name, "subset": subset}),
                         limit_docs, limit_queries, seed)
        self.set_source(source, path)
        if check_limit("min_words", min_words) is None:
            raise ConfigError("min_words must be an integer >= 0, got None")
        self.min_words = min_words
        self.fuzzy_min_score = check_fuzzy_min_score(fuzzy_min_score)
        self.language, self.task = language, task
        if tasks is not None and (isinstance(tasks, str) or not all(isinstance(t, str) and t for t in tasks)):
            raise ConfigError(f"dataset {self.name!r}: tasks must be a list of task tags such as [T1], got {tasks!r}")
        self.tasks = None if tasks is None else tuple(tasks)

    @classmethod
    def described_name(cls, params) -> str:
        return params.get("name") or f"hichunk/{params.get('subset', 'HiCBench')}"

    def how_to_get(self) -> str:
        return (f"A folder in HiChunk's layout is needed, qas/{self.subset}.jsonl plus "
                f"docs/{self.subset}/<_id>.txt (see {REPO}, folder dataset/). HiCBench's Hugging "
                f"Face copy (Youtu-RAG/HiCBench) is gated or gone, so there is no download: get "
                f"the files from the HiChunk authors and pass dataset.path=<folder> "
                f"dataset.subset=<name>.")

    # -- files ---------------------------------------------------------------------------

    def _qas_path(self) -> Path:
        path = self.path / "qas" / f"{self.subset}.jsonl"
        if not path.is_file():
            raise ConfigError(
                f"dataset {self.name!r}: {path} does not exist. dataset.path must be a folder in "
                f"HiChunk's layout (qas/<subset>.jsonl + docs/<subset>/<_id>.txt, see {REPO}); "
                f"dataset.subset picks the file (now {self.subset!r}).")
        return path

    def _docs_dir(self) -> Path:
        for folder in ("docs", "doc"):
            if (self.path / folder / self.subset).is_dir():
                return self.path / folder / self.subset
        return self.path / "docs" / self.subset

    def _doc_path(self, doc_id: str) -> Path:
        return self._docs_dir() / f"{doc_id}.txt"

    def _rows(self) -> list[tuple[int, RowFields]]:
        """(HiChunk's ``index``: position among the rows, row) per QA row; each line is
        decoded on its own, so a bad byte names its line."""
        path = self._qas_path()
        rows = []
        for lineno, line in enumerate(path.read_bytes().split(b"\n"), 1):
            location = f"{path.name} line {lineno}"
            try:
                text = _decode(line)
            except UnicodeDecodeError as e:
                raise DataError(self.name, location, WHOLE_ROW,
                                f"not valid UTF-8 (byte {line[e.start]:#04x} at column "
                                f"{e.start + 1})") from None
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as e:
                raise DataError(self.name, location, WHOLE_ROW, malformed_line(e)) from None
            f = RowFields(self.name, location, raw, "_id")
            doc_id = f.get("_id", str)
            if not doc_id.strip() or "/" in doc_id or "\\" in doc_id or doc_id in (".", ".."):
                raise f.error("_id", f"must name a file in docs/{self.subset}/, got {doc_id!r}")
            self._fields(f)  # every row is checked, also those a limit leaves out
            rows.append((len(rows), f))
        return rows

    def _read_document(self, doc_id: str, first: RowFields) -> Document:
        path = self._doc_path(doc_id)
        if not path.is_file():
            raise first.error("_id", f"document file not found: {path}")
        try:
            text = _decode(path.read_bytes())
        except UnicodeDecodeError as e:
            raise first.error("_id", f"document {path} is not valid UTF-8 (byte "
                                     f"{e.object[e.start]:#04x} at offset {e.start})") from None
        return Document(doc_id=doc_id, text=text, title=doc_id, sections=header_sections(text),
                        language=self.language or _language(text),
                        meta={"subset": self.subset,
                              "source_file": f"{path.parent.name}/{path.name}"})

    # -- loading -------------------------------------------------------------------------

    def read(self) -> Read:
        rows = self._rows()
        dropped_tasks = 0
        if self.tasks is not None:
            kept_rows = [(i, f) for i, f in rows if self._task(self._fields(f)[4]) in self.tasks]
            rows, dropped_tasks = kept_rows, len(rows) - len(kept_rows)
        first: dict[str, RowFields] = {}
        for _, f in rows:
            first.setdefault(f.raw["_id"], f)
        counters = {"docs_skipped_empty": 0, "queries_skipped_empty_doc": 0, "queries_dropped_tasks": dropped_tasks,
                    "docs_dropped_min_words": 0, "evidence_empty": 0, "queries_without_evidence": 0}
        candidates, empty = [], set()
        for doc_id, f in first.items():
            doc = self._read_document(doc_id, f)
            if not doc.text.strip():
                empty.add(doc_id)
            elif len(doc.text.split()) < self.min_words:
                counters["docs_dropped_min_words"] += 1
            else:
                candidates.append(doc)
        counters["docs_skipped_empty"] = len(empty)
        counters["queries_skipped_empty_doc"] = sum(f.raw["_id"] in empty for _, f in rows)
        documents = self.keep_docs(candidates)
        by_id = {d.doc_id: d for d in documents}
        kept = self.on_kept_docs([(i, f) for i, f in rows if f.raw["_id"] not in empty], by_id,
                                 lambda row: (row[1].raw["_id"],))
        limited = self.keep_queries(kept)

        alignment = AlignmentReport()
        matchers = configured_matchers(self.fuzzy_min_score)
        queries = [self._query(i, f, by_id[f.raw["_id"]], alignment, matchers, counters)
                   for i, f in limited]
        return documents, queries, {
            "words_per_doc": mean([len(d.text.split()) for d in documents]),
            "n_sections": sum(len(d.sections) for d in documents),
            **alignment.as_report("evidence"), **counters}

    @staticmethod
    def _fields(f: RowFields) -> tuple[str, list[str], list[str], list[str], list[str] | None]:
        """(input, answers, facts, evidences, all_classes), typed; facts and evidences may
        be absent (LongBench rows have neither), all_classes may be null."""
        return (f.get("input", str), f.get("answers", "str_list"), f.get("facts", "str_list", []),
                f.get("evidences", "str_list", []), f.get("all_classes", "str_list", None))

    def _query(self, index: int, f: RowFields, doc: Document, alignment: AlignmentReport,
               matchers, counters: dict[str, int]) -> Query:
        question, answers, facts, evidences, all_classes = self._fields(f)
        meta: dict[str, Any] = {"all_classes": all_classes, "index": index, "evidence_method": []}
        spans, unaligned, wording = [], [], []
        for given in evidences:
            snippet = given.lstrip("# ")  # as HiChunk's evidence recall reads it
            if not snippet.strip():
                counters["evidence_empty"] += 1
                continue
            found = alignment.add(align_evidence(doc.text, snippet, matchers=matchers))
            if found:
                start, end, method = found
                spans.append(Span(doc.doc_id, start, end))
                wording.append(given)  # as given: eval.py weighs the string before lstrip
                meta["evidence_method"].append(method)
            else:
                unaligned.append(snippet)
        if not evidences:
            counters["queries_without_evidence"] += 1
        return Query(qid=f"{doc.doc_id}#{index}", question=question, answers=tuple(answers),
                     doc_ids=(doc.doc_id,), evidence=tuple(spans), facts=tuple(facts),
                     task=self._task(all_classes), meta=meta, unaligned_evidence=tuple(unaligned),
                     evidence_wording=tuple(wording))

    def _task(self, all_classes: list[str] | None) -> str:
        if self.task is not None:
            return self.task
        tags = [c for c in all_classes or () if _TASK.fullmatch(c)]
        return tags[0] if len(tags) == 1 else ""

    def _doc_ids(self) -> list[str]:
        return list(dict.fromkeys(f.raw["_id"] for _, f in self._rows()))

    def source_files(self) -> list[Path]:
        return [self._qas_path()] + [p for p in map(self._doc_path, self._doc_ids()) if p.is_file()]

    def params(self) -> dict:
        return {"subset": self.subset, "min_words": self.min_words,
                "fuzzy_min_score": self.fuzzy_min_score, "language": self.language,
                "task": self.task, "tasks": self.tasks, "docs_dir": self._docs_dir().parent.name,
                "missing": [i for i in self._doc_ids() if not self._doc_path(i).is_file()]}
