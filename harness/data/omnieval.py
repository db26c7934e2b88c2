"""OmniEval (RUC-NLPIR; finance), one of QChunker's evaluation sets (github.com/Robot2050/QChunker),
from QChunker's reduced copy or OmniEval's own generated rows (see the class). What QChunker's
sets share, and why they are mapped as they are, is in ``harness.data.qchunker_family``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from harness.data.align import FUZZY_MIN_SCORE
from harness.data.base import SAMPLES_DIR, Read, rows_digest
from harness.data.qchunker_family import (LANGUAGE, QCHUNKER_REPO, CorpusLocator, QChunkerLoader,
                                          add_evidence, str_or_list)
from harness.data.rows import RowFields, Rows, read_rows
from harness.types import DataError, Document, Query, Span

BUNDLED = SAMPLES_DIR / "omnieval"
HUB_ID = "RUC-NLPIR/OmniEval-AutoGen-Dataset"
CORPUS_HUB_ID = "RUC-NLPIR/OmniEval-KnowledgeCorpus"
# QChunker's reduced QA (evaldata/OmniEval.json; bundled under the second name).
_QA_NAMES = ("OmniEval.json", "evaldata/OmniEval.json", "OmniEval_qchunker_evaldata.json")
# OmniEval's documents as its corpus builder saves them (FlashRAG corpus.jsonl rows
# {id, title, contents}); "_docs" holds whole documents, "_nodes" their 2048-token nodes.
_DOCS = "gen_datas_all-2048-256_docs/corpus.jsonl"
_CORPUS_NAMES = ("corpus.jsonl", _DOCS, f"nodes_dir/{_DOCS}",
                          f"corpus/nodes_dir/{_DOCS}")


class OmniEval(QChunkerLoader):
    """OmniEval (RUC-NLPIR; finance, 5 task classes x 16 topics), as QChunker evaluates it.

    Questions, from either form:
    - QChunker's reduced copy ``evaldata/OmniEval.json``: a JSON list of ``{question, answer}``
      (500; bundled);
    - OmniEval's generated rows (Hub ``RUC-NLPIR/OmniEval-AutoGen-Dataset``, or the generator's
      ``gen_datas_*_final/<topic>/<task>.jsonl`` tree): ``question`` str, ``answer`` str or
      list (``golden_answers`` in inference files), ``relevant_passage`` str or list (evidence
      text), ``relevant_node`` str or list (ids of 2048-token corpus nodes), ``topic_name``,
      ``task_name``. A row that is a list of turns (multi-turn dialogue task) is skipped and
      counted: QChunker's 500 are single questions.

    Corpus (needed unless ``qa_only``): a JSON list of document strings (the form QChunker's
    chunk scripts read), or OmniEval's FlashRAG-style ``corpus.jsonl`` rows
    ``{id, title, contents}`` (``text`` is accepted for ``contents``). Documents with empty text
    are skipped and counted, as OmniEval's corpus builder does. ``relevant_passage`` is aligned
    in the corpus (the ``relevant_node`` documents first when their ids are corpus ids) and the
    documents holding it become ``doc_ids``; without it ``doc_ids`` is empty (corpus retrieval).

    ``source`` (null: ``path`` when ``path`` is set, else bundled): ``bundled`` = QChunker's
    500 QA pairs (no corpus; ``qa_file`` / ``corpus_file`` may still name files of their own);
    ``path`` = the folder ``path`` (``qa_file`` / ``corpus_file`` relative to it, or absolute;
    ``qa_file`` may be a folder of ``.jsonl``); ``hub`` = questions via
    ``datasets.load_dataset(hub_id, split=hub_split)`` (gated: accept its terms and log in) and
    the corpus from ``corpus_file`` if set, else ``load_dataset(corpus_hub_id)``.
    """

    version = 2
    sources = ("bundled", "hub", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "omnieval",
                 qa_file: str | None = None, corpus_file: str | None = None,
                 qa_only: bool = False, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None,
                 fuzzy_min_score: float | None = FUZZY_MIN_SCORE,
                 hub_id: str = HUB_ID, corpus_hub_id: str = CORPUS_HUB_ID,
                 hub_split: str = "train", revision: str | None = None,
                 corpus_revision: str | None = None, source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed, qa_only, fuzzy_min_score)
        self.qa_file, self.corpus_file = qa_file, corpus_file
        self.hub_id, self.corpus_hub_id = hub_id, corpus_hub_id
        self.hub_split, self.revision, self.corpus_revision = hub_split, revision, corpus_revision
        self.set_source(source, path, hub_id)
        self._hub_cache: dict[str, Rows] = {}

    def how_to_get(self) -> str:
        return (
            f"Get OmniEval one of these ways: "
            f"dataset.source=hub where the Hugging Face Hub is reachable (questions from the gated "
            f"dataset {self.hub_id}, documents from {self.corpus_hub_id}); or download "
            f"QChunker's evaldata/OmniEval.json ({QCHUNKER_REPO}) or OmniEval's generated rows, "
            f"plus a corpus (OmniEval's {_DOCS} from the Hugging Face dataset "
            f"RUC-NLPIR/FlashRAG_datasets, or a JSON list of document strings), and pass "
            f"dataset.path=<folder> with dataset.qa_file= / dataset.corpus_file=; or set "
            f"dataset.qa_only=true to load the questions alone (no retrieval).")

    # -- sources -----------------------------------------------------------------------------

    def _local(self, given: str | None, defaults: Sequence[str], what: str) -> Path | None:
        base = self.path  # the bundled sample's folder, or the given one
        if self.source == "path" and not self.path.is_dir():
            raise self.unavailable(f"folder {self.path} does not exist")
        if given is not None:
            p = Path(given) if Path(given).is_absolute() else base / given
            if not p.exists():
                raise self.unavailable(f"the {what} {p} does not exist")
            return p
        return next((base / n for n in defaults if (base / n).is_file()), None)

    def _qa_source(self) -> Path | None:
        if self.hub:
            return None
        found = self._local(self.qa_file, _QA_NAMES, "question file")
        if found is None:
            raise self.unavailable(f"no question file in {self.path} (looked for "
                                   f"{', '.join(_QA_NAMES)}; set dataset.qa_file=)")
        return found

    def _corpus_source(self) -> Path | None:
        """The local corpus file; None with ``path=hub`` and no ``corpus_file`` (Hub corpus)."""
        if self.qa_only:
            return None
        if self.hub and self.corpus_file is None:
            return None
        if self.hub:
            p = Path(self.corpus_file)
            if not p.is_file():
                raise self.unavailable(f"the corpus file {p} does not exist")
            return p
        found = self._local(self.corpus_file, () if self.source == "bundled" else _CORPUS_NAMES,
                            "corpus file")
        if found is None:
            what = ("the bundled sample is QChunker's 500 question/answer pairs "
                    "(evaldata/OmniEval.json) without the financial corpus they were asked "
                    "about; " if self.source == "bundled" else
                    f"no corpus in {self.path} (looked for {', '.join(_CORPUS_NAMES)}); ")
            raise self.unavailable(what + "without documents there is nothing to chunk or "
                                           "retrieve")
        if found.is_dir():
            found = found / "corpus.jsonl"
            if not found.is_file():
                raise self.unavailable(f"the corpus folder has no {found.name}")
        return found

    def _hub(self, repo: str, kind: str, revision: str | None) -> Rows:
        if kind not in self._hub_cache:  # fingerprint() and load() share one download
            rows = self.hub_rows(f"could not load the Hugging Face dataset {repo} split "
                                 f"{self.hub_split!r}", repo, split=self.hub_split,
                                 revision=revision)
            self._hub_cache[kind] = [(f"{repo} row {i}", r) for i, r in enumerate(rows)]
        return self._hub_cache[kind]

    def _qa_rows(self) -> Rows:
        src = self._qa_source()
        if src is None:
            return self._hub(self.hub_id, "qa", self.revision)
        if src.is_dir():  # the generator's tree: <topic path>/<task>.jsonl
            files = sorted(src.rglob("*.jsonl"))
            if not files:
                raise self.unavailable(f"the question folder {src} holds no .jsonl file")
            return [row for p in files for row in read_rows(p, self.name)]
        return list(read_rows(src, self.name))

    def _corpus_rows(self) -> Rows:
        src = self._corpus_source()
        if src is None:
            return self._hub(self.corpus_hub_id, "corpus", self.corpus_revision)
        return list(read_rows(src, self.name))

    def source_files(self) -> list[Path]:
        out = []
        src = self._qa_source()
        if src is not None:
            out += sorted(src.rglob("*.jsonl")) if src.is_dir() else [src]
        corpus = self._corpus_source()
        if corpus is not None:
            out.append(corpus)
        return out

    # -- mapping -----------------------------------------------------------------------------

    def _documents(self, rows: Rows, counters: dict[str, float]) -> list[Document]:
        docs, seen = [], set()
        for i, (location, raw) in enumerate(rows):
            if isinstance(raw, str):  # QChunker's form: a list of document strings
                doc_id, title, text = f"doc#{i}", "", raw
            else:
                f = RowFields(self.name, location, raw, "id")
                rid = raw.get("id") if isinstance(raw, dict) else None
                if isinstance(rid, int) and not isinstance(rid, bool):
                    rid = str(rid)
                if rid is not None and not isinstance(rid, str):
                    raise f.error("id", f"must be a string or an integer, got {type(rid).__name__}")
                doc_id = rid or f"doc#{i}"
                title = f.get("title", str, "")
                text = f.get("contents", str, None)
                if text is None:
                    text = f.get("text", str, None)
                if text is None:
                    raise f.error("contents", "missing required field (or text)")
            if not text.strip():
                counters["docs_skipped_empty"] += 1  # OmniEval's corpus builder drops them too
                continue
            if doc_id in seen:
                raise DataError(self.name, doc_id, "id", f"duplicate document id (at {location})")
            seen.add(doc_id)
            docs.append(Document(doc_id=doc_id, text=text, title=title, language=LANGUAGE,
                                 meta={"source_row": location}))
        return docs

    def _query(self, f: RowFields, qid: str, documents: list[Document], by_id: dict[str, int],
               locator: CorpusLocator | None, counters: dict[str, float]) -> Query:
        question = f.get("question", str)
        if not question.strip():
            raise f.error("question", "empty question")
        if f.raw.get("answer") is not None:
            answers = str_or_list(f, "answer", True)
        else:
            answers = str_or_list(f, "golden_answers", False)
            if not answers:
                raise f.error("answer", "missing required field (or golden_answers)")
        if not any(a.strip() for a in answers):
            raise f.error("answer", "empty answer: nothing to score a response against")
        passages = str_or_list(f, "relevant_passage", False)
        nodes = str_or_list(f, "relevant_node", False)
        meta: dict[str, Any] = {"source_row": f.location, "topic": f.get("topic_name", str, ""),
                                "relevant_node": list(nodes), "relevant_passage": list(passages),
                                "evidence_method": []}
        doc_ids: list[str] = []
        spans: list[Span] = []
        unaligned: list[str] = []
        if locator is not None:
            node_docs = [by_id[n] for n in nodes if n in by_id]
            counters["relevant_node_total"] += len(nodes)
            counters["relevant_node_in_corpus"] += len(node_docs)
            doc_ids = [documents[i].doc_id for i in node_docs]
            found, spans, unaligned = add_evidence(meta, documents, locator, passages,
                                                   self.matchers, node_docs)
            doc_ids = list(dict.fromkeys(doc_ids + found))
        return Query(qid=qid, question=question, answers=answers, doc_ids=tuple(doc_ids),
                     evidence=tuple(spans), task=f.get("task_name", str, "") or "omnieval",
                     meta=meta, unaligned_evidence=tuple(unaligned))

    def read(self) -> Read:
        counters: dict[str, float] = Counter(docs_skipped_empty=0, relevant_node_total=0,
                                             relevant_node_in_corpus=0,
                                             queries_skipped_multi_turn=0)
        qa_rows = self._qa_rows()
        documents = [] if self.qa_only else self._documents(self._corpus_rows(), counters)
        locator = CorpusLocator([d.text for d in documents]) if documents else None
        by_id = {d.doc_id: i for i, d in enumerate(documents)}
        stem = "hub" if self.hub else self._qa_source().stem
        queries, seen = [], set()
        for i, (location, raw) in enumerate(qa_rows):
            if isinstance(raw, list):  # a multi-turn dialogue: a list of turns
                counters["queries_skipped_multi_turn"] += 1
                continue
            f = RowFields(self.name, location, raw, "id")
            qid = raw["id"] if isinstance(raw, dict) and isinstance(raw.get("id"), str) \
                and raw["id"] else f"{stem}#{i}"
            if qid in seen:
                raise f.error("id", f"duplicate question id {qid!r}")
            seen.add(qid)
            queries.append(self._query(f, qid, documents, by_id, locator, counters))
        return self._finish(documents, queries, dict(counters))

    def params(self) -> dict:
        hub = ({"hub_id": self.hub_id, "corpus_hub_id": self.corpus_hub_id,
                "hub_split": self.hub_split, "revision": self.revision,
                "corpus_revision": self.corpus_revision} if self.hub else {})
        return {**super().params(), "qa_file": self.qa_file, "corpus_file": self.corpus_file,
                **hub}

    def content_digest(self) -> str:
        files = super().content_digest()
        if not self.hub:
            return files
        kinds = [("qa", self.hub_id, self.revision)]
        if not self.qa_only and self.corpus_file is None:
            kinds.append(("corpus", self.corpus_hub_id, self.corpus_revision))
        return rows_digest([files, *([kind, raw] for kind, repo, revision in kinds
                                     for _, raw in self._hub(repo, kind, revision))])
