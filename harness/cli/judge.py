"""``chunkbench judge RUN_A RUN_B``: MC-indexing's pairwise LLM judge of two runs' answers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli.common import tracking_uri, verb
from harness.cli.compare import two_runs
from harness.types import ConfigError


def add(sub) -> None:
    p = verb(sub, "judge", "pairwise LLM judge of two runs' answers",
             "chunkbench judge 3f2a91c0 77b0e4d1 --llm-config vllm --set model=Qwen/Qwen3-8B", [two_runs()],
             description="MC-indexing's pairwise judge (harness.report.judge): win/tie/loss of A.")
    p.add_argument("--llm-config", default="transformers", help="a choice of configs/llm (default: transformers)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="llm config override")
    p.add_argument("--prompt-file", help="a string.Template replacing the Figure 11 prompt")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retries", type=int, default=2)
    p.add_argument("--cache", default=None, help="LLM-call cache folder (default: the config's cache.dir, "
                                                 "$CHUNKBENCH_CACHE or .chunkbench-cache)")
    p.add_argument("--out", help="write one JSON line per judged query here")
    p.set_defaults(run=run, overrides=overrides)


def overrides(args: argparse.Namespace) -> list[str]:
    """The judge's model as the config's ``llm`` group, and its cache."""
    from harness import registry

    return [*registry.llm_overrides(args.llm_config, args.set), *([f"cache.dir={args.cache}"] if args.cache else [])]


def build_llm(cfg, choice: str):
    """The composed config's ``llm``, built like every run component."""
    from harness.llm.base import LLM
    from harness.pipeline.components import build_component

    llm = build_component(cfg.llm, "llm")
    if not isinstance(llm, LLM):
        raise ConfigError(f"--llm-config {choice}: builds {type(llm).__name__}, not a language model")
    return llm  # with the config's `cache: ${cache}`: every judge call goes through the LLM-call cache


def run(args: argparse.Namespace, cfg) -> None:
    from harness.report.compare import per_query
    from harness.report.judge import JUDGE_PROMPT, pair_runs, report
    from harness.report.judge import judge as run_judge

    uri = tracking_uri(args, cfg)
    template = Path(args.prompt_file).read_text(encoding="utf-8") if args.prompt_file else JUDGE_PROMPT
    pairs, skipped = pair_runs(per_query(uri, args.run_a), per_query(uri, args.run_b))
    if not pairs:
        raise SystemExit(f"no query has an answer and a gold answer in both runs ({skipped}): "
                         "were both run with a responder, on the same dataset?")
    llm = build_llm(cfg, args.llm_config)
    records = run_judge(pairs, llm, template, args.temperature, args.max_tokens, args.seed, args.retries)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    print(report(args.run_a, args.run_b, llm.model, skipped, records))
