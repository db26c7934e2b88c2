"""CRUD-RAG (github.com/IAAR-Shanghai/CRUD_RAG), the news benchmark of QChunker's Table 1, in
its publisher's repository layout.

    data/80000_docs/*                 the retrieval corpus: UTF-8 text files, one news article
                                      a line, "<date>，正文：<body>"
    data/crud_split/split_merged.json {"questanswer_1doc" | "questanswer_2docs" |
                                      "questanswer_3docs": [{ID, event, news1[, news2, news3],
                                      questions, answers}], plus the non-QA tasks}
    src/quest_eval/QuestAnswer{1Doc,2Docs,3Docs}_quest_gt_save.json
                                      RAGQuestEval probes generated from each item's reference
                                      answer: {ID: {key_info: [str], question: [str],
                                      answers: [str]}}

How QChunker runs it (its ``quick_start.py`` and ``src/tasks/quest_answer.py``; paper Sections
4.1 and 4.3): the whole ``80000_docs`` folder is chunked into one index and each question
retrieves top_k=8 chunks from all of it, so retrieval is corpus-wide (``retriever.scope=corpus``).
Only the single-document QA task is run (its task map holds ``QuestAnswer1Doc`` alone), so
``subsets`` defaults to ``questanswer_1doc``. Answers are scored against ``answers`` with BLEU /
ROUGE-L (and METEOR in the paper).

Mapping:
- documents = corpus lines (blank lines skipped and counted), id ``<file>:<line>``, the date
  prefix in ``meta["date"]``.
- ``questions="split"``: one query per split item, id ``<subset>/<ID>``. The item's ``newsN``
  articles are its evidence scope: each is aligned as a span in the corpus (exact, normalised,
  then fuzzy, within the few documents that share its text) and those documents become
  ``doc_ids``. An article the corpus does not hold is kept as ``unaligned_evidence`` and counted.
  The item's RAGQuestEval probes, where present, ride along in ``meta["quest_eval"]``.
- ``questions="quest_eval"``: one query per probe (id ``<subset>/<ID>#q<j>``, the probe's short
  answer, ``facts`` = the item's ``key_info``), for when ``split_merged.json`` is missing, as in
  the bundled sample. Probes whose reference answer is "无法推断" (cannot be inferred) are
  skipped and counted: RAGQuestEval discards them too. So are probes left without an answer
  (upstream, an item whose answering step failed has fewer answers than questions; RAGQuestEval
  scores nothing for it). A probe names no document (``doc_ids`` empty). ``key_info`` comes
  from the reference answer, not from the articles, and short phrases recur by chance, so it is
  not turned into evidence spans; the report measures instead how much of it occurs verbatim in
  the corpus, and for how many items all of it sits in one document.

``questions=None`` picks "quest_eval" for the bundled sample and "split" for a checkout.
CRUD-RAG is read from the bundled excerpt (``source=bundled``, the default) or a checkout
(``source=path``); this loader reads no Hub copy.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from pathlib import Path
from typing import Any

from harness.data.align import FUZZY_MIN_SCORE
from harness.data.base import SAMPLES_DIR, Read
from harness.data.qchunker_family import LANGUAGE, CorpusLocator, QChunkerLoader, add_evidence
from harness.data.rows import WHOLE_ROW, RowFields, read_json_file
from harness.types import ConfigError, DataError, Document, Query

CRUD_REPO = "github.com/IAAR-Shanghai/CRUD_RAG"
BUNDLED = SAMPLES_DIR / "crud"
# split key -> (RAGQuestEval file stem, number of news articles per item)
SUBSETS = {"questanswer_1doc": ("QuestAnswer1Doc", 1),
           "questanswer_2docs": ("QuestAnswer2Docs", 2),
           "questanswer_3docs": ("QuestAnswer3Docs", 3)}
QUESTIONS = ("split", "quest_eval")
UNANSWERABLE = "无法推断"
BODY_MARK = "，正文："
# Locating every key_info phrase scans the corpus once per phrase; beyond this many
# character-scans (a few seconds) the measurement is skipped and flagged in the report.
KEY_INFO_SCAN_BUDGET = 2_000_000_000


def _as_subsets(subsets) -> tuple[str, ...]:
    names = (subsets,) if isinstance(subsets, str) else tuple(str(s) for s in subsets or ())
    bad = [s for s in names if s not in SUBSETS]
    if not names or bad:
        raise ConfigError(f"subsets must be a non-empty list of {', '.join(SUBSETS)}; got "
                          f"{list(names)!r} (CRUD's other tasks are not question answering)")
    return tuple(dict.fromkeys(names))


class CRUD(QChunkerLoader):
    """``source`` (null: ``path`` when ``path`` is set, else bundled): ``bundled`` = the bundled
    real excerpt (the first 150 corpus lines, 40 RAGQuestEval items per QA subset; no
    ``split_merged.json``); ``path`` = the folder ``path``, a CRUD_RAG checkout (or its ``data/``
    folder, with ``quest_eval/`` beside it). See the module docstring for the mapping.
    """

    version = 2
    sources = ("bundled", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "crud",
                 subsets=("questanswer_1doc",), questions: str | None = None,
                 qa_only: bool = False, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None,
                 fuzzy_min_score: float | None = FUZZY_MIN_SCORE, source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed, qa_only, fuzzy_min_score)
        self.set_source(source, path)
        self.subsets = _as_subsets(subsets)
        if questions is not None and questions not in QUESTIONS:
            raise ConfigError(f"questions must be null, 'split' or 'quest_eval'; got {questions!r}")
        self.questions = questions or ("quest_eval" if self.source == "bundled" else "split")

    def how_to_get(self) -> str:
        return (
            f"CRUD-RAG is published in {CRUD_REPO}: clone it "
            f"(data/crud_split/split_merged.json is over 4 MiB; data/80000_docs/ holds the corpus; "
            f"src/quest_eval/ the RAGQuestEval probes) and pass dataset.path=<checkout>; "
            f"dataset.questions=quest_eval asks the probes instead of the split's questions, "
            f"dataset.qa_only=true loads questions without the corpus (no retrieval); "
            f"dataset.source=bundled (the default) reads the bundled excerpt ({BUNDLED}).")

    # -- files ---------------------------------------------------------------------------------

    def _layout(self) -> dict[str, Any]:
        root = self.path
        if not root.is_dir():
            raise self.unavailable(f"folder {root} does not exist")

        def first(*names: str) -> Path | None:
            return next((root / n for n in names if (root / n).exists()), None)

        out: dict[str, Any] = {
            "split": first("data/crud_split/split_merged.json", "crud_split/split_merged.json",
                           "split_merged.json"),
            "corpus": first("data/80000_docs", "80000_docs"),
            "quest_eval": {},
        }
        qe_dir = first("src/quest_eval", "quest_eval", "../src/quest_eval")
        for subset in self.subsets:
            stem = SUBSETS[subset][0]
            found = None
            if qe_dir is not None and qe_dir.is_dir():
                exact = qe_dir / f"{stem}_quest_gt_save.json"
                found = exact if exact.is_file() else next(
                    iter(sorted(qe_dir.glob(f"{stem}_quest_gt_save*.json"))), None)
            out["quest_eval"][subset] = found
        return out

    def _files(self) -> dict[str, Any]:
        """The files this configuration reads; a missing one is a ConfigError saying how to
        get it."""
        layout = self._layout()
        files: dict[str, Any] = {"split": None, "corpus": [], "quest_eval": {}}
        if self.questions == "split":
            if layout["split"] is None or not layout["split"].is_file():
                where = ("the bundled sample has no split_merged.json (the upstream file is over "
                         "4 MiB); set dataset.questions=quest_eval for its real RAGQuestEval "
                         "probes, or get the split" if self.source == "bundled" else
                         f"{self.path} holds no data/crud_split/split_merged.json")
                raise self.unavailable(where)
            files["split"] = layout["split"]
            files["quest_eval"] = {s: p for s, p in layout["quest_eval"].items() if p}
        else:
            missing = [s for s, p in layout["quest_eval"].items() if p is None]
            if missing:
                raise self.unavailable(
                    f"no RAGQuestEval file for {', '.join(missing)} (src/quest_eval/"
                    f"{SUBSETS[missing[0]][0]}_quest_gt_save.json) under {self.path}")
            files["quest_eval"] = layout["quest_eval"]
        if not self.qa_only:
            corpus = layout["corpus"]
            if corpus is None or not corpus.is_dir():
                raise self.unavailable(f"no corpus folder data/80000_docs/ under {self.path}")
            files["corpus"] = sorted(p for p in corpus.iterdir()
                                     if p.is_file() and not p.name.startswith("."))
            if not files["corpus"]:
                raise self.unavailable(f"the corpus folder {corpus} holds no file")
        return files

    # -- corpus ---------------------------------------------------------------------------------

    def _corpus(self, paths: list[Path], counters: Counter) -> list[Document]:
        docs = []
        for path in paths:
            with path.open("rb") as f:
                for lineno, raw in enumerate(f, 1):
                    doc_id = f"{path.name}:{lineno}"
                    try:
                        line = raw.decode("utf-8").rstrip("\r\n")
                    except UnicodeDecodeError as e:
                        raise DataError(self.name, doc_id, "text",
                                        f"not valid UTF-8 ({e.reason} at byte {e.start} of the "
                                        f"line)") from None
                    if not line.strip():
                        counters["corpus_blank_lines"] += 1  # a separator, not an article
                        continue
                    date, mark, _ = line.partition(BODY_MARK)
                    if not mark:
                        counters["corpus_lines_without_body_mark"] += 1
                    docs.append(Document(
                        doc_id=doc_id, text=line, language=LANGUAGE,
                        meta={"file": path.name, "line": lineno,
                              "date": date.strip(" []\u3000") if mark else ""}))
        return docs

    # -- questions ------------------------------------------------------------------------------

    def _probes(self, path: Path, subset: str) -> dict[str, dict[str, Any]]:
        """ID -> {key_info, question, answers}, checked."""
        data = read_json_file(path, self.name)
        if not isinstance(data, dict):
            raise DataError(self.name, path.name, WHOLE_ROW,
                            f"must be a JSON object keyed by item ID, got {type(data).__name__}")
        out = {}
        for item_id, entry in data.items():
            f = RowFields(self.name, f"{path.name} {item_id}", entry, "")
            f.row = f"{subset}/{item_id}"
            probe = {k: f.get(k, "str_list") for k in ("key_info", "question", "answers")}
            for j, q in enumerate(probe["question"]):
                if not q.strip():
                    raise f.error(f"question[{j}]", "empty question")
            out[item_id] = probe
        return out

    def _probe_queries(self, subset: str, probes: dict[str, dict[str, Any]],
                       counters: Counter) -> list[Query]:
        queries = []
        for item_id, p in probes.items():
            counters["quest_eval_items"] += 1
            # Upstream, an item whose answering step failed has fewer answers than questions
            # (real: 2 of the 120 bundled items have none); RAGQuestEval then scores nothing.
            counters["quest_eval_answers_without_question"] += max(
                0, len(p["answers"]) - len(p["question"]))
            for j, q in enumerate(p["question"]):
                counters["quest_eval_probes"] += 1
                if j >= len(p["answers"]):
                    counters["quest_eval_probes_skipped_no_answer"] += 1
                    continue
                a = p["answers"][j]
                if a.strip() == UNANSWERABLE or not a.strip():
                    counters["quest_eval_probes_skipped_unanswerable"] += 1
                    continue
                queries.append(Query(
                    qid=f"{subset}/{item_id}#q{j}", question=q, answers=(a,),
                    facts=tuple(p["key_info"]), task=subset,
                    meta={"source": "quest_eval", "item_id": item_id}))
        return queries

    def _split_items(self, path: Path) -> dict[str, list[RowFields]]:
        data = read_json_file(path, self.name)
        if not isinstance(data, dict):
            raise DataError(self.name, path.name, WHOLE_ROW,
                            f"must be a JSON object keyed by task, got {type(data).__name__}")
        out = {}
        for subset in self.subsets:
            items = data.get(subset)
            if not isinstance(items, list):
                raise DataError(self.name, path.name, subset,
                                "missing task key or not a list of items")
            out[subset] = [RowFields(self.name, f"{path.name} {subset}[{i}]", raw, "ID")
                           for i, raw in enumerate(items)]
        return out

    def _split_query(self, f: RowFields, subset: str, probes: dict[str, dict[str, Any]],
                     documents: list[Document], locator: CorpusLocator | None) -> Query:
        item_id = f.get("ID", str)
        f.row = f"{subset}/{item_id}"
        question, answer = f.get("questions", str), f.get("answers", str)
        if not question.strip():
            raise f.error("questions", "empty question")
        if not answer.strip():
            raise f.error("answers", "empty answer: nothing to score a response against")
        news = []
        for k in range(1, SUBSETS[subset][1] + 1):
            text = f.get(f"news{k}", str)
            if not text.strip():
                raise f.error(f"news{k}", "empty news article")
            news.append(text)
        meta: dict[str, Any] = {"source": "split", "item_id": item_id,
                                "event": f.get("event", str, "")}
        if item_id in probes:
            meta["quest_eval"] = probes[item_id]
        doc_ids, spans, unaligned = [], [], []
        if locator is not None:
            doc_ids, spans, unaligned = add_evidence(meta, documents, locator, news, self.matchers)
        return Query(qid=f"{subset}/{item_id}", question=question, answers=(answer,),
                     doc_ids=tuple(doc_ids), evidence=tuple(spans), task=subset, meta=meta,
                     unaligned_evidence=tuple(unaligned))

    # -- loading --------------------------------------------------------------------------------

    def read(self) -> Read:
        files = self._files()
        counters: Counter = Counter(corpus_blank_lines=0, corpus_lines_without_body_mark=0)
        if self.questions == "quest_eval":
            counters.update(dict.fromkeys(
                ("quest_eval_items", "quest_eval_probes", "quest_eval_probes_skipped_no_answer",
                 "quest_eval_probes_skipped_unanswerable",
                 "quest_eval_answers_without_question"), 0))
        documents = self._corpus(files["corpus"], counters) if files["corpus"] else []
        probes = {s: self._probes(p, s) for s, p in files["quest_eval"].items()}
        queries: list[Query] = []
        if self.questions == "split":
            locator = CorpusLocator([d.text for d in documents]) if documents else None
            seen = set()
            for subset, rows in self._split_items(files["split"]).items():
                counters[f"split_items_{subset}"] = len(rows)
                for f in rows:
                    q = self._split_query(f, subset, probes.get(subset, {}), documents, locator)
                    if q.qid in seen:
                        raise f.error("ID", f"duplicate ID in {subset}")
                    seen.add(q.qid)
                    counters["quest_eval_attached"] += "quest_eval" in q.meta
                    queries.append(q)
        else:
            for subset in self.subsets:
                queries += self._probe_queries(subset, probes[subset], counters)
            if documents:
                counters.update(self._key_info_location(probes, documents))
        return self._finish(documents, queries, dict(counters))

    @staticmethod
    def _key_info_location(probes: dict[str, dict[str, dict[str, Any]]],
                           documents: list[Document]) -> dict[str, float]:
        """How much of the probes' key_info occurs verbatim in the corpus, and for how many
        items all of it sits in one document (a sign the item's articles are in the corpus)."""
        sep = "\n\x00\n"
        joined = sep.join(d.text for d in documents)
        starts, offset = [], 0
        for d in documents:
            starts.append(offset)
            offset += len(d.text) + len(sep)
        phrases = {k for items in probes.values() for p in items.values() for k in p["key_info"]}
        if len(joined) * len(phrases) > KEY_INFO_SCAN_BUDGET:
            return {"key_info_location_skipped": 1}
        where = {k: {bisect_right(starts, m.start()) - 1 for m in re.finditer(re.escape(k), joined)}
                 for k in phrases if k}
        total = found = items = whole = 0
        for item_probes in probes.values():
            for p in item_probes.values():
                items += 1
                docs = [where.get(k, set()) for k in p["key_info"]]
                total += len(docs)
                found += sum(1 for d in docs if d)
                whole += bool(docs) and bool(set.intersection(*docs))
        return {"key_info_total": total, "key_info_in_corpus": found,
                "key_info_in_corpus_share": found / total if total else 0.0,
                "quest_eval_items_key_info_all_in_one_doc": whole,
                "key_info_location_skipped": 0}

    def source_files(self) -> list[Path]:
        files = self._files()
        return [*files["corpus"], *files["quest_eval"].values(), *filter(None, [files["split"]])]

    def params(self) -> dict:
        return {**super().params(), "subsets": list(self.subsets), "questions": self.questions}
