"""The chunk stage's key holds the chunker's code: an edited chunker recomputes its chunks (and
what follows them); editing code it does not import recomputes nothing."""

import sys

import pytest

from harness.code_digest import code_digest, module_digest
from harness.pipeline.runner import Pipeline

MODULE = '''from harness.chunking.fixed import FixedSizeChunker
from mychunkers import helpers

class Mine(FixedSizeChunker):
    """A user's chunker, outside the repository."""
    VERSION = {version}
'''


@pytest.fixture
def user_package(tmp_path, monkeypatch):
    package = tmp_path / "pkgs" / "mychunkers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("STEP = 1\n")
    (package / "unrelated.py").write_text("X = 1\n")
    (package / "mine.py").write_text(MODULE.format(version=1))
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    yield package
    module_digest.cache_clear()
    for name in [m for m in sys.modules if m.split(".")[0] == "mychunkers"]:
        del sys.modules[name]


def stages(make_cfg, cache):
    cfg = make_cfg("chunker._target_=mychunkers.mine.Mine", cache=cache)
    return Pipeline(cfg, log=lambda *_: None).run().stages


def test_a_chunker_edited_recomputes_its_chunks_and_only_then(user_package, make_cfg, tmp_path):
    cache = tmp_path / "cache"
    assert stages(make_cfg, cache)["chunk"] == "computed"
    assert set(stages(make_cfg, cache).values()) == {"cached"}
    (user_package / "unrelated.py").write_text("X = 2\n")  # not imported by the chunker
    module_digest.cache_clear()
    assert set(stages(make_cfg, cache).values()) == {"cached"}
    (user_package / "helpers.py").write_text("STEP = 2\n")  # imported by it: its code changed
    module_digest.cache_clear()
    after = stages(make_cfg, cache)
    assert after["load"] == "cached" and after["chunk"] == after["retrieve"] == "computed"
    (user_package / "mine.py").write_text(MODULE.format(version=2))
    module_digest.cache_clear()
    assert stages(make_cfg, cache)["chunk"] == "computed"


def test_a_builtin_chunkers_code_is_its_module_and_the_harness_modules_it_imports():
    from harness.chunking.fixed import FixedSizeChunker
    from harness.chunking.sentence import SentenceChunker

    fixed = code_digest(FixedSizeChunker(size=10))
    assert fixed == module_digest("harness.chunking.fixed") != module_digest("harness.chunking.sentence")
    assert code_digest(FixedSizeChunker(size=20)) == fixed  # settings are the config's part of the key
    assert code_digest(SentenceChunker()) == module_digest("harness.chunking.sentence")
