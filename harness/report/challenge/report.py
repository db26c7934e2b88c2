"""The challenge report: ``results/challenges/<name>/README.md`` with ``comparisons.csv``,
``ranks.csv``, the challenged tables (``tables/``) and the quality-vs-cost plots (``pareto/``).

Leaderboard first (wins, ties and losses against each baseline chunker across the tables, and the
challenger's mean rank), then cost beside quality, its place on each dataset's Pareto front, and
each table: what ran at which scale, per column its value, rank and every paired comparison.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from harness.report.challenge.challenger import Challenger
from harness.report.challenge.significance import ALPHA, Comparison
from harness.report.tables import pareto


def num(x: float | None, digits: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def pvalue(p: float) -> str:
    return "" if math.isnan(p) else (f"{p:.3f}" if p >= 0.001 else "<0.001")


def leaderboard(results) -> list[str]:
    by: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    tables: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for c in r.comparisons:
            by[c.baseline_chunker][c.verdict] += 1
            tables[c.baseline_chunker].add(r.spec.id)
    ranks = [x.rank for r in results for x in r.ranked if x.rank is not None]
    firsts = sum(x.rank == 1 for r in results for x in r.ranked if x.rank is not None)
    lines = ["## Leaderboard", "",
             f"Against each baseline chunker, over every column of every challenged table (a win or a loss: "
             f"the paired permutation test rejects at {ALPHA} after Holm's correction across the table's "
             f"comparisons; else a tie; untested: a number that is not a mean over questions or documents).", "",
             "| baseline chunker | tables | wins | ties | losses | untested |", "|---|---|---|---|---|---|"]
    for name in sorted(by, key=lambda n: (-by[n]["win"] + by[n]["loss"], n)):
        v = by[name]
        lines.append(f"| {name} | {len(tables[name])} | {v['win']} | {v['tie']} | {v['loss']} | {v['untested']} |")
    if ranks:
        lines += ["", f"Mean rank of the challenger among its family's rows: **{statistics.fmean(ranks):.2f}** over "
                      f"{len(ranks)} columns (1 = best; first in {firsts})."]
    if refused := next((r.refused for r in results if r.refused), ""):  # harness.report.challenge.run.refuse
        lines += ["", f"**Refused, not ranked**: {refused}"]
    return lines


def cost_lines(results) -> list[str]:
    lines = ["## Cost and chunk sizes", "",
             "Per table and group, the challenger (★) beside the rows it is compared with: chunking seconds per "
             "document (what computing the chunks cost, cached or not), what the chunker embedded and asked an "
             "LLM per document, and its chunks (sizes in the context's units; documents left as one chunk; "
             "chunks over the context budget or the passage encoder's input).", "",
             "| table | family | group | row | s/doc | embedded texts/doc | LLM calls/doc | chunks/doc | mean size | "
             "max size | docs as one chunk | over budget | over encoder |", "|" + "---|" * 13]
    for r in results:
        for c in r.costs:
            v = c.values
            lines.append("| " + " | ".join([
                r.spec.id, c.family or "", c.group, ("**" + c.row + "**") if c.challenger else c.row,
                num(v.get("chunk_seconds_per_doc"), 3), num(v.get("embedded texts/doc"), 1),
                num(v.get("LLM calls/doc"), 1), num(v.get("chunks_per_doc"), 1), num(v.get("chunk_size_mean"), 1),
                num(v.get("chunk_size_max"), 0), num(v.get("docs_single_chunk"), 0),
                num(v.get("chunks_over_context_budget"), 0), num(v.get("chunks_over_embedder_input"), 0)]) + " |")
    return lines


def pareto_lines(ch: Challenger, results, uri: str, scale: str, out: Path) -> list[str]:
    mine = {i for r in results for i in r.run_ids}
    plots = pareto.write(uri, scale, out, challenge=None if any(r.refused for r in results) else ch.name)
    found = pareto.points(pareto.finished_runs(uri, scale, ch.name))
    lines = ["## Quality against cost", "",
             "Every chunker the tables ran on a dataset at its most common retrieval setting (as `results/pareto/`), "
             "the challenger included: is it on the Pareto front (no other chunker both cheaper and better)?", "",
             "| dataset | quality metric | challenger | quality | s/doc | on the front | better than | plot |",
             "|---|---|---|---|---|---|---|---|"]
    pngs = {d: png for d, _, png, _ in plots}
    plotted = set()
    for dataset, (metric, _, pts) in found.items():
        for p in pts:
            if mine & set(p.run_ids):
                plotted.add(dataset)
                beaten = sum(q.quality < p.quality for q in pts if q is not p)
                link = f"[png]({pngs[dataset].relative_to(out).as_posix()})" if dataset in pngs else ""
                lines.append(f"| {dataset} | {metric} | {p.chunker} | {p.quality:.4f} | {p.seconds_per_doc:.3f} | "
                             f"{'yes' if p.pareto else 'no'} | {beaten} of {len(pts) - 1} | {link} |")
    ran = {pareto.dataset_label(r) for r in pareto.finished_runs(uri, scale, ch.name) if r.info.run_id in mine}
    for dataset in sorted(ran - plotted):
        lines.append(f"| {dataset} | | not plotted: its runs there are not at the dataset's most common retrieval "
                     f"setting | | | | | |")
    return lines


def table_lines(r) -> list[str]:
    s, t = r.spec, r.challenged
    lines = [f"### {s.id}: {s.title}", "", f"[The table with the challenger's rows](tables/{s.id}.md). "
             f"Baseline points read from the record: {r.baseline_runs}; run by this challenge: {r.baseline_computed}. "
             f"Challenger points: {len(r.outcomes)} ({sum(o.status == 'failed' for o in r.outcomes)} failed), "
             f"{r.seconds:.0f} s."]
    data = [s.label(g, "groups", r.rendered.scale) for g in s.groups if s.at(r.rendered.scale, "groups", g.key).get("label")]
    if data:  # the rows' own stand-ins (a model for a reader) are in the table's caption
        lines.append("Stand-in data at this scale: " + "; ".join(data) + ".")
    skips = (t.spec.scales.get(r.rendered.scale) or {}).get("skip") or {}
    for f in t.families:
        like = next(x.label for x in s.rows if x.key == f.like)
        if f.row in skips:
            lines.append(f"- {f.label or 'all rows'}: not run at this scale ({skips[f.row]}).")
            continue
        lines.append(f"- {f.label or 'all rows'}: compared with {', '.join(x.label for x in s.rows if x.key in f.baselines)}; "
                     f"run at {like}'s settings" + (f"; {f.sweep_note}" if f.sweep_note else "") + ".")
    if s.sweep_select != "mean" and any(s.sweep(x, r.rendered.scale) for x in s.rows if x.key not in
                                        {f.row for f in t.families}):
        lines.append(f"- the swept baselines show their best configuration ({s.sweep_select}), picked on these same "
                     f"questions: a comparison with one of them favours it (the challenger is run as given; "
                     f"--sweep gives it a sweep of its own).")
    failed = [o for o in r.outcomes if o.status == "failed"]
    for o in failed:
        lines.append(f"- failed: `{o.run.key}`: {o.note}")
    lines += ["", "| family | column | challenger | rank | best baseline | Δ to best | mean chunk size |",
              "|---|---|---|---|---|---|---|"]
    for x in r.ranked:
        if x.note.startswith("not run at"):  # the table's caption says why
            continue
        diff = None if x.value is None or x.best_value is None else x.value - x.best_value
        lines.append(f"| {x.family or 'all'} | {x.column} | {x.text} | "
                     f"{'' if x.rank is None else f'{x.rank} of {x.rows}'} | {x.best} {num(x.best_value)} | "
                     f"{'' if diff is None else f'{diff:+.2f}'} | {num(x.chunk_size, 1)} |")
    lines += ["", "| family | column | baseline | baseline (paper) | challenger − baseline [95% CI] | n | p | "
                  "p (Holm) | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for c in r.comparisons:
        ci = f" [{c.ci_low:+.2f}, {c.ci_high:+.2f}]" if not math.isnan(c.ci_low) else ""
        diff = f"{c.diff:+.2f}{ci}" if not math.isnan(c.diff) else c.note
        paper = f" ({num(c.paper_value)})" if c.paper_value is not None else ""
        verdict = c.verdict + (f" ({c.disagreement})" if c.disagreement else "")
        lines.append(f"| {c.family or 'all'} | {c.column} | {c.baseline_label} | {num(c.baseline_value)}{paper} | {diff} | "
                     f"{c.n or ''} | {pvalue(c.p)} | {pvalue(c.p_holm)} | {verdict} |")
    return lines


def comparisons_csv(results) -> str:
    buf = io.StringIO()
    fields = [k for k in Comparison.__dataclass_fields__] + ["verdict"]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in results:
        for c in r.comparisons:
            w.writerow({**asdict(c), "verdict": c.verdict})
    return buf.getvalue()


def ranks_csv(results) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "family", "column", "challenger", "rank", "rows", "best_baseline", "best_value",
                "chunk_size_mean", "note"])
    for r in results:
        for x in r.ranked:
            w.writerow([r.spec.id, x.family, x.key, num(x.value, 6), x.rank or "", x.rows, x.best,
                        num(x.best_value, 6), num(x.chunk_size, 2), x.note])
    return buf.getvalue()


def write(ch: Challenger, results, skipped, scale: str, uri: str, out: Path, seconds: float) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    computed = sum(o.status != "finished" or not o.note.startswith("already recorded")
                   for r in results for o in r.outcomes)
    lines = [f"# Challenge: {ch.name}", "",
             f"Generated by `chunkbench challenge {ch.given}` at **{scale}** scale from the MLflow "
             f"record; do not edit. Chunker: `{ch.target}` (overrides: {', '.join(f'`{o}`' for o in ch.overrides)}). "
             f"{len(results)} tables challenged, {len(skipped)} skipped; {sum(len(r.outcomes) for r in results)} "
             f"challenger points ({computed} computed by this call, the rest already recorded); "
             f"{sum(r.baseline_computed for r in results)} baseline points run, "
             f"{sum(r.baseline_runs for r in results)} read from the record; {seconds:.0f} s in all.", ""]
    lines += leaderboard(results) + [""] + cost_lines(results) + [""]
    lines += pareto_lines(ch, results, uri, scale, out) + ["", "## Per table", ""]
    for r in results:
        lines += table_lines(r) + [""]
    lines += ["## Tables not challenged", "", "| table | why |", "|---|---|"]
    lines += [f"| {i} | {why} |" for i, why in skipped]
    (out / "comparisons.csv").write_text(comparisons_csv(results), encoding="utf-8")
    (out / "ranks.csv").write_text(ranks_csv(results), encoding="utf-8")
    path = out / "README.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
