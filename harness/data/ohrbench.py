"""OHR-Bench (v1) from its upstream GitHub layout (github.com/opendatalab/OHR-Bench).

    qas.jsonl | qas.json      rows {doc_name "domain/stem", ID, questions, answers, doc_type,
                              answer_form, evidence_source, evidence_context, evidence_page_no,
                              is_extra_qa}
    retrieval_base/gt/<domain>/<stem>.json    [{page_idx, text}, ...] (ground-truth parse)

A document is its pages joined with a blank line, one level-1 section per page. Evidence is a
snippet plus a page number: it is aligned in that page's span first, then in the whole document;
the exact / normalised / unaligned shares go to the load report. HiChunk evaluates OHR-Bench as
evidence-sparse single-hop QA, hence task "T0".

Only documents that some QA row names are loaded, in order of first mention.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.data.align import AlignmentReport, align_evidence
from harness.data.base import SAMPLES_DIR, DatasetLoader, Read
from harness.data.rows import RowFields, find_file, read_rows
from harness.data.sampling import check_limit
from harness.types import ConfigError, DataError, Document, Query, Section, Span

BUNDLED = SAMPLES_DIR / "ohr_bench"
OHR_REPO = "github.com/opendatalab/OHR-Bench"
PAGE_SEPARATOR = "\n\n"


def _as_domains(domains) -> tuple[str, ...] | None:
    if domains is None:
        return None
    if isinstance(domains, str):
        return (domains,)
    return tuple(str(d) for d in domains)  # Hydra passes a ListConfig


class OHRBench(DatasetLoader):
    """``source`` (null: ``path`` when ``path`` is set, else bundled): ``bundled`` = the bundled
    real sample; ``path`` = the folder ``path`` holding ``qas.jsonl`` and ``retrieval_base/``
    (a full checkout's ``data/``). OHR-Bench has no Hub copy this loader reads.

    ``qas``: the QA file's stem: ``qas`` (v1, 4,598 QAs) or ``qas_v2`` (the v2 release, 8,498 QAs, the
    same row schema; HiChunk's Table 2 counts are v2's). ``domains`` keeps documents of those domains; ``min_words`` drops documents with fewer
    words (HiChunk keeps those over 4k); ``limit_docs`` keeps the first N documents left and
    ``limit_queries`` the first N of their queries, or N drawn with ``seed``. Every drop is counted in the report.
    """
    title = "OHR-Bench"

    version = 3
    sources = ("bundled", "path")
    default_source = "bundled"
    bundled_dir = BUNDLED

    def __init__(self, path: str | Path | None = None, name: str = "ohrbench",
                 limit_docs: int | None = None, limit_queries: int | None = None,
                 domains=None, min_words: int = 0, seed: int | None = None,
                 source: str | None = None, qas: str = "qas"):
        super().__init__(name, limit_docs, limit_queries, seed)
        if qas not in ("qas", "qas_v2"):
            raise ConfigError(f"dataset.qas must be qas (OHR-Bench v1) or qas_v2 (v2), got {qas!r}")
        self.qas = qas
        self.set_source(source, path)
        self.domains = _as_domains(domains)
        if check_limit("min_words", min_words) is None:
            raise ConfigError("min_words must be an integer >= 0, got None")
        self.min_words = min_words

    def how_to_get(self) -> str:
        return (f"OHR-Bench v1 is published in {OHR_REPO}: clone it and pass "
                f"dataset.path=<its data/ folder, holding qas.json and retrieval_base/gt/>; or "
                f"dataset.source=bundled (the default) for the bundled sample ({BUNDLED}).")

    # -- reading -------------------------------------------------------------------------

    def _qas_path(self) -> Path:
        return find_file(self.path, self.qas, (".jsonl", ".json"))

    def _doc_path(self, doc_name: str) -> Path:
        return self.path / "retrieval_base" / "gt" / f"{doc_name}.json"

    def _qa_rows(self) -> list[RowFields]:
        rows, seen = [], set()
        for location, raw in read_rows(self._qas_path(), self.name):
            f = RowFields(self.name, location, raw, "ID")
            qid = f.get("ID", str)
            if qid in seen:
                raise f.error("ID", f"duplicate ID {qid!r}")
            seen.add(qid)
            parts = f.get("doc_name", str).split("/")
            if len(parts) != 2 or not all(parts) or ".." in parts:
                raise f.error("doc_name", f"must be 'domain/stem', got {f.raw['doc_name']!r}")
            rows.append(f)
        return rows

    def _selected_doc_names(self, rows: list[RowFields]) -> tuple[list[str], int]:
        """Documents in order of first mention, after the domain filter; and how many it dropped."""
        names = list(dict.fromkeys(f.raw["doc_name"] for f in rows))
        if self.domains is None:
            return names, 0
        known = sorted({n.split("/")[0] for n in names})
        unknown = [d for d in self.domains if d not in known]
        if unknown:  # checked with the fingerprint, before the load stage's cache is read
            raise ConfigError(f"dataset.domains: no domain {', '.join(map(repr, unknown))} in "
                              f"{self._qas_path()}; its domains are {', '.join(known)}")
        kept = [n for n in names if n.split("/")[0] in self.domains]
        return kept, len(names) - len(kept)

    def _read_document(self, doc_name: str, first_row: RowFields) -> Document:
        path = self._doc_path(doc_name)
        if not path.is_file():
            raise first_row.error("doc_name", f"document file not found: {path}")
        try:
            pages = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise DataError(self.name, doc_name, "(whole file)",
                            f"malformed JSON in {path}: {e}") from None
        if not isinstance(pages, list):
            raise DataError(self.name, doc_name, "(whole file)",
                            f"{path} must hold a list of pages")
        page_rows = [RowFields(self.name, str(path), p, "") for p in pages]
        for f in page_rows:
            f.row = doc_name  # errors name the document; the location names its file
        texts = [f.get("text", str, label=f"pages[{i}].text") for i, f in enumerate(page_rows)]
        sections, offset = [], 0
        for i, (f, text) in enumerate(zip(page_rows, texts)):
            page_idx = f.get("page_idx", int, label=f"pages[{i}].page_idx")
            if text:  # an empty page has no span to mark (sections are non-empty spans)
                sections.append(Section(offset, offset + len(text), 1, f"page {page_idx}"))
            offset += len(text) + len(PAGE_SEPARATOR)
        domain, stem = doc_name.split("/")
        return Document(doc_id=doc_name, text=PAGE_SEPARATOR.join(texts), title=stem,
                        sections=tuple(sections), language="en", meta={"domain": domain})

    # -- loading -------------------------------------------------------------------------

    def read(self) -> Read:
        rows = self._qa_rows()
        doc_names, dropped_domains = self._selected_doc_names(rows)
        first_row = {}
        for f in rows:
            first_row.setdefault(f.raw["doc_name"], f)

        documents, dropped_min_words = [], 0
        for doc_name in doc_names:
            if self.docs_full(len(documents)):
                break  # the first N: no need to read the rest
            doc = self._read_document(doc_name, first_row[doc_name])
            if len(doc.text.split()) < self.min_words:
                dropped_min_words += 1
                continue
            documents.append(doc)
        report = {"docs_dropped_domains": dropped_domains,
                  "docs_dropped_min_words": dropped_min_words}
        documents = self.keep_docs(documents, of=len(doc_names) - dropped_min_words)

        by_id = {d.doc_id: d for d in documents}
        kept_rows = self.on_kept_docs(rows, by_id, lambda f: (f.raw["doc_name"],))
        limited = self.keep_queries(kept_rows)

        alignment = AlignmentReport()
        counters = {"evidence_missing": 0, "evidence_page_not_found": 0}
        queries = [self._query(f, by_id[f.raw["doc_name"]], alignment, counters) for f in limited]
        return documents, queries, {**alignment.as_report("evidence"), **counters, **report}

    def _query(self, f: RowFields, doc: Document, alignment: AlignmentReport,
               counters: dict[str, int]) -> Query:
        answer = f.raw.get("answers")
        # Numeric answers are strings upstream; accept a bare number without losing it.
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            answer = str(answer)
        else:
            answer = f.get("answers", str)
        snippet = f.get("evidence_context", str, "")
        page_no = f.get("evidence_page_no", int, None)
        meta = {
            "doc_type": f.get("doc_type", str, None),
            "answer_form": f.get("answer_form", str, None),
            "evidence_source": f.get("evidence_source", str, None),
            "evidence_page_no": page_no,
            "is_extra_qa": f.get("is_extra_qa", bool, None),
        }
        evidence, unaligned = (), ()
        if not snippet.strip():
            counters["evidence_missing"] += 1  # nothing to align; counted, not hidden
        else:
            lo, hi = self._page_window(doc, page_no, counters)
            found = alignment.add(align_evidence(doc.text, snippet, lo, hi))
            if found:
                start, end, _ = found
                evidence = (Span(doc.doc_id, start, end),)
            else:
                unaligned = (snippet,)
        return Query(qid=f.raw["ID"], question=f.get("questions", str), answers=(answer,),
                     doc_ids=(doc.doc_id,), evidence=evidence, task="T0", meta=meta,
                     unaligned_evidence=unaligned, evidence_wording=(snippet,) if evidence else ())

    @staticmethod
    def _page_window(doc: Document, page_no: int | None,
                     counters: dict[str, int]) -> tuple[int, int | None]:
        """The evidence page's span; the whole text when the page is unknown."""
        if page_no is not None:
            for s in doc.sections:
                if s.title == f"page {page_no}":
                    return s.start, s.end
        counters["evidence_page_not_found"] += 1
        return 0, None

    def source_files(self) -> list[Path]:
        doc_names, _ = self._selected_doc_names(self._qa_rows())
        return [self._qas_path()] + [p for p in map(self._doc_path, doc_names) if p.is_file()]

    def params(self) -> dict:
        doc_names, _ = self._selected_doc_names(self._qa_rows())
        return {"domains": self.domains, "min_words": self.min_words,
                # a file that appears later must change the key
                "missing": [n for n in doc_names if not self._doc_path(n).is_file()]}
