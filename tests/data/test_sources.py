"""Where each dataset comes from: ``dataset.source`` (bundled | hub | path, null = inferred),
resolved once by ``DatasetLoader.set_source`` from each loader's declared ``sources`` and
``default_source``, and reported without reading anything by ``describe_source``."""

import re
from pathlib import Path

import pytest
from hydra.utils import get_class
from omegaconf import OmegaConf

from harness.data.base import SOURCES, DatasetLoader, describe_source
from harness.pipeline.components import build_component
from harness.registry import compose
from harness.types import ConfigError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
DATASETS = sorted(p.stem for p in (CONFIGS / "dataset").glob("*.yaml"))

# config name -> (sources, default source, Hub id read by default or with source=hub)
EXPECTED = {
    "gutenqa": (("bundled", "hub", "path"), "bundled", "LumberChunker/GutenQA"),
    "ohrbench": (("bundled", "path"), "bundled", None),
    "crud": (("bundled", "path"), "bundled", None),
    "hchemsafety": (("bundled", "path"), "bundled", None),
    "multifieldqa_zh": (("bundled", "hub", "path"), "bundled", "THUDM/LongBench"),
    "omnieval": (("bundled", "hub", "path"), "bundled", "RUC-NLPIR/OmniEval-AutoGen-Dataset"),
    "qasper": (("hub", "path"), "hub", "allenai/qasper"),
    "longbench": (("hub", "path"), "hub", "THUDM/LongBench"),
    "ragbench": (("hub", "path", "bundled"), "hub", "rungalileo/ragbench"),
    "beir_stitched": (("hub", "path"), "hub", "BeIR/scifact"),
    "nq": (("hub", "path"), "hub", "google-research-datasets/natural_questions"),
    "hicbench": (("path",), "path", None),
    "local": (("path",), "path", None),
    "wikiweb2m": (("path",), "path", None),
    "chroma": (("bundled", "path"), "bundled", None),
    "conditionalqa": (("bundled", "path"), "path", None),
}
# a fragment of each loader's how_to_get(), which the error for a missing path carries
HOW = {"gutenqa": "gutenqa_chunks.parquet", "ohrbench": "OHR-Bench", "crud": "CRUD_RAG",
       "hchemsafety": "HChemSafety/", "multifieldqa_zh": "data.zip", "omnieval": "FlashRAG",
       "qasper": "qasper-test-v0.3.json", "longbench": "data.zip", "ragbench": "huggingface-cli",
       "beir_stitched": "scifact.zip", "nq": "jsonl.gz", "hicbench": "HiChunk's layout",
       "local": "documents.jsonl", "wikiweb2m": "TensorFlow", "chroma": "general_evaluation_data",
       "conditionalqa": "haitian-sun/ConditionalQA"}


def _node(name: str, *overrides: str) -> dict:
    return OmegaConf.to_container(compose([f"dataset={name}", *overrides]).dataset, resolve=True)


def _class(name: str) -> type[DatasetLoader]:
    return get_class(_node(name)["_target_"])


def _build(name: str, *overrides: str) -> DatasetLoader:
    return build_component(compose([f"dataset={name}", *overrides]).dataset, "dataset")


def _build_name(name: str) -> str:
    return describe_source(_node(name))["name"]


@pytest.fixture
def folder(tmp_path):
    """A folder every loader accepts at construction (LocalDataset checks its two files)."""
    for stem in ("documents", "queries"):
        (tmp_path / f"{stem}.jsonl").write_text("")
    return tmp_path


def test_every_dataset_config_is_covered():
    assert DATASETS == sorted(EXPECTED)


@pytest.mark.parametrize("name", DATASETS)
def test_each_loader_declares_its_sources(name):
    cls = _class(name)
    sources, default, _ = EXPECTED[name]
    assert (cls.sources, cls.default_source) == (sources, default)
    # a bundled sample is claimed exactly where its folder is there
    assert ("bundled" in cls.sources) == (cls.bundled_dir is not None)
    if cls.bundled_dir is not None:
        assert cls.bundled_dir.is_dir() and any(cls.bundled_dir.iterdir())


@pytest.mark.parametrize("name", DATASETS)
def test_every_config_has_a_null_source(name):
    node = _node(name)
    assert "source" in node and node["source"] is None and node["path"] is None
    text = (CONFIGS / "dataset" / f"{name}.yaml").read_text()
    assert re.search(r"^source: null +# .*null", text, re.M), "document dataset.source in one line"


@pytest.mark.parametrize("name", DATASETS)
def test_default_source(name):
    sources, default, hub_id = EXPECTED[name]
    if default == "path":  # no sample, no Hub: the path is required, and the error says how
        with pytest.raises(ConfigError) as e:
            _build(name)
        msg = str(e.value)
        assert "dataset.path=<folder> is needed" in msg and HOW[name] in msg, msg
        return
    loader = _build(name)
    assert loader.source == default
    if default == "bundled":
        assert loader.path == type(loader).bundled_dir and loader.location == str(loader.path)
        assert not loader.hub
    else:
        assert loader.path is None and loader.location == hub_id and loader.hub


@pytest.mark.parametrize("name", DATASETS)
def test_explicit_sources(name, folder):
    sources, _, hub_id = EXPECTED[name]
    for source in sources:
        path = [f"dataset.path={folder}"] if source == "path" else []
        loader = _build(name, f"dataset.source={source}", *path)
        assert loader.source == source and loader.hub == (source == "hub")
        where = {"path": str(folder), "hub": hub_id,
                 "bundled": str(type(loader).bundled_dir)}[source]
        assert loader.location == where
        assert loader.path == (folder if source == "path" else type(loader).bundled_dir
                               if source == "bundled" else None)
        # a path alone means source=path
        if source == "path":
            assert _build(name, *path).source == "path"


@pytest.mark.parametrize("name", DATASETS)
def test_unsupported_sources_name_the_key_and_the_supported_ones(name, folder):
    sources, _, _ = EXPECTED[name]
    for source in set(SOURCES) - set(sources):
        with pytest.raises(ConfigError) as e:
            _build(name, f"dataset.source={source}")
        msg = str(e.value)
        assert f"dataset.source={source} is not supported" in msg, msg
        assert f"dataset {_build_name(name)!r}" in msg, msg
        assert f"reads from {', '.join(sources)}" in msg, msg
        with pytest.raises(ConfigError, match=f"dataset.source={source} is not supported"):
            describe_source(_node(name, f"dataset.source={source}"))
    with pytest.raises(ConfigError, match="dataset.source must be one of bundled, hub, path"):
        _build(name, "dataset.source=s3", f"dataset.path={folder}")


@pytest.mark.parametrize("name", DATASETS)
def test_source_path_without_a_path_says_how_to_get_it(name):
    with pytest.raises(ConfigError) as e:
        _build(name, "dataset.source=path")
    msg = str(e.value)
    assert "dataset.path=<folder> is needed" in msg and HOW[name] in msg, msg
    assert f"dataset {_build_name(name)!r}" in msg


@pytest.mark.parametrize("name", [n for n, (s, _, _) in EXPECTED.items() if "bundled" in s])
def test_bundled_or_hub_with_a_path_is_an_error(name, folder):
    with pytest.raises(ConfigError, match=r"dataset.source=bundled reads the bundled sample, but "
                                          r"dataset.path=.* is set too"):
        _build(name, "dataset.source=bundled", f"dataset.path={folder}")
    with pytest.raises(ConfigError, match="is set too"):
        describe_source(_node(name, "dataset.source=bundled", f"dataset.path={folder}"))


@pytest.mark.parametrize("name", [n for n, (s, _, _) in EXPECTED.items() if "hub" in s])
def test_hub_sources(name, folder):
    _, _, hub_id = EXPECTED[name]
    with pytest.raises(ConfigError, match="dataset.source=hub reads the Hugging Face Hub, but"):
        _build(name, "dataset.source=hub", f"dataset.path={folder}")
    # dataset.path=hub, the legacy spelling, is dataset.source=hub
    legacy = _build(name, "dataset.path=hub")
    assert (legacy.source, legacy.path, legacy.location) == ("hub", None, hub_id)
    assert _build(name, "dataset.path=hub", "dataset.source=hub").source == "hub"
    assert describe_source(_node(name, "dataset.path=hub"))["source"] == "hub"
    with pytest.raises(ConfigError, match="old spelling of dataset.source=hub"):
        _build(name, "dataset.path=hub", "dataset.source=path")


@pytest.mark.parametrize("name", [n for n, (s, _, _) in EXPECTED.items() if "hub" not in s])
def test_legacy_hub_path_is_refused_where_there_is_no_hub(name):
    with pytest.raises(ConfigError, match="dataset.source=hub is not supported"):
        _build(name, "dataset.path=hub")


@pytest.mark.parametrize("name", DATASETS)
def test_describe_source_of_every_config(name):
    sources, default, hub_id = EXPECTED[name]
    got = describe_source(_node(name))
    assert set(got) == {"name", "source", "path", "sample"} and got["source"] == default
    cls = _class(name)
    assert got["path"] == {"bundled": str(cls.bundled_dir), "hub": hub_id, "path": None}[default]
    if default != "path":  # the loader itself says the same
        loader = _build(name)
        assert (got["name"], got["source"], got["path"]) == (loader.name, loader.source,
                                                             loader.location)
    # a DictConfig is resolved the same way
    assert describe_source(compose([f"dataset={name}"]).dataset) == got


@pytest.mark.parametrize("name", DATASETS)
def test_describe_source_with_a_path_reads_nothing(name, tmp_path):
    absent = tmp_path / "not_there"  # no loader could read it; describing it reads nothing
    got = describe_source(_node(name, f"dataset.path={absent}"))
    assert got == {"name": _build_name(name), "source": "path", "path": str(absent), "sample": False}


@pytest.mark.parametrize("name", DATASETS)
def test_describe_source_matches_the_loader_for_every_source(name, folder):
    for source in EXPECTED[name][0]:
        path = [f"dataset.path={folder}"] if source == "path" else []
        node = _node(name, f"dataset.source={source}", *path)
        loader = _build(name, f"dataset.source={source}", *path)
        assert describe_source(node) == {"name": loader.name, "source": loader.source,
                                         "path": loader.location,
                                         "sample": source == "bundled" and not loader.bundled_release}


def test_describe_source_names_derived_from_parameters():
    assert describe_source(_node("beir_stitched", "dataset.corpus=nfcorpus")) == {
        "name": "beir_stitched/nfcorpus", "source": "hub", "path": "BeIR/nfcorpus", "sample": False}
    assert describe_source(_node("beir_stitched", "dataset.hub_id=me/copy")) == {
        "name": "beir_stitched/scifact", "source": "hub", "path": "me/copy", "sample": False}
    assert describe_source(_node("hicbench", "dataset.subset=qasper_all",
                                 "dataset.path=/data/hc")) == {
        "name": "hichunk/qasper_all", "source": "path", "path": "/data/hc", "sample": False}
    assert describe_source(_node("gutenqa", "dataset.name=mine")) == {
        "name": "mine", "source": "bundled", "path": str(_class("gutenqa").bundled_dir), "sample": True}
    # a node that leaves keys out gets the loader's own defaults
    assert describe_source({"_target_": "harness.data.qasper.Qasper"}) == {
        "name": "qasper", "source": "hub", "path": "allenai/qasper", "sample": False}


def test_a_bundled_release_is_no_sample():
    """Chroma's bundled copy is the whole checksummed release: a full-scale point may read it."""
    assert describe_source(_node("chroma")) == {
        "name": "chroma", "source": "bundled", "path": str(_class("chroma").bundled_dir), "sample": False}


def test_describe_source_refuses_what_is_no_loader():
    with pytest.raises(ConfigError, match="without _target_"):
        describe_source({"path": None})
    with pytest.raises(ConfigError, match="no DatasetLoader"):
        describe_source({"_target_": "harness.data.base.Dataset"})


def test_an_empty_or_missing_path_is_no_path():
    assert _build("qasper", "dataset.path=").source == "hub"
    assert _build("ohrbench", "dataset.path=").source == "bundled"
    from harness.data.local import LocalDataset

    with pytest.raises(ConfigError, match="dataset.path=<folder> is needed"):
        LocalDataset("???")  # Hydra's missing value, passed on as text


def test_the_same_source_gives_the_same_data_and_key():
    """The default, the explicit default and a path to the same files read the same input,
    so they share the load stage's key (the source itself is not part of it)."""
    from harness.data.ohrbench import OHRBench

    default = OHRBench(domains=["news"])
    bundled = OHRBench(domains=["news"], source="bundled")
    by_path = OHRBench(domains=["news"], path=OHRBench.bundled_dir)
    assert default.fingerprint() == bundled.fingerprint() == by_path.fingerprint()
    assert by_path.source == "path"
    a, b = default.load(), by_path.load()
    assert [d.text for d in a.documents] == [d.text for d in b.documents]
    assert [q.qid for q in a.queries] == [q.qid for q in b.queries]


def test_declarations_are_checked():
    with pytest.raises(TypeError, match="default_source"):
        type("Bad", (DatasetLoader,), {"sources": ("hub",), "default_source": "path",
                                       "read": lambda self: None})
    with pytest.raises(TypeError, match="bundled_dir"):
        type("Bad", (DatasetLoader,), {"sources": ("bundled",), "default_source": "bundled",
                                       "read": lambda self: None})
    with pytest.raises(TypeError, match="sources must be"):
        type("Bad", (DatasetLoader,), {"sources": ("s3",), "default_source": "s3",
                                       "read": lambda self: None})


def test_table_overrides_name_a_source_not_a_corpus():
    """dataset.source is where data comes from; BEIR sets are dataset.corpus."""
    for path in (CONFIGS / "tables").rglob("*.yaml"):
        for value in re.findall(r"dataset\.source=([\w.-]+)", path.read_text()):
            assert value in SOURCES, f"{path.relative_to(REPO)}: dataset.source={value}"
