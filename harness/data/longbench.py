"""LongBench (v1; Bai et al. 2024), its eight QA subsets: HiChunk's "LongBench score"
(Table A1: NarrativeQA, Qasper*, MFQA-en, MFQA-zh, HotpotQA, 2WikiM, MuSiQue, DuReader) and
LGMGC's single-document QA (Table 2: NarrativeQA, MultiFieldQA, Qasper).

Schema (../shared/data/SCHEMAS.md "LongBench"; the Hub card of ``THUDM/LongBench``):

    Hub THUDM/LongBench (= zai-org/LongBench), file data.zip -> data/<subset>.jsonl, split test
        {input, context, answers: [str], length: int (words; characters for zh), dataset,
         language, all_classes: [str] | null (null for QA), _id}
    200 rows per subset, 150 for multifieldqa_en. The Hub repository's loading script is not
    run by ``datasets`` >= 4, so the Hub path downloads data.zip itself with
    ``huggingface_hub.hf_hub_download(repo_id, "data.zip", repo_type="dataset")`` and reads the
    JSONL inside it. Parquet mirrors (lm-eval's) name ``input`` ``question`` and add
    ``answer_prefix``; both names are accepted.

One row is one Document (its ``context``) and one Query (its ``input``); both are named
``<subset>/<_id>``. ``task`` is the subset; ``language`` is the row's (zh for multifieldqa_zh and
dureader when the row has none); ``length``, ``dataset``, ``all_classes`` and ``answer_prefix``
are kept in meta. LongBench marks no evidence, so queries have none (``evidence_total`` 0 in the
report); HiChunk scores retrieval on it by whether the answer strings appear in the retrieved
context, and ``queries_answer_in_context`` counts the rows where that is possible at all, with
the metric's normalisation (``queries_answer_in_context_verbatim``: the raw substring).

Structure: contexts are flat text, except that the multi-document subsets (hotpotqa, 2wikimqa,
musique, dureader) concatenate numbered passages, each starting on a line with "Passage N:"
(English) or "文章N" (DuReader). That layout is taken from third-party copies of the rows, not
checked against data.zip, so it is used only where it is self-consistent: markers numbered
1, 2, ..., N in order, the first one opening the context. Then each passage is a level-1 section
(marker line to the next marker, trailing whitespace cut, title = the marker); otherwise the
document gets no sections and ``docs_passages_unreliable`` counts it.

Malformed input: a missing or mistyped field is a DataError naming the dataset, the row
(``<subset>/<_id>``, with its file line) and the field; bytes that are not UTF-8 name the row and
field when the rest of the line parses. An empty context is skipped with its question, counted.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

from harness.data.align import AlignmentReport
from harness.data.base import DatasetLoader, Read, mean
from harness.data.rows import RowFields, json_lines, read_rows
from harness.text import normalize_answer
from harness.types import ConfigError, Document, Query, Section

HUB_ID = "THUDM/LongBench"
HUB_FILE = "data.zip"
QA_SUBSETS = ("narrativeqa", "qasper", "multifieldqa_en", "multifieldqa_zh", "hotpotqa",
              "2wikimqa", "musique", "dureader")
# LongBench-E (uniform length buckets) ships these QA subsets too, in the same row schema.
E_SUBSETS = ("qasper_e", "multifieldqa_en_e", "hotpotqa_e", "2wikimqa_e")
MULTI_DOC = ("hotpotqa", "2wikimqa", "musique", "dureader")
ZH_SUBSETS = ("multifieldqa_zh", "dureader")
_PASSAGE = re.compile(r"^(?:Passage (\d+):|文章(\d+))", re.MULTILINE)


def _base(subset: str) -> str:
    return subset[:-2] if subset.endswith("_e") else subset


def _subsets(subset) -> tuple[str, ...]:
    """``all`` (the eight QA subsets), one name, or a list of names (Hydra gives a ListConfig)."""
    names = QA_SUBSETS if subset == "all" else (subset,) if isinstance(subset, str) else subset
    try:
        names = tuple(str(s) for s in names)
    except TypeError:
        names = ()
    bad = [s for s in names if s not in QA_SUBSETS + E_SUBSETS]
    if not names or bad or len(set(names)) != len(names):
        raise ConfigError(f"subset must be 'all', one of {', '.join(QA_SUBSETS + E_SUBSETS)}, or "
                          f"a list of distinct such names; got {subset!r}")
    return names


def passage_sections(text: str) -> tuple[Section, ...] | None:
    """Level-1 sections, one per numbered passage; None when the markers are not 1..N in order
    with the first at the start of the text (then the layout is not what it should be)."""
    marks = [(m.start(), int(m.group(1) or m.group(2)), m.group(0))
             for m in _PASSAGE.finditer(text)]
    if not marks or [n for _, n, _ in marks] != list(range(1, len(marks) + 1)):
        return None
    if text[:marks[0][0]].strip():
        return None
    sections = []
    for i, (start, _, marker) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        sections.append(Section(start, start + len(text[start:end].rstrip()), 1,
                                marker.rstrip(":")))
    return tuple(sections)


class LongBench(DatasetLoader):
    """``source`` (null: ``path`` when ``path`` is set, else hub): ``hub`` = data.zip from the
    Hub dataset ``hub_id`` (``revision`` pins a commit); ``path`` = ``<subset>.jsonl`` in the
    folder ``path`` or in its ``data/`` (the unzipped data.zip), ``data.zip`` itself, or a
    parquet mirror's ``<subset>.parquet`` / ``[data/]<subset>/test-*.parquet``; or the data.zip
    file. No bundled sample.

    ``subset``: ``all`` (the eight QA subsets, HiChunk's set), one name or a list; LongBench-E
    names (``hotpotqa_e`` ...) are accepted. ``limit_docs`` rows and then ``limit_queries`` are
    kept over all subsets: the first ones, or a seeded draw. ``passages=False`` turns the
    passage sections of the multi-document subsets off.
    """

    version = 3

    @classmethod
    def evidence_unit(cls, subset: str | None = None) -> str:
        return "answers"  # eval.py: LongBench's files, by their gold answers
    sources = ("hub", "path")
    default_source = "hub"

    def __init__(self, path: str | Path | None = None, subset="all", name: str = "longbench",
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, passages: bool = True, hub_id: str = HUB_ID,
                 revision: str | None = None, source: str | None = None):
        self.subsets = _subsets(subset)
        super().__init__(name, limit_docs, limit_queries, seed)
        self.passages = bool(passages)
        self.hub_id, self.revision = hub_id, revision
        self.set_source(source, path, hub_id)
        self._zip: Path | None = None

    # -- sources -------------------------------------------------------------------------

    def how_to_get(self) -> str:
        return (
            f"Get LongBench one of these ways: dataset.source=hub "
            f"(the default) where the Hugging Face Hub is reachable (downloads {HUB_FILE} "
            f"from the dataset {self.hub_id} with huggingface_hub.hf_hub_download); or download "
            f"https://huggingface.co/datasets/{self.hub_id}/resolve/main/{HUB_FILE} and pass "
            f"dataset.path=<the zip, or the folder holding it or its unzipped data/ folder>.")

    def _hub_zip(self) -> Path:
        if self._zip is None:  # fingerprint() and load() share one download
            import huggingface_hub  # looked up at call time, so tests can stand in for the Hub

            try:
                self._zip = Path(huggingface_hub.hf_hub_download(
                    repo_id=self.hub_id, filename=HUB_FILE, repo_type="dataset",
                    revision=self.revision))
            except Exception as e:  # offline, gated, renamed: all end the same way for the user
                raise self.unavailable(f"could not download {HUB_FILE} from the Hugging Face "
                                       f"dataset {self.hub_id} ({type(e).__name__}: {e})") from e
        return self._zip

    def _source(self, subset: str) -> tuple[Path, str | None]:
        """(file, zip member or None) holding ``subset``'s rows."""
        if self.hub:
            return self._hub_zip(), f"data/{subset}.jsonl"
        p = self.path
        if p.is_file() and p.suffix == ".zip":
            return p, f"data/{subset}.jsonl"
        if not p.is_dir():
            raise self.unavailable(f"{p} does not exist")
        for candidate in (p / f"{subset}.jsonl", p / "data" / f"{subset}.jsonl",
                          p / f"{subset}.parquet", p / "data" / f"{subset}.parquet"):
            if candidate.is_file():
                return candidate, None
        for folder in (p / subset, p / "data" / subset):
            shards = sorted(folder.glob("test-*.parquet")) if folder.is_dir() else []
            if shards:
                return shards[0], None  # one shard per subset in the mirrors
        if (p / HUB_FILE).is_file():
            return p / HUB_FILE, f"data/{subset}.jsonl"
        raise self.unavailable(f"{p} holds none of {subset}.jsonl, data/{subset}.jsonl, "
                               f"{subset}.parquet, {subset}/test-*.parquet or {HUB_FILE}")

    def _rows(self, subset: str) -> list[tuple[str, Any]]:
        path, member = self._source(subset)
        if member is None:
            if path.suffix == ".parquet":
                return list(read_rows(path, self.name))
            return list(read_rows(path, self.name, "_id"))
        try:
            with zipfile.ZipFile(path) as z:
                data = z.read(member)
        except KeyError:
            raise self.unavailable(f"{path} has no member {member}") from None
        except zipfile.BadZipFile as e:
            raise self.unavailable(f"{path} is not a readable zip file ({e})") from None
        return list(json_lines(io.BytesIO(data), f"{path.name}:{member}", self.name, "_id"))

    # -- mapping -------------------------------------------------------------------------

    def _row(self, subset: str, location: str, raw: Any) -> dict[str, Any]:
        """One row, every field checked; errors name ``<subset>/<_id>`` and the field."""
        f = RowFields(self.name, location, raw, "_id")
        rid = f.get("_id", str)
        f.row = key = f"{subset}/{rid}"
        question_field = "input" if f.raw.get("input") is not None else "question"
        if f.raw.get(question_field) is None:
            raise f.error("input", "missing required field (parquet mirrors call it 'question')")
        question = f.get(question_field, str)
        if not question.strip():
            raise f.error(question_field, "must not be blank")
        answers = f.raw.get("answers")
        if isinstance(answers, str):  # some mirrors store the single answer as a string
            answers = [answers]
        elif answers is None or not (isinstance(answers, list)
                                     and all(isinstance(a, str) for a in answers)):
            answers = f.get("answers", "str_list")
        return {"key": key, "id": rid, "f": f, "question": question, "answers": tuple(answers),
                "context": f.get("context", str),
                "language": f.get("language", str, None)
                or ("zh" if _base(subset) in ZH_SUBSETS else "en"),
                "meta": {"subset": subset, "_id": rid, "length": f.get("length", int, None),
                         "dataset": f.get("dataset", str, None),
                         "all_classes": f.get("all_classes", "str_list", None),
                         "answer_prefix": f.get("answer_prefix", str, None)}}

    def _all_rows(self) -> list[dict[str, Any]]:
        rows, seen = [], set()
        for subset in self.subsets:
            for location, raw in self._rows(subset):
                row = self._row(subset, location, raw)
                if row["key"] in seen:
                    raise row["f"].error("_id", f"duplicate _id {row['id']!r} in {subset}")
                seen.add(row["key"])
                rows.append(row)
        return rows

    def _document(self, subset: str, row: dict[str, Any], counters: dict[str, int]) -> Document:
        sections: tuple[Section, ...] = ()
        if self.passages and _base(subset) in MULTI_DOC:
            found = passage_sections(row["context"])
            if found is None:
                counters["docs_passages_unreliable"] += 1
            else:
                sections = found
                counters["docs_with_passage_sections"] += 1
        return Document(doc_id=row["key"], text=row["context"], title="", sections=sections,
                        language=row["language"], meta=dict(row["meta"]))

    # -- loading -------------------------------------------------------------------------

    def read(self) -> Read:
        rows = self._all_rows()
        counters = {"docs_skipped_empty": 0, "queries_skipped_empty_doc": 0,
                    "docs_with_passage_sections": 0, "docs_passages_unreliable": 0,
                    "queries_answer_in_context": 0, "queries_answer_in_context_verbatim": 0}
        candidates = []
        for row in rows:
            if row["context"].strip():
                candidates.append(row)
            else:
                counters["docs_skipped_empty"] += 1
                counters["queries_skipped_empty_doc"] += 1
        kept = self.keep_docs(candidates)
        limited = self.keep_queries(kept)
        # one document per question: a question left out takes its document with it
        self.count("docs_dropped_limit_queries", len(kept) - len(limited))
        # A row's document is only worth building if its question is kept.
        documents = [self._document(r["meta"]["subset"], r, counters) for r in limited]
        queries = []
        for r in limited:
            # as evidence_recall looks answers up (normalised alike: "fan club." is in "... fan club,"),
            # and verbatim
            context = normalize_answer(r["context"])
            counters["queries_answer_in_context"] += any(
                a and normalize_answer(a) in context for a in r["answers"])
            counters["queries_answer_in_context_verbatim"] += any(a and a in r["context"] for a in r["answers"])
            queries.append(Query(qid=r["key"], question=r["question"], answers=r["answers"],
                                 doc_ids=(r["key"],), task=r["meta"]["subset"],
                                 meta={**r["meta"], "language": r["language"]}))
        lengths = [d.meta["length"] for d in documents if d.meta["length"] is not None]
        return documents, queries, {
            "words_per_doc": mean([len(d.text.split()) for d in documents]),
            "length_per_doc": mean(lengths),
            "n_sections": sum(len(d.sections) for d in documents),
            **{f"queries_{s}": sum(q.task == s for q in queries) for s in self.subsets},
            **AlignmentReport().as_report("evidence"), **counters}

    def source_files(self) -> list[Path]:
        return sorted({p for p, _ in map(self._source, self.subsets)})

    def params(self) -> dict:
        return {"subsets": list(self.subsets), "passages": self.passages,
                "hub_id": self.hub_id if self.hub else None,
                "revision": self.revision if self.hub else None,
                "sources": [[p.name, m] for p, m in map(self._source, self.subsets)]}
