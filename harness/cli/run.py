"""``chunkbench run [OVERRIDES]``: one benchmark run, or a sweep with ``-m``: the Hydra app
(:mod:`harness.__main__`, also ``python -m harness``), its arguments passed to Hydra as they are."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness.cli.common import verb

EXAMPLE = "chunkbench run chunker=sentence dataset.limit_docs=2      (a sweep: chunkbench run -m chunker=fixed,sentence)"


def add(sub) -> None:
    verb(sub, "run", "one benchmark run, or a sweep with -m (Hydra overrides, as python -m harness takes them)",
         EXAMPLE, add_help=False,
         description="Composes configs/config.yaml with the overrides, runs the stages through the cache, records "
                     "the run in MLflow and prints its summary. `chunkbench ls` lists the choices of every group; "
                     "Hydra's own flags (-m, --cfg job, --info) pass through.")


def usage() -> str:
    import argparse

    sub = argparse.ArgumentParser(prog="chunkbench").add_subparsers()
    add(sub)
    return sub.choices["run"].format_help()


def run(argv: Sequence[str]) -> None:
    """The Hydra app with ``argv`` as its command line (``--help``: this verb's help, then Hydra's)."""
    from harness.__main__ import entry

    if any(a in ("-h", "--help") for a in argv):
        print(usage())
        argv = ["--help"]
    sys.argv = [f"{sys.argv[0]} run", *argv]
    entry()
