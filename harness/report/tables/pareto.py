"""Quality against cost, per dataset, over every chunking the paper tables ran.

"Is the expensive chunker worth it?" asked across all five papers' methods at once: for each
dataset (with its stand-in filter, e.g. one OHR-Bench domain), every chunker configuration the
tables recorded is one point: x = its chunking seconds per document (recorded when the chunks
were computed, so a cached rerun reports the same), y = one retrieval quality metric, with the
embedded texts and LLM calls per document beside it in the CSV. Only runs that share the
dataset's most common retrieval setting (retriever, embedder, context and budget) are compared,
so a point differs from another by its chunker alone; the setting is printed with the plot.
The Pareto front (no other point is both cheaper and better) is marked. A chunking's seconds are
what computing it costs from scratch: LLM calls the cache answered count with their recorded
compute time (embeddings the cache answered count as free; the CSV says how many LLM calls came
from the cache).
"""

from __future__ import annotations

import csv
import io
import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.report.tables.figure import pyplot, save

# The quality axis: the first of these that the dataset's runs record (higher is better).
QUALITY = ("evidence_recall", "scope_recall_at_5", "doc_f1_at_5", "chunk_recall_at_5", "dcg_at_5")
SETTING = ("retriever._target_", "embedder.model", "context._target_", "context.budget", "context.unit",
           "dataset.limit_queries")
DATASET = ("dataset.name", "dataset.subset", "dataset.domains", "dataset.min_words", "dataset.limit_docs")


@dataclass(frozen=True)
class Point:
    dataset: str
    chunker: str
    quality: float
    seconds_per_doc: float
    embed_texts_per_doc: float
    llm_calls_per_doc: float
    llm_calls_from_cache_per_doc: float
    tables: tuple[str, ...]
    pareto: bool = False
    run_ids: tuple[str, ...] = ()


def _label(params: dict[str, str], keys: tuple[str, ...]) -> str:
    """``key=value`` of the set parameters among ``keys`` (class paths shortened to the class)."""
    def short(v: str) -> str:
        return v.rsplit(".", 1)[-1] if v.startswith("harness.") else v

    return " ".join(f"{k.split('.', 1)[1]}={short(params[k])}" for k in keys
                    if params.get(k) not in (None, "None", "null", "0"))


def chunker_labels(runs: list) -> dict[str, str]:
    """A label per run: the chunker's class and the chunker parameters that tell its runs apart
    (those whose values differ among the runs of that class)."""
    params = {r.info.run_id: {k: v for k, v in r.data.params.items() if k.startswith("chunker.")
                              and not k.startswith(("chunker.embedder.", "chunker.llm.", "chunker.cache"))} for r in runs}
    by_class: dict[str, list[str]] = {}
    for r in runs:
        by_class.setdefault(params[r.info.run_id].get("chunker._target_", "?"), []).append(r.info.run_id)
    out = {}
    for target, ids in by_class.items():
        keys = sorted({k for i in ids for k in params[i]})
        differ = [k for k in keys if len({params[i].get(k) for i in ids}) > 1]
        for i in ids:
            shown = " ".join(f"{k.split('.', 1)[1]}={params[i].get(k)}" for k in differ)
            out[i] = f"{target.rsplit('.', 1)[-1]} {shown}".strip()
    return out


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()[:80] or "dataset"


def finished_runs(uri: str, scale: str, challenge: str | None = None) -> list:
    """The latest finished run of every grid point of every paper table at ``scale``; a
    challenger's (``python -m harness.cli challenge``) only for the challenge named."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exps = [e.experiment_id for e in client.search_experiments() if e.name.startswith("tables/")]
    if not exps:
        return []
    runs = client.search_runs(exps, filter_string=f"tags.`table.scale` = '{scale}' and attributes.status = 'FINISHED'",
                              order_by=["attributes.start_time DESC"], max_results=50000)
    latest = {}
    for r in runs:
        if "table.pair.a_run" in r.data.tags:  # a judged pair of two runs (pairwise), no chunking of its own
            continue
        if r.data.tags.get("challenge", challenge) != challenge:
            continue
        latest.setdefault((r.data.tags.get("table"), r.data.tags.get("table.run")), r)
    return list(latest.values())


def dataset_label(run) -> str:
    """The dataset a run read, with its stand-in filter (a plot's title and file name)."""
    return _label(run.data.params, DATASET)


def points(runs: list) -> dict[str, tuple[str, str, list[Point]]]:
    """Per dataset: (quality metric, retrieval setting, points with the front marked)."""
    by_dataset: dict[str, list] = {}
    for r in runs:
        by_dataset.setdefault(dataset_label(r), []).append(r)
    out = {}
    for dataset, rs in sorted(by_dataset.items()):
        metric = next((m for m in QUALITY if any(m in r.data.metrics for r in rs)), None)
        if metric is None:
            continue
        rs = [r for r in rs if metric in r.data.metrics and "chunk_seconds_per_doc" in r.data.metrics]
        setting = Counter(_label(r.data.params, SETTING) for r in rs).most_common(1)[0][0]
        rs = [r for r in rs if _label(r.data.params, SETTING) == setting]
        labels = chunker_labels(rs)
        merged: dict[str, list] = {}
        for r in rs:
            merged.setdefault(labels[r.info.run_id], []).append(r)
        pts = []
        for chunker, group in merged.items():
            # identical configs give identical chunks; the run that computed them cold has the time
            r = max(group, key=lambda g: g.data.metrics["chunk_seconds_per_doc"])
            m, n_docs = r.data.metrics, max(r.data.metrics.get("n_docs", 1.0), 1.0)
            pts.append(Point(dataset, chunker, m[metric], m["chunk_seconds_per_doc"],
                             m.get("chunker_cost_embed_texts", float("nan")) / n_docs,
                             m.get("chunker_cost_llm_calls", float("nan")) / n_docs,
                             m.get("chunker_cost_llm_calls_from_cache", 0.0) / n_docs,
                             tuple(sorted({g.data.tags.get("table", "") for g in group})),
                             run_ids=tuple(g.info.run_id for g in group)))
        front = [p for p in pts if not any(q.seconds_per_doc <= p.seconds_per_doc and q.quality >= p.quality
                                           and (q.seconds_per_doc, q.quality) != (p.seconds_per_doc, p.quality)
                                           for q in pts)]
        out[dataset] = (metric, setting, sorted((Point(**{**p.__dict__, "pareto": p in front}) for p in pts),
                                                 key=lambda p: p.seconds_per_doc))
    return out


def csv_text(metric: str, setting: str, pts: list[Point]) -> str:
    buf = io.StringIO()
    buf.write(f"# quality: {metric}; retrieval setting: {setting}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["chunker", metric, "chunk_seconds_per_doc", "embed_texts_per_doc", "llm_calls_per_doc",
                "llm_calls_from_cache_per_doc", "pareto", "tables"])
    for p in pts:
        w.writerow([p.chunker, f"{p.quality:.6f}", f"{p.seconds_per_doc:.6f}", f"{p.embed_texts_per_doc:.1f}",
                    f"{p.llm_calls_per_doc:.1f}", f"{p.llm_calls_from_cache_per_doc:.1f}", int(p.pareto),
                    " ".join(p.tables)])
    return buf.getvalue()


def plot(dataset: str, metric: str, setting: str, pts: list[Point], path: Path, scale: str) -> None:
    fig, ax = pyplot().subplots(figsize=(7, 4.5))
    for p in pts:
        ax.scatter(max(p.seconds_per_doc, 1e-4), p.quality, color="C3" if p.pareto else "C0", zorder=3)
        ax.annotate(p.chunker, (max(p.seconds_per_doc, 1e-4), p.quality), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    front = [p for p in pts if p.pareto]
    ax.step([max(p.seconds_per_doc, 1e-4) for p in front], [p.quality for p in front], where="post",
            color="C3", alpha=0.5, label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("chunking seconds per document (log)")
    ax.set_ylabel(metric)
    ax.set_title(textwrap.fill(f"{dataset} ({scale} scale); {setting}", 100), fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, path)


def write(uri: str, scale: str, out: Path, challenge: str | None = None) -> list[tuple[str, str, Path, int]]:
    """``results/pareto/<dataset>.{png,csv}``; returns (dataset, metric, png path, points) per plot.
    ``challenge``: with that challenger's runs."""
    written = []
    folder = out / "pareto"
    stale = set(folder.glob("*.png")) | set(folder.glob("*.csv"))  # the folder is generated: no leftovers
    for dataset, (metric, setting, pts) in points(finished_runs(uri, scale, challenge)).items():
        if len(pts) < 2 or not any(p.quality > 0 for p in pts):  # nothing to compare
            continue
        folder.mkdir(parents=True, exist_ok=True)
        base = folder / slug(dataset)
        base.with_suffix(".csv").write_text(csv_text(metric, setting, pts), encoding="utf-8")
        plot(dataset, metric, setting, pts, base.with_suffix(".png"), scale)
        written.append((dataset, metric, base.with_suffix(".png"), len(pts)))
        stale -= {base.with_suffix(".png"), base.with_suffix(".csv")}
    for path in stale:
        path.unlink()
    return written
