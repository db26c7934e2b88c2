"""Shared by the tests of QChunker's sets (test_crud, test_hchemsafety, test_omnieval,
test_multifieldqa_zh, test_qchunker_family): the fixtures' folder and small file helpers."""

import json
import shutil
from pathlib import Path

import pytest

from harness.types import DataError
from tests.conftest import FIXTURES

FIX = FIXTURES / "qchunker"


def read_json(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")


def copy_tree(src, dst):
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:  # the bundled files may be read-only copies
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def load_error(loader) -> DataError:
    with pytest.raises(DataError) as e:
        loader.load()
    return e.value
