"""Qasper (Dasigi et al. 2021): NLP papers, questions written from title and abstract, answers and
evidence paragraphs from annotators who read the whole paper. HiChunk scores chunk points, ERec
and F1 on its test split (416 papers); Qu et al. use it for document and evidence retrieval.

Schema (../shared/data/SCHEMAS.md "Qasper"; the Hub card of ``allenai/qasper``):

    Hub allenai/qasper, config "qasper", splits train (888) / validation (281) / test (416):
        {id, title, abstract,
         full_text {section_name: [str|null], paragraphs: [[str]]},
         qas {question, question_id, nlp_background, topic_background, paper_read, search_query,
              question_writer: [str],
              answers: [{answer: [{unanswerable, extractive_spans, yes_no, free_form_answer,
                                   evidence, highlighted_evidence}],
                         annotation_id: [str], worker_id: [str]}]},
         figures_and_tables {caption: [str], file: [str]}}
    A "sequence of structs" is stored column-wise (a dict of parallel lists) on the Hub and in
    its parquet; the raw v0.3 JSON release (``qasper-{train,dev,test}-v0.3.json``, a dict
    ``paper_id -> paper``) has the same fields as lists of objects. Each such field is read in
    either form, so one mapping serves the Hub, local parquet/JSONL copies and the raw JSON.

Text layout: HiChunk's ``qasper_all`` (github.com/TencentYoutuResearch/HiChunk, notebook
``process_train_data.ipynb``), so that gold chunk points are HiChunk's::

    <title>\\n<abstract>
    then per full_text entry, in order:
      named "A ::: B"     \\n## B\\n<paragraph>\\n<paragraph>...   "#" x path depth, last name
      unnamed (null, "")  \\n<paragraph>\\n<paragraph>...          continues the section before

Sections: one per header line, level = path depth, title = the last path element; the span runs
from the header line to the next header of the same or a higher level, trailing whitespace cut:
the rule ``hicbench.header_sections`` applies to HiChunk's files, so both loaders give the
same sections for the same paper. Title and abstract come before the first header and belong to
no section (their spans are in the document's meta). A subsection whose parent has no entry of
its own gets no invented parent header, as in HiChunk; it is counted (``sections_missing_parent``).
The raw files lack such entries (1912.01214 lists "Experiments ::: Setup" but no "Experiments"),
and "#" levels alone would then nest "Setup" in the section before ("# Approach", 64% of that
paper). A section therefore ends where a header outside its path begins: starts and levels, and
so HiChunk's gold chunk points, are the "#" rule's; only such a section's end is earlier than
``hicbench.header_sections`` reads it. ``missing_parents=infer`` also adds the missing parent as a
section (no header line in the text) from its first child to its last descendant, for code that
walks the tree; it adds a chunk point HiChunk's gold does not have.
A newline inside a section name is written as a space, so a header stays one line.

Queries: one per question, ``qid`` = ``question_id``. ``answers``: one string per annotator, read
in the order of Qasper's official evaluator: "Unanswerable"; the extractive spans joined by
", "; the free-form answer; "Yes" / "No". ``task``: the answer type (extractive, abstractive,
boolean, none) when the annotators agree, else "mixed". Evidence: the annotators' evidence
strings (deduplicated) are whole full_text paragraphs, aligned exact, then normalised, then fuzzy;
"FLOAT SELECTED: ..." entries quote a table or figure caption, which is not in the text: they are
kept as unaligned evidence text and counted (``evidence_float_selected``), never dropped. The
per-annotator record (types, spans, evidence, highlighted evidence, ids) is in
``meta["annotations"]``.

Malformed input: a missing or mistyped field is a DataError naming the dataset, the paper id or
question id, and the field; bytes that are not UTF-8 name the row's id and the field holding them
when the rest of the line parses. A paper with nothing but a title (empty abstract, no non-blank
paragraph) is skipped with its questions, and both are counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.data.align import (FUZZY_MIN_SCORE, AlignmentReport, align_evidence,
                                check_fuzzy_min_score, configured_matchers)
from harness.data.base import DatasetLoader, Read, mean, rows_digest
from harness.data.rows import WHOLE_ROW, RowFields, Rows, read_json_file, read_rows, structs
from harness.types import ConfigError, DataError, Document, Query, Section, Span

HUB_ID = "allenai/qasper"
HUB_CONFIG = "qasper"
RAW_URLS = ("https://qasper-dataset.s3.us-west-2.amazonaws.com/qasper-train-dev-v0.3.tgz",
            "https://qasper-dataset.s3.us-west-2.amazonaws.com/qasper-test-and-evaluator-v0.3.tgz")
SPLITS = ("train", "validation", "test")
_FILE_STEMS = {"train": ("train",), "validation": ("validation", "dev"), "test": ("test",)}
_ROW_SUFFIXES = (".parquet", ".jsonl", ".json")
PATH_SEPARATOR = ":::"
MISSING_PARENTS = ("none", "infer")
FLOAT_PREFIX = "FLOAT SELECTED"
ANSWER_TYPES = ("extractive", "abstractive", "boolean", "none")


# -- answers ---------------------------------------------------------------------------------

def answer_string(answer: dict[str, Any]) -> tuple[str | None, str]:
    """(answer text, type) of one annotation, in the order of Qasper's evaluator; (None,
    "empty") when the annotator filled in nothing."""
    if answer["unanswerable"]:
        return "Unanswerable", "none"
    if answer["extractive_spans"]:
        return ", ".join(answer["extractive_spans"]), "extractive"
    if answer["free_form_answer"].strip():
        return answer["free_form_answer"], "abstractive"
    if answer["yes_no"] is not None:
        return ("Yes" if answer["yes_no"] else "No"), "boolean"
    return None, "empty"


class Qasper(DatasetLoader):
    """``source`` (null: ``path`` when ``path`` is set, else hub): ``hub`` =
    ``datasets.load_dataset(hub_id, hub_config, split=split, revision=revision)``; ``path`` =
    the split's files in the folder ``path``, found at any depth: Hub rows as
    ``<split>.parquet|jsonl|json`` or shards ``<split>-*.parquet`` (``validation`` may be named
    ``dev``), else the raw ``qasper-<split>-v0.3.json``; or one such file. No bundled sample.

    ``drop_unanswerable`` drops questions every annotator marked unanswerable;
    ``require_evidence`` drops questions without any evidence string. Then ``limit_docs`` papers
    and ``limit_queries`` of their questions are kept: the first ones, or a draw when ``seed`` is
    set. ``fuzzy_min_score`` (0-100, None = off) is the fuzzy matcher's threshold.
    """

    version = 4

    @classmethod
    def evidence_unit(cls, subset: str | None = None) -> str:
        return "sentences"  # eval.py: qasper_all, by the evidence paragraphs' sentences
    sources = ("hub", "path")
    default_source = "hub"

    def __init__(self, path: str | Path | None = None, split: str = "test", name: str = "qasper",
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, drop_unanswerable: bool = False,
                 require_evidence: bool = False, missing_parents: str = "none",
                 fuzzy_min_score: float | None = FUZZY_MIN_SCORE, hub_id: str = HUB_ID,
                 hub_config: str | None = HUB_CONFIG, revision: str | None = None,
                 source: str | None = None):
        if split not in SPLITS:
            raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        super().__init__(name, limit_docs, limit_queries, seed)
        self.split = split
        self.drop_unanswerable = bool(drop_unanswerable)
        self.require_evidence = bool(require_evidence)
        if missing_parents not in MISSING_PARENTS:
            raise ConfigError(f"dataset.missing_parents must be one of {', '.join(MISSING_PARENTS)}, "
                              f"got {missing_parents!r}")
        self.missing_parents = missing_parents
        self.fuzzy_min_score = check_fuzzy_min_score(fuzzy_min_score)
        self.hub_id, self.hub_config, self.revision = hub_id, hub_config, revision
        self.set_source(source, path, hub_id)
        self._hub_cache: Rows | None = None

    # -- sources -------------------------------------------------------------------------

    def how_to_get(self) -> str:
        raw_split = "dev" if self.split == "validation" else self.split
        return (
            f"Get Qasper one of these ways: dataset.source=hub (the default) "
            f"where the Hugging Face Hub is reachable (datasets.load_dataset("
            f"{self.hub_id!r}, split={self.split!r})); or save that split's rows (parquet or "
            f"JSONL, e.g. {self.split}.parquet) or AllenAI's raw qasper-{raw_split}-v0.3.json "
            f"(from {' or '.join(RAW_URLS)}) and pass dataset.path=<folder or file>.")

    def _files(self) -> list[Path]:
        """The local files holding the split: Hub-row files if any, else the raw JSON."""
        if self.path.is_file():
            if self.path.suffix not in _ROW_SUFFIXES:
                raise self.unavailable(f"{self.path} is not a .parquet, .jsonl or .json file")
            return [self.path]
        if not self.path.is_dir():
            raise self.unavailable(f"{self.path} does not exist")
        stems = _FILE_STEMS[self.split]
        files = sorted(p for p in self.path.rglob("*") if p.is_file())
        rows = [p for p in files if p.suffix in _ROW_SUFFIXES
                and any(p.stem == s or p.stem.startswith(f"{s}-") for s in stems)]
        if rows:
            return rows
        raw = [p for p in files if p.name in {f"qasper-{s}-v0.3.json" for s in stems}]
        if raw:
            return raw[:1]
        raise self.unavailable(f"{self.path} holds no file for split {self.split!r}: looked for "
                               f"{'|'.join(stems)}[-*].parquet|jsonl|json and "
                               f"qasper-{stems[-1]}-v0.3.json")

    def _read_file(self, path: Path) -> Rows:
        if path.suffix == ".parquet":
            return list(read_rows(path, self.name))
        if path.suffix == ".jsonl":
            return list(read_rows(path, self.name, "id"))
        data = read_json_file(path, self.name, "id", keyed=True)
        if isinstance(data, list):
            return [(f"{path.name} item {i}", r) for i, r in enumerate(data)]
        if isinstance(data, dict):  # raw v0.3: paper id -> paper
            out = []
            for pid, paper in data.items():
                if not isinstance(paper, dict):
                    raise DataError(self.name, pid, WHOLE_ROW,
                                    f"must be a JSON object, got {type(paper).__name__} "
                                    f"(in {path.name})")
                out.append((f"{path.name} paper {pid}", {**paper, "id": pid}))
            return out
        raise DataError(self.name, path.name, WHOLE_ROW,
                        "must be a list of rows or the raw release's {paper_id: paper} object")

    def _rows(self) -> Rows:
        if not self.hub:
            return [r for p in self._files() for r in self._read_file(p)]
        if self._hub_cache is None:  # fingerprint() and load() share one download
            args = (self.hub_id,) if self.hub_config is None else (self.hub_id, self.hub_config)
            rows = self.hub_rows(f"could not load split {self.split!r} of the Hugging Face "
                                 f"dataset {self.hub_id}", *args, split=self.split,
                                 revision=self.revision)
            self._hub_cache = [(f"{self.hub_id} {self.split} row {i}", r)
                               for i, r in enumerate(rows)]
        return self._hub_cache

    # -- mapping -------------------------------------------------------------------------

    def _paper(self, location: str, raw: Any) -> dict[str, Any]:
        """Every field of one paper checked and in row form: {f, id, title, abstract, sections:
        [(name, paragraphs)], figures, questions: [{f, qid, question, annotations}]}."""
        f = RowFields(self.name, location, raw, "id")
        pid = f.get("id", str)
        sections = []
        for i, entry in enumerate(structs(f, f.get("full_text", object), "full_text")):
            at = f"full_text[{i}]"
            paragraphs = f.get("paragraphs", "str_list", [], source=entry, label=f"{at}.paragraphs")
            sections.append((f.get("section_name", str, None, source=entry,
                                   label=f"{at}.section_name"), list(paragraphs)))
        figures = []
        for i, fig in enumerate(structs(f, f.raw.get("figures_and_tables"), "figures_and_tables")):
            figures.append({k: f.get(k, str, None, source=fig, label=f"figures_and_tables[{i}].{k}")
                            for k in ("file", "caption")})
        questions = [self._question(f, pid, i, q)
                     for i, q in enumerate(structs(f, f.get("qas", object), "qas"))]
        return {"f": f, "id": pid, "title": f.get("title", str, ""),
                "abstract": f.get("abstract", str, ""), "sections": sections, "figures": figures,
                "questions": questions}

    def _question(self, paper: RowFields, pid: str, index: int, raw: dict) -> dict[str, Any]:
        q = RowFields(self.name, f"paper {pid}, qas[{index}]", raw, "question_id")
        qid = q.get("question_id", str)
        question = q.get("question", str)
        if not question.strip():
            raise q.error("question", "must not be blank")
        meta = {k: q.get(k, str, None) for k in ("nlp_background", "topic_background",
                                                  "paper_read", "search_query", "question_writer")}
        annotations = []
        for j, ann in enumerate(structs(q, q.get("answers", object), "answers")):
            at = f"answers[{j}]"
            a = q.get("answer", dict, source=ann, label=f"{at}.answer")
            answer = {
                "unanswerable": q.get("unanswerable", bool, False, source=a,
                                      label=f"{at}.answer.unanswerable"),
                "extractive_spans": list(q.get("extractive_spans", "str_list", [], source=a,
                                               label=f"{at}.answer.extractive_spans")),
                "yes_no": q.get("yes_no", bool, None, source=a, label=f"{at}.answer.yes_no"),
                "free_form_answer": q.get("free_form_answer", str, "", source=a,
                                          label=f"{at}.answer.free_form_answer"),
                "evidence": list(q.get("evidence", "str_list", [], source=a,
                                       label=f"{at}.answer.evidence")),
                "highlighted_evidence": list(q.get("highlighted_evidence", "str_list", [],
                                                   source=a,
                                                   label=f"{at}.answer.highlighted_evidence")),
            }
            text, kind = answer_string(answer)
            annotations.append({**answer, "answer": text, "type": kind,
                                "annotation_id": q.get("annotation_id", str, None, source=ann,
                                                       label=f"{at}.annotation_id"),
                                "worker_id": q.get("worker_id", str, None, source=ann,
                                                   label=f"{at}.worker_id")})
        return {"f": q, "qid": qid, "question": question, "meta": meta,
                "annotations": annotations}

    @staticmethod
    def _document(paper: dict[str, Any], split: str, counters: dict[str, int],
                  missing_parents: str = "none") -> Document:
        """The paper in HiChunk's qasper_all layout (module docstring) with its header sections."""
        title, abstract = paper["title"], paper["abstract"]
        parts = [title, "\n", abstract]
        pos = len(title) + 1 + len(abstract)
        heads: list[tuple[int, list[str]]] = []  # (offset, section path)
        for name, paragraphs in paper["sections"]:
            body = "\n".join(paragraphs)
            if name:
                path = [t.strip().replace("\n", " ") for t in name.split(PATH_SEPARATOR)]
                header = "#" * len(path) + " " + path[-1]
                heads.append((pos + 1, path))
                piece = "\n" + header + "\n" + body
            else:
                piece = "\n" + body
            parts.append(piece)
            pos += len(piece)
        text = "".join(parts)
        def end_of(i: int, path: list[str]) -> int:
            # a section ends where a header outside its path begins: a sibling, an ancestor's
            # sibling, or a subsection of a parent that has no entry ("Experiments ::: Setup"
            # after "# Approach"), which "#" levels alone would nest in the section before
            start, depth = heads[i][0], len(path)
            stop = next((s - 1 for s, p in heads[i + 1:] if p[:depth] != path), len(text))
            return start + len(text[start:stop].rstrip())

        sections, open_paths, inferred = [], [], set()  # open_paths: the paths enclosing this header
        for i, (start, path) in enumerate(heads):
            level = len(path)
            while open_paths and (len(open_paths[-1]) >= level or open_paths[-1] != path[:len(open_paths[-1])]):
                open_paths.pop()
            known = len(open_paths[-1]) if open_paths else 0
            if level > 1 and (known < level - 1 or tuple(path[:-1]) in inferred):
                counters["sections_missing_parent"] += 1
            if missing_parents == "infer":  # the parents with no entry, from the child's path
                for depth in range(known + 1, level):
                    sections.append(Section(start, end_of(i, path[:depth]), depth, path[depth - 1]))
                    open_paths.append(path[:depth])
                    inferred.add(tuple(path[:depth]))
            sections.append(Section(start, end_of(i, path), level, path[-1]))
            open_paths.append(path)
        header_starts = {s for s, _ in heads}
        offset = 0
        for line in text.split("\n"):  # lines HiChunk's "#" rule would also read as headers
            counters["lines_looking_like_headers"] += (line.startswith("#")
                                                       and offset not in header_starts)
            offset += len(line) + 1
        return Document(
            doc_id=paper["id"], text=text, title=title, sections=tuple(sections), language="en",
            meta={"split": split, "title_span": [0, len(title)],
                  "abstract_span": [len(title) + 1, len(title) + 1 + len(abstract)],
                  "n_paragraphs": sum(len(p) for _, p in paper["sections"]),
                  "figures_and_tables": paper["figures"]})

    # -- loading -------------------------------------------------------------------------

    def _papers(self) -> list[dict[str, Any]]:
        papers, seen_papers, seen_questions = [], set(), {}
        for location, raw in self._rows():
            paper = self._paper(location, raw)
            if paper["id"] in seen_papers:
                raise paper["f"].error("id", f"duplicate paper id {paper['id']!r}")
            seen_papers.add(paper["id"])
            for q in paper["questions"]:
                if q["qid"] in seen_questions:
                    raise q["f"].error("question_id", f"duplicate question_id, also in paper "
                                                      f"{seen_questions[q['qid']]!r}")
                seen_questions[q["qid"]] = paper["id"]
            papers.append(paper)
        return papers

    def read(self) -> Read:
        papers = self._papers()
        counters = {k: 0 for k in (
            "docs_skipped_empty", "queries_skipped_empty_doc", "sections_missing_parent",
            "lines_looking_like_headers", "queries_dropped_unanswerable",
            "queries_dropped_no_evidence", "evidence_float_selected", "evidence_empty",
            "annotations_empty", *(f"task_{t}" for t in (*ANSWER_TYPES, "mixed")))}
        candidates = []
        for paper in papers:
            if not paper["abstract"].strip() and not any(
                    p.strip() for _, ps in paper["sections"] for p in ps):
                counters["docs_skipped_empty"] += 1
                counters["queries_skipped_empty_doc"] += len(paper["questions"])
            else:
                candidates.append(paper)
        kept_papers = self.keep_docs(candidates)
        documents = [self._document(p, self.split, counters, self.missing_parents) for p in kept_papers]
        by_id = {d.doc_id: d for d in documents}

        questions = self.on_kept_docs([(p["id"], q) for p in candidates for q in p["questions"]],
                                      by_id, lambda pq: (pq[0],))
        on_kept = []
        for pid, q in questions:
            anns = q["annotations"]
            if self.drop_unanswerable and anns and all(a["unanswerable"] for a in anns):
                counters["queries_dropped_unanswerable"] += 1
            elif self.require_evidence and not any(e.strip() for a in anns for e in a["evidence"]):
                counters["queries_dropped_no_evidence"] += 1
            else:
                on_kept.append((pid, q))
        limited = self.keep_queries(on_kept)

        alignment = AlignmentReport()
        matchers = configured_matchers(self.fuzzy_min_score)
        queries = [self._query(q, by_id[pid], alignment, matchers, counters) for pid, q in limited]
        return documents, queries, {
            "words_per_doc": mean([len(d.text.split()) for d in documents]),
            "n_sections": sum(len(d.sections) for d in documents),
            "evidence_per_query": mean([len(q.evidence) + len(q.unaligned_evidence)
                                        for q in queries]),
            **alignment.as_report("evidence"), **counters}

    def _query(self, q: dict[str, Any], doc: Document, alignment: AlignmentReport, matchers,
               counters: dict[str, int]) -> Query:
        anns = q["annotations"]
        types = {a["type"] for a in anns} - {"empty"}
        counters["annotations_empty"] += sum(a["type"] == "empty" for a in anns)
        task = types.pop() if len(types) == 1 else ("mixed" if types else "")
        if task:
            counters[f"task_{task}"] += 1
        meta: dict[str, Any] = {**q["meta"], "annotations": [dict(a) for a in anns],
                                "evidence_method": []}
        spans: list[Span] = []
        unaligned, wording = [], []  # snippets not aligned; the snippet of each span
        for snippet in dict.fromkeys(e for a in anns for e in a["evidence"]):
            if not snippet.strip():
                counters["evidence_empty"] += 1
                continue
            if snippet.startswith(FLOAT_PREFIX):  # a caption, not part of the text
                counters["evidence_float_selected"] += 1
                alignment.add(None)
                unaligned.append(snippet)
                continue
            found = alignment.add(align_evidence(doc.text, snippet, matchers=matchers))
            if found is None:
                unaligned.append(snippet)
                continue
            start, end, method = found
            span = Span(doc.doc_id, start, end)
            if span not in spans:
                spans.append(span)
                wording.append(snippet)
                meta["evidence_method"].append(method)
        answers = tuple(a["answer"] for a in anns if a["answer"] is not None)
        return Query(qid=q["qid"], question=q["question"], answers=answers,
                     doc_ids=(doc.doc_id,), evidence=tuple(spans), task=task, meta=meta,
                     unaligned_evidence=tuple(unaligned), evidence_wording=tuple(wording))

    def params(self) -> dict:
        if self.hub:
            where = {"hub_id": self.hub_id, "hub_config": self.hub_config, "revision": self.revision}
        else:
            where = {"files": [str(p.relative_to(self.path)) if p != self.path else p.name
                               for p in self._files()]}
        return {"split": self.split, "drop_unanswerable": self.drop_unanswerable,
                "require_evidence": self.require_evidence, "missing_parents": self.missing_parents,
                "fuzzy_min_score": self.fuzzy_min_score, **where}

    def source_files(self) -> list[Path]:
        return [] if self.hub else self._files()

    def content_digest(self) -> str:
        if not self.hub:
            return super().content_digest()
        return rows_digest(raw for _, raw in self._rows())
