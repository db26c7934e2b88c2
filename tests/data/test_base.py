"""The loader skeleton (harness.data.base.DatasetLoader), tested once for every dataset: the
checked limits, first-N and seeded draws, the drop counts in the report, the single validation
and the fingerprint."""

import os

import pytest

from harness.data import base
from harness.data.base import Dataset, DatasetLoader, query_doc_ids
from harness.types import ConfigError, DataError, Document, Query, Span


class Toy(DatasetLoader):
    """Documents d0..d{n-1}; query q{i} is on document d{i}. ``files`` are its source files."""

    def __init__(self, n=6, files=(), extra=0, **kw):
        super().__init__(kw.pop("name", "toy"), **kw)
        self.n, self.files, self.extra = n, list(files), extra

    def read(self):
        docs = self.keep_docs([Document(f"d{i}", f"text {i}") for i in range(self.n)])
        queries = [Query(f"q{i}", f"question {i}?", doc_ids=(f"d{i}",)) for i in range(self.n)]
        queries = self.on_kept_docs(queries, {d.doc_id for d in docs}, query_doc_ids)
        queries = self.keep_queries(queries)
        return docs, queries, {"toy_stat": 1.5}

    def source_files(self):
        return self.files

    def params(self):
        return {"extra": self.extra}


@pytest.mark.parametrize("kw, match", [
    ({"limit_docs": -1}, "dataset.limit_docs must be null or an integer >= 1, got -1"),
    ({"limit_docs": 0}, "dataset.limit_docs must be null or an integer >= 1, got 0"),
    ({"limit_queries": 0}, "dataset.limit_queries must be null or an integer >= 1, got 0"),
    ({"limit_queries": "3"}, "dataset.limit_queries must be null or an integer >= 1, got '3'"),
    ({"limit_docs": True}, "limit_docs"),
    ({"seed": "abc"}, "seed must be null"),
    ({"seed": True}, "seed must be null"),
])
def test_parameters_are_checked_once_in_init(kw, match):
    with pytest.raises(ConfigError, match=match):
        Toy(**kw)


def test_report_holds_counts_loader_statistics_and_drops_in_order():
    ds = Toy(limit_docs=4, limit_queries=3).load()
    assert [d.doc_id for d in ds.documents] == ["d0", "d1", "d2", "d3"]  # the first N
    assert [q.qid for q in ds.queries] == ["q0", "q1", "q2"]
    assert list(ds.report.items()) == [
        ("n_docs", 4), ("n_queries", 3), ("toy_stat", 1.5), ("docs_dropped_limit_docs", 2),
        ("queries_dropped_doc_filters", 2), ("queries_dropped_limit_queries", 1)]
    full = Toy().load()
    assert (len(full.documents), len(full.queries)) == (6, 6)
    assert full.report["docs_dropped_limit_docs"] == full.report["queries_dropped_limit_queries"] == 0


def test_a_second_load_starts_its_counts_afresh():
    loader = Toy(limit_docs=2)
    assert loader.load().report == loader.load().report


def test_seeded_draws_are_reproducible_keep_order_and_use_their_own_stream():
    draws = set()
    for seed in range(8):
        a = Toy(n=20, limit_docs=5, seed=seed).load()
        ids = [d.doc_id for d in a.documents]
        assert ids == [d.doc_id for d in Toy(n=20, limit_docs=5, seed=seed).load().documents]
        assert ids == sorted(ids, key=lambda x: int(x[1:]))  # file order kept
        draws.add(tuple(ids))
        # each limit draws from its own stream: the query limit does not move the documents
        with_q = Toy(n=20, limit_docs=5, limit_queries=2, seed=seed).load()
        assert [d.doc_id for d in with_q.documents] == ids and len(with_q.queries) == 2
    assert len(draws) > 1


def test_limits_above_the_size():
    ds = Toy(limit_docs=99, limit_queries=99).load()
    assert (len(ds.documents), len(ds.queries), ds.report["docs_dropped_limit_docs"]) == (6, 6, 0)


def test_missing_folder_or_unreadable_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=r"dataset 'toy': cannot read .*absent"):
        Toy(files=[tmp_path / "absent"]).fingerprint()
    with pytest.raises(ConfigError, match=r"cannot read .*Is a directory"):
        Toy(files=[tmp_path]).fingerprint()


def test_helpers_for_loaders_that_read_first_n_and_stop():
    first = Toy(limit_docs=2, limit_queries=3)
    assert (first.docs_full(1), first.docs_full(2), first.queries_full(3)) == (False, True, True)
    seeded = Toy(limit_docs=2, limit_queries=3, seed=1)  # a draw needs every item: never full
    assert not seeded.docs_full(99) and not seeded.queries_full(99)
    assert not Toy().docs_full(10 ** 6)
    # candidates never read still count as dropped by the limit
    assert first.keep_docs(["a", "b"], of=10) == ["a", "b"]
    first.count("docs_skipped_x", 3)
    first.count(None, 5)  # not reported
    assert first._drops == {"docs_dropped_limit_docs": 8, "docs_skipped_x": 3}
    kept = first.on_kept_docs([("x", ("d1",)), ("y", ("d1", "d9"))], {"d1"}, lambda r: r[1],
                              key=None)
    assert kept == [("x", ("d1",))] and "queries_dropped_doc_filters" not in first._drops


def test_load_validates_exactly_once(monkeypatch):
    calls = []
    original = Dataset.validate

    def counting(self):
        calls.append(self.name)
        return original(self)

    monkeypatch.setattr(Dataset, "validate", counting)
    Toy().load()
    assert calls == ["toy"]


def test_load_returns_a_validated_dataset():
    class Broken(Toy):
        def read(self):
            docs, queries, report = super().read()
            return docs, [Query("bad", "?", evidence=(Span("d0", 0, 999),))], report

    with pytest.raises(DataError) as e:
        Broken(name="broken").load()
    assert (e.value.dataset, e.value.row, e.value.field) == ("broken", "bad", "evidence[0]")

    class Unaligned(Toy):
        def read(self):
            docs, _, report = super().read()
            return docs, [Query("q", "?", unaligned_evidence=("ok", 3))], report

    with pytest.raises(DataError) as e:
        Unaligned().load()
    assert (e.value.row, e.value.field) == ("q", "unaligned_evidence[1]")


def test_fingerprint_follows_files_parameters_and_version(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("one\n")
    b.write_text("two\n")
    fp = Toy(files=[a, b]).fingerprint()
    assert fp == Toy(files=[b, a]).fingerprint()  # the files' order does not matter
    for other in (Toy(files=[a]), Toy(files=[a, b], extra=1), Toy(files=[a, b], limit_docs=3),
                  Toy(files=[a, b], limit_queries=3), Toy(files=[a, b], seed=0),
                  Toy(files=[a, b], name="other")):
        assert other.fingerprint() != fp

    class Toy2(Toy):
        version = Toy.version + 1

    assert Toy2(files=[a, b]).fingerprint() != fp
    b.write_text("two, edited\n")
    assert Toy(files=[a, b]).fingerprint() != fp
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "b.jsonl").write_text("two, edited\n")  # names and bytes, not paths
    assert Toy(files=[a, tmp_path / "c" / "b.jsonl"]).fingerprint() == Toy(files=[a, b]).fingerprint()


def test_content_digest_stands_in_for_files():
    class FromHub(Toy):
        rows = [{"id": 1}]

        def content_digest(self):
            return base.rows_digest(self.rows)

    fp = FromHub().fingerprint()
    assert fp == FromHub().fingerprint()
    FromHub.rows = [{"id": 2}]
    assert FromHub().fingerprint() != fp


def test_unavailable_says_how_to_get_the_data(monkeypatch):
    class Hub(Toy):
        def how_to_get(self):
            return "Download it from X and pass dataset.path=<folder>."

    assert str(Toy().unavailable("no folder")) == "dataset 'toy': no folder"
    assert str(Hub().unavailable("no folder")) == (
        "dataset 'toy': no folder. Download it from X and pass dataset.path=<folder>.")

    import datasets

    class Table:
        def to_list(self):
            return [{"a": 1}]

    from harness import hub

    monkeypatch.setattr(hub, "reachable", lambda: True)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: Table())
    assert Hub().hub_rows("could not load x", "repo/x", split="train") == [{"a": 1}]

    def offline(*a, **kw):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(ConfigError, match=r"could not load x \(ConnectionError: no network\)\. "
                                          r"Download it from X"):
        Hub().hub_rows("could not load x", "repo/x")


def test_an_unreachable_hub_reads_only_the_local_cache_and_says_so(monkeypatch):
    """No retries against a Hub that is not there: the libraries' offline switches are on for the
    call (a cached dataset still loads), off again after it."""
    import datasets
    import huggingface_hub.constants as hub_constants

    from harness import hub

    seen = []

    def cached_only(*a, **kw):
        seen.append((datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE))
        raise ConnectionError("Couldn't reach 'repo/x' on the Hub (OfflineModeIsEnabled)")

    before = datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE
    monkeypatch.setattr(hub, "reachable", lambda: False)
    monkeypatch.setattr(datasets, "load_dataset", cached_only)
    with pytest.raises(ConfigError, match=r"could not load x \(the Hub \(https://.+\) is unreachable and this "
                                          r"is not in the local cache; ConnectionError"):
        Toy().hub_rows("could not load x", "repo/x")
    assert seen == [(True, True)]
    assert (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE) == before


def test_small_helpers():
    q = Query("q", "?", doc_ids=("a", "b"), evidence=(Span("c", 0, 1),))
    assert query_doc_ids(q) == ["a", "b", "c"]
    assert base.mean([]) == 0.0 and base.mean([1, 2]) == 1.5
    assert base.rows_digest([{"a": 1, "b": 2}]) == base.rows_digest([{"b": 2, "a": 1}])


def test_an_unreachable_hub_switches_the_process_offline_once(monkeypatch):
    """Asked once: with no Hub, every later model lookup reads the local cache at once instead of
    retrying five times per model (the variables for libraries imported later, the loaded
    libraries' own switches too); with a Hub nothing changes."""
    import datasets
    import huggingface_hub.constants as hub_constants

    from harness import hub
    from harness.quiet import offline_when_local

    for var in hub.OFFLINE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "reachable", lambda: True)
    assert not hub.offline_unless_reachable() and not hub.offline_by_env()
    assert not offline_when_local({"embedder": {"model": "BAAI/bge-m3"}})
    monkeypatch.setattr(hub, "reachable", lambda: False)
    assert offline_when_local({"embedder": {"model": "BAAI/bge-m3"}})
    assert all(os.environ[v] == "1" for v in hub.OFFLINE_VARS)
    assert hub_constants.HF_HUB_OFFLINE and datasets.config.HF_HUB_OFFLINE
