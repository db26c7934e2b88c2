"""Statistics of loaded datasets in the columns of HiChunk's Table 2, plus evidence alignment.

    .venv/bin/python scripts/dataset_stats.py ohrbench gutenqa "qasper dataset.path=/data/qasper"

Each argument is a dataset config name, optionally followed by overrides for it (one quoted
argument). Words are whitespace words, or characters for Chinese documents (as LongBench
counts them); sentences come from the project's sentence splitter. Evidence statistics are
over aligned spans; alignment shares come from the loader's report.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
from hydra import compose, initialize_config_dir

from harness.pipeline.components import build_component
from harness.text import is_cjk, sentence_spans

REPO = Path(__file__).resolve().parents[1]


def mean(values) -> float:
    values = list(values)
    return float(np.mean(values)) if values else float("nan")


def words(text: str) -> int:
    return len(text.replace(" ", "")) if is_cjk(text) else len(text.split())


def stats(name: str, overrides: list[str]) -> dict[str, float | str]:
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        cfg = compose("config", overrides=[f"dataset={name}", *overrides])
    ds = build_component(cfg.dataset, "dataset").load()
    docs = {d.doc_id: d for d in ds.documents}
    ev_texts = [docs[s.doc_id].text[s.start:s.end] for q in ds.queries for s in q.evidence]
    per_query_ev = [" ".join(docs[s.doc_id].text[s.start:s.end] for s in q.evidence) for q in ds.queries if q.evidence]
    r = ds.report
    out: dict[str, float | str] = {
        "dataset": " ".join([name, *overrides]),
        "docs": len(ds.documents),
        "sent/doc": mean(len(sentence_spans(d.text, d.language)) for d in ds.documents),
        "words/doc": mean(words(d.text) for d in ds.documents),
        "sections/doc": mean(len(d.sections) for d in ds.documents),
        "queries": len(ds.queries),
        "words/q": mean(words(q.question) for q in ds.queries),
        "words/a": mean(mean(words(a) for a in q.answers) for q in ds.queries if q.answers),
        "words/e": mean(words(t) for t in per_query_ev),
        "sent/e": mean(len(sentence_spans(t)) for t in per_query_ev),
        "evidence": r.get("evidence_total", len(ev_texts)),
    }
    for kind in ("exact", "normalised", "fuzzy", "unaligned"):
        if f"evidence_{kind}_share" in r:
            out[kind] = r[f"evidence_{kind}_share"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("datasets", nargs="+", help='config name, optionally with overrides: "qasper dataset.path=..."')
    parser.add_argument("--out", type=Path, default=None, help="also write the table (csv) here")
    args = parser.parse_args()
    rows = []
    for spec in args.datasets:
        name, *overrides = shlex.split(spec)
        rows.append(stats(name, overrides))
    table = pd.DataFrame(rows).set_index("dataset")
    print(table.round(3).to_string())
    if args.out:
        table.round(4).to_csv(args.out)


if __name__ == "__main__":
    main()
