"""Measure what each chunking method sends its models per 1,000 document tokens, on the bundled
documents, and write harness/report/tables/method_work.json (read by `tables plan`).

    .venv/bin/python scripts/measure_method_work.py [--only NAME,...] [--dataset OVERRIDE ...] [--out FILE]

Each method is a choice of the config group `chunker` at its config's defaults, run by its own
code with recording stand-ins for its LLM and embedder (harness.report.tables.measure says what
the stand-ins reply and what that means for the counts). No model is loaded; runs offline.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=None, help="comma-separated chunker choices (default: every one)")
    ap.add_argument("--dataset", nargs="*", default=["dataset=ohrbench"], help="Hydra overrides choosing the documents")
    ap.add_argument("--out", default=None, help="default: harness/report/tables/method_work.json")
    args = ap.parse_args()

    from harness import registry
    from harness.report.tables.measure import METHOD_WORK, measure_all

    choices = args.only.split(",") if args.only else registry.choices("chunker")
    out = Path(args.out) if args.out else METHOD_WORK
    measured = measure_all(choices, args.dataset)
    if args.only and out.is_file():  # a partial run updates the methods it measured
        kept = json.loads(out.read_text(encoding="utf-8"))
        kept["methods"].update(measured["methods"])
        measured["methods"] = kept["methods"]
    out.write_text(json.dumps(measured, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{len(choices)} method(s) -> {out}")


if __name__ == "__main__":
    main()
