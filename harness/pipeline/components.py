"""Instantiate every configured component up front, so a bad choice or parameter fails
before any work starts, with a message that names the config group and parameter.

Components are built by Hydra from each group's ``_target_`` (the one mechanism for
every extension point). Unknown group choices are rejected by Hydra itself when it
composes the config, listing the available options.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig

from harness.chunking.base import Chunker
from harness.data.base import DatasetLoader
from harness.retrieval.assemblers import Assembler
from harness.retrieval.base import Retriever
from harness.retrieval.dense import DenseRetriever
from harness.retrieval.embedders import SentenceTransformerEmbedder
from harness.types import ConfigError


@dataclass
class Components:
    dataset: DatasetLoader
    chunker: Chunker
    embedder: SentenceTransformerEmbedder
    retriever: Retriever
    assembler: Assembler
    responder: Any | None
    metrics: dict[str, Any]

    @property
    def dense(self) -> bool:
        return isinstance(self.retriever, DenseRetriever)


def build_one(node: DictConfig, where: str) -> Any:
    """Instantiate one ``_target_`` node; any failure becomes a ConfigError naming ``where``."""
    target = node.get("_target_")
    try:
        return instantiate(node, _convert_="all")
    except InstantiationException as e:
        cause = e.__cause__ or e
        if isinstance(cause, ConfigError):
            raise ConfigError(f"{where}: {cause}") from cause
        if isinstance(cause, TypeError) and target:
            params = [p for p in inspect.signature(get_class(target)).parameters if p != "self"]
            raise ConfigError(f"{where} ({target}): {cause}. Valid parameters: {', '.join(params)}") from cause
        raise ConfigError(f"{where} ({target}): {cause}") from cause


def build_components(cfg: DictConfig) -> Components:
    def group(name: str) -> Any:
        node = cfg[name]
        if node.get("_target_") is None:
            return None
        return build_one(node, name)

    comps = Components(
        dataset=group("dataset"),
        chunker=group("chunker"),
        embedder=group("embedder"),
        retriever=group("retriever"),
        assembler=group("context"),
        responder=group("responder"),
        metrics={name: build_one(node, f"metrics.{name}") for name, node in cfg.metrics.items()},
    )
    for name, obj, expected in [("dataset", comps.dataset, DatasetLoader), ("chunker", comps.chunker, Chunker),
                                ("embedder", comps.embedder, SentenceTransformerEmbedder),
                                ("retriever", comps.retriever, Retriever), ("context", comps.assembler, Assembler)]:
        if not isinstance(obj, expected):
            raise ConfigError(f"{name}: _target_ must build a {expected.__name__}, got {type(obj).__name__}")
    if comps.responder is not None:
        raise ConfigError("responder: only responder=none exists until the LLM layer lands")
    return comps
