"""``chunkbench ls [GROUP]``: every choice of every config group, with its description; ``ls chunker``
also each chunker's parameters and whether it embeds or calls an LLM (from its composed config)."""

from __future__ import annotations

import argparse
import json

from harness.cli.common import verb
from harness.types import ConfigError


def add(sub) -> None:
    p = verb(sub, "ls", "every choice of every config group, with its description", "chunkbench ls chunker")
    p.add_argument("group", nargs="?", help="one group only, e.g. chunker")
    p.set_defaults(run=run, needs_config=False)


def run(args: argparse.Namespace, cfg) -> None:
    from harness import registry

    try:
        rows = registry.listing(args.group)
    except KeyError as e:
        raise ConfigError(e.args[0]) from None
    if args.group == "chunker":
        return chunkers(rows)
    width = [max(len(r[i]) for r in rows) for i in (0, 1)]
    for i, (group, name, text) in enumerate(rows):
        if i and group != rows[i - 1][0]:
            print()
        print(f"{group:{width[0]}}  {name:{width[1]}}  {text}")


def _value(v) -> str:
    return json.dumps(v, ensure_ascii=False) if v is None or isinstance(v, (dict, list)) else str(v)


def chunkers(rows) -> None:
    """A chunker per paragraph: name, what it takes of the run's models, its description, then its
    parameters with their defaults (the model it takes shown by the flag, not as an interpolation)."""
    from harness import registry

    width = max(len(name) for _, name, _ in rows)
    for i, (_, name, text) in enumerate(rows):
        node = registry.chunker_node(name)
        taken = registry.models_taken(node)
        flags = ", ".join(flag for role, flag in (("embedder", "embeds"), ("llm", "calls an LLM")) if role in taken)
        params = [f"{k}={_value(v)}" for k, v in node.items()
                  if k != "_target_" and not registry.models_taken({k: v})]
        print(("\n" if i else "") + f"{name:{width}}  " + (f"[{flags}] " if flags else "") + text)
        print(f"{'':{width}}  parameters: {', '.join(params) or 'none'}")
