"""Every chunker that needs no language model on the same data, embedder and context budget:
chunks per document, mean chunk size, chunking seconds per document, and the retrieval scores
at that budget. The LLM chunkers: scripts/bench_llm_chunkers.py.

    .venv/bin/python scripts/bench_chunkers.py [--out FILE] [--only NAME,...]
        [hydra overrides...]

The methods are the choices of the config group `chunker` (``harness.registry``), each
at its config's defaults, then with the context assembler it is meant for
(``registry.CONTEXT_FOR``), then with the parameter variants of ``VARIANTS``. Each method runs
through the real pipeline (``harness.pipeline.runner.Pipeline``) with a fresh cache, so chunking
seconds include what a chunker embeds or tokenizes itself. Overrides apply to every method
(e.g. ``dataset=gutenqa context.budget=2048``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

# The harness (torch, the embedder) loads only once the options are parsed: `--help` answers at once.

# Settings the papers compare beyond a config's defaults: chunker -> [(label suffix, overrides)].
VARIANTS = {
    "sentence_splitter": [("(200/0)", ["chunker.chunk_size=200", "chunker.chunk_overlap=0"])],
    "semantic_breakpoint": [("(max 200)", ["chunker.max_size=200"])],
    "semantic_cluster": [("(dbscan)", ["chunker.method=dbscan"])],
    # Not at the token budget: the k best chunks, whatever their size.
    "section": [("+ topk k=3", ["context=topk", "context.k=3"])],
}
# One token budget for every method whose assembler has one (parent_max counts words by default).
COMMON = ["context.budget=1024", "context.unit=tokens"]
COLUMNS = {"chunks_per_doc": "chunks/doc", "chunk_size_mean": "mean tokens", "chunk_seconds_per_doc": "s/doc",
           "context_tokens": "ctx tokens", "evidence_recall": "ERec", "span_recall": "span recall",
           "span_precision_omega": "PΩ", "context_merges": "merges/q"}


def methods() -> list[tuple[str, str, list[str]]]:
    """(chunker, label, overrides) of every method, in the registry's order."""
    from harness import registry

    names = [n for n in registry.choices("chunker") if not registry.needs_llm(n)]
    if unknown := set(VARIANTS) - set(names):
        raise SystemExit(f"VARIANTS names no chunker of configs/chunker without an LLM: {sorted(unknown)}")
    out = []
    for name in names:
        out.append((name, name, [f"chunker={name}"]))
        if context := registry.CONTEXT_FOR.get(name):
            out.append((name, f"{name} + {context}", [f"chunker={name}", f"context={context}"]))
        out += [(name, f"{name} {suffix}", [f"chunker={name}", *more]) for suffix, more in VARIANTS.get(name, [])]
    return out


def for_context(method: list[str], common: list[str]) -> list[str]:
    """``common`` without the ``context.<key>`` overrides the method's assembler has no key for
    (a top-k assembler has no budget)."""
    from harness import registry

    context = registry.compose([*method, *(o for o in common if not o.startswith("context."))]).context
    return [o for o in common if not o.startswith("context.") or o.split("=", 1)[0].split(".")[1] in context]


def run(overrides: list[str], cache: str) -> dict[str, float]:
    from harness.pipeline.runner import Pipeline
    from harness import registry

    cfg = registry.compose([f"cache.dir={cache}", "tracking=none", *overrides])
    return Pipeline(cfg, log=lambda *_: None).run().metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="write the table (markdown) here too")
    parser.add_argument("--only", default=None, help="comma-separated chunker names or method labels to run")
    args, overrides = parser.parse_known_args()
    import pandas as pd

    common = [*COMMON, *overrides]
    todo = methods()
    only = set(args.only.split(",")) if args.only else None
    if only and (unknown := only - {c for c, _, _ in todo} - {label for _, label, _ in todo}):
        parser.error(f"--only: no method {sorted(unknown)}; methods: {', '.join(label for _, label, _ in todo)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for chunker, label, method in todo:
            if only and chunker not in only and label not in only:
                continue
            m = run([*method, *for_context(method, common)], f"{tmp}/{len(rows)}")
            rows.append({"method": label, **{v: m.get(k, float("nan")) for k, v in COLUMNS.items()}})
            print(f"{label}: " + ", ".join(f"{v}={rows[-1][v]:.4g}" for v in COLUMNS.values()), flush=True)
    table = pd.DataFrame(rows).set_index("method")
    text = table.to_markdown(floatfmt=".3f") if _has_tabulate() else table.round(3).to_string()
    print(text)
    if args.out:
        args.out.write_text(f"overrides: {' '.join(common)}\n\n{text}\n")


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
