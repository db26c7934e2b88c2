"""What code a component runs, as a digest for the stage cache's keys.

A stage's output depends on its config and on the code that computes it. The config is in every
key; this adds the code: the source of the component's class's module and of every module of the
same top-level package it imports, transitively (for a chunker in ``mypkg.chunkers``, outside the
repository, the modules of ``mypkg``; for a built-in one, the ``harness`` modules it uses). Fixing
a bug in a chunker recomputes its chunks, and editing code it does not use recomputes nothing.
Modules of other packages (numpy, transformers) are named by their versions in the run record.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path


def _imports(name: str, package: str, tree: ast.AST) -> set[str]:
    """The module names ``tree`` (module ``name`` of ``package``) imports, ``from a import b``
    also as ``a.b`` (b may be a submodule)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, package)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def _source(name: str) -> tuple[Path, bytes] | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):  # "a.b" where b is a function, not a module
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    path = Path(spec.origin)
    return path, path.read_bytes()


@lru_cache(maxsize=256)
def module_digest(module: str) -> str:
    """A digest of ``module``'s source and of every module of its top-level package it imports,
    transitively (module names and bytes, in name order)."""
    top = module.split(".")[0]
    sources: dict[str, bytes] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in sources:
            continue
        found = _source(name)
        sources[name] = found[1] if found else b""
        if found is None:
            continue
        package = name if found[0].name == "__init__.py" else name.rpartition(".")[0]
        todo.extend(n for n in _imports(name, package, ast.parse(found[1])) if n.split(".")[0] == top)
    h = hashlib.sha256()
    for name in sorted(n for n, src in sources.items() if src):
        h.update(name.encode() + b"\0" + sources[name] + b"\0")
    return h.hexdigest()[:32]


def code_digest(obj: object) -> str:
    """The digest of the code ``obj``'s class runs (:func:`module_digest` of its module)."""
    return module_digest(type(obj).__module__)


def target_digest(target: str) -> str:
    """The same digest for a config's ``_target_`` (``package.module.Class``), without building it."""
    return module_digest(target.rpartition(".")[0])
