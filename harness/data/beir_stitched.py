"""Qu et al.'s stitched long documents, built from a BEIR-style source of short documents, for
their document retrieval task (F1@k; "Is Semantic Chunking Worth the Computational Cost?",
Sec. 3.1, Table 1, Appendix C, Table 4).

Source layout (BEIR, Thakur et al. 2021), read from the Hub (``dataset.source=hub``, the
default) or from ``dataset.path`` (``dataset.source=path``); ``dataset.corpus`` names the set:

    corpus.jsonl[.gz]    {_id, title, text}       (MIRACL's corpus field ``docid`` accepted)
    queries.jsonl[.gz]   {_id, text}
    qrels/<split>.tsv    query-id <TAB> corpus-id <TAB> score, with a header line
                         (TREC's four columns ``qid iter docid rel`` accepted too)

    Hub: BeIR/<corpus> holds corpus.jsonl.gz and queries.jsonl.gz next to a loading script
    that ``datasets`` >= 4 refuses to run, so the two files are read through the ``json``
    builder (hf://datasets/BeIR/<corpus>/...); BeIR/<corpus>-qrels holds <split>.tsv.

Protocol, from the paper:
- Short documents are stitched into long ones of about 100 sentences (App. C:
  "Each stitched document contains approximately 100 sentences"; ``sentences_per_doc``).
- Which documents go together is random (Limitations: "artificially high topic diversity due
  to random stitching"): the selected documents are shuffled with ``seed`` and packed in that
  order. Each keeps its place as one block, title first (Fig. 6 / App. E.4: a stitched document
  is its source documents one after another, each opening with its title).
- Relevance: "if a short document is relevant to a query, the corresponding stitched long
  document is considered relevant" (App. C). A query's ``doc_ids`` are the stitched documents
  holding a relevant source document; its evidence spans are those source documents' spans
  inside them (for span metrics; Qu et al. score documents only).
- 100 queries are sampled at random per dataset (Sec. 3.1; ``limit_queries``, ``seed``).
- Retrieval runs over the whole stitched corpus, every chunk mapped to its document
  (Sec. 3.1, App. D): use ``retriever.scope=corpus``.
- Splits (Table 4): miracl train, nq test, scidocs test, scifact test, bioasq train,
  nfcorpus test.

Choices where the paper is silent:
- Packing: documents are added in shuffled order while adding the next one brings the
  running sentence count closer to the target; a leftover last group joins the one before
  it when that is closer to the target. A source document longer than the target stays alone.
- Which source documents: Table 4's #D x S/D(*) / S/D is about the whole corpus for SciFact
  (~5.2k docs), NFCorpus (~3.6k) and SciDocs (~19k of 26k), but a sample for NQ (~8.6k of
  2.7M), MIRACL (~30k) and BioASQ (~24k). ``corpus_docs=None`` stitches the whole corpus;
  ``corpus_docs=N`` keeps every document relevant to a kept query plus random distractors up
  to N in all.
- Sentences: the paper splits with spaCy ``en_core_web_sm`` (Sec. 3); counts here come from
  ``harness.text.sentence_spans`` (sentencex), so S/D can differ slightly from Table 4.
- Text: a source document is ``title + "\\n\\n" + text`` and documents are joined by
  ``"\\n\\n"``; the sentence splitter breaks at blank lines, so the title is a sentence of its
  own (as in Fig. 6) and no sentence crosses two source documents.
- Qrels with score < ``min_relevance`` (default 1) are not relevant (BEIR's convention).

Structure: one level-1 Section per source document, titled with its original id; the
document's meta lists source ids, titles and sentence counts.

MIRACL and BioASQ have no BeIR copy on the Hub: BEIR's BioASQ is generated from the
BioASQ challenge data (registration at bioasq.org) with BEIR's script, and MIRACL ships its
own layout (Hub miracl/miracl-corpus + topics/qrels files). Convert either to the BEIR layout
above (corpus rows may keep MIRACL's ``docid``, qrels may stay in TREC format) and pass
``dataset.path=<folder>``.

Malformed input (a row that is not an object, a missing or mistyped ``_id`` / ``text``, a
duplicate ``_id``, a qrels line with the wrong number of columns or a non-integer score, a
byte that is not UTF-8) is a DataError naming dataset, row and field. Empty source documents,
qrels naming unknown queries or documents and queries left with no relevant document are
skipped and counted in the report.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from harness.data.align import AlignmentReport
from harness.data.base import DatasetLoader, Read, mean, rows_digest
from harness.data.rows import RowFields, Rows, read_qrels, read_rows
from harness.data.sampling import check_limit, take
from harness.text import sentence_spans
from harness.types import ConfigError, DataError, Document, Query, Section, Span

# Qu et al., Table 4: the split each corpus was used with.
PAPER_SPLITS = {"miracl": "train", "nq": "test", "scidocs": "test", "scifact": "test",
                "bioasq": "train", "nfcorpus": "test"}
NO_HUB_COPY = ("miracl", "bioasq")
SEP = "\n\n"
BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/<corpus>.zip"


def pack(lengths: Sequence[int], target: int) -> list[list[int]]:
    """Consecutive groups of indices into ``lengths`` (sentence counts, in stitching order).

    An item joins the open group while that brings the group's total closer to ``target``
    (strictly); otherwise it opens a new group. The last group joins the one before it when
    their sum is closer to ``target`` than the last group alone. So every group but the last
    totals at least ``target - max(lengths) / 2`` and, if it has several items, below
    ``target + max(lengths) / 2``; the last stays below ``2 * target`` after a merge.
    """
    groups: list[list[int]] = []
    totals: list[int] = []
    for i, n in enumerate(lengths):
        if groups and abs(totals[-1] + n - target) < abs(totals[-1] - target):
            groups[-1].append(i)
            totals[-1] += n
        else:
            groups.append([i])
            totals.append(n)
    if len(groups) > 1 and abs(totals[-2] + totals[-1] - target) < abs(totals[-1] - target):
        groups[-2].extend(groups.pop())
    return groups


def _convert(corpus: str, split: str) -> str:
    """How to get a corpus BeIR has no Hub copy of."""
    return (f"convert {corpus} to BEIR's layout (corpus.jsonl, queries.jsonl, "
            f"qrels/{split}.tsv; see the module docstring of "
            f"harness/data/beir_stitched.py) and pass dataset.path=<folder>")


def render(title: str, text: str) -> str:
    """A source document as stitched: its title, a blank line, its text (outer space cut)."""
    return SEP.join(p for p in (title.strip(), text.strip()) if p)


def _id(f: RowFields, *names: str) -> str:
    """The row's id under the first of ``names`` present; numbers (a Parquet or CSV reader's
    guess for ids such as SciFact's) become strings."""
    for name in names:
        value = f.raw.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if value is not None:
            if not isinstance(value, str) or not value:
                raise f.error(name, f"must be a non-empty string, got {value!r}")
            return value
    raise f.error(names[0], "missing required field")


class BeirStitched(DatasetLoader):
    """``corpus``: the BEIR set (scifact, nfcorpus, scidocs, nq, miracl, bioasq, or any other
    in BEIR's layout; it was called ``source`` before ``dataset.source`` meant where data comes
    from). ``source`` (null: ``path`` when ``path`` is set, else hub): ``hub`` = the Hub copies
    (``hub_id``, default ``BeIR/<corpus>``; ``hub_qrels_id``, default ``BeIR/<corpus>-qrels``);
    ``path`` = BEIR's files in the folder ``path`` (or in ``<folder>/<corpus>/``, as BEIR's zips
    unpack). No bundled sample. ``split``: the qrels file.

    ``sentences_per_doc``: the stitching target (paper: 100). ``limit_queries`` queries with a
    relevant document are kept (paper: 100 at random); ``corpus_docs`` caps the source
    documents stitched (None: all); ``limit_docs`` then keeps stitched documents and the queries
    whose relevant ones were all kept. ``seed`` draws every sample and the stitching order;
    None takes the first items and stitches in corpus order (deterministic, not random).
    """
    title = "BEIR, stitched"

    version = 2
    sources = ("hub", "path")
    default_source = "hub"

    def __init__(self, corpus: str = "scifact", path: str | Path | None = None,
                 split: str = "test", name: str | None = None, sentences_per_doc: int = 100,
                 limit_queries: int | None = None, corpus_docs: int | None = None,
                 limit_docs: int | None = None, seed: int | None = 0, min_relevance: int = 1,
                 language: str = "en", hub_id: str | None = None,
                 hub_qrels_id: str | None = None, revision: str | None = None,
                 qrels_revision: str | None = None, source: str | None = None):
        if not isinstance(corpus, str) or not corpus or corpus.startswith("."):
            raise ConfigError(f"corpus must name a BEIR-style set such as scifact, got {corpus!r}")
        super().__init__(type(self).described_name({"name": name, "corpus": corpus}),
                         limit_docs, limit_queries, seed)
        self.corpus = corpus
        if not isinstance(split, str) or not split or "/" in split:
            raise ConfigError(f"split must name a qrels file such as test, got {split!r}")
        self.split = split
        if check_limit("sentences_per_doc", sentences_per_doc) in (None, 0):
            raise ConfigError(f"sentences_per_doc must be an integer >= 1, got {sentences_per_doc!r}")
        self.sentences_per_doc = sentences_per_doc
        self.corpus_docs = check_limit("corpus_docs", corpus_docs)
        if isinstance(min_relevance, bool) or not isinstance(min_relevance, int):
            raise ConfigError(f"min_relevance must be an integer, got {min_relevance!r}")
        self.min_relevance, self.language = min_relevance, language
        self.hub_id = type(self).described_hub_id({"hub_id": hub_id, "corpus": corpus})
        self.hub_qrels_id = hub_qrels_id or f"BeIR/{corpus}-qrels"
        self.revision, self.qrels_revision = revision, qrels_revision
        self.set_source(source, path, self.hub_id)
        if self.hub and corpus in NO_HUB_COPY and hub_id is None:
            raise self.unavailable(f"{corpus} has no BeIR copy on the Hugging Face Hub")
        self._hub_cache: dict[str, Any] | None = None

    @classmethod
    def described_name(cls, params) -> str:
        return params.get("name") or f"beir_stitched/{params.get('corpus', 'scifact')}"

    @classmethod
    def described_hub_id(cls, params) -> str:
        return params.get("hub_id") or f"BeIR/{params.get('corpus', 'scifact')}"

    # -- sources -------------------------------------------------------------------------

    def how_to_get(self) -> str:
        if self.corpus in NO_HUB_COPY:
            how = _convert(self.corpus, self.split)
        else:
            how = (f"dataset.source=hub (the default) where the Hugging Face Hub "
                   f"is reachable: it reads corpus.jsonl.gz and queries.jsonl.gz from "
                   f"{self.hub_id} and {self.split}.tsv from {self.hub_qrels_id}; or download "
                   f"{BEIR_URL.replace('<corpus>', self.corpus)}, unzip it and pass "
                   f"dataset.path=<folder holding corpus.jsonl, queries.jsonl, qrels/>")
        return f"Get the data this way: {how}."

    def _folder(self) -> Path:
        for folder in (self.path, self.path / self.corpus):
            if any((folder / f"corpus{s}").is_file() for s in (".jsonl", ".jsonl.gz")):
                return folder
        if not self.path.is_dir():
            raise self.unavailable(f"folder {self.path} does not exist")
        raise self.unavailable(f"neither {self.path} nor {self.path / self.corpus} holds "
                               f"corpus.jsonl")

    def _files(self) -> dict[str, Path]:
        folder = self._folder()
        found = {}
        for kind in ("corpus", "queries"):
            found[kind] = next((folder / f"{kind}{s}" for s in (".jsonl", ".jsonl.gz")
                                if (folder / f"{kind}{s}").is_file()), None)
        found["qrels"] = folder / "qrels" / f"{self.split}.tsv"
        expected = {"corpus": "corpus.jsonl", "queries": "queries.jsonl",
                    "qrels": f"qrels/{self.split}.tsv"}
        for kind, p in found.items():
            if p is None or not p.is_file():
                raise self.unavailable(f"{folder} has no {expected[kind]}")
        return found

    def _tables(self) -> dict[str, Any]:
        """``corpus`` and ``queries`` as (location, row) lists; ``qrels`` as
        (location, query id, corpus id, raw score) tuples."""
        if self.hub:
            if self._hub_cache is None:  # fingerprint() and load() share one download
                import datasets  # looked up at call time, so tests can stand in for the Hub

                rev = f"@{self.revision}" if self.revision else ""
                tables: dict[str, Any] = {}
                for kind in ("corpus", "queries"):
                    url = f"hf://datasets/{self.hub_id}{rev}/{kind}.jsonl.gz"
                    rows = self.hub_rows(f"could not load {url}", "json", data_files=url,
                                         split="train")
                    tables[kind] = [(f"{self.hub_id}/{kind}.jsonl.gz row {i}", r)
                                    for i, r in enumerate(rows)]
                # ids as strings: the CSV reader would otherwise turn "0123" into 123
                features = datasets.Features({"query-id": datasets.Value("string"),
                                              "corpus-id": datasets.Value("string"),
                                              "score": datasets.Value("int64")})
                tsv = f"{self.split}.tsv"
                rows = self.hub_rows(f"could not load {tsv} from {self.hub_qrels_id}",
                                     self.hub_qrels_id, data_files={self.split: tsv},
                                     split=self.split, features=features,
                                     revision=self.qrels_revision)
                tables["qrels"] = [self._hub_qrel(f"{self.hub_qrels_id}/{tsv} row {i}", r)
                                   for i, r in enumerate(rows)]
                self._hub_cache = tables
            return self._hub_cache
        files = self._files()
        return {"corpus": list(read_rows(files["corpus"], self.name)),
                "queries": list(read_rows(files["queries"], self.name)),
                "qrels": read_qrels(files["qrels"], self.name)}

    def _hub_qrel(self, location: str, raw: Any) -> tuple[str, str, str, Any]:
        f = RowFields(self.name, location, raw, "")
        if raw.get("score") is None:
            raise f.error("score", "missing required field")
        return location, _id(f, "query-id"), _id(f, "corpus-id"), raw["score"]

    # -- parsing -------------------------------------------------------------------------

    def _corpus(self, rows: Rows) -> dict[str, tuple[str, str]]:
        """Source id -> (title, text), in corpus order; duplicates are errors."""
        out: dict[str, tuple[str, str]] = {}
        for location, raw in rows:
            f = RowFields(self.name, location, raw, "_id")
            did = _id(f, "_id", "docid")
            f.row = did
            if did in out:
                raise f.error("_id", f"duplicate corpus _id {did!r}")
            out[did] = (f.get("title", str, ""), f.get("text", str))
        return out

    def _queries(self, rows: Rows) -> dict[str, str]:
        out: dict[str, str] = {}
        for location, raw in rows:
            f = RowFields(self.name, location, raw, "_id")
            qid = _id(f, "_id")
            f.row = qid
            if qid in out:
                raise f.error("_id", f"duplicate query _id {qid!r}")
            out[qid] = f.get("text", str)
        return out

    def _relevant(self, qrels, queries: dict[str, str], corpus: dict[str, tuple[str, str]],
                  empty: set[str], counters: dict[str, int]) -> dict[str, dict[str, int]]:
        """Query id -> {relevant source id: score} (qrels order); skips are counted."""
        out: dict[str, dict[str, int]] = {}
        for location, qid, did, score in qrels:
            try:
                value = int(score)
            except (TypeError, ValueError):
                value = None
            if value is None or isinstance(score, bool) or (isinstance(score, float)
                                                            and score != value):
                raise DataError(self.name, location, "score", f"must be an integer, got {score!r}")
            counters["qrels_total"] += 1
            if value < self.min_relevance:
                counters["qrels_below_min_relevance"] += 1
            elif qid not in queries:
                counters["qrels_unknown_query"] += 1
            elif did not in corpus:
                counters["qrels_unknown_doc"] += 1
            elif did in empty:
                counters["qrels_empty_doc"] += 1
            else:
                out.setdefault(qid, {})[did] = value
        return out

    # -- loading -------------------------------------------------------------------------

    def read(self) -> Read:
        tables = self._tables()
        corpus = self._corpus(tables["corpus"])
        queries = self._queries(tables["queries"])
        empty = {d for d, (title, text) in corpus.items() if not render(title, text)}
        counters = {"source_docs_empty": len(empty), "qrels_total": 0,
                    "qrels_below_min_relevance": 0, "qrels_unknown_query": 0,
                    "qrels_unknown_doc": 0, "qrels_empty_doc": 0}
        relevant = self._relevant(tables["qrels"], queries, corpus, empty, counters)

        eligible = [q for q in queries if q in relevant]  # queries.jsonl order
        kept_q = self.keep_queries(eligible)
        needed = list(dict.fromkeys(d for q in kept_q for d in relevant[q]))
        pool = [d for d in corpus if d not in empty]
        if self.corpus_docs is None:
            selected = pool
        else:
            needed_set = set(needed)
            others = [d for d in pool if d not in needed_set]
            distractors = take(others, max(0, self.corpus_docs - len(needed)), self.seed,
                               "distractors")
            chosen = needed_set | set(distractors)
            selected = [d for d in pool if d in chosen]  # corpus order, then shuffled below

        order = list(selected)
        if self.seed is not None:
            random.Random(f"{self.seed}/stitch").shuffle(order)
        texts = [render(*corpus[d]) for d in order]
        lengths = [max(1, len(sentence_spans(t, self.language))) for t in texts]
        groups = pack(lengths, self.sentences_per_doc)

        width = max(5, len(str(len(groups))))
        documents, where = [], {}  # where: source id -> (stitched id, start, end)
        for g, members in enumerate(groups):
            doc_id = f"{self.corpus}/stitched-{g:0{width}d}"
            parts, sections, offset = [], [], 0
            for i in members:
                if parts:
                    offset += len(SEP)
                parts.append(texts[i])
                sections.append(Section(offset, offset + len(texts[i]), 1, order[i]))
                where[order[i]] = (doc_id, offset, offset + len(texts[i]))
                offset += len(texts[i])
            documents.append(Document(
                doc_id=doc_id, text=SEP.join(parts), title="", sections=tuple(sections),
                language=self.language,
                # "source": the BEIR set (the key predates dataset.corpus; cached documents
                # under unchanged fingerprints keep it)
                meta={"source": self.corpus, "source_ids": [order[i] for i in members],
                      "source_titles": [corpus[order[i]][0] for i in members],
                      "source_sentences": [lengths[i] for i in members],
                      "n_sentences": sum(lengths[i] for i in members)}))

        kept_docs = self.keep_docs(documents)
        kept_ids = {d.doc_id for d in kept_docs}
        spans_of = {qid: sorted((where[d] for d in relevant[qid]), key=lambda w: (w[0], w[1]))
                    for qid in kept_q}
        alignment = AlignmentReport()
        out_queries = []
        for qid in self.on_kept_docs(kept_q, kept_ids, lambda q: [s[0] for s in spans_of[q]],
                                     "queries_dropped_limit_docs"):
            spans = spans_of[qid]
            for _ in spans:  # spans are exact by construction
                alignment.add((0, 0, "exact"))
            out_queries.append(Query(
                qid=qid, question=queries[qid],
                doc_ids=tuple(dict.fromkeys(s[0] for s in spans)),
                evidence=tuple(Span(*s) for s in spans), task=self.corpus,
                meta={"relevant_source_ids": list(relevant[qid]), "qrels": relevant[qid],
                      "evidence_method": ["exact"] * len(spans)}))

        return kept_docs, out_queries, {
            "n_source_docs": sum(len(d.meta["source_ids"]) for d in kept_docs),
            # Qu et al. Table 4: S/D(*), S/D and D/Q
            "sentences_per_doc": mean([d.meta["n_sentences"] for d in kept_docs]),
            "source_sentences_per_doc": mean(lengths),
            "relevant_docs_per_query": mean([len(q.doc_ids) for q in out_queries]),
            "relevant_source_docs_per_query": mean([len(q.evidence) for q in out_queries]),
            "words_per_doc": mean([len(d.text.split()) for d in kept_docs]),
            "source_docs_in_corpus": len(corpus), "source_docs_stitched": len(order),
            "source_docs_distractors": len(order) - len(needed),
            **counters, "queries_with_relevant_docs": len(eligible),
            **alignment.as_report("evidence")}

    def params(self) -> dict:
        hub = ({"hub_id": self.hub_id, "hub_qrels_id": self.hub_qrels_id,
                "revision": self.revision, "qrels_revision": self.qrels_revision}
               if self.hub else {})
        # "source" is the BEIR set (dataset.corpus, once named dataset.source): the key is kept
        # so that the load stage's cache keys stay what they were
        return {"source": self.corpus, "split": self.split,
                "sentences_per_doc": self.sentences_per_doc, "corpus_docs": self.corpus_docs,
                "min_relevance": self.min_relevance, "language": self.language, **hub}

    def source_files(self) -> list[Path]:
        return [] if self.hub else list(self._files().values())

    def content_digest(self) -> str:
        if not self.hub:
            return super().content_digest()
        return rows_digest([kind, row] for kind, rows in sorted(self._tables().items())
                           for row in rows)
