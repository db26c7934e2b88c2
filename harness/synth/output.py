"""Writing a synthetic set: the local format (``documents.jsonl``, ``queries.jsonl``) and
``manifest.json``, into a folder beside the destination that is renamed onto it when complete,
so the destination appears whole or not at all."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.data.base import Dataset
from harness.data.local import write_local
from harness.types import ConfigError, Document, Query


def check_destination(out: Path) -> None:
    """Before any work: the folder must be new (nothing the user has is overwritten)."""
    if out.exists():
        raise ConfigError(f"--out {out}: already exists: give a new folder (synth never writes over one)")
    if not out.parent.is_dir():
        raise ConfigError(f"--out {out}: the folder {out.parent} does not exist")


@contextmanager
def whole_folder(out: Path) -> Iterator[Path]:
    """A scratch folder beside ``out``, renamed onto it when the block completes; removed, with
    everything in it, when the block fails."""
    check_destination(out)
    scratch = out.parent / f".{out.name}.partial-{os.getpid()}"
    scratch.mkdir()
    try:
        yield scratch
        os.rename(scratch, out)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def write_set(folder: Path, documents: list[Document], queries: list[Query], manifest: dict[str, Any]) -> Path:
    """The set in the local format and its manifest, in ``folder``."""
    write_local(Dataset(folder.name, documents, queries), folder)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder


def manifest(synth, documents: list[Document], result, source: Path) -> dict[str, Any]:
    """How the set was made: the models, the prompt's digest and every setting, the questions
    left after each stage and the rejections by reason, and what the LLM calls cost. No key or
    address of a server enters it."""
    llm = synth.llm
    return {
        "method": "Chroma's synthetic evaluation set (Smith & Troynikov, 2024)",
        "source": str(source),
        "documents": len(documents),
        "characters": sum(len(d.text) for d in documents),
        "llm": {"backend": type(llm).__name__, **llm.identity},
        "embedder": getattr(synth.embedder, "identity", type(synth.embedder).__name__),
        "settings": synth.settings(),
        "counts": result.counts,
        "kept": len(result.queries),
        "rejected": dict(result.rejected),
        "llm_usage": result.llm,
    }
