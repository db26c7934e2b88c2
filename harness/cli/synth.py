"""``chunkbench synth DOCS --out DIR``: an evaluation set in the local format from a folder of
documents, by Chroma's method (harness.synth)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.common import verb
from harness.types import ConfigError


def add(sub) -> None:
    p = verb(sub, "synth", "an evaluation set from your own documents (LLM questions, verified evidence spans)",
             "chunkbench synth ~/docs --out ~/docs-eval llm@roles.synth.llm=openai "
             "roles.synth.llm.model=Qwen/Qwen3-8B synth.questions=100",
             description="Chroma's method (Smith & Troynikov, 2024): an LLM asks a question of each slice of the "
                         "documents and quotes the excerpts that answer it; only excerpts found verbatim are kept, "
                         "then questions unlike their excerpts and near-duplicates are dropped (configs/synth/"
                         "default.yaml). DIR is a dataset=local folder with manifest.json, written when complete.")
    p.add_argument("docs", help="a folder of .txt / .md files, or a documents.jsonl in the local format")
    p.add_argument("--out", required=True, help="the new folder to write (it must not exist)")
    p.add_argument("given", nargs="*", metavar="OVERRIDE",
                   help="synth.<key>=VALUE, the question writer (llm@roles.synth.llm=openai roles.synth.llm.model=...), "
                        "the filters' embedder (embedder@roles.synth.embedder=...), cache.dir=...")
    p.set_defaults(run=run, overrides=overrides, more_positionals="given")


def overrides(args: argparse.Namespace) -> list[str]:
    return ["+synth=default", *args.given]


def run(args: argparse.Namespace, cfg) -> None:
    from harness.pipeline.components import build_component
    from harness.synth.documents import read_documents
    from harness.synth.output import check_destination, manifest, whole_folder, write_set
    from harness.types import DataError, ServiceError

    out, docs = Path(args.out), Path(args.docs)
    check_destination(out)
    try:
        documents = read_documents(docs, cfg.synth.min_doc_words)  # bad input stops before a model loads
        synth = build_component(cfg.synth, "synth")
        result = synth.run(documents)
    except (DataError, ServiceError) as e:  # a bad row, a server that fails: one line, nothing written
        raise ConfigError(str(e)) from e
    with whole_folder(out) as scratch:
        write_set(scratch, documents, result.queries, manifest(synth, documents, result, docs))
    print(summary(result, out))


def summary(result, out: Path) -> str:
    counts = result.counts
    rejected = ", ".join(f"{k} {v}" for k, v in result.rejected.items() if v) or "none"
    usage = result.llm
    lines = [f"{counts['not_duplicate']} of {counts['asked']} questions kept -> {out}",
             "  left after each step: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
             f"  rejected: {rejected}",
             f"  LLM: {usage['calls']} calls ({usage['cached']} from the cache), {usage['prompt_tokens']} prompt + "
             f"{usage['generated_tokens']} generated tokens, {usage['seconds']:.1f} s"]
    if not result.queries:
        lines.append(f"  no question survived: {out} holds the documents and the manifest but nothing to evaluate; "
                     "a larger model (llm@roles.synth.llm=...) or more questions (synth.questions=...) may keep some")
    return "\n".join(lines)
