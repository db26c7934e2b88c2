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

Where the input comes from is one choice, ``dataset.source``, resolved once by ``set_source``
(every loader calls it from ``__init__``):

    bundled   the real sample shipped in ``harness/data/samples/`` (``bundled_dir``)
    hub       the Hugging Face Hub (``hub_id``)
    path      a local copy, ``dataset.path=<folder or file>``
    null      inferred: ``path`` when ``dataset.path`` is set (``dataset.path=hub`` is the legacy
              spelling of ``dataset.source=hub``), else the loader's ``default_source``

Each loader declares, as ClassVars, the ``sources`` it supports, its ``default_source`` and its
``bundled_dir``; a choice it does not support is a ConfigError naming ``dataset.source`` and the
supported ones. After ``set_source``, ``self.source`` is the resolved source, ``self.path`` the
local folder or file read (the given path, or the bundled sample's folder; None for the Hub) and
``self.location`` what is read: that path, or the Hub id. ``describe_source(node)`` gives the same
answer from a composed config node, without building the loader or reading any data.

``load()`` is the template: ``read()``, then the report ``{n_docs, n_queries, **loader report,
**drop counts}``, then one validation of every record. ``fingerprint()`` is a sha256 over
``content_digest()`` and the parameters: the loader class and its ``version``, ``name``, the
limits, ``seed`` and ``params()``. ``hub_rows`` reads a table from the Hugging Face Hub, with
the error ``unavailable`` gives when it cannot.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from harness import hub
from harness.data.sampling import check_limit, check_seed, take
from harness.types import ConfigError, Document, Query

SAMPLES_DIR = Path(__file__).parent / "samples"
SOURCES = ("bundled", "hub", "path")
LEGACY_HUB_PATH = "hub"       # dataset.path=hub: the old spelling of dataset.source=hub
_NO_PATH = ("", "???")       # an empty override, and Hydra's missing value, set no path
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
    title: ClassVar[str] = ""   # the dataset's name as its paper writes it (plots, indexes); "" = the class name
    # Where the loader can read from (a subset of SOURCES), what dataset.source=null means without a
    # dataset.path, the bundled sample's folder (when "bundled" is a source); set_source() reads them.
    sources: ClassVar[tuple[str, ...]] = ()
    default_source: ClassVar[str | None] = None
    bundled_dir: ClassVar[Path | None] = None
    # The bundled copy is the publisher's whole release, checksummed (Chroma's 1.45 MB), not a
    # sample: a full-scale run may read it (describe()'s "sample" is False).
    bundled_release: ClassVar[bool] = False

    @classmethod
    def evidence_unit(cls, subset: str | None = None) -> str:
        """What HiChunk's eval.py looks up in a context to score this data's evidence recall
        (``metrics.evidence_recall.unit=auto``, :mod:`harness.metrics.evidence`): ``evidence``
        (the evidence strings), ``sentences`` (their sentences) or ``answers`` (the gold answers)."""
        return "evidence"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.sources:
            return  # an intermediate base (QChunkerLoader) or a test double
        if not set(cls.sources) <= set(SOURCES) or cls.default_source not in cls.sources:
            raise TypeError(f"{cls.__name__}: sources must be some of {SOURCES} and hold "
                            f"default_source; got {cls.sources}, {cls.default_source!r}")
        if ("bundled" in cls.sources) != (cls.bundled_dir is not None):
            raise TypeError(f"{cls.__name__}: bundled_dir must be set exactly when 'bundled' is "
                            f"one of its sources")

    def __init__(self, name: str, limit_docs: int | None = None,
                 limit_queries: int | None = None, seed: int | None = None):
        self.name = name
        # 0 would be an empty run recorded as if it measured something
        self.limit_docs = check_limit("dataset.limit_docs", limit_docs, minimum=1)
        self.limit_queries = check_limit("dataset.limit_queries", limit_queries, minimum=1)
        self.seed = check_seed(seed)
        self._drops: dict[str, int] = {}

    # -- where the input comes from ------------------------------------------------------

    @classmethod
    def resolve_source(cls, source: str | None, path: str | Path | None,
                       name: str) -> tuple[str, str | Path | None]:
        """``(source, path)``: ``dataset.source`` resolved (null: ``path`` when a path is given,
        ``hub`` for the legacy ``dataset.path=hub``, else ``default_source``) and checked
        against ``sources``; ``path`` is None unless the source is ``path``. Reads nothing;
        ``source=path`` without a path is left to ``set_source``, which says how to get it."""
        if path is not None and str(path) in _NO_PATH:
            path = None
        if path is not None and str(path) == LEGACY_HUB_PATH:
            if source not in (None, "hub"):
                raise ConfigError(
                    f"dataset {name!r}: dataset.path=hub is the old spelling of "
                    f"dataset.source=hub and contradicts dataset.source={source}; drop "
                    f"dataset.path (or, for a local folder named hub, write dataset.path=./hub)")
            source, path = "hub", None
        if source is None:
            source = "path" if path is not None else cls.default_source
        if source not in SOURCES:
            raise ConfigError(f"dataset {name!r}: dataset.source must be one of "
                              f"{', '.join(SOURCES)} (or null: inferred), got {source!r}")
        if source not in cls.sources:
            raise ConfigError(f"dataset {name!r}: dataset.source={source} is not supported; "
                              f"{name} reads from {', '.join(cls.sources)}")
        if source != "path" and path is not None:
            what = "the bundled sample" if source == "bundled" else "the Hugging Face Hub"
            raise ConfigError(f"dataset {name!r}: dataset.source={source} reads {what}, but "
                              f"dataset.path={path} is set too; drop dataset.path, or set "
                              f"dataset.source=path (or null) to read it")
        return source, path

    def set_source(self, source: str | None, path: str | Path | None,
                   hub_id: str | None = None) -> None:
        """Resolves and checks where the input comes from (see ``resolve_source``) and sets
        ``self.source``, ``self.path`` (the folder or file read: the given path, or
        ``bundled_dir``; None for the Hub) and ``self.location`` (that path, or ``hub_id``).
        Call it once ``how_to_get()`` can run: its errors say how to get the data."""
        self.source, given = self.resolve_source(source, path, self.name)
        if self.source == "path" and given is None:
            how = self.how_to_get()
            only = " (its only source)" if self.sources == ("path",) else ""
            raise ConfigError(f"dataset {self.name!r}: dataset.path is required: dataset.source "
                              f"is path{only}, so dataset.path=<folder> is needed"
                              + (f". {how}" if how else ""))
        if self.source == "hub" and not hub_id:
            raise ConfigError(f"dataset {self.name!r}: dataset.source=hub needs a Hub id "
                              f"(dataset.hub_id is not set)")
        self.path = (Path(given).expanduser() if self.source == "path"
                     else self.bundled_dir if self.source == "bundled" else None)
        self.location = hub_id if self.source == "hub" else str(self.path)

    @property
    def hub(self) -> bool:
        """The input comes from the Hugging Face Hub (``dataset.source`` resolved to hub)."""
        return self.source == "hub"

    @classmethod
    def described_name(cls, params: Mapping[str, Any]) -> str:
        """The dataset's name as ``__init__`` sets it, from its parameters (a config node)."""
        return params.get("name") or _defaults(cls).get("name") or cls.__name__

    @classmethod
    def described_hub_id(cls, params: Mapping[str, Any]) -> str | None:
        """The Hub id ``source=hub`` reads, as ``__init__`` resolves it from its parameters."""
        return params.get("hub_id") or _defaults(cls).get("hub_id")

    @classmethod
    def describe(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``{name, source, path}`` for these parameters; see ``describe_source``."""
        params = {**_defaults(cls), **params}
        name = cls.described_name(params)
        source, path = cls.resolve_source(params.get("source"), params.get("path"), name)
        where = {"path": None if path is None else str(Path(path)), "bundled": str(cls.bundled_dir),
                 "hub": cls.described_hub_id(params)}[source]
        return {"name": name, "source": source, "path": where,
                "sample": source == "bundled" and not cls.bundled_release}

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
        gated, renamed) is ``unavailable(f"{problem} (<error>)")``. With the Hub unreachable
        (:func:`harness.hub.reachable`) only the local cache is read, so that fails at once."""
        import datasets  # looked up at call time, so tests can stand in for the Hub

        online = hub.reachable()
        try:
            with nullcontext() if online else hub.offline():
                table = datasets.load_dataset(*args, **kwargs)
        except Exception as e:  # offline, gated, renamed: all end the same way for the user
            where = "" if online else f"the Hub ({hub.endpoint()}) is unreachable and this is not in the local cache; "
            raise self.unavailable(f"{problem} ({where}{type(e).__name__}: {e})") from e
        return table.to_list() if hasattr(table, "to_list") else list(table)


def _defaults(cls: type) -> dict[str, Any]:
    """The defaults of ``cls.__init__``'s parameters (for a config node that leaves one out)."""
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


def describe_source(node: Mapping[str, Any]) -> dict[str, Any]:
    """Where a dataset config reads from, without building its loader or reading any data:
    ``{"name": ..., "source": "bundled" | "hub" | "path", "path": ...}``, ``path`` being the
    local folder or file (None when ``source=path`` has no ``dataset.path`` yet: the loader
    itself refuses that, saying how to get the data), the Hub id, or the bundled sample's
    folder; ``sample``: whether that is a bundled stand-in rather than the whole release. ``node``: the composed ``dataset`` node, resolved (a plain dict; a DictConfig is
    resolved here). A source the loader refuses (one it does not support, a path given with
    ``source=bundled``; beir_stitched's miracl / bioasq from the Hub) is the same ConfigError a
    run gives. Only the source is checked, not whether the data is there."""
    from hydra.utils import get_class
    from omegaconf import DictConfig, OmegaConf

    if isinstance(node, DictConfig):
        node = OmegaConf.to_container(node, resolve=True)
    target = node.get("_target_")
    if not target:
        raise ConfigError("dataset: a config node without _target_ names no loader")
    try:
        cls = get_class(target)
    except Exception as e:
        raise ConfigError(f"dataset: cannot import {target} ({e})") from e
    if not (isinstance(cls, type) and issubclass(cls, DatasetLoader)) or not cls.sources:
        raise ConfigError(f"dataset: {target} is no DatasetLoader declaring its sources")
    return cls.describe({k: v for k, v in node.items() if k != "_target_"})


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
