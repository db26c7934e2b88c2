"""Seconds per document, model calls and parse-failure rates of the LLM chunkers on one real document.

    .venv/bin/python scripts/bench_llm_chunkers.py [--chunkers NAME,...] [--words 3000]
        [--doc DOC_ID] [--out FILE] [hydra overrides...]

The chunkers are those of the config group `chunker` that call the run's LLM
(``harness.registry.needs_llm``), all of them unless ``--chunkers`` names some.

The document is the first of the run's dataset (default: the bundled OHR-Bench sample, whose
first document is finance/AMAZON_2019_10K) or ``--doc``, cut to its first ``--words`` words
(0 = whole). Each chunker is built from its config with the overrides (e.g. ``llm.model=...``,
``chunker.max_tokens=256``; an override for one chunker only: ``hichunk:chunker.max_tokens=256``)
and runs without the LLM-call cache, after the model is loaded, so seconds are chunking only.
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import replace
from pathlib import Path

# The harness loads only once the options are parsed: `--help` answers at once.

# What each chunker counts as a parse failure, and as any fallback (its doc_counts keys); a
# chunker not named here has neither (rates print as nan).
# The logits-guided chunkers read probabilities, never parse text: one scored window per call.
FAILURES = {"lumber": (("parse_failures",), ("parse_failures", "invalid_ids")),
            "hichunk": (("parse_failures",), ("window_fallbacks",)),
            "logits_guided": ((), ()), "lgmgc": ((), ()),
            "multi_view_llm": (("llm_keywords_parse_failures",), ("llm_keywords_parse_failures", "empty_summaries")),
            "raptor": (("empty_summaries",), ("empty_summaries",)),
            "atomic_units": (("empty_replies",), ("empty_replies",)),
            "qchunker": (("parse_failures", "judge_parse_failures"),
                         ("segmentation_fallbacks", "judge_parse_failures", "empty_rewrites")),
            "qchunker_multipath": (("parse_failures", "judge_parse_failures"),
                                   ("segmentation_fallbacks", "judge_parse_failures", "empty_rewrites")),
            "moc": (("parse_failures",), ("parse_failures", "no_rules_located")),
            "llm_semantic": (("parse_failures",), ("window_cuts",))}


def load_doc(cfg, doc_id: str | None, words: int):
    from harness.pipeline.components import build_component

    docs = build_component(cfg.dataset, "dataset").load().documents
    doc = next(d for d in docs if d.doc_id == doc_id) if doc_id else docs[0]
    if words:
        ends = [m.end() for m in re.finditer(r"\S+", doc.text)]
        if len(ends) > words:
            doc = replace(doc, text=doc.text[:ends[words - 1]], sections=())
    return doc


def bench(name: str, overrides: list[str], doc_id: str | None, words: int) -> dict:
    from harness.pipeline.components import build_component
    from harness import registry

    # llm.cache=null: the seconds are of model calls, none may come from the LLM-call cache
    cfg = registry.compose([f"chunker={name}", "tracking=none", "llm.cache=null", *overrides])
    doc = load_doc(cfg, doc_id, words)
    chunker = build_component(cfg.chunker, "chunker")
    llm = chunker.llm
    llm.count_tokens("warm up")  # loads the model outside the timing
    t0 = time.perf_counter()
    chunks = chunker.chunk([doc])[0]
    seconds = time.perf_counter() - t0
    counts = chunker.take_counts(doc.doc_id)
    calls = counts.get("llm_calls") or counts.get("windows") or llm.stats.calls
    failures = FAILURES.get(name, ((), ()))
    parse, fallback = (sum(counts.get(k, 0) for k in keys) for keys in failures)
    return {"chunker": name, "doc": doc.doc_id, "words": len(doc.text.split()), "seconds": seconds,
            "calls": calls, "prompt_tokens": llm.stats.prompt_tokens,
            "generated_tokens": llm.stats.generated_tokens,
            "parse_failure_rate": parse / calls if calls and failures[0] else float("nan"),
            "fallback_rate": fallback / calls if calls and failures[1] else float("nan"),
            "chunks": len(chunks), "indexed": sum(c.indexed for c in chunks), "counts": counts,
            "model": llm.model, "max_tokens": getattr(getattr(chunker, "sampling", None), "max_tokens", "-")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunkers", default=None, help="comma-separated; default: every LLM chunker")
    parser.add_argument("--words", type=int, default=3000, help="cut the document to this many words (0 = whole)")
    parser.add_argument("--doc", default=None, help="document id (default: the dataset's first)")
    parser.add_argument("--out", type=Path, default=None, help="append the results (markdown) here too")
    args, overrides = parser.parse_known_args()
    from harness import registry

    llm_chunkers = [n for n in registry.choices("chunker") if registry.needs_llm(n)]
    names = args.chunkers.split(",") if args.chunkers else llm_chunkers
    if unknown := set(names) - set(llm_chunkers):
        parser.error(f"--chunkers: {sorted(unknown)} call no LLM; LLM chunkers: {', '.join(llm_chunkers)}")
    lines = []
    for name in names:
        mine = [o.split(":", 1)[1] if ":" in o.split("=", 1)[0] else o for o in overrides
                if ":" not in o.split("=", 1)[0] or o.startswith(f"{name}:")]
        r = bench(name, mine, args.doc, args.words)
        line = (f"| {r['chunker']} | {r['doc']} ({r['words']} words) | {r['seconds']:.1f} | {r['calls']} | "
                f"{r['prompt_tokens']} | {r['generated_tokens']} | {r['parse_failure_rate']:.2f} | {r['fallback_rate']:.2f} | "
                f"{r['chunks']} ({r['indexed']} leaves) | {r['max_tokens']} |")
        lines.append(line)
        print(line, flush=True)
        print(f"  model {r['model']}, overrides {mine}, counts {r['counts']}", flush=True)
    header = ("| chunker | document | s/doc | model calls | prompt tokens | generated tokens | parse-failure rate | "
              "fallback rate | chunks | max_tokens |\n|---|---|---|---|---|---|---|---|---|---|")
    text = header + "\n" + "\n".join(lines)
    print(text)
    if args.out:
        with args.out.open("a") as f:
            f.write(f"overrides: {' '.join(overrides)}\n\n{text}\n\n")


if __name__ == "__main__":
    main()
