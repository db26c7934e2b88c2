"""A challenge, end to end: every challengeable table with the challenger's rows, run through the
normal grid (pipeline, stage cache, MLflow record), re-rendered, compared and reported.

A baseline point the record already holds under the same overrides (``--set``) is read, never run
again (a challenge on reproduced tables computes only the challenger's rows); one it lacks, or
holds only under other overrides, is run as ``tables run`` would
(:func:`harness.report.tables.records.point_runs`). The
challenger's runs are tagged ``challenge=<name>`` with the digest of its code, so editing a
chunker outside the repository runs it again, and the published tables and plots leave them out.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.chunking.contract import BROKE_CONTRACT
from harness.report.challenge import cluster, plan, versions
from harness.report.challenge.challenger import Challenger
from harness.report.challenge.rows import Challenged, challenged, override_value
from harness.report.challenge.significance import MARGIN, Comparison, correct, rank, test, unit_scores
from harness.report.tables import grid, render
from harness.report.tables.spec import GridRun, TableSpec, table_ids
from harness.report.tables.submit import uses_launcher
from harness.types import ConfigError

CHALLENGES = render.RESULTS / "challenges"
COST = ("chunk_seconds_per_doc", "chunks_per_doc", "chunk_size_mean", "chunk_size_max", "docs_single_chunk",
        "chunks_over_context_budget", "chunks_over_embedder_input")
PER_DOC = {"chunker_cost_embed_texts": "embedded texts/doc", "chunker_cost_llm_calls": "LLM calls/doc"}


@dataclass
class Ranked:
    family: str
    column: str                   # the column's label
    key: str                      # the column's key
    value: float | None
    text: str                     # value [CI] as the table shows it
    rank: int | None
    rows: int                     # rows with a value in the family (the challenger's included)
    best: str                     # the best baseline's label
    best_value: float | None
    chunk_size: float | None      # the challenger's mean chunk size in this cell's runs
    note: str = ""
    metric: str = ""              # the metric's label (a mean rank averages one metric's columns)


@dataclass
class Cost:
    family: str
    group: str
    row: str                      # a row's label
    challenger: bool
    values: dict[str, float]
    unit: str = ""                # what its chunk sizes count (size_unit)


@dataclass
class TableResult:
    spec: TableSpec
    challenged: Challenged
    rendered: render.Rendered
    ranked: list[Ranked]
    comparisons: list[Comparison]
    costs: list[Cost]
    outcomes: list[grid.Outcome]
    baseline_runs: int            # baseline points read from the record
    baseline_computed: int        # baseline points this challenge had to run
    seconds: float
    run_ids: list[str] = field(default_factory=list)   # the challenger's runs
    refused: str = ""             # why the challenger is not ranked: a point where it broke the chunk contract


def run_table(t: Challenged, ch: Challenger, scale: str, extra: Sequence[str], missing: list[GridRun],
              log: Callable[[str], None], here: bool = True) -> tuple[list[grid.Outcome], int, int]:
    """The baseline points the record lacks (``missing``), then the challenger's; the challenger's
    configs are composed first, so a bad argument stops the challenge before anything runs.
    ``here=False``: a launcher's jobs ran them (:mod:`harness.report.challenge.cluster`); a point
    still missing is reported, not run on this machine."""
    from harness.pipeline.record import IDENTITY_TAG, code_state, find_recorded

    code = code_state()
    base = [p for p in t.base.runs(scale) if not p.skip]
    points = t.mine(scale)
    configs = []
    for p in points:
        try:
            configs.append(grid.compose(t.spec, p, scale, extra))
        except Exception as e:  # Hydra's own errors: one line naming the point
            raise ConfigError(f"challenger {ch.given} in {t.spec.id} ({p.key}): {str(e).splitlines()[0]}") from None
    outcomes = []
    for i, p in enumerate(missing, 1):
        if not here:
            log(f"[{t.spec.id}] baseline {p.key}: no run recorded (its job failed: see the sweep's lines)")
            continue
        o = grid.run_point(t.base, p, scale, grid.compose(t.base, p, scale, extra), code, overrides=extra)
        log(f"[{t.spec.id}] baseline {i}/{len(missing)} {p.key}: {o.status} in {o.seconds:.1f}s")
    tags = ch.tags()
    for i, (p, cfg) in enumerate(zip(points, configs), 1):
        if here or find_recorded(cfg, grid.point_tags(t.spec, p, scale, cfg, code, tags)[IDENTITY_TAG]):
            outcomes.append(grid.run_point(t.spec, p, scale, cfg, code, tags, extra))
        else:
            outcomes.append(grid.Outcome(p, "failed", 0.0, "its job recorded no run (see the sweep's lines)"))
        log(grid.progress_line(t.spec, i, len(points), outcomes[-1]))
    return outcomes, len(base) - len(missing), len(missing) if here else 0


def _mean(records: list, name: str) -> float | None:
    found = [r.data.metrics[name] for r in records if name in r.data.metrics]
    return statistics.fmean(found) if found else None


def size_unit(records: list) -> str:
    """What the runs' chunk sizes count: the context budget's unit, with its tokenizer for tokens."""
    units = {(r.data.params.get("context.unit"), r.data.params.get("context.tokenizer")) for r in records}
    return "; ".join(sorted(f"tokens ({t})" if u == "tokens" and t else u or "?" for u, t in units))


def compare_table(t: Challenged, rendered: render.Rendered, uri: str, margin: float = MARGIN
                  ) -> tuple[list[Ranked], list[Comparison], list[Cost]]:
    """Per family and column: the challenger's rank and each paired comparison (Holm over the
    table; ``margin``: the equivalence margin in points); per family and group: what each row's
    chunking cost. ``rendered``: the challenged table as :func:`render.build` read it from the record."""
    s, scale, runs, cells = t.spec, rendered.scale, rendered.runs, rendered.cells
    points = render.grid_points(s, scale)
    rows = {r.key: r for r in s.rows}
    ranked, comparisons, costs = [], [], []
    for fam in t.families:
        me = rows[fam.row]
        for col in s.columns():
            mine = cells[(fam.row, col.key)]
            lower = col.metric.key in t.lower
            base = {b: cells[(b, col.key)] for b in fam.baselines}
            valued = {b: c.ours for b, c in base.items() if c.ours is not None}
            best = (min if lower else max)(valued, key=valued.get) if valued else None
            my_runs = render.cell_runs(s, scale, me, col, runs, points)
            label = render.column_label(s, col, scale) + (" (lower is better)" if lower else "")
            ranked.append(Ranked(fam.label, label, col.key, mine.ours,
                                 render.ours_text(mine, col.metric.digits),
                                 None if mine.ours is None else rank(mine.ours, list(valued.values()), lower),
                                 len(valued) + (mine.ours is not None), rows[best].label if best else "",
                                 valued.get(best), _mean([r for _, r in my_runs], "chunk_size_mean"),
                                 mine.saturated if mine.ours is not None else mine.note,
                                 f"{col.metric.label} (`{col.metric.metric}`)"))
            if col.group.aggregate:  # a mean of other columns: ranked, its parts are tested
                continue
            metric = s.metric_name(me, col)
            mine_scores = [unit_scores(uri, r, metric) for _, r in my_runs]
            for b, cell in base.items():
                row = rows[b]
                chunker = override_value((*s.shared, *row.overrides), "chunker") or "?"
                c = Comparison(s.id, fam.label, label, b, row.label, chunker, cell.ours, cell.paper, mine.ours, lower)
                if cell.ours is None or mine.ours is None:  # not run at this scale, failed: the ranks say why
                    continue
                their = render.cell_runs(s, scale, row, col, runs, points)
                scores = [unit_scores(uri, r, s.metric_name(row, col)) for _, r in their]
                comparisons.append(test(c, scores, mine_scores, [_values(s, p) for p, _ in their],
                                        [_values(s, p) for p, _ in my_runs], col.metric.factor, margin))
        for g in s.groups:
            if g.aggregate:
                continue
            for key in (*fam.baselines, fam.row):
                records = [runs[p.key] for p in s.runs(scale) if p.row == key and p.group == g.key
                           and p.key in runs and runs[p.key].info.status == "FINISHED"]
                if not records:
                    continue
                values = {k: v for k in COST if (v := _mean(records, k)) is not None}
                n_docs = _mean(records, "n_docs") or 1.0
                values.update({label: v / n_docs for k, label in PER_DOC.items() if (v := _mean(records, k)) is not None})
                costs.append(Cost(fam.label, g.label or g.key, rows[key].label, key == fam.row, values,
                                  size_unit(records)))
    correct(comparisons)
    return ranked, comparisons, costs


def _values(spec: TableSpec, point) -> str:
    """A sweep point's values alone (``chunker.size=200`` and ``++chunker.size=200`` pair)."""
    return "|".join(part.partition("=")[2] for part in render.sweep_point(spec, point).split("|") if part)


def challenge(given: cluster.Given, specs: Sequence[TableSpec], scale: str, extra: Sequence[str], uri: str,
              root: Path = CHALLENGES, log: Callable[[str], None] = print, margin: float = MARGIN) -> Path:
    """Every table of ``specs`` that takes the challenger ``given`` names, run (here, or as a
    launcher's jobs when ``extra`` selects one), rendered and compared; the report is
    :func:`harness.report.challenge.report.write`'s, in its version's folder under ``root``
    (:mod:`.versions`). What it will compute is logged first (:mod:`.plan`). Every challenger point
    failing is an error (one line, the first failure's reason), raised after the report is written."""
    from harness.report.challenge import report

    t0 = time.perf_counter()
    ch = given.challenger()
    todo, results, skipped = [], [], []
    for s in specs:
        if s.challenge is None or s.challenge.skip:
            skipped.append((s.id, s.challenge.skip if s.challenge else "the table file has no challenge block"))
            continue
        t = challenged(s, ch, scale, given.sweep, given.no_llm)
        if not t.mine(scale):
            skipped.append((s.id, f"none of its points runs at {scale} scale (its caption says why)"))
            continue
        todo.append(t)
    if not todo:
        raise ConfigError(f"none of the tables takes a challenger: {'; '.join(f'{i}: {why}' for i, why in skipped)}")
    missing = {t.spec.id: t.baselines_missing(uri, scale, extra) for t in todo}
    for line in plan.lines(todo, missing, scale):
        log(line)
    here, by_jobs = not uses_launcher(extra), {}
    if not here:  # profile=cluster: every point as a job, the launcher waits for them
        by_jobs = {i: len(m) for i, m in missing.items()}
        cluster.submit(given.for_jobs(ch.name), [t.spec.id for t in todo], scale, extra)
    v = versions.version(ch, scale, versions.tables_part([s.id for s in specs], table_ids()),
                         grid.config_overrides(extra))
    out = root / ch.name / v.folder
    for t in todo:
        s, mine, t1 = t.base, {f.row for f in t.families}, time.perf_counter()
        # after a launcher's jobs, the baselines still missing are those whose job failed
        still = missing[s.id] if here else t.baselines_missing(uri, scale, extra)
        outcomes, reused, computed = run_table(t, ch, scale, extra, still, log, here)
        reused, computed = reused - by_jobs.get(s.id, 0), computed + by_jobs.get(s.id, 0)
        rendered = render.build(t.spec, uri, scale, extra)
        render.write(rendered, out / "tables")
        ranked, comparisons, costs = compare_table(t, rendered, uri, margin)
        ids = [r.info.run_id for k, r in rendered.runs.items() if k.split("|")[0] in mine]
        results.append(TableResult(s, t, rendered, ranked, comparisons, costs, outcomes, reused, computed,
                                   time.perf_counter() - t1, ids))
        log(f"[{s.id}] challenged: {sum(o.status == 'finished' for o in outcomes)} finished, "
            f"{sum(o.status == 'failed' for o in outcomes)} failed, {reused} baseline points read from the record, "
            f"{computed} run, in {time.perf_counter() - t1:.0f}s")
    refuse(results)
    before = versions.last(root / ch.name, v)
    against = versions.against(root / ch.name, before, v, report.ranks_csv(results)) if before else []
    path = report.write(ch, results, skipped, scale, uri, out, time.perf_counter() - t0, margin, against,
                        header_lines(given, extra, results))
    versions.record(root / ch.name, v)
    if failed := report.all_failed(results):
        raise ConfigError(f"{failed}; the report of what was computed: {path}")
    if results[0].refused:
        raise ConfigError(f"{ch.name} is refused, not ranked: {results[0].refused}; the report: {path}")
    return path


def refuse(results: list[TableResult]) -> None:
    """A challenger that broke the chunk contract anywhere (:class:`harness.chunking.contract.ChunkContractError`:
    the reason its failed point is recorded with) is refused everywhere: no rank, no verdict, no
    place on a Pareto front, its scores elsewhere being a broken chunker's that happened to pass.
    The reason is read from the outcomes and from the rendered cells (a cluster job's failure is
    only in the record)."""
    reasons = [note for r in results for note in
               [o.note for o in r.outcomes if o.status == "failed"] + [x.note for x in r.ranked]]
    reason = next((n for n in reasons if BROKE_CONTRACT in n), "")
    if not reason:
        return
    for r in results:
        r.refused, r.comparisons, r.run_ids = reason, [], []
        r.ranked = [replace(x, rank=None, note=f"refused: {reason}") for x in r.ranked]


def header_lines(given: cluster.Given, extra: Sequence[str], results: Sequence[TableResult]) -> list[str]:
    """What the report says first besides its counts: the overrides every run was under, the
    baselines' as the challenger's (a baseline recorded under others is run again, never read), and
    how many of the challenger's values no chunking could change
    (:func:`harness.report.tables.cells.saturated_note`)."""
    from harness.report.challenge.own_data import DEFAULTS

    said = grid.config_overrides(extra)
    lines = ["Overrides in force for every run, the baselines' and the challenger's (`--set`): "
             + (", ".join(f"`{o}`" for o in said) if said else "none") + "."]
    if given.data:
        lines.append("Your data's settings (the challenge's defaults first, then yours): "
                     + ", ".join(f"`{o}`" for o in (*DEFAULTS, *given.data)) + ".")
    ranked = [x for r in results for x in r.ranked if x.value is not None]
    saturated = [x for x in ranked if x.note.startswith("saturated")]
    if saturated:
        lines.append(f"**Saturated: chunking cannot change {len(saturated)} of the challenger's {len(ranked)} values "
                     f"here** (every row at the metric's ceiling, or every row equal with every context holding its documents whole; "
                     f"marked in the tables): their ranks and verdicts say nothing about the chunkers.")
    return lines
