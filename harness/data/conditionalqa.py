"""ConditionalQA (Sun, Cohen and Salakhutdinov 2021, github.com/haitian-sun/ConditionalQA), as
Qu et al. use it ("Is Semantic Chunking Worth the Computational Cost?", App. C, Tables 4 and 5:
the dev split, 652 documents of ~120 sentences, one relevant document and ~5 evidence sentences
per question).

Publisher layout, folder ``v1_0/`` of the repository (``dataset.path``; the repository root
holding it is found too):

    documents.json      a JSON list of ``{url, title, contents}``; ``contents`` is the page as
                        a list of HTML elements, one string each ("<h1>Overview</h1>",
                        "<p>...</p>", "<li>...</li>", "<tr>...</tr>")
    dev.json, train.json  JSON lists of ``{id, url, scenario, question, not_answerable,
                        answers, evidences}``; ``answers`` is a list of
                        ``[answer text, [condition elements]]``, ``evidences`` a list of
                        elements copied verbatim from the document's ``contents``

Mapping:
- A document is one page, ``doc_id`` = its ``url`` (what a question names). Its text is its
  elements' text, tags removed and HTML entities decoded, one element a paragraph (joined by a
  blank line, which the sentence splitter never crosses); an element with no text adds nothing.
  Headings (``<h1>``..``<h6>``) open gold ``sections`` of their level, up to the next heading of
  the same or a higher level.
- A question's ``doc_ids`` is its page. Its evidence is the span of each evidence element in
  that page, found by the element's exact string among ``contents`` (the first copy when a page
  repeats it: ``evidence_repeated`` counts those); an evidence element not among them, or one
  with no text, is kept as ``unaligned_evidence`` and counted (``evidence_unaligned``).
- The question text is the scenario, then the question (``with_scenario``; the paper does not
  say which it embedded, and a ConditionalQA question is often unanswerable without its
  scenario: "How long will it be before I hear back from the court?"). ``answers`` are the
  answer texts; their conditions and ``not_answerable`` go to ``meta``.
- ``require_evidence`` drops the questions without evidence elements (14 of dev's 285 have
  none), counted in ``queries_dropped_no_evidence``.

Bad input (a file that is not a JSON list, a row that is not an object, a missing or mistyped
field, a duplicate url or id, a question naming an unknown page) is a DataError naming
dataset, row and field. The bundled sample (``source=bundled``) holds real question rows only:
the publisher's documents.json is a file of more than 4 MiB that could not be fetched here, so
a bundled run stops saying how to get it (see ``samples/conditionalqa/README.md``).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from harness.data.base import SAMPLES_DIR, DatasetLoader, Read, mean
from harness.data.rows import RowFields, read_rows
from harness.types import ConfigError, Document, Query, Section, Span

BUNDLED = SAMPLES_DIR / "conditionalqa"
REPO = "https://github.com/haitian-sun/ConditionalQA"
SPLITS = ("dev", "train")
_TAG = re.compile(r"<[^>]*>")
_HEADING = re.compile(r"^\s*<h([1-6])\b", re.I)
_SPACE = re.compile(r"\s+")
PARAGRAPH = "\n\n"


def element_text(element: str) -> str:
    """An HTML element's text: tags become spaces (a table row's cells stay apart), entities
    are decoded, runs of white space are one space."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", element))).strip()


class ConditionalQA(DatasetLoader):
    version = 1
    title = "ConditionalQA"
    sources = ("bundled", "path")
    default_source = "path"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "conditionalqa", split: str = "dev",
                 with_scenario: bool = True, require_evidence: bool = False,
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed)
        if split not in SPLITS:
            raise ConfigError(f"dataset.split must be one of {', '.join(SPLITS)} (test_no_answer.json "
                              f"has no answers or evidence); got {split!r}")
        self.split, self.with_scenario, self.require_evidence = split, bool(with_scenario), bool(require_evidence)
        self.set_source(source, path)

    def how_to_get(self) -> str:
        return (f"ConditionalQA is published in {REPO} (folder v1_0: documents.json, {self.split}.json); "
                f"clone it and pass dataset.path=<clone>/v1_0")

    def _folder(self) -> Path:
        if not self.path.is_dir():
            raise self.unavailable(f"folder {self.path} does not exist")
        nested = self.path / "v1_0"
        return nested if nested.is_dir() and not (self.path / f"{self.split}.json").is_file() else self.path

    def _files(self) -> tuple[Path, Path]:
        folder = self._folder()
        questions, documents = folder / f"{self.split}.json", folder / "documents.json"
        if not questions.is_file():
            raise self.unavailable(f"the question file {questions} does not exist")
        if not documents.is_file():
            what = (f"the bundled sample holds real {self.split}.json rows only (no documents); "
                    if self.source == "bundled" else "")
            raise self.unavailable(f"{what}the documents file {documents} does not exist, and without "
                                   f"documents there is nothing to chunk or retrieve")
        return questions, documents

    def source_files(self) -> list[Path]:
        return list(self._files())

    def params(self) -> dict:
        return {"split": self.split, "with_scenario": self.with_scenario, "require_evidence": self.require_evidence}

    # -- documents -----------------------------------------------------------------------------

    def _documents(self, path: Path) -> tuple[list[Document], dict[str, dict[str, Span]], dict[str, int]]:
        """The pages, and per page each element's span (the first copy) and how often it occurs."""
        docs, spans, repeats = [], {}, {}
        for location, raw in read_rows(path, self.name):
            f = RowFields(self.name, location, raw, "url")
            url, title = f.get("url", str), f.get("title", str, "")
            if url in spans:
                raise f.error("url", f"duplicate url {url!r}: two pages cannot share a document id")
            contents = f.get("contents", "str_list")
            doc, spans[url], counts = self._page(url, title, contents)
            repeats.update({(url, e): n for e, n in counts.items() if n > 1})
            docs.append(doc)
        return docs, spans, repeats

    def _page(self, url: str, title: str, contents: list[str]) -> tuple[Document, dict[str, Span], dict[str, int]]:
        parts, spans, counts, headings = [], {}, {}, []
        offset = 0
        for element in contents:
            counts[element] = counts.get(element, 0) + 1
            text = element_text(element)
            if not text:
                continue
            if parts:
                offset += len(PARAGRAPH)
            spans.setdefault(element, Span(url, offset, offset + len(text)))
            if m := _HEADING.match(element):
                headings.append((offset, int(m.group(1)), text))
            parts.append(text)
            offset += len(text)
        body = PARAGRAPH.join(parts)
        sections = []
        for i, (start, level, heading) in enumerate(headings):
            # up to the text before the next heading of its level or above (not the blank line)
            end = next((s - len(PARAGRAPH) for s, lv, _ in headings[i + 1:] if lv <= level), len(body))
            sections.append(Section(start, end, level, heading))
        return (Document(doc_id=url, text=body, title=title, sections=sections, language="en",
                         meta={"url": url}), spans, counts)

    # -- questions -----------------------------------------------------------------------------

    def _query(self, f: RowFields, pages: dict[str, dict[str, Span]], repeats: dict) -> Query | None:
        qid, url = f.get("id", str), f.get("url", str)
        if url not in pages:
            raise f.error("url", f"names no page of documents.json ({url!r})")
        scenario, question = f.get("scenario", str, ""), f.get("question", str)
        answers, conditions = [], []
        for i, pair in enumerate(f.get("answers", list, [])):
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and isinstance(pair[1], list) and all(isinstance(c, str) for c in pair[1])):
                raise f.error(f"answers[{i}]", "must be [answer text, [condition elements]]")
            answers.append(pair[0])
            conditions.append([element_text(c) for c in pair[1]])
        evidence, unaligned = [], []
        for element in f.get("evidences", "str_list", []):
            span = pages[url].get(element)
            if span is None:
                unaligned.append(element_text(element) or element)
                continue
            evidence.append(span)
            self.count("evidence_repeated", int((url, element) in repeats))
        self.count("evidence_unaligned", len(unaligned))
        if self.require_evidence and not evidence:
            self.count("queries_dropped_no_evidence", 1)
            return None
        text = f"{scenario} {question}".strip() if self.with_scenario else question
        return Query(qid=qid, question=text, answers=tuple(answers), doc_ids=(url,),
                     evidence=tuple(dict.fromkeys(evidence)), task=self.split,
                     unaligned_evidence=tuple(unaligned),
                     meta={"scenario": scenario, "question": question, "conditions": conditions,
                           "not_answerable": f.get("not_answerable", bool, False)})

    def read(self) -> Read:
        questions_path, documents_path = self._files()
        documents, pages, repeats = self._documents(documents_path)
        queries, seen = [], set()
        for location, raw in read_rows(questions_path, self.name):
            f = RowFields(self.name, location, raw, "id")
            q = self._query(f, pages, repeats)
            if q is not None and q.qid in seen:
                raise f.error("id", f"duplicate question id {q.qid!r}")
            if q is not None:
                seen.add(q.qid)
                queries.append(q)
        documents = self.keep_docs(documents)
        queries = self.keep_queries(self.on_kept_docs(queries, {d.doc_id for d in documents}, lambda q: q.doc_ids))
        report = {"evidence_per_query": mean([len(q.evidence) for q in queries]),
                  "paragraphs_per_doc": mean([d.text.count(PARAGRAPH) + 1 for d in documents])}
        return documents, queries, report
