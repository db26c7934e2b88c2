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

import ast
import csv
import io
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from harness.report.tables.figure import pyplot, save
from harness.report.tables.records import table_runs

# The quality axis: the first of these that the dataset's runs record (higher is better).
QUALITY = ("evidence_recall", "scope_recall_at_5", "doc_f1_at_5", "chunk_recall_at_5", "dcg_at_5")
SETTING = ("retriever._target_", "embedder.model", "context._target_", "context.budget", "context.unit",
           "dataset.limit_queries")
NOT_SET = (None, "None", "null", "0", "[]")
BUNDLED = {"bundled": "all-MiniLM-L6-v2 (bundled)"}


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


@cache
def _specs() -> dict:
    from harness.report.tables.spec import all_specs

    return {s.id: s for s in all_specs()}


def table_label(run) -> str | None:
    """The run's chunker as its table labels it: the row's label, with the chunker's own sweep
    values of its grid point (``LumberChunker``, ``Fixed-size size=300``); None for a run of no
    table file."""
    spec = _specs().get(run.data.tags.get("table", ""))
    key = run.data.tags.get("table.run", "").split("|")
    row = next((a for a in spec.rows if a.key == key[0]), None) if spec else None
    if row is None or not row.label:
        return None
    sweep = [part.split("=", 1) for part in key[2:] if part.startswith("chunker.") and "=" in part]
    return " ".join([row.label, *(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in sweep)])


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()[:80] or "dataset"


def finished_runs(uri: str, scale: str, challenge: str | None = None) -> list:
    """The latest finished run of every grid point of every paper table at ``scale``; a
    challenger's (``chunkbench challenge``) only for the challenge named."""
    latest = {}
    for r in table_runs(uri, scale):
        if "table.pair.a_run" in r.data.tags:  # a judged pair of two runs (pairwise), no chunking of its own
            continue
        if r.data.tags.get("challenge", challenge) != challenge:
            continue
        latest.setdefault((r.data.tags.get("table"), r.data.tags.get("table.run")), r)
    return list(latest.values())


def table_name(runs: list) -> str | None:
    """One chunker config's name among the labels its tables give it: a table's rather than a
    figure's (a figure's rows are often a parameter's values), then the shortest."""
    named = [(spec.is_figure, len(t), t) for r in runs if (t := table_label(r))
             and (spec := _specs().get(r.data.tags.get("table", "")))]
    return min(named)[2] if named else None


def loader_title(target: str, name: str | None) -> str:
    """The dataset's name as its loader declares it (``DatasetLoader.title``), else its config name."""
    from hydra.utils import get_class

    try:
        cls = get_class(target)
    except (ImportError, ValueError, AttributeError):
        return name or "dataset"
    return cls.title or cls.__name__


def _value(text: str) -> str:
    """A recorded param as a person reads it: a list as its items, comma-separated."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def dataset_label(run) -> str:
    """The dataset a run read, named as a person names it, with the filters that make it a part
    of that dataset: ``OHR-Bench (news, textbook)``, ``CRUD (4 documents)``."""
    p = run.data.params
    parts = [_value(p[k]) for k in ("dataset.subset", "dataset.domains") if p.get(k) not in NOT_SET]
    if p.get("dataset.min_words") not in NOT_SET:
        parts.append(f"documents of {p['dataset.min_words']}+ words")
    if p.get("dataset.limit_docs") not in NOT_SET:
        parts.append(f"{p['dataset.limit_docs']} documents")
    title = loader_title(p.get("dataset._target_", ""), p.get("dataset.name"))
    return title + (f" ({'; '.join(parts)})" if parts else "")


def setting_text(params: dict[str, str]) -> str:
    """The retrieval setting in words: ``dense retrieval with all-MiniLM-L6-v2; budget context of
    4096 tokens``."""
    def cls(key: str, suffix: str) -> str:
        return params.get(key, "?").rsplit(".", 1)[-1].removesuffix(suffix)

    model = params.get("embedder.model", "")
    with_model = f" with {BUNDLED.get(model, model)}" if model not in NOT_SET else ""
    budget = params.get("context.budget")
    size = f" of {budget} {params.get('context.unit', 'tokens')}" if budget not in NOT_SET else ""
    queries = params.get("dataset.limit_queries")
    text = f"{cls('retriever._target_', 'Retriever')} retrieval{with_model}; {cls('context._target_', 'Assembler')} context{size}"
    return text + (f"; {queries} questions" if queries not in NOT_SET else "")


def with_front(pts: list[Point]) -> list[Point]:
    """``pts`` by cost, each marked whether it is on the Pareto front (no other point is both
    cheaper and better)."""
    def beaten(p: Point) -> bool:
        return any(q.seconds_per_doc <= p.seconds_per_doc and q.quality >= p.quality
                   and (q.seconds_per_doc, q.quality) != (p.seconds_per_doc, p.quality) for q in pts)

    return sorted((replace(p, pareto=not beaten(p)) for p in pts), key=lambda p: p.seconds_per_doc)


def points(runs: list) -> dict[str, tuple[str, str, list[Point]]]:
    """Per dataset: (quality metric, retrieval setting in words, points with the front marked)."""
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
        configs = chunker_labels(rs)   # runs of one chunker config give the same chunks: one point
        merged: dict[str, list] = {}
        for r in rs:
            merged.setdefault(configs[r.info.run_id], []).append(r)
        named = {config: table_name(group) or config for config, group in merged.items()}
        twice = {n for n in named.values() if list(named.values()).count(n) > 1}
        pts = []
        for config, group in merged.items():
            # the run that computed the chunks cold has their time
            r = max(group, key=lambda g: g.data.metrics["chunk_seconds_per_doc"])
            m, n_docs = r.data.metrics, max(r.data.metrics.get("n_docs", 1.0), 1.0)
            name = f"{named[config]} [{config}]" if named[config] in twice else named[config]
            pts.append(Point(dataset, name, m[metric], m["chunk_seconds_per_doc"],
                             m.get("chunker_cost_embed_texts", float("nan")) / n_docs,
                             m.get("chunker_cost_llm_calls", float("nan")) / n_docs,
                             m.get("chunker_cost_llm_calls_from_cache", 0.0) / n_docs,
                             tuple(sorted({g.data.tags.get("table", "") for g in group})),
                             run_ids=tuple(g.info.run_id for g in group)))
        out[dataset] = (metric, setting_text(rs[0].data.params), with_front(pts))
    return out


def csv_text(dataset: str, metric: str, setting: str, pts: list[Point]) -> str:
    buf = io.StringIO()
    buf.write(f"# dataset: {dataset}\n# quality: {metric}\n# retrieval setting: {setting}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["chunker", metric, "chunk_seconds_per_doc", "embed_texts_per_doc", "llm_calls_per_doc",
                "llm_calls_from_cache_per_doc", "pareto", "tables"])
    for p in pts:
        w.writerow([p.chunker, f"{p.quality:.6f}", f"{p.seconds_per_doc:.6f}", f"{p.embed_texts_per_doc:.1f}",
                    f"{p.llm_calls_per_doc:.1f}", f"{p.llm_calls_from_cache_per_doc:.1f}", int(p.pareto),
                    " ".join(p.tables)])
    return buf.getvalue()


def plot(dataset: str, metric: str, setting: str, pts: list[Point], path: Path, scale: str) -> None:
    """``dataset`` (its readable name) as the title, the retrieval setting under it. Only the front
    is labelled, by number, and listed under the plot: dozens of long names beside their points
    overlap; the other points are a count in the legend."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    front, rest = [p for p in pts if p.pareto], [p for p in pts if not p.pareto]

    def x(p: Point) -> float:  # a log axis: a chunking too fast to time sits at its floor
        return max(p.seconds_per_doc, 1e-4)

    if rest:
        ax.scatter([x(p) for p in rest], [p.quality for p in rest], s=16, color="0.55", alpha=0.6, zorder=2,
                   label=f"not on the front: {len(rest)} configurations")
    ax.step([x(p) for p in front], [p.quality for p in front], where="post", color="C3", alpha=0.5, zorder=3)
    ax.scatter([x(p) for p in front], [p.quality for p in front], s=30, color="C3", zorder=4,
               label=f"Pareto front: {len(front)}, numbered as listed below")
    for i, p in enumerate(front, 1):  # above, then below: neighbours on the staircase stay apart
        ax.annotate(str(i), (x(p), p.quality), xytext=(0, 6) if i % 2 else (0, -12), textcoords="offset points",
                    ha="center", fontsize=8, fontweight="bold", color="C3")
    words = metric.replace("_at_", "@").replace("_", " ")
    ax.set_xscale("log")
    ax.margins(y=0.12)   # room for the numbers above the best point and below the cheapest
    ax.set_xlabel("chunking seconds per document (log scale)")
    ax.set_ylabel(words)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.set_title(textwrap.fill(f"{setting} ({scale} scale)", 110), fontsize=8)
    fig.suptitle(textwrap.fill(f"{dataset}: {words} against chunking cost", 80), fontsize=11)
    numbers = [plt.Line2D([], [], linestyle="none", marker=f"${i}$", color="C3", markersize=5 + 3 * len(str(i)))
               for i in range(1, len(front) + 1)]
    listed = [f"{textwrap.shorten(p.chunker, 90)}: {p.quality:.3f} at {p.seconds_per_doc:.2g} s/doc" for p in front]
    fig.legend(numbers, listed, loc="outside lower center", ncol=1 if len(front) <= 8 else 2, fontsize=8,
               title="Pareto front, cheapest first", title_fontsize=8, frameon=False)
    save(fig, path)


def committed(folder: Path) -> dict[str, tuple[str, str, list[Point]]]:
    """The points the CSVs in ``folder`` hold, per dataset: (metric, setting, points)."""
    out = {}
    for path in sorted(folder.glob("*.csv")):
        lines = path.read_text(encoding="utf-8").splitlines()
        head = dict(line[2:].split(": ", 1) for line in lines if line.startswith("# ") and ": " in line)
        if not {"dataset", "quality", "retrieval setting"} <= set(head):
            continue  # an older form: the next full render replaces it
        metric = head["quality"]
        pts = [Point(head["dataset"], r["chunker"], float(r[metric]), float(r["chunk_seconds_per_doc"]),
                     float(r["embed_texts_per_doc"]), float(r["llm_calls_per_doc"]),
                     float(r["llm_calls_from_cache_per_doc"]), tuple(r["tables"].split()))
               for r in csv.DictReader(line for line in lines if not line.startswith("#"))]
        out[head["dataset"]] = (metric, head["retrieval setting"], pts)
    return out


def merged(found: dict, held: dict, recorded: set[str]) -> dict[str, tuple[str, str, list[Point]]]:
    """The record's points, and the committed points of the tables the record holds no run of
    (a render of some tables keeps what the others' runs put in the plots)."""
    out = dict(found)
    for dataset, (metric, setting, pts) in held.items():
        keep = [p for p in pts if not set(p.tables) & recorded]
        if not keep:
            continue
        if dataset not in found:
            out[dataset] = (metric, setting, with_front(keep))
        elif found[dataset][:2] == (metric, setting):  # the same axes: one plot
            mine = found[dataset][2]
            names = {p.chunker for p in mine}
            out[dataset] = (metric, setting, with_front(mine + [p for p in keep if p.chunker not in names]))
    return dict(sorted(out.items()))


def write(uri: str, scale: str, out: Path, challenge: str | None = None) -> list[tuple[str, str, Path, int]]:
    """``results/pareto/<dataset>.{png,csv}``; returns (dataset, metric, png path, points) per plot.
    ``challenge``: with that challenger's runs. The committed points of tables the record holds no
    run of stay in (:func:`merged`)."""
    written = []
    folder = out / "pareto"
    stale = set(folder.glob("*.png")) | set(folder.glob("*.csv"))  # the folder is generated: no leftovers
    runs = finished_runs(uri, scale, challenge)
    found = merged(points(runs), committed(folder), {r.data.tags.get("table", "") for r in runs})
    for dataset, (metric, setting, pts) in found.items():
        if len(pts) < 2 or not any(p.quality > 0 for p in pts):  # nothing to compare
            continue
        folder.mkdir(parents=True, exist_ok=True)
        base = folder / slug(dataset)
        base.with_suffix(".csv").write_text(csv_text(dataset, metric, setting, pts), encoding="utf-8")
        plot(dataset, metric, setting, pts, base.with_suffix(".png"), scale)
        written.append((dataset, metric, base.with_suffix(".png"), len(pts)))
        stale -= {base.with_suffix(".png"), base.with_suffix(".csv")}
    for path in stale:
        path.unlink()
    return written
