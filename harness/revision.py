"""Pinning a Hub model or dataset to a revision: the ``revision`` key of model and dataset configs.

``revision: null`` is the Hub's default branch (``main``; offline, the commit the local cache's
``refs/main`` names), as before the key existed. A set revision is a branch or tag name or a full
40-hex commit; it is passed to every loader of the weights and of the tokenizer / chat template,
and enters the cache identity of what the model computes (a pinned model never shares cached
vectors or replies with an unpinned one). A null one enters no key (:func:`unpinned_dropped`), so
the stage keys and run identities recorded before the key existed stand.

A tokenizer named by text (``chunker.tokenizer``, ``context.tokenizer``) is pinned as
``<Hub id>@<revision>``: a Hub id holds no ``@``.
"""

from __future__ import annotations

import re
from typing import Any

from harness.types import ConfigError

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_ABBREVIATED = re.compile(r"^[0-9a-f]{7,39}$")
# git check-ref-format's rules, as the Hub resolves a branch or tag name
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^[/.]|[/.]$|\.lock$|/\.")
SEPARATOR = "@"


def check_revision(value: Any, where: str) -> str | None:
    """``value`` if it can name a Hub revision, else a one-line :class:`ConfigError` naming
    ``where`` (the role or key, e.g. ``embedder.revision``). None stays None (the default branch)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}={value!r}: a revision is a branch or tag name or a 40-hex commit (or null)")
    if _ABBREVIATED.match(value):  # the Hub would read it as a branch name and not find it
        raise ConfigError(f"{where}={value}: an abbreviated commit; give all 40 hex digits")
    if not COMMIT.match(value) and _BAD_REF.search(value):
        raise ConfigError(f"{where}={value!r}: not a branch or tag name nor a 40-hex commit")
    return value


def check_node(node: dict[str, Any], where: str) -> None:
    """Every ``*revision`` key of a config node (a dataset's ``revision``, ``qrels_revision``,
    ``corpus_revision``; a role's) checked by :func:`check_revision`, named ``<where>.<key>``."""
    for key, value in node.items():
        if key.endswith("revision"):
            check_revision(value, f"{where}.{key}")


def check_local(model: str, revision: str | None, where: str) -> None:
    """A revision names a Hub commit: on a local folder or the bundled model it would be ignored."""
    if revision is not None and (model == "bundled" or model.startswith((".", "/", "~"))):
        raise ConfigError(f"{where}={revision}: {model!r} is no Hub id (a revision pins a Hub model; "
                          f"a local folder or the bundled model is what it is): set it to null")


def short(revision: str | None) -> str:
    """``@<first 7 characters>`` of a pinned revision (a commit's usual short form), '' for none."""
    return f"{SEPARATOR}{revision[:7]}" if revision else ""


def split_name(name: str, where: str) -> tuple[str, str | None]:
    """``(Hub id, revision)`` of a tokenizer name written ``<Hub id>@<revision>``; ``(name, None)``
    for a name without ``@``."""
    if SEPARATOR not in name:
        return name, None
    base, revision = name.split(SEPARATOR, 1)
    return base, check_revision(revision, f"{where} {name!r}: revision")


def unpinned_dropped(node: dict[str, Any]) -> dict[str, Any]:
    """A model node (one naming a ``model``, ``query_model`` or ``passage_model``) without its
    null revision keys: an unpinned model is keyed as it was before ``revision`` existed. A
    dataset node keeps its null ``revision``: its stage keys have always held it."""
    if not any(k in node for k in ("model", "query_model", "passage_model")):
        return node
    return {k: v for k, v in node.items() if not (v is None and k.endswith("revision"))}
