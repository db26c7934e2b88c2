"""What a run prints is its own lines: the libraries' chatter is turned down at the entry point.

- Loggers that report routine work at INFO/DEBUG (a model loading, MLflow's schema migration)
  are raised to WARNING. jieba is the odd one: importing it sets its own logger to DEBUG with a
  handler of its own, so its lines came twice (its handler and the root's); a filter on its
  logger survives the import where a level would not.
- Where stderr is no terminal (a log file, a pipe, a SLURM job), the Hugging Face libraries'
  own progress bars (loading weights, downloads) are off: tqdm redraws them with cursor
  movements that a log file keeps as ``\\x1b[A`` garbage.
- A run whose models and data are all bundled (or local) never needs the Hugging Face Hub, so
  the entry point sets ``HF_HUB_OFFLINE`` for it: libraries then stop trying the Hub first and
  warning about retries.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

QUIET_LOGGERS = ("sentence_transformers", "transformers", "mlflow.store.db.utils", "mlflow.tracking.fluent",
                 "alembic", "faiss.loader", "httpx")
# model/tokenizer values that name no Hub repository (see configs/chunker/*.yaml `tokenizer`)
LOCAL_NAMES = {"bundled", "cl100k", "o200k", "reader", "none", "whitespace"}
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def quiet_logs() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    jieba = logging.getLogger("jieba")
    if _warnings_only not in jieba.filters:
        jieba.addFilter(_warnings_only)


def quiet_progress() -> None:
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def hub_names(cfg: Any) -> list[str]:
    """The Hub repositories a resolved config (a plain dict) may fetch: every ``*model`` and
    ``*tokenizer`` value that looks like ``org/name`` and is no local folder, and the ``hub*``
    ids of a dataset read from the Hub (its ``path`` null or ``hub``)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            from_hub = node.get("path") in (None, "hub")
            for key, value in node.items():
                if isinstance(value, str) and key.endswith(("model", "tokenizer")):
                    name = value.removeprefix("llm:")
                    if name not in LOCAL_NAMES and HUB_ID.match(name) and not Path(name).exists():
                        found.append(name)
                elif key.startswith("hub") and "path" in node and from_hub:
                    found.append(f"{key}={value}")  # null hub ids have a default repository (beir_stitched)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(cfg)
    return found


def offline_when_local(cfg: dict) -> bool:
    """Sets ``HF_HUB_OFFLINE=1`` (unless the user set it) when nothing in ``cfg`` (the resolved
    config, without ``hydra``) comes from the Hub, or when something does and the Hub cannot be
    reached (:func:`harness.hub.offline_unless_reachable`: the cached copies load, the rest fails
    at once); returns whether the run is offline. Must run before huggingface_hub is imported: it
    reads the variable once."""
    from harness import hub

    if not hub_names(cfg):
        for var in hub.OFFLINE_VARS:
            os.environ.setdefault(var, "1")
    elif not hub.offline_by_env():
        hub.offline_unless_reachable()
    return hub.offline_by_env()
