"""Datasets, and the loader skeleton every dataset module fills in.

A loader is configured by Hydra (``configs/dataset/<name>.yaml``, whose ``_target_`` is a class
in ``harness/data/<name>.py``) and is used through two calls: ``load()``, a validated
``Dataset``, and ``fingerprint()``, the identity of the exact input (part of the load stage's
cache key, so editing a data file or a parameter invalidates the cache).

``DatasetLoader`` owns what every dataset shares: ``name``, ``limit_docs``, ``limit_queries`` and
``seed`` (checked once, in ``__init__``), the limits and the counts of what they drop, the one
validation and the fingerprint. A concrete loader implements only reading and mapping its
publisher's rows, through these hooks:

    read() -> (documents, queries, report)   required: the mapped rows, limits applied with the
                                             helpers below; ``report`` holds the loader's own
                                             statistics and skip counters
    source_files() -> list[Path]             the files read, digested for the fingerprint
    content_digest() -> str                  overrides the digest of source_files() when the
                                             input is not local files (e.g. rows from the Hub)
    params() -> dict                         the loader's own parameters, for the fingerprint
    version: int                             bump it when the mapping changes (new cache key)
    how_to_get() -> str                      how to get the input; ``unavailable(problem)``
                                             puts it into the ConfigError for a missing input

Limits, applied inside ``read()`` wherever the loader's flow needs them, each counting its drops
in the report:

    keep_docs(items)                   the first ``limit_docs`` items, or a draw with ``seed``
                                       (``docs_dropped_limit_docs``)
    on_kept_docs(queries, kept, ids)   the queries whose documents were all kept
                                       (``queries_dropped_doc_filters`` unless another key)
    keep_queries(items)                the same for ``limit_queries``
                                       (``queries_dropped_limit_queries``)
    docs_full(n) / queries_full(n)     True once a first-N read (no ``seed``) holds N items:
                                       a loader may stop reading there (large or streamed input)
    count(key, n)                      any other drop count the skeleton should report

``load()`` is the template: ``read()``, then the report ``{n_docs, n_queries, **loader report,
**drop counts}``, then one validation of every record. ``fingerprint()`` is a sha256 over
``content_digest()`` and the parameters: the loader class and its ``version``, ``name``, the
limits, ``seed`` and ``params()``. ``hub_rows`` reads a table from the Hugging Face Hub, with
the error ``unavailable`` gives when it cannot.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from harness.data.sampling import check_limit, check_seed, take
from harness.types import ConfigError, Document, Query

SAMPLES_DIR = Path(__file__).parent / "samples"
T = TypeVar("T")


@dataclass
class Dataset:
    """Validated documents and queries, plus a load report (alignment shares, counts, filters)
    that the pipeline logs with the run, so nothing is dropped silently."""

    name: str
    documents: list[Document]
    queries: list[Query]
    report: dict[str, float] = field(default_factory=dict)

    def validate(self) -> Dataset:
        docs = {}
        for d in self.documents:
            d.validate(self.name)
            docs[d.doc_id] = d
        for q in self.queries:
            q.validate(self.name, docs)
        return self


Read = tuple[list[Document], list[Query], dict[str, Any]]


class DatasetLoader(ABC):
    """The loader skeleton; see the module docstring for the hooks a dataset implements."""

    version: ClassVar[int] = 1

    def __init__(self, name: str, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None):
        self.name = name
        # 0 would be an empty run recorded as if it measured something
        self.limit_docs = check_limit("dataset.limit_docs", limit_docs, minimum=1)
        self.limit_queries = check_limit("dataset.limit_queries", limit_queries, minimum=1)
        self.seed = check_seed(seed)
        self._drops: dict[str, int] = {}

    # -- hooks ---------------------------------------------------------------------------

    @abstractmethod
    def read(self) -> Read:
        """``(documents, queries, report)``: the mapped rows, limits applied; not validated.
        A loader that re-maps another loader's rows may call that loader's ``read()``."""

    def source_files(self) -> list[Path]:
        return []

    def content_digest(self) -> str:
        return files_digest(self.source_files())

    def params(self) -> dict[str, Any]:
        return {}

    def how_to_get(self) -> str:
        """Where the input comes from and how to get it, for ``unavailable``."""
        return ""

    def unavailable(self, problem: str) -> ConfigError:
        """The error for an input that is missing or cannot be read: it says how to get it."""
        how = self.how_to_get()
        return ConfigError(f"dataset {self.name!r}: {problem}" + (f". {how}" if how else ""))

    # -- the template --------------------------------------------------------------------

    def load(self) -> Dataset:
        self._drops = {}
        with self.reading():
            documents, queries, report = self.read()
        report = {"n_docs": len(documents), "n_queries": len(queries), **report, **self._drops}
        return Dataset(self.name, documents, queries, report).validate()

    def fingerprint(self) -> str:
        with self.reading():
            params = {"loader": type(self).__name__, "version": self.version, "name": self.name,
                      "limit_docs": self.limit_docs, "limit_queries": self.limit_queries,
                      "seed": self.seed, **self.params()}
            text = self.content_digest() + json.dumps(params, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A file that is missing, a folder or unreadable ends in one line naming it."""
        try:
            yield
        except OSError as e:
            what = f"cannot read {e.filename}: {e.strerror}" if e.filename and e.strerror else str(e)
            raise self.unavailable(what) from None

    # -- limits, for read() --------------------------------------------------------------

    def count(self, key: str | None, n: int) -> None:
        """Reports ``n`` items dropped under ``key`` (None: not reported)."""
        if key is not None:
            self._drops[key] = self._drops.get(key, 0) + n

    def keep_docs(self, items: Sequence[T], of: int | None = None,
                  key: str | None = "docs_dropped_limit_docs") -> list[T]:
        """``limit_docs`` of ``items``; ``of``: how many candidates there were when a first-N
        read stopped early (those never read count as dropped)."""
        kept = take(items, self.limit_docs, self.seed, "docs")
        self.count(key, (len(items) if of is None else of) - len(kept))
        return kept

    def keep_queries(self, items: Sequence[T],
                     key: str | None = "queries_dropped_limit_queries") -> list[T]:
        kept = take(items, self.limit_queries, self.seed, "queries")
        self.count(key, len(items) - len(kept))
        return kept

    def on_kept_docs(self, items: Iterable[T], kept: Collection[str],
                     doc_ids: Callable[[T], Iterable[str]],
                     key: str | None = "queries_dropped_doc_filters") -> list[T]:
        """The items all of whose ``doc_ids(item)`` are in ``kept``."""
        items = list(items)
        out = [x for x in items if all(d in kept for d in doc_ids(x))]
        self.count(key, len(items) - len(out))
        return out

    def docs_full(self, n: int) -> bool:
        """A first-N read (no seed) already has ``limit_docs`` documents: reading may stop."""
        return self.seed is None and self.limit_docs is not None and n >= self.limit_docs

    def queries_full(self, n: int) -> bool:
        return self.seed is None and self.limit_queries is not None and n >= self.limit_queries

    # -- reading from the Hugging Face Hub -----------------------------------------------

    def hub_rows(self, problem: str, *args: Any, **kwargs: Any) -> list[Any]:
        """``datasets.load_dataset(*args, **kwargs)`` as a list of rows; any failure (offline,
        gated, renamed) is ``unavailable(f"{problem} (<error>)")``."""
        import datasets  # looked up at call time, so tests can stand in for the Hub

        try:
            table = datasets.load_dataset(*args, **kwargs)
        except Exception as e:  # offline, gated, renamed: all end the same way for the user
            raise self.unavailable(f"{problem} ({type(e).__name__}: {e})") from e
        return table.to_list() if hasattr(table, "to_list") else list(table)


def files_digest(paths: list[Path]) -> str:
    """sha256 over the names and bytes of ``paths`` (sorted), for loader fingerprints; read in
    1 MiB blocks, since upstream shards can be gigabytes."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode())
        with p.open("rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def rows_digest(items: Iterable[Any]) -> str:
    """sha256 over JSON renderings of ``items`` (rows that came from the Hub, not from files)."""
    h = hashlib.sha256()
    for item in items:
        h.update(json.dumps(item, sort_keys=True, default=str).encode())
    return h.hexdigest()


def query_doc_ids(q: Query) -> list[str]:
    """The documents a query needs: its ``doc_ids`` and its evidence spans' documents."""
    return [*q.doc_ids, *(e.doc_id for e in q.evidence)]


NOT_QUERIED = "docs_dropped_not_queried"


def only_queried_documents(ds: Dataset) -> Dataset:
    """``ds`` with only the documents its queries need (``query_doc_ids``), in their order; the
    count of the others is in the report as ``docs_dropped_not_queried``. For a run that limits
    the questions and searches each question's own documents: the rest would be chunked (and,
    by an LLM chunker, prompted over) for nothing."""
    needed = {d for q in ds.queries for d in query_doc_ids(q)}
    kept = [d for d in ds.documents if d.doc_id in needed]
    report = {**ds.report, "n_docs": len(kept), NOT_QUERIED: len(ds.documents) - len(kept)}
    return Dataset(ds.name, kept, ds.queries, report)


def mean(values: Collection[float]) -> float:
    return sum(values) / len(values) if values else 0.0
