"""Natural Questions (Kwiatkowski et al. 2019) as MC-indexing uses it (Dong et al. 2024, §4.2):
long Wikipedia pages with the section structure of their HTML, the long answer as answer scope.

Upstream: Hub ``google-research-datasets/natural_questions`` (parquet), config ``default``
(train 307,373 / validation 7,830) or ``dev`` (validation only). One row = one question on one
page; HF ``Sequence`` fields of dicts are dicts of lists::

    id, document {title, url, html, tokens {token, is_html, start_byte, end_byte}},
    question {text, tokens}, long_answer_candidates {start_token, end_token, start_byte,
    end_byte, top_level}, annotations {id, long_answer [{start_token, end_token, start_byte,
    end_byte, candidate_index}], short_answers [{start_token, end_token, start_byte, end_byte,
    text} as lists], yes_no_answer [-1 NONE, 0 NO, 1 YES]}

Token spans are half-open, ``-1`` marks "no long answer". Google's own jsonl release
(``example_id``, ``document_tokens`` [{token, html_token, ...}], ``annotations`` as a list of
objects) is read too: its rows are mapped to the layout above first.

Text: the non-HTML tokens joined with spaces. Where a block tag (P, H1-H6, Table, lists, ...)
separates two tokens the space becomes "\\n" (row, list item) or "\\n\\n" (paragraph, heading,
table), so paragraph-aware chunkers see the page's layout. A token -> character map turns every
token span (long answer, short answers) into an exact character span: no string alignment.

Structure (MC-indexing: "by parsing the rendered HTML, we are able to extract the section name
and the corresponding texts"): each ``<H1>``..``<H{heading_levels}>`` is a Section of that level
titled by its text, from the heading to the next heading of the same or a higher level.

Filters, all configurable (MC-indexing §4.2):
- ``drop_sections`` (See Also / Notes / References): these sections, subsections included, are
  left out of the text itself (not just of the section list), because leaving them in would put
  the reference noise MC-indexing removes back into what chunkers index; building the text
  without them keeps every offset consistent. A question whose answer lies in one is skipped
  and counted.
- ``min_tokens`` (10k): documents with fewer NQ text tokens, counted on the text as built
  (after the drop), are skipped. The paper says "more than 10k tokens" without naming a
  tokenizer; NQ's own tokens are the natural unit here.
- ``require_long_answer``: questions no annotator gave a long answer are skipped.
- ``same_section``: dev rows carry 5 annotations; MC-indexing keeps only "questions where all
  annotations reside within the same section". Annotators with no long answer abstain; the
  section compared is the innermost heading section holding each long answer.

Evidence (answer scope): ``annotation=first`` uses the first annotation with a long answer
(train has one annotation per row, so both settings agree there); ``all`` gives every distinct
annotator long answer as its own span. ``answer_scope=section`` uses the innermost section
around the long answer instead (MC-indexing's Table 1 gives 827 tokens per NQ answer against
510 per section, more than a paragraph-level long answer usually holds, so its scope may have
been wider than the long answer; ``section`` is that reading). Short answers
(their upstream ``text``) and yes/no answers of the chosen annotations become ``answers``.

One page read by several questions (same title and text) is one Document; a page title seen
with a different text (another revision) gets a suffix ``@<hash>``.

Limits: ``limit_docs`` documents then ``limit_queries`` questions on them. Without ``seed`` the rows
are scanned in order and the scan stops at the first row beyond a limit, which is what makes a
small sample of the 40 GB train split cheap (``streaming=true``); with ``seed`` every row is
read and the sample is drawn from all of them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from harness.data.align import AlignmentReport
from harness.data.base import DatasetLoader, Read, mean
from harness.data.nq_rows import (Page, title_key, build_page, columns, from_google_row,
                                  innermost_section, parse_annotations)
from harness.data.rows import RowFields, expand_paths, iter_row_files
from harness.data.sampling import check_limit
from harness.types import ConfigError, Document, Query, Span

HUB_ID = "google-research-datasets/natural_questions"
DROP_SECTIONS = ("See also", "Notes", "References")
ROW_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".json")
GOOGLE_RELEASE = "https://ai.google.com/research/NaturalQuestions/download"

# -- the loader ---------------------------------------------------------------------------------

@dataclass
class _Example:
    """A mapped row. Only the page's key is held: its text is stored once per page and its
    token map is dropped (a 10k-token map costs ~1 MB, and the train split has 300k rows)."""

    f: RowFields
    doc_key: tuple[str, str]
    title: str
    url: str
    question: str
    evidence: list[tuple[int, int]]
    answers: list[str]
    meta: dict[str, Any]


class NaturalQuestions(DatasetLoader):
    """``source`` (null: ``path`` when ``path`` is set, else hub): ``hub`` =
    ``datasets.load_dataset(hub_id, config, split=split, streaming=streaming,
    revision=revision)``; ``path`` = ``path``, a parquet / jsonl(.gz) file, a folder of them
    (read recursively in name order) or a glob, rows in the Hub layout or Google's. No bundled
    sample.

    MC-indexing evaluates on NQ's dev set (586 questions after its filters), hence the default
    ``config=dev``, ``split=validation``. Everything else: see the module docstring.
    """
    title = "Natural Questions"

    version = 2
    sources = ("hub", "path")
    default_source = "hub"

    def __init__(self, path: str | Path | None = None, name: str = "nq",
                 hub_id: str = HUB_ID, config: str = "dev", split: str = "validation",
                 streaming: bool = False, revision: str | None = None,
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, min_tokens: int = 10000,
                 drop_sections: Iterable[str] | None = DROP_SECTIONS, heading_levels: int = 3,
                 require_long_answer: bool = True, same_section: bool = True,
                 annotation: str = "first", answer_scope: str = "long_answer",
                 source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed)
        self.hub_id, self.config, self.split = hub_id, config, split
        self.set_source(source, path, hub_id)
        self.streaming, self.revision = bool(streaming), revision
        if check_limit("min_tokens", min_tokens) is None:
            raise ConfigError("min_tokens must be an integer >= 0, got None")
        self.min_tokens = min_tokens
        if isinstance(drop_sections, str):
            drop_sections = [drop_sections]
        self.drop_sections = tuple(str(s) for s in drop_sections or ())  # Hydra: ListConfig
        if isinstance(heading_levels, bool) or heading_levels not in range(1, 7):
            raise ConfigError(f"heading_levels must be 1..6 (H1..H6), got {heading_levels!r}")
        self.heading_levels = heading_levels
        self.require_long_answer, self.same_section = bool(require_long_answer), bool(same_section)
        if annotation not in ("first", "all"):
            raise ConfigError(f"annotation must be 'first' or 'all', got {annotation!r}")
        if answer_scope not in ("long_answer", "section"):
            raise ConfigError(f"answer_scope must be 'long_answer' or 'section', got {answer_scope!r}")
        self.annotation, self.answer_scope = annotation, answer_scope
        self._pages: dict[tuple[str, str], Page] = {}  # doc key -> page, filled by load()

    # -- sources -------------------------------------------------------------------------

    def how_to_get(self) -> str:
        return (
            f"Get Natural Questions one of these ways: "
            f"dataset.source=hub (the default) where the Hugging Face Hub is reachable (loads {HUB_ID}, "
            f"dataset.config=dev is the 7,830-question validation set MC-indexing evaluates on; "
            f"config=default split=train is about 40 GB, add dataset.streaming=true to read it "
            f"without a full download); or download the parquet files of that dataset (or "
            f"Google's jsonl.gz release, {GOOGLE_RELEASE}) and pass dataset.path=<file, folder "
            f"or glob>.")

    def _files(self) -> list[Path]:
        files = expand_paths(self.path, ROW_SUFFIXES)
        if not files:
            raise self.unavailable(f"{self.path} is no file, folder or glob holding "
                                   f"{' / '.join(ROW_SUFFIXES)} files")
        return files

    def _stream_hub(self) -> Iterator[tuple[str, Any]]:
        import datasets  # looked up at call time, so tests can stand in for the Hub

        where = f"{self.hub_id} ({self.config}/{self.split})"
        try:
            table = datasets.load_dataset(self.hub_id, self.config, split=self.split,
                                          streaming=self.streaming, revision=self.revision)
            rows = iter(table)
        except Exception as e:  # offline, renamed, no such config: all end the same way
            raise self.unavailable(f"could not load {where} from the Hugging Face Hub "
                                   f"({type(e).__name__}: {e})") from e
        i = 0
        while True:
            try:
                raw = next(rows)
            except StopIteration:
                return
            except Exception as e:  # a stream that breaks half-way
                raise self.unavailable(f"reading {where} failed at row {i} "
                                       f"({type(e).__name__}: {e})") from e
            yield f"{where} row {i}", raw
            i += 1

    def _rows(self) -> Iterator[tuple[str, Any]]:
        return self._stream_hub() if self.hub else iter_row_files(self._files(), self.name)

    # -- one row -------------------------------------------------------------------------

    def _example(self, location: str, raw: Any, counters: dict[str, int]) -> _Example | None:
        """The row mapped and checked, or None when a filter skips it (counted)."""
        if isinstance(raw, dict) and "document_tokens" in raw:
            raw = from_google_row(raw)
        f = RowFields(self.name, location, raw, "id")
        f.row = f.get("id", str)
        doc = f.get("document", dict)
        tok = columns(f, doc.get("tokens"), "document.tokens", ("token", "is_html"),
                      ("start_byte", "end_byte"))
        tokens, is_html = tok["token"], tok["is_html"]
        for k, (t, h) in enumerate(zip(tokens, is_html)):
            if not isinstance(t, str):
                raise f.error(f"document.tokens.token[{k}]", f"must be a string, got {type(t).__name__}")
            if h not in (True, False, 0, 1):
                raise f.error(f"document.tokens.is_html[{k}]", f"must be a boolean, got {h!r}")
        is_html = [bool(h) for h in is_html]
        title = f.get("title", str, "", source=doc, label="document.title")
        url = f.get("url", str, "", source=doc, label="document.url")
        question = f.get("question", dict)
        qtext = f.get("text", str, source=question, label="question.text")
        cands = columns(f, raw.get("long_answer_candidates") or {"start_token": [], "end_token": []},
                        "long_answer_candidates", ("start_token", "end_token"))
        annotations = parse_annotations(f, len(tokens), cands)

        with_long = [a for a in annotations if a.long is not None]
        if not with_long and self.require_long_answer:
            counters["queries_skipped_no_long_answer"] += 1
            return None
        page = build_page(tokens, is_html, self.heading_levels,
                          frozenset(title_key(s) for s in self.drop_sections))
        if not page.text.strip():
            raise f.error("document.tokens", "the document has no text tokens")

        spans: dict[int, tuple[int, int] | None] = {}
        for a in with_long:
            st, et = a.long[0], a.long[1]
            inside = [k for k in range(st, et) if page.char_start[k] >= 0]
            if inside:
                spans[a.index] = (page.char_start[inside[0]], page.char_end[inside[-1]])
            elif any(lo <= st < hi for lo, hi in page.dropped):
                spans[a.index] = None  # in a dropped section
            else:
                raise f.error(f"annotations.long_answer[{a.index}]",
                              f"token span [{st}, {et}) holds no text token")
        if self.same_section and len(with_long) > 1:
            homes = {None if spans[a.index] is None else
                     innermost_section(page.sections, spans[a.index][0]) for a in with_long}
            if len(homes) > 1:
                counters["queries_skipped_annotations_across_sections"] += 1
                return None
        used = with_long[:1] if self.annotation == "first" else with_long
        if used and all(spans[a.index] is None for a in used):
            counters["queries_skipped_answer_in_dropped_section"] += 1
            return None
        if page.n_tokens < self.min_tokens:
            counters["queries_skipped_min_tokens"] += 1
            return None

        evidence, long_tokens = [], []
        for a in used:
            span = spans[a.index]
            if span is None:
                continue
            if self.answer_scope == "section":
                home = innermost_section(page.sections, span[0])
                span = (home.start, home.end) if home else span
            if span not in evidence:
                evidence.append(span)
            long_tokens.append(sum(page.char_start[k] >= 0 for k in range(a.long[0], a.long[1])))
        answers, short_spans = [], []
        for a in used:
            for ss, se, txt in a.short:
                inside = [k for k in range(ss, se) if page.char_start[k] >= 0]
                if inside:
                    short_spans.append([page.char_start[inside[0]], page.char_end[inside[-1]]])
                txt = txt if txt else " ".join(tokens[k] for k in range(ss, se) if not is_html[k])
                if txt and txt not in answers:
                    answers.append(txt)
            if a.yes_no and a.yes_no not in answers:
                answers.append(a.yes_no)
        meta = {"example_id": f.row, "annotation_ids": [a.ann_id for a in used],
                "n_annotations": len(annotations), "n_long_answers": len(with_long),
                "long_answer_tokens": [list(a.long[:2]) for a in used],
                "long_answer_bytes": [list(a.long[2:4]) for a in used],
                "candidate_index": [a.long[4] for a in used],
                "long_answer_n_tokens": long_tokens,
                "short_answer_spans": short_spans, "yes_no_answer": [a.yes_no for a in used],
                "answer_scope": self.answer_scope}
        key = (title or url, hashlib.sha256(page.text.encode()).hexdigest())
        if key not in self._pages:
            self._pages[key] = Page(page.text, [], [], page.sections, page.n_tokens, [],
                                    page.headings_dropped)
        return _Example(f, key, title, url, qtext, evidence, answers, meta)

    # -- loading -------------------------------------------------------------------------

    def read(self) -> Read:
        counters = {k: 0 for k in (
            "rows_read", "queries_skipped_no_long_answer",
            "queries_skipped_annotations_across_sections",
            "queries_skipped_answer_in_dropped_section", "queries_skipped_min_tokens",
            "docs_title_collisions")}
        self._pages: dict[tuple[str, str], Page] = {}
        doc_order: list[tuple[str, str]] = []
        in_order: set[tuple[str, str]] = set()
        examples: list[_Example] = []
        for location, raw in self._rows():
            if self.queries_full(len(examples)):
                break
            counters["rows_read"] += 1
            ex = self._example(location, raw, counters)
            if ex is None:
                continue
            if ex.doc_key not in in_order:
                if self.docs_full(len(doc_order)):
                    break  # the first row on a page beyond the limit ends the scan, unused
                doc_order.append(ex.doc_key)
                in_order.add(ex.doc_key)
            examples.append(ex)
            if self.queries_full(len(examples)):
                break  # stop before pulling another row from a stream

        kept_keys = set(self.keep_docs(doc_order))
        limited = self.keep_queries(
            self.on_kept_docs(examples, kept_keys, lambda ex: (ex.doc_key,), key=None))

        docs: dict[tuple[str, str], Document] = {}
        ids_by_title: dict[str, str] = {}
        queries, seen_qids = [], set()
        alignment = AlignmentReport()
        for ex in limited:
            if ex.f.row in seen_qids:
                raise ex.f.error("id", f"duplicate id {ex.f.row!r}")
            seen_qids.add(ex.f.row)
            doc = docs.get(ex.doc_key)
            if doc is None:
                doc = docs[ex.doc_key] = self._document(ex, ids_by_title, counters)
            for _ in ex.evidence:
                alignment.add((0, 0, "exact"))  # token offsets: exact by construction
            queries.append(Query(
                qid=ex.f.row, question=ex.question, answers=tuple(ex.answers),
                doc_ids=(doc.doc_id,),
                evidence=tuple(Span(doc.doc_id, s, e) for s, e in ex.evidence),
                meta={**ex.meta, "evidence_method": ["token_offsets"] * len(ex.evidence)}))
        documents = list(docs.values())
        n_tok = [d.meta["n_tokens"] for d in documents]
        n_sec = [len(d.sections) for d in documents]
        ans_tok = [t for q in queries for t in q.meta["long_answer_n_tokens"]]
        return documents, queries, {
            "words_per_doc": mean([len(d.text.split()) for d in documents]),
            "tokens_per_doc": mean(n_tok), "sections_per_doc": mean(n_sec),
            "tokens_per_section": sum(n_tok) / sum(n_sec) if sum(n_sec) else 0.0,
            "tokens_per_answer": mean(ans_tok),
            "sections_dropped": sum(d.meta["n_sections_dropped"] for d in documents),
            "queries_without_short_answer": sum(not q.answers for q in queries),
            **alignment.as_report("evidence"),
            "evidence_from_token_offsets": sum(len(q.evidence) for q in queries), **counters}

    def _document(self, ex: _Example, ids_by_title: dict[str, str], counters) -> Document:
        page = self._pages[ex.doc_key]
        base = ex.title or ex.url or ex.f.row
        doc_id = base
        if base in ids_by_title:  # same title, other text: another revision of the page
            counters["docs_title_collisions"] += 1
            doc_id = f"{base} @{ex.doc_key[1][:8]}"
        ids_by_title.setdefault(base, doc_id)
        return Document(doc_id=doc_id, text=page.text, title=ex.title,
                        sections=tuple(page.sections), language="en",
                        meta={"url": ex.url, "example_id": ex.f.row, "n_tokens": page.n_tokens,
                              "sections_dropped": page.headings_dropped,
                              "n_sections_dropped": len(page.headings_dropped)})

    def params(self) -> dict:
        return {"min_tokens": self.min_tokens, "drop_sections": list(self.drop_sections),
                "heading_levels": self.heading_levels,
                "require_long_answer": self.require_long_answer,
                "same_section": self.same_section, "annotation": self.annotation,
                "answer_scope": self.answer_scope}

    def source_files(self) -> list[Path]:
        return [] if self.hub else self._files()

    def content_digest(self) -> str:
        if not self.hub:
            return super().content_digest()
        # Hashing 40 GB of rows per run is not an option: the Hub location stands for the
        # content (NQ has not changed since its release); pin ``revision`` to be exact.
        return json.dumps([self.hub_id, self.config, self.split, self.revision])
