"""``chunkbench ls [GROUP]``: every choice of every config group, with its description."""

from __future__ import annotations

import argparse

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
    width = [max(len(r[i]) for r in rows) for i in (0, 1)]
    for i, (group, name, text) in enumerate(rows):
        if i and group != rows[i - 1][0]:
            print()
        print(f"{group:{width[0]}}  {name:{width[1]}}  {text}")
