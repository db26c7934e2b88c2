"""Instantiate every configured component up front, so a bad choice or parameter fails
before any work starts, with a message that names the config group and parameter.

Components are built by Hydra from each group's ``_target_`` (the one mechanism for
every extension point). Unknown group choices are rejected by Hydra itself when it
composes the config, listing the available options. Every dependency arrives through a
constructor argument that Hydra fills from an interpolation (``embedder: ${embedder}``,
``llm: ${llm}``, ``cache: ${cache}``); nothing is assigned to a component after it is built.
"""

from __future__ import annotations

import copy
import difflib
import inspect
import math
import re
from dataclasses import dataclass
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from harness.cache import Cache
from harness.chunking.base import Chunker
from harness.data.base import DatasetLoader
from harness.llm.tokens import READER, reader_name
from harness.metrics.base import DocumentMetric, QueryMetric
from harness.respond.responder import LLMResponder
from harness.retrieval.assemblers import Assembler
from harness.retrieval.base import Retriever
from harness.revision import check_node
from harness.types import ConfigError


@dataclass
class Components:
    """One field per config group a stage reads (``None``: the group is set to ``none``)."""

    dataset: DatasetLoader | None   # None only in a table check of a point whose data is not here
    chunker: Chunker
    retriever: Retriever
    context: Assembler
    responder: LLMResponder | None
    metrics: dict[str, QueryMetric | DocumentMetric]
    cache: Cache   # the run's cache (the one instance per folder its embedder and LLM share)
    chunker_timeout_s: float | None = None   # the chunk stage's limit per document (None: none)


def build_component(node: DictConfig, where: str) -> Any:
    """Instantiate one ``_target_`` node (the one instantiate path of the project, used by the
    CLI tools too); any failure becomes a ConfigError naming ``where``."""
    if OmegaConf.is_missing(node, "_target_"):  # a template (chunker=custom): the class is the user's to name
        raise ConfigError(f"{where}._target_: name the class, e.g. {where}._target_=mypkg.module.MyClass")
    target = node.get("_target_")
    try:
        return instantiate(node, _convert_="all")
    except InstantiationException as e:
        cause = e.__cause__ or e
        if isinstance(cause, ConfigError):  # Unavailable stays Unavailable: a status, not a mistake
            raise type(cause)(f"{where}: {cause}") from cause
        if isinstance(cause, TypeError) and target:
            params = [p for p in inspect.signature(get_class(target)).parameters if p != "self"]
            m = re.search(r"unexpected keyword argument '(\w+)'", str(cause))
            near = difflib.get_close_matches(m.group(1), params, n=1) if m else []
            hint = f"; did you mean {where}.{near[0]}?" if near else ""
            raise ConfigError(f"{where} ({target}): {cause}. Valid parameters: {', '.join(params)}{hint}") from cause
        raise ConfigError(f"{where} ({target}): {cause}") from cause


SIZED = ("chunker", "context")  # the groups whose `tokenizer` is a size/budget unit (metrics' are word tokenizers)


def _uses_reader(value: Any) -> bool:
    if isinstance(value, dict):
        return any((k == "tokenizer" and v == READER) or _uses_reader(v) for k, v in value.items())
    return isinstance(value, list) and any(_uses_reader(v) for v in value)


def _with_tokenizer(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return {k: name if k == "tokenizer" and v == READER else _with_tokenizer(v, name) for k, v in value.items()}
    return [_with_tokenizer(v, name) for v in value] if isinstance(value, list) else value


def resolve_reader(cfg: DictConfig) -> DictConfig:
    """``cfg`` with every ``tokenizer: reader`` of the sized groups replaced by the run's llm's
    tokenizer (``llm:<model>``, :mod:`harness.llm.tokens`): the components count in it and the
    stage keys name it. ``cfg`` itself is left as it is (its record shows ``reader``)."""
    groups = {g: OmegaConf.to_container(cfg[g], resolve=False) for g in SIZED if g in cfg}
    if not any(_uses_reader(value) for value in groups.values()):
        return cfg
    name = reader_name(cfg.get("llm"))
    resolved = copy.deepcopy(cfg)
    for g, value in groups.items():
        resolved[g] = _with_tokenizer(value, name)
    return resolved


EXPECTED = {"dataset": DatasetLoader, "chunker": Chunker, "retriever": Retriever, "context": Assembler,
            "responder": LLMResponder}


def check_full_scale(cfg: DictConfig) -> None:
    """At ``scale=full`` a run is the paper's experiment: no role runs a bundled CPU model and no
    dataset reads a bundled sample (``scale=smoke`` is where stand-ins belong, labelled)."""
    if cfg.get("scale") != "full":
        return
    from harness.data.base import describe_source
    from harness.pipeline.roles import roles

    for path, role in roles(cfg).items():
        if role.bundled:
            raise ConfigError(f"{path}: scale=full runs the paper's models, not the bundled CPU model "
                              f"({role.describe()}); set {path}.model (or the run's {role.follows or 'model'}) "
                              f"to the paper's, or run scale=smoke")
    source = describe_source(OmegaConf.to_container(cfg.dataset, resolve=True))
    if source.get("sample"):
        raise ConfigError(f"dataset {source.get('name')}: scale=full reads the paper's data, not the bundled "
                          f"sample; set dataset.source=hub or dataset.source=path dataset.path=<folder>, "
                          f"or run scale=smoke")


def build_components(cfg: DictConfig, dataset: bool = True, scale_checks: bool = True,
                     prebuilt: dict[str, Any] | None = None) -> Components:
    """Every component of a run. ``dataset=False`` leaves the loader out (None: a check of a
    point whose data is not here); ``scale_checks=False`` skips :func:`check_full_scale` (the
    table checks report the same as findings); ``prebuilt``: components given as objects, by
    group (``harness.evaluate(chunker=...)``), in place of building their config."""
    from harness.pipeline.roles import roles, unread_roles

    if unread := unread_roles(cfg):
        raise ConfigError(f"{', '.join(unread)}: set, but no component of this run reads it (the chunker "
                          f"or metric it names takes no such model)")
    for role in roles(cfg).values():  # a bad revision named by its role's path, before anything is built
        role.check_revisions()
    if cfg.get("dataset") is not None:
        check_node(OmegaConf.to_container(cfg.dataset, resolve=True), "dataset")
    if scale_checks:
        check_full_scale(cfg)
    cfg = resolve_reader(cfg)
    built: dict[str, Any] = {}
    for group, kind in EXPECTED.items():
        if group == "dataset" and not dataset:
            built[group] = None
            continue
        if group not in cfg and not (prebuilt and group in prebuilt):  # `~chunker` deleted the group
            raise ConfigError(f"{group}: the config has none (deleted with ~{group}?): a run needs one; "
                              f"choose it with {group}=NAME (`chunkbench ls {group}` lists them)")
        node = cfg.get(group)
        if prebuilt and group in prebuilt:
            built[group] = prebuilt[group]
        else:
            built[group] = None if node.get("_target_") is None else build_component(node, group)
        if built[group] is None and group != "responder":
            raise ConfigError(f"{group}: a run needs one (got a config without _target_)")
        if built[group] is not None and not isinstance(built[group], kind):
            raise ConfigError(f"{group}: _target_ must build a {kind.__name__}, got {type(built[group]).__name__}")
    # `metrics.<name>=null` drops one metric of a set.
    built["metrics"] = {name: build_component(node, f"metrics.{name}")
                        for name, node in cfg.metrics.items() if node is not None}
    for name, m in built["metrics"].items():
        if not isinstance(m, (QueryMetric, DocumentMetric)):
            raise ConfigError(f"metrics.{name}: _target_ must build a QueryMetric or a DocumentMetric "
                              f"(harness.metrics.base), got {type(m).__name__}")
    return Components(**built, cache=build_component(cfg.cache, "cache"), chunker_timeout_s=chunker_timeout(cfg))


def chunker_timeout(cfg: DictConfig) -> float | None:
    """``chunker_timeout_s``: seconds a chunker may take per document, or None (no limit)."""
    value = cfg.get("chunker_timeout_s")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if value is not None and not (number and 0 < value < math.inf):
        raise ConfigError(f"chunker_timeout_s: a number of seconds above 0, or null for no limit; got {value!r}")
    return None if value is None else float(value)
