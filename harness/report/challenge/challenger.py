"""The chunker a challenge puts into the papers' tables, from what the user names.

``CHUNKER`` is a choice of ``configs/chunker`` (``mine`` or ``chunker=mine``), or a class by import
path, ``package.module:Class`` (importable from ``PYTHONPATH``) or ``path/to/file.py:Class`` (a file
anywhere: its folder joins ``sys.path`` and ``PYTHONPATH``, so the runs import it too). A class
runs as ``chunker=custom chunker._target_=...``; its arguments are ``chunker.<arg>=<value>``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from omegaconf import OmegaConf

from harness.code_digest import target_digest

from harness.registry import CONFIGS, CONTEXT_FOR
from harness.secrets import MASK, is_secret_name, mask_text
from harness.types import ConfigError


@dataclass(frozen=True)
class Challenger:
    name: str                    # its row key in every table, and its report's folder
    given: str                   # as the user wrote it
    target: str                  # the class, module.Class
    overrides: tuple[str, ...]   # the chunker's Hydra overrides (its choice or class, its arguments)
    context: str | None = None   # the context assembler it is meant for (registry.CONTEXT_FOR), if any
    fixed: frozenset[str] = frozenset()   # the arguments the user set (never swept)
    params: frozenset[str] = frozenset()  # the constructor's named arguments
    config_keys: frozenset[str] = frozenset()   # the keys its config file sets (a choice's)
    arguments: tuple[tuple[str, str], ...] = ()  # every argument with its value, defaults shown

    def takes(self, param: str) -> bool:
        """Whether a table's size parameter (``chunker.size``) applies: the class takes it and
        the user did not fix it."""
        arg = param.removeprefix("chunker.")
        return param.startswith("chunker.") and arg in self.params and arg not in self.fixed

    def override(self, param: str) -> str:
        """``param`` as an override of this chunker's config: ``++`` adds a key its file lacks."""
        return param if param.removeprefix("chunker.") in self.config_keys else f"++{param}"

    def arguments_text(self) -> str:
        """``size=200, overlap=0``: what the report names it by."""
        return ", ".join(f"{k}={v}" for k, v in self.arguments) or "no arguments"

    def tags(self) -> dict[str, str]:
        """What its runs are tagged with, part of their identity: its name and the digest of its
        code (an edit to a file outside the repository runs it again)."""
        return {"challenge": self.name, "challenge.code": target_digest(self.target)}


def _class(target: str, given: str) -> type:
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"challenger {given}: cannot import {target} ({type(e).__name__}: {e}); "
                          f"is its folder on PYTHONPATH?") from None
    except SyntaxError as e:  # the user's file does not compile: where, not importlib's traceback
        raise ConfigError(f"challenger {given}: {e.filename}, line {e.lineno}: {e.msg}") from None
    except Exception as e:  # its module raised while it was imported
        raise ConfigError(f"challenger {given}: importing {module} raised {type(e).__name__}: {e}") from None
    if not (inspect.isclass(cls) and callable(getattr(cls, "chunk", None))):
        raise ConfigError(f"challenger {given}: {target} is not a chunker class (no chunk method; "
                          f"subclass harness.chunking.base.Chunker)")
    return cls


def _params(cls: type) -> dict[str, str]:
    """The constructor's named arguments with their defaults as text (``?``: none)."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return {}
    return {n: "?" if p.default is p.empty else str(p.default) for n, p in sig.parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _shown(*layers: dict) -> tuple[tuple[str, str], ...]:
    """The arguments' values, a later layer over an earlier one, in name order, as a report may
    show them: a secret-named argument's value and any key-shaped text masked (they name a
    report's folder and its pages)."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update({str(k): str(v) for k, v in layer.items() if k != "_target_"})
    return tuple(sorted((k, MASK if is_secret_name(k) else mask_text(v, ())) for k, v in merged.items()))


def shown_override(override: str) -> str:
    """An override as a report shows it: a secret-named key's value and key-shaped text masked."""
    key, eq, value = override.partition("=")
    return f"{key}{eq}{MASK}" if eq and is_secret_name(key.rsplit('.', 1)[-1]) else mask_text(override, ())


def _arguments(args: Sequence[str], given: str) -> dict[str, str]:
    out = {}
    for a in args:
        key, eq, value = a.lstrip("+").partition("=")
        if not eq or not key.startswith("chunker.") or key == "chunker._target_":
            raise ConfigError(f"challenger {given}: {a!r} is not a chunker argument (chunker.<arg>=<value>); "
                              f"the tables fix everything else, and --set applies to every run")
        out[key.removeprefix("chunker.")] = value
    return out


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.") or "challenger"


def parse(given: str, args: Sequence[str] = (), name: str | None = None) -> Challenger:
    """The challenger ``given`` names, with its arguments ``args`` (``chunker.<arg>=<value>``)."""
    spec = given.removeprefix("chunker=")
    fixed = _arguments(args, given)
    if ":" in spec:  # a class by import path
        module, _, cls_name = spec.rpartition(":")
        if module.endswith(".py"):
            file = Path(module).expanduser().resolve()
            if not file.is_file():
                raise ConfigError(f"challenger {given}: no file {file}")
            taken = sys.modules.get(file.stem)
            if taken is not None and Path(getattr(taken, "__file__", None) or "").resolve() != file:
                raise ConfigError(f"challenger {given}: the module name {file.stem!r} is taken by "
                                  f"{getattr(taken, '__file__', None) or 'a built-in module'}: rename the file")
            folder = str(file.parent)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            os.environ["PYTHONPATH"] = os.pathsep.join(
                dict.fromkeys([folder, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
            module = file.stem
        target = f"{module}.{cls_name}"
        cls = _class(target, given)
        overrides = ("chunker=custom", f"chunker._target_={target}", *(f"++chunker.{k}={v}" for k, v in fixed.items()))
        params = _params(cls)
        return Challenger(slug(name or cls_name), given, target, overrides, None, frozenset(fixed), frozenset(params),
                          arguments=_shown(params, fixed))
    path = CONFIGS / "chunker" / f"{spec}.yaml"
    if not path.is_file():
        choices = sorted(p.stem for p in (CONFIGS / "chunker").glob("*.yaml"))
        raise ConfigError(f"challenger {given}: not a chunker config ({', '.join(choices)}) nor an import path "
                          f"(package.module:Class or path/to/file.py:Class)")
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    target = str(node.get("_target_", ""))
    if spec == "custom" or not target:
        raise ConfigError(f"challenger {given}: name the class by import path (package.module:Class)")
    keys = frozenset(str(k) for k in node)
    params = _params(_class(target, given))
    ch = Challenger(slug(name or spec), given, target, (), CONTEXT_FOR.get(spec), frozenset(fixed),
                    frozenset(params), keys, _shown(params, node, fixed))
    return replace(ch, overrides=(f"chunker={spec}", *(f"{ch.override('chunker.' + k)}={v}" for k, v in fixed.items())))
