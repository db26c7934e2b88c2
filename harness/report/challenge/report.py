"""The challenge report: ``results/challenges/<name>/<version>/README.md`` with ``comparisons.csv``,
``ranks.csv``, the challenged tables (``tables/``) and the quality-vs-cost plots (``pareto/``).

Leaderboard first (wins, ties, inconclusive comparisons and losses against each baseline chunker
across the tables, and the challenger's mean rank), then cost beside quality, its place on each
dataset's Pareto front, and each table: what ran at which scale, per column its value, rank and
every paired comparison.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from harness.report.challenge.challenger import Challenger, shown_override
from harness.report.challenge.significance import ALPHA, VERDICTS, Comparison
from harness.report.tables import pareto


def num(x: float | None, digits: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def pvalue(p: float) -> str:
    return "" if math.isnan(p) else (f"{p:.3f}" if p >= 0.001 else "<0.001")


def leaderboard(results, margin: float) -> list[str]:
    by: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    tables: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for c in r.comparisons:  # the tables' own names for the rows ("FLC", "SC"), their configs beside
            name = c.baseline_label if c.baseline_label == c.baseline_chunker else \
                f"{c.baseline_label} (`{c.baseline_chunker}`)"
            by[name][c.verdict] += 1
            tables[name].add(r.spec.id)
    lines = ["## Leaderboard", "",
             f"Against each baseline row, by the tables' names, over every column of every challenged table. A win "
             f"or a loss: the paired permutation test rejects at {ALPHA} after Holm's correction across the table's "
             f"comparisons. Otherwise the 95% interval of the difference decides: a tie when it lies within "
             f"± the equivalence margin ({margin:g} points), inconclusive when it reaches past it (too few "
             f"questions to tell). Untested: a number that is not a mean over questions or documents.", "",
             "| baseline | tables | wins | ties | inconclusive | losses | untested |", "|" + "---|" * 7]
    for name in sorted(by, key=lambda n: (-by[n]["win"] + by[n]["loss"], n)):
        v = by[name]
        lines.append(f"| {name} | {len(tables[name])} | " + " | ".join(str(v[k]) for k in VERDICTS) + " |")
    if not by:
        lines.append("| no comparison: no challenger point finished beside a baseline |" + " |" * 6)
    ranks: dict[str, list[int]] = defaultdict(list)  # per metric: a rank averages like with like
    for r in results:
        for x in r.ranked:
            if x.rank is not None:
                ranks[x.metric].append(x.rank)
    if ranks:
        lines += ["", "The challenger's rank among its family's rows (1 = best), averaged per metric over the "
                      "tables' columns of that metric:", "",
                  "| metric | mean rank | columns | first in |", "|---|---|---|---|"]
        lines += [f"| {m} | {statistics.fmean(v):.2f} | {len(v)} | {sum(x == 1 for x in v)} |"
                  for m, v in sorted(ranks.items())]
    if refused := next((r.refused for r in results if r.refused), ""):  # harness.report.challenge.run.refuse
        lines += ["", f"**Refused, not ranked**: {refused}"]
    return lines


def cost_lines(results) -> list[str]:
    lines = ["## Cost and chunk sizes", "",
             "Per table and group, the challenger (★) beside the rows it is compared with: chunking seconds per "
             "document (what computing the chunks cost, cached or not), what the chunker embedded and asked an "
             "LLM per document, and its chunks (sizes in the unit of the run's context budget, named in the "
             "size unit column: a tokenizer's tokens, words or characters; documents left as one chunk; "
             "chunks over the context budget or the passage encoder's input).", "",
             "| table | family | group | row | s/doc | embedded texts/doc | LLM calls/doc | chunks/doc | size unit | "
             "mean size | max size | docs as one chunk | over budget | over encoder |", "|" + "---|" * 14]
    for r in results:
        for c in r.costs:
            v = c.values
            lines.append("| " + " | ".join([
                r.spec.id, c.family or "", c.group, ("**" + c.row + "**") if c.challenger else c.row,
                num(v.get("chunk_seconds_per_doc"), 3), num(v.get("embedded texts/doc"), 1),
                num(v.get("LLM calls/doc"), 1), num(v.get("chunks_per_doc"), 1), c.unit, num(v.get("chunk_size_mean"), 1),
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
    if t.left_out:
        lines.append(f"- left out (--no-llm-baselines; each calls an LLM): {', '.join(t.left_out)}.")
    failed: dict[str, list[str]] = defaultdict(list)  # a reason once, with every point it failed
    for o in r.outcomes:
        if o.status == "failed":
            failed[o.note].append(f"`{o.run.key}`")
    for note, keys in failed.items():
        lines.append(f"- failed ({len(keys)} point{'s' * (len(keys) > 1)}: {', '.join(keys)}): {note}")
    lines += ["", "| family | column | challenger | rank | best baseline | Δ to best | mean chunk size (unit: the cost "
                  "table's) |",
              "|---|---|---|---|---|---|---|"]
    for x in r.ranked:
        if x.note.startswith("not run at"):  # the table's caption says why
            continue
        diff = None if x.value is None or x.best_value is None else x.value - x.best_value
        text = "failed (why: above)" if x.value is None and x.note in failed else x.text
        lines.append(f"| {x.family or 'all'} | {x.column} | {text} | "
                     f"{'' if x.rank is None else f'{x.rank} of {x.rows}'} | {x.best} {num(x.best_value)} | "
                     f"{'' if diff is None else f'{diff:+.2f}'} | {num(x.chunk_size, 1)} |")
    lines += ["", "| family | column | baseline | baseline (paper) | challenger − baseline [95% CI] | detectable | n | "
                  "p | p (Holm) | verdict |", "|" + "---|" * 10]
    for c in r.comparisons:
        lines.append(comparison_line(c))
    return lines


def comparison_line(c: Comparison) -> str:
    """One comparison's row: the interval, the smallest difference it could have told from none
    (``detectable``: ± half the interval) and the verdict with its reason."""
    ci = f" [{c.ci_low:+.2f}, {c.ci_high:+.2f}]" if not math.isnan(c.ci_low) else ""
    diff = f"{c.diff:+.2f}{ci}" if not math.isnan(c.diff) else c.note
    paper = f" ({num(c.paper_value)})" if c.paper_value is not None else ""
    why = "; ".join(filter(None, (c.why, c.disagreement)))
    verdict = c.verdict + (f" ({why})" if why else "")
    return (f"| {c.family or 'all'} | {c.column} | {c.baseline_label} | {num(c.baseline_value)}{paper} | {diff} | "
            f"{'' if math.isnan(c.detectable) else f'±{c.detectable:.2f}'} | {c.n or ''} | {pvalue(c.p)} | "
            f"{pvalue(c.p_holm)} | {verdict} |")


def comparisons_csv(results) -> str:
    buf = io.StringIO()
    fields = [k for k in Comparison.__dataclass_fields__] + ["detectable", "verdict"]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in results:
        for c in r.comparisons:
            w.writerow({**asdict(c), "detectable": c.detectable, "verdict": c.verdict})
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


def all_failed(results) -> str:
    """The one line saying every challenger point failed, with the first failure's reason; ''
    where any point finished (or none ran)."""
    outcomes = [(r.spec.id, o) for r in results for o in r.outcomes]
    if not outcomes or any(o.status != "failed" for _, o in outcomes):
        return ""
    table, first = outcomes[0]
    return (f"every challenger point failed ({len(outcomes)} of {len(outcomes)}); the first, "
            f"{table} `{first.run.key}`: {first.note}")


def write(ch: Challenger, results, skipped, scale: str, uri: str, out: Path, seconds: float, margin: float,
          against: Sequence[str] = (), header: Sequence[str] = ()) -> Path:
    """The report in ``out``; ``against``: the section comparing it with the last version
    (:func:`harness.report.challenge.versions.against`); ``header``: the lines said first (the
    overrides in force, saturation)."""
    out.mkdir(parents=True, exist_ok=True)
    computed = sum(o.status != "finished" or not o.note.startswith("already recorded")
                   for r in results for o in r.outcomes)
    failed = all_failed(results)
    lines = [f"# Challenge: {ch.name}", "", *([f"**Failed: {failed}.**", ""] if failed else []),
             f"Generated by `chunkbench challenge {ch.given}` at **{scale}** scale from the MLflow "
             f"record; do not edit. Chunker: `{ch.target}` ({ch.arguments_text()}; code "
             f"`{ch.tags()['challenge.code'][:8]}`; overrides: {', '.join(f'`{shown_override(o)}`' for o in ch.overrides)}). "
             f"{len(results)} tables challenged, {len(skipped)} skipped; {sum(len(r.outcomes) for r in results)} "
             f"challenger points ({computed} computed by this call, the rest already recorded); "
             f"{sum(r.baseline_computed for r in results)} baseline points run, "
             f"{sum(r.baseline_runs for r in results)} read from the record; {seconds:.0f} s in all.", "",
             *(line for h in header for line in (h, ""))]  # the overrides in force, saturation
    lines += leaderboard(results, margin) + [""] + ([*against, ""] if against else []) + cost_lines(results) + [""]
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
