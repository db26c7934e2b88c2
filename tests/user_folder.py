"""The user of issue 51: a local dataset folder ``D`` run as
``chunkbench run dataset=local dataset.path=D retriever=bm25 cache.dir=D/cache tracking.uri=sqlite:///D/store.db``,
through the real command line (a subprocess), and the runs its store holds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.conftest import REPO
from tests.test_cli import ENV

DOCUMENT = {"doc_id": "d1", "text": "The cat sat on the mat. The dog lay by the door. Birds sing in the morning."}
QUESTION = {"qid": "q1", "question": "Where did the cat sit?", "answers": ["on the mat"], "doc_ids": ["d1"],
            "evidence": [{"doc_id": "d1", "text": "The cat sat on the mat."}]}


def user_folder(root: Path, documents: Sequence[dict] = (DOCUMENT,), queries: Sequence[dict] = (QUESTION,)) -> Path:
    """``root/D`` holding ``documents`` and ``queries`` in the local layout."""
    folder = root / "D"
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("documents", documents), ("queries", queries)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                              encoding="utf-8")
    return folder


def user_command(folder: Path, *overrides: str, sweep: bool = False) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "run", *(["-m"] if sweep else []), "dataset=local",
            f"dataset.path={folder}", "retriever=bm25", f"cache.dir={folder / 'cache'}",
            f"tracking.uri=sqlite:///{folder / 'store.db'}", *overrides]


def chunkbench_run(folder: Path, *overrides: str, sweep: bool = False, env: dict | None = None,
                   **popen) -> subprocess.CompletedProcess:
    """The user's command with ``overrides``, from the folder above ``folder``."""
    popen.setdefault("capture_output", True)
    return subprocess.run(user_command(folder, *overrides, sweep=sweep), cwd=folder.parent, text=True, timeout=600,
                          env={**ENV, "PYTHONPATH": str(REPO), **(env or {})}, **popen)


def recorded(folder: Path) -> list:
    """The runs recorded in the folder's store (none when there is no store)."""
    if not (folder / "store.db").exists():
        return []
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'store.db'}")
    experiment = client.get_experiment_by_name("chunkbench")
    return client.search_runs([experiment.experiment_id]) if experiment else []
