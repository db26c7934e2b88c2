"""``chunkbench synth`` with the bundled SmolLM2-135M on a bundled document: it completes and says
how many questions survived, however few (a 135M model rarely quotes its slice verbatim)."""

from __future__ import annotations

import json
import shutil

import pytest

from harness import cli
from tests.conftest import SAMPLES


@pytest.mark.slow  # minutes of CPU decoding on a loaded 2-core machine
def test_the_bundled_model_completes_and_reports_what_survived(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "chroma_evaluation" / "corpora" / "state_of_the_union.md", docs)
    out = tmp_path / "set"
    cli.main(["synth", str(docs), "--out", str(out), "synth.questions=1", "synth.slice_chars=600",
              "synth.max_tokens=96", f"cache.dir={tmp_path / 'cache'}"])
    printed = capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    kept = manifest["kept"]
    assert manifest["counts"]["asked"] == 1 and kept + sum(manifest["rejected"].values()) == 1
    assert manifest["llm"]["backend"] == "TransformersLLM" and manifest["llm_usage"]["calls"] == 1
    assert printed.startswith(f"{kept} of 1 questions kept")
    assert ("no question survived" in printed) == (kept == 0)
    assert len((out / "queries.jsonl").read_text().splitlines()) == kept
