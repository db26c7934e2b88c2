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
from harness.llm.base import LLM
from harness.respond.responder import LLMResponder
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
    responder: LLMResponder | None
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
        # `metrics.<name>=null` drops one metric of a set.
        metrics={name: build_one(node, f"metrics.{name}") for name, node in cfg.metrics.items() if node is not None},
    )
    for name, obj, expected in [("dataset", comps.dataset, DatasetLoader), ("chunker", comps.chunker, Chunker),
                                ("embedder", comps.embedder, SentenceTransformerEmbedder),
                                ("retriever", comps.retriever, Retriever), ("context", comps.assembler, Assembler)]:
        if not isinstance(obj, expected):
            raise ConfigError(f"{name}: _target_ must build a {expected.__name__}, got {type(obj).__name__}")
    if comps.responder is not None and not isinstance(comps.responder, LLMResponder):
        raise ConfigError(f"responder: _target_ must build an LLMResponder, got {type(comps.responder).__name__}")
    return comps


def language_models(comps: Components) -> list[LLM]:
    """Every language model the components hold (each gets the run's LLM-call cache)."""
    holders = [comps.chunker, comps.responder, *comps.metrics.values()]
    return [h.llm for h in holders if isinstance(getattr(h, "llm", None), LLM)]
