"""Seconds per document, model calls and parse-failure rates of the LLM chunkers on one real document.

    .venv/bin/python scripts/bench_llm_chunkers.py [--chunkers lumber,hichunk] [--words 3000]
        [--doc DOC_ID] [--out FILE] [hydra overrides...]

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

from hydra import compose, initialize_config_dir

from harness.pipeline.components import build_one

REPO = Path(__file__).resolve().parents[1]
# What each chunker counts as a parse failure, and as any fallback.
# The logits-guided chunkers read probabilities, never parse text: one scored window per call.
FAILURES = {"lumber": (("parse_failures",), ("parse_failures", "invalid_ids")),
            "hichunk": (("parse_failures",), ("window_fallbacks",)),
            "logits_guided": ((), ()), "lgmgc": ((), ()),
            "multi_view_llm": (("llm_keywords_parse_failures",), ("llm_keywords_parse_failures", "empty_summaries"))}


def load_doc(cfg, doc_id: str | None, words: int):
    docs = build_one(cfg.dataset, "dataset").load().documents
    doc = next(d for d in docs if d.doc_id == doc_id) if doc_id else docs[0]
    if words:
        ends = [m.end() for m in re.finditer(r"\S+", doc.text)]
        if len(ends) > words:
            doc = replace(doc, text=doc.text[:ends[words - 1]], sections=())
    return doc


def bench(name: str, overrides: list[str], doc_id: str | None, words: int) -> dict:
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        cfg = compose("config", overrides=[f"chunker={name}", "tracking=none", *overrides])
    doc = load_doc(cfg, doc_id, words)
    chunker = build_one(cfg.chunker, "chunker")
    llm = chunker.llm
    llm.count_tokens("warm up")  # loads the model outside the timing
    t0 = time.perf_counter()
    chunks = chunker.chunk([doc])[0]
    seconds = time.perf_counter() - t0
    counts = dict(chunker.doc_counts[doc.doc_id])
    calls = counts.get("llm_calls") or counts.get("windows") or llm.stats.calls
    parse, fallback = (sum(counts.get(k, 0) for k in keys) for keys in FAILURES[name])
    return {"chunker": name, "doc": doc.doc_id, "words": len(doc.text.split()), "seconds": seconds,
            "calls": calls, "generated_tokens": llm.stats.generated_tokens,
            "parse_failure_rate": parse / calls if calls and FAILURES[name][0] else float("nan"),
            "fallback_rate": fallback / calls if calls and FAILURES[name][1] else float("nan"),
            "chunks": len(chunks), "indexed": sum(c.indexed for c in chunks), "counts": counts,
            "model": llm.model, "max_tokens": getattr(getattr(chunker, "sampling", None), "max_tokens", "-")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunkers", default="lumber,hichunk")
    parser.add_argument("--words", type=int, default=3000, help="cut the document to this many words (0 = whole)")
    parser.add_argument("--doc", default=None, help="document id (default: the dataset's first)")
    parser.add_argument("--out", type=Path, default=None, help="append the results (markdown) here too")
    args, overrides = parser.parse_known_args()
    lines = []
    for name in args.chunkers.split(","):
        mine = [o.split(":", 1)[1] if ":" in o.split("=", 1)[0] else o for o in overrides
                if ":" not in o.split("=", 1)[0] or o.startswith(f"{name}:")]
        r = bench(name, mine, args.doc, args.words)
        line = (f"| {r['chunker']} | {r['doc']} ({r['words']} words) | {r['seconds']:.1f} | {r['calls']} | "
                f"{r['generated_tokens']} | {r['parse_failure_rate']:.2f} | {r['fallback_rate']:.2f} | "
                f"{r['chunks']} ({r['indexed']} leaves) | {r['max_tokens']} |")
        lines.append(line)
        print(line, flush=True)
        print(f"  model {r['model']}, overrides {mine}, counts {r['counts']}", flush=True)
    header = ("| chunker | document | s/doc | model calls | generated tokens | parse-failure rate | "
              "fallback rate | chunks | max_tokens |\n|---|---|---|---|---|---|---|---|---|")
    text = header + "\n" + "\n".join(lines)
    print(text)
    if args.out:
        with args.out.open("a") as f:
            f.write(f"overrides: {' '.join(overrides)}\n\n{text}\n\n")


if __name__ == "__main__":
    main()
