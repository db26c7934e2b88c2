"""WikiWeb2M (Burns et al. 2023) as MC-indexing uses it (Dong et al. 2024, §4.1, App. B):
whole Wikipedia pages with their section tree, plus question-answer pairs with an answer scope.

Upstream: gzipped TFRecord files of ``tensorflow.SequenceExample`` on GCS (documented in
github.com/google-research-datasets/wit, ``wikiweb2m.md``)::

    https://storage.googleapis.com/gresearch/wit/wikiweb2m/
        wikiweb2m-train.tfrecord.gz-0000{0..4}-of-00005   (1,803,225 pages)
        wikiweb2m-val.tfrecord.gz                         (100,475)
        wikiweb2m-test.tfrecord.gz                        (100,833)

    context   split, page_url, page_title, raw/clean_page_description (bytes);
              page_contains_images, page_content_sections_without_table_list,
              is_page_description_sample (int64)
    sequence  one entry per section, in page order: section_title, section_text,
              section_raw/clean_1st_sentence, section_rest_sentence (bytes); section_index,
              section_depth, section_heading_level, section_parent_index, section_contains_*
              (int64); section_subsection_index and section_image_* (several values a section)

Reading needs no TensorFlow: ``harness.data.tfrecord`` reads the TFRecord framing and decodes
the payload's protobuf wire format for the few message types involved. The length CRC is always
checked (it catches a file that is no TFRecord at once); the payload CRC only with
``verify_data_crc`` because pure-Python CRC-32C runs at a few MB/s and gzip already checks the
decompressed stream of a ``.gz`` file. A JSONL export with the same names is read as well: one
page a line, context features as values, sequence features as lists with one value (or one
list) per section.

Document: each section as its title line, "\\n", its ``section_text`` (kept as is, so offsets
into it stay valid), sections joined by a blank line; the page title is ``Document.title``.
Section levels come from the ``section_parent_index`` tree (a root is level 1, a child one
below its parent), which does not depend on whether ``section_depth`` counts from 0 or 1;
a section spans its title, text and subsections. A page whose tree is not in page order
(a child before its parent, or away from its parent's other descendants) cannot be cut into
nested spans: it is skipped and counted. Per-section upstream fields stay in
``meta["sections"]``.

QA: MC-indexing generated three questions per section with GPT-4 (prompt of its Figure 6:
question, type, answer, answer_context) on pages over 10k tokens and evaluated on 30 pages of
28k-30k tokens; the pairs were not published. Give them, or your own, with ``qa_path``: a
.jsonl / .json / .parquet file of rows

    {qid?, page_url | page_title, question, answer | answers, section_index?,
     answer_scope?, answer_context?, type?}

``section_index`` is the upstream index of the section the question is about.
``answer_scope`` is the answer scope (MC-indexing §5.2 recall is the share of it retrieved):
an integer (a section index: its text), ``{start, end}`` (character offsets into that
section's ``section_text``) or a string (verbatim context sentences, aligned in the section
first, then in the page: exact, normalised, fuzzy; unaligned ones are kept and counted).
``answer_context`` (MC-indexing's name) is the string form. With neither, the section's text
is the scope. Without ``qa_path`` a load fails with a ConfigError saying so, unless
``require_qa=false`` (pages only, for chunking-only runs).

Only pages some QA row names are loaded (all pages without QA); ``split`` keeps pages whose
context ``split`` matches (and, in a folder, the files named for it); ``min_tokens`` /
``max_tokens`` bound the page length in whitespace-separated words (the paper does not name its
tokenizer): MC-indexing's QA pages have over 10k tokens, its evaluation pages 28k-30k.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

from harness.data.align import (FUZZY_MIN_SCORE, AlignmentReport, align_evidence,
                                check_fuzzy_min_score, configured_matchers)
from harness.data.base import DatasetLoader, Read, mean
from harness.data.rows import RowFields, expand_paths, read_rows
from harness.data.sampling import check_limit
from harness.data.wikiweb2m_rows import Page, build_page, page_records
from harness.types import ConfigError, Document, Query, Span

GCS = "https://storage.googleapis.com/gresearch/wit/wikiweb2m/"
FILES = {"train": [f"wikiweb2m-train.tfrecord.gz-{k:05d}-of-00005" for k in range(5)],
         "val": ["wikiweb2m-val.tfrecord.gz"], "test": ["wikiweb2m-test.tfrecord.gz"]}
DOC_URL = "github.com/google-research-datasets/wit/blob/main/wikiweb2m.md"



class WikiWeb2M(DatasetLoader):
    """``path``: a TFRecord file (gzipped or not), a JSONL export, a folder of them or a glob,
    required (``source`` can only be ``path``: WikiWeb2M is not on the Hub, nothing is bundled);
    ``qa_path``: the QA file described in the module docstring. See there for the rest."""

    version = 2
    sources = ("path",)
    default_source = "path"

    def __init__(self, path: str | Path | None = None, qa_path: str | Path | None = None,
                 require_qa: bool = True, name: str = "wikiweb2m", split: str | None = None,
                 min_tokens: int = 10000, max_tokens: int | None = None,
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 seed: int | None = None, verify_data_crc: bool = False,
                 fuzzy_min_score: float | None = FUZZY_MIN_SCORE, source: str | None = None):
        super().__init__(name, limit_docs, limit_queries, seed)
        self.set_source(source, path)
        self.qa_path = None if qa_path is None or str(qa_path) in ("", "???") else Path(qa_path)
        self.require_qa = bool(require_qa)
        self.split = split
        if check_limit("min_tokens", min_tokens) is None:
            raise ConfigError("min_tokens must be an integer >= 0, got None")
        self.min_tokens = min_tokens
        self.max_tokens = check_limit("max_tokens", max_tokens)
        self.verify_data_crc = bool(verify_data_crc)
        self.fuzzy_min_score = check_fuzzy_min_score(fuzzy_min_score)

    # -- sources -------------------------------------------------------------------------

    def how_to_get(self) -> str:
        names = ", ".join(n for files in FILES.values() for n in files)
        return (
            f"WikiWeb2M is not on the Hugging Face Hub: "
            f"download the TFRecord files from {GCS} ({names}; see {DOC_URL}) and pass "
            f"dataset.path=<file, folder or glob>; no TensorFlow is needed. A JSONL export with "
            f"the same feature names works too.")

    def _files(self) -> list[Path]:
        if self.path.is_dir():
            files = sorted(p for p in self.path.rglob("*") if p.is_file() and (
                ".tfrecord" in p.name or p.name.endswith((".jsonl", ".jsonl.gz"))))
            if self.split is not None:  # upstream names: wikiweb2m-<split>.tfrecord.gz[-k-of-n]
                files = [p for p in files if p.name.startswith(f"wikiweb2m-{self.split}.")] or files
        else:
            files = expand_paths(self.path, ())
        if not files:
            raise self.unavailable(f"{self.path} is no TFRecord (*.tfrecord*) or .jsonl file, "
                                 f"nor a folder or glob holding one")
        return files

    def _check_qa(self) -> None:
        if self.qa_path is None and self.require_qa:
            raise ConfigError(
                f"dataset {self.name!r}: no questions. MC-indexing (Dong et al. 2024, §4.1) "
                f"generated its WikiWeb2M question-answer pairs with GPT-4 and did not publish "
                f"them, so there is nothing to download. Pass dataset.qa_path=<.jsonl> with rows "
                f"{{page_url or page_title, question, answer, section_index, answer_scope}} "
                f"(answer_scope: a section index, {{start, end}} in that section's text, or the "
                f"verbatim context sentences; see harness/data/wikiweb2m.py), or "
                f"dataset.require_qa=false to load the pages alone for a run without retrieval.")
        if self.qa_path is not None and not self.qa_path.is_file():
            raise ConfigError(f"dataset {self.name!r}: dataset.qa_path {self.qa_path} "
                              f"does not exist")

    def _records(self) -> Iterator[tuple[str, dict[str, Any], Any]]:
        return page_records(self._files(), self.name, self.verify_data_crc)

    # -- one page ------------------------------------------------------------------------

    # -- QA ------------------------------------------------------------------------------

    def _qa_rows(self) -> list[tuple[RowFields, str, str]]:
        """(row, lookup field, key) per QA row, every row checked up front."""
        out, seen = [], set()
        for location, raw in read_rows(self.qa_path, self.name):
            f = RowFields(self.name, f"{self.qa_path.name}: {location}", raw, "qid")
            url, title = f.get("page_url", str, ""), f.get("page_title", str, "")
            if not url and not title:
                raise f.error("page_url", "missing required field (or page_title)")
            f.get("question", str)
            if f.raw.get("answers") is not None:
                f.get("answers", "str_list")
            else:
                f.get("answer", str, "")
            section = f.get("section_index", int, None)
            scope = f.raw.get("answer_scope")
            if isinstance(scope, bool) or not (scope is None or isinstance(scope, (int, str, dict))):
                raise f.error("answer_scope", "must be a section index, {start, end} or a string, "
                                              f"got {type(scope).__name__}")
            if isinstance(scope, dict):
                f.get("start", int, source=scope, label="answer_scope.start")
                f.get("end", int, source=scope, label="answer_scope.end")
                if section is None:
                    raise f.error("answer_scope", "{start, end} are offsets into a section's "
                                                  "text: section_index is required")
            f.get("answer_context", str, None)
            if section is None and scope is None and f.raw.get("answer_context") is None:
                raise f.error("answer_scope", "no answer scope: give section_index, answer_scope "
                                              "or answer_context")
            if isinstance(scope, int) and section is not None and scope != section:
                raise f.error("answer_scope", f"section {scope} but section_index is {section}")
            qid = f.get("qid", str, None) or f"{url or title}#{len(out)}"
            if qid in seen:
                raise f.error("qid", f"duplicate qid {qid!r}")
            seen.add(qid)
            f.row = qid
            out.append((f, "page_url" if url else "page_title", url or title))
        return out

    def _query(self, f: RowFields, page: Page, alignment: AlignmentReport, matchers,
               counters: dict[str, int]) -> Query:
        doc = page.doc
        section = f.get("section_index", int, None)
        scope = f.raw.get("answer_scope")
        if isinstance(scope, int):
            section = scope
        if section is not None and section not in page.body:
            raise f.error("section_index", f"page {page.url or doc.title!r} has no section "
                                           f"{section} (it has {sorted(page.body)})")
        lo, hi = page.body[section] if section is not None else (0, len(doc.text))
        snippet = scope if isinstance(scope, str) else f.get("answer_context", str, None)
        meta: dict[str, Any] = {"page_url": page.url, "section_index": section,
                                "evidence_method": []}
        span, unaligned = None, ()
        if isinstance(scope, dict):
            s, e = scope["start"], scope["end"]
            if not 0 <= s < e <= hi - lo:
                raise f.error("answer_scope", f"[{s}, {e}) is not inside the text of section "
                                              f"{section} ({hi - lo} characters)")
            span, method = (lo + s, lo + e), "offsets"
            alignment.add((*span, "exact"))  # exact by construction, counted with the rest
        elif snippet is not None:
            found = alignment.add(align_evidence(doc.text, snippet, lo, hi, matchers))
            if found:
                span, method = found[:2], found[2]
                counters["evidence_outside_section"] += section is not None and not (
                    lo <= span[0] and span[1] <= hi)
            else:
                unaligned = (snippet,)
        else:
            body = doc.text[lo:hi]
            if not body.strip():
                raise f.error("section_index", f"section {section} of {page.url or doc.title!r} "
                                               f"has no text to be an answer scope")
            span = (lo + len(body) - len(body.lstrip()), lo + len(body.rstrip()))
            method = "section"
            alignment.add((*span, "exact"))
        evidence = ()
        if span is not None:
            evidence = (Span(doc.doc_id, *span),)
            meta["evidence_method"] = [method]
        if f.raw.get("answers") is not None:
            answers = tuple(f.get("answers", "str_list"))
        else:
            answer = f.get("answer", str, "")
            answers = (answer,) if answer else ()
        qtype = f.get("type", str, "")
        if qtype:
            meta["question_type"] = qtype
        return Query(qid=f.row, question=f.get("question", str), answers=answers,
                     doc_ids=(doc.doc_id,), evidence=evidence, task=qtype, meta=meta,
                     unaligned_evidence=unaligned)

    # -- loading -------------------------------------------------------------------------

    def read(self) -> Read:
        self._check_qa()
        qa = self._qa_rows() if self.qa_path is not None else None
        wanted = None if qa is None else {(field, key) for _, field, key in qa}
        counters = {k: 0 for k in (
            "pages_read", "pages_skipped_split", "pages_skipped_bad_tree", "pages_duplicate",
            "docs_skipped_min_tokens", "docs_skipped_max_tokens", "queries_page_not_found",
            "evidence_outside_section", "docs_title_collisions")}
        pages: list[Page] = []
        found: dict[tuple[str, str], Page | None] = {}  # None: found but filtered out
        n_wanted_found = 0
        for location, context, sections in self._records():
            if self.docs_full(len(pages)):
                break
            if wanted is not None and n_wanted_found == len(wanted):
                break
            counters["pages_read"] += 1
            keys = {(k, context[k]) for k in ("page_url", "page_title")
                    if isinstance(context.get(k), str) and context[k]}
            if wanted is not None and not keys & wanted:
                continue
            if self.split is not None and context.get("split") not in (None, self.split):
                counters["pages_skipped_split"] += 1
                continue
            if any(k in found for k in keys):
                counters["pages_duplicate"] += 1
                continue
            raw = {**context, **sections()}
            f = RowFields(self.name, location, raw, "page_url")
            page = build_page(f)
            kept = None
            if page is None:
                counters["pages_skipped_bad_tree"] += 1
            elif page.n_tokens < self.min_tokens:
                counters["docs_skipped_min_tokens"] += 1
            elif self.max_tokens is not None and page.n_tokens > self.max_tokens:
                counters["docs_skipped_max_tokens"] += 1
            else:
                kept = page
                pages.append(page)
            for k in keys:
                found[k] = kept
                n_wanted_found += wanted is not None and k in wanted

        pages = self.keep_docs(pages, key=None)
        by_key: dict[tuple[str, str], Page] = {}
        ids: set[str] = set()
        for p in pages:
            if p.doc.doc_id in ids:  # same title, another URL
                counters["docs_title_collisions"] += 1
                suffix = hashlib.sha256(p.url.encode()).hexdigest()[:8]
                p.doc = Document(f"{p.doc.doc_id} @{suffix}", p.doc.text, p.doc.title,
                                 p.doc.sections, p.doc.language, p.doc.meta)
            ids.add(p.doc.doc_id)
            by_key[("page_url", p.url)] = by_key[("page_title", p.doc.title)] = p

        queries: list[Query] = []
        alignment = AlignmentReport()
        if qa is not None:
            missing = [f for f, field, key in qa if (field, key) not in found]
            if qa and len(missing) == len(qa):
                raise self.unavailable(f"none of the {len(qa)} QA rows in {self.qa_path} names a "
                                     f"page in {self.path} (split {self.split!r})")
            counters["queries_page_not_found"] = len(missing)
            on_kept = self.on_kept_docs([(f, (field, key)) for f, field, key in qa
                                         if (field, key) in found], by_key, lambda fk: (fk[1],))
            limited = self.keep_queries([(f, by_key[k]) for f, k in on_kept])
            matchers = configured_matchers(self.fuzzy_min_score)
            queries = [self._query(f, p, alignment, matchers, counters) for f, p in limited]
        else:
            self.count("queries_dropped_doc_filters", 0)
            self.count("queries_dropped_limit_queries", 0)
        documents = [p.doc for p in pages]
        n_tok = [p.n_tokens for p in pages]
        n_sec = [len(d.sections) for d in documents]
        text_of = {d.doc_id: d.text for d in documents}
        scope_tokens = [len(text_of[s.doc_id][s.start:s.end].split())
                        for q in queries for s in q.evidence]
        methods = [m for q in queries for m in q.meta["evidence_method"]]
        return documents, queries, {
            "words_per_doc": mean(n_tok), "tokens_per_doc": mean(n_tok),
            "sections_per_doc": mean(n_sec),
            "tokens_per_section": sum(n_tok) / sum(n_sec) if sum(n_sec) else 0.0,
            "tokens_per_answer": mean(scope_tokens),
            **alignment.as_report("evidence"),
            "evidence_from_offsets": methods.count("offsets"),
            "evidence_from_section": methods.count("section"), **counters}

    def source_files(self) -> list[Path]:
        self._check_qa()
        return self._files() + ([self.qa_path] if self.qa_path is not None else [])

    def params(self) -> dict:
        return {"split": self.split, "require_qa": self.require_qa,
                "min_tokens": self.min_tokens, "max_tokens": self.max_tokens,
                "fuzzy_min_score": self.fuzzy_min_score,
                "qa_file": None if self.qa_path is None else self.qa_path.name}
