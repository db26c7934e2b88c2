"""The model roles of a composed run: which model does what.

A role is the config path of a model node that a component takes: ``chunker.llm`` (the chunking
LLM), ``chunker.embedder`` (an embedding chunker's, RAPTOR's tree), ``responder.llm``,
``retriever.embedder`` (or ``retriever`` itself when it names its own ``model``),
``metrics.fact_cov.llm`` (a judge), ``metrics.chunkscore.embedder``, ... A role reads
``${oc.select:roles.<role>,${llm}}``: its own node when one is set under ``roles`` with a Hydra
package override (``llm@roles.chunker.llm=vllm roles.chunker.llm.model=deepseek-ai/DeepSeek-R1-0528``),
else the run's ``llm`` / ``embedder``. (An override of ``chunker.llm`` itself would merge into the
run's node, keeping keys of another backend; a node of its own under ``roles`` replaces it.)

Roles are read from the composed config alone (nothing is built or loaded), so a full-scale table
can be checked against the paper's setup here, offline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.revision import check_node, short

# the groups whose components take models; `llm` and `embedder` are templates the roles point at
COMPONENT_GROUPS = ("chunker", "retriever", "context", "responder", "metrics")
# `${llm}`, or `${oc.select:roles.<path>,${llm}}`: the run's model unless the role has its own
FOLLOWS = re.compile(r"^\$\{(?:oc\.select:(roles\.[\w.]+),\$\{(llm|embedder)\}|(llm|embedder))\}$")
BUNDLED = "bundled"
SKIPPED_SETTINGS = ("_target_", "cache")
REVISION_KEYS = ("revision", "query_revision", "passage_revision")


@dataclass(frozen=True)
class Role:
    path: str                  # where the model node sits, e.g. "chunker.llm"
    kind: str                  # llm | embedder | encoder (a retriever's own model)
    model: str                 # a Hub id, a local folder, or "bundled" (the CPU model a package ships)
    backend: str               # the class that runs it
    follows: str | None = None  # "llm" / "embedder": the run's own (an interpolation), else None
    settings: dict[str, Any] = field(default_factory=dict)  # the node's other scalar keys (a revision: when set)

    @property
    def bundled(self) -> bool:
        return BUNDLED in self.model.split(" | ")

    @property
    def pinned(self) -> str:
        """The model with its pinned revision(s) as ``@<first 7>``: a dual encoder's side by side."""
        get = self.settings.get
        if self.kind == "encoder" and " | " in self.model:
            query, passage = self.model.split(" | ")
            return f"{query}{short(get('query_revision'))} | {passage}{short(get('passage_revision'))}"
        return self.model + short(get("revision"))

    def describe(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in sorted(self.settings.items())
                          if k in ("quantization", "thinking", "dtype") and v is not None)
        return self.pinned + (f" ({extra})" if extra else "") + (f" [the run's {self.follows}]" if self.follows else "")

    def check_revisions(self) -> None:
        """Each revision key of the role a Hub revision: else one ConfigError line naming the role's key."""
        check_node(self.settings, self.path)


@lru_cache(maxsize=None)
def _kind(target: str) -> str | None:
    """What a ``_target_`` builds: an LLM, an embedder, a retriever with its own encoders, or
    something else (None)."""
    from hydra.utils import get_object

    from harness.llm.base import LLM
    from harness.retrieval.base import Retriever
    from harness.embedding.embedder import SentenceTransformerEmbedder

    try:
        obj = get_object(target)
    except Exception:  # an unknown target is the builder's error to report, not a role
        return None
    if not isinstance(obj, type):
        return None  # e.g. llm=none's factory: no model
    if issubclass(obj, LLM):
        return "llm"
    if issubclass(obj, SentenceTransformerEmbedder):
        return "embedder"
    return "encoder" if issubclass(obj, Retriever) else None


def _role(path: str, node: dict[str, Any], follows: str | None) -> Role | None:
    target = node.get("_target_")
    kind = _kind(str(target)) if target else None
    if kind is None:
        return None
    if kind == "encoder":  # a retriever that names its encoders (BGE, DPR, ColBERT...); else its embedder is the role
        query, passage = node.get("query_model"), node.get("passage_model")
        model = node.get("model") or (f"{query} | {passage}" if query and passage else None)
        if not model:
            return None
    else:
        model = node.get("model")
    # an unpinned revision is no setting (explain lists what is set; the paper's checks compare set keys)
    settings = {k: v for k, v in node.items() if k not in SKIPPED_SETTINGS and not isinstance(v, (dict, list))
                and not (k in REVISION_KEYS and v is None)}
    return Role(path, kind, str(model), str(target).rsplit(".", 1)[-1], follows, settings)


def roles(cfg: DictConfig) -> dict[str, Role]:
    """Every model role of a composed run, by config path."""
    return _walk(cfg)[0]


def unread_roles(cfg: DictConfig) -> list[str]:
    """Models set under ``roles`` that no component reads (e.g. ``llm@roles.chunker.llm=...``
    with a chunker that takes no model): a setting that would change nothing."""
    set_apart = []

    def leaves(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("_target_"):
                set_apart.append(path)
                return
            for key, value in node.items():
                leaves(value, f"{path}.{key}")

    if cfg.get("roles") is not None:
        leaves(OmegaConf.to_container(cfg.roles, resolve=False), "roles")
    return sorted(set(set_apart) - _walk(cfg)[1])


def _walk(cfg: DictConfig) -> tuple[dict[str, Role], set[str]]:
    """The roles, and the ``roles.*`` paths some component reads."""
    found: dict[str, Role] = {}
    read: set[str] = set()

    def walk(raw: Any, path: str) -> None:
        if isinstance(raw, str) and (m := FOLLOWS.match(raw)):
            if m.group(1):
                read.add(m.group(1))
            own = m.group(1) and OmegaConf.select(cfg, m.group(1), default=None)
            node = OmegaConf.select(cfg, path)
            if OmegaConf.is_dict(node):
                role = _role(path, OmegaConf.to_container(node, resolve=True), None if own else m.group(2) or m.group(3))
                if role:
                    found[path] = role
            return
        if isinstance(raw, dict):
            if raw.get("_target_"):
                resolved = OmegaConf.to_container(OmegaConf.select(cfg, path), resolve=True)
                if role := _role(path, resolved, None):
                    found[path] = role
            for key, value in raw.items():
                walk(value, f"{path}.{key}")
        elif isinstance(raw, list):
            for i, value in enumerate(raw):
                walk(value, f"{path}[{i}]")

    for group in COMPONENT_GROUPS:
        if cfg.get(group) is not None:
            walk(OmegaConf.to_container(cfg[group], resolve=False), group)
    return found, read
