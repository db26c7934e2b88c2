"""Pairwise answer judging across a table's runs (MC-indexing Sec. 5.4, Figure 3).

After a table's grid has run, :func:`judge_table` takes, per group and x value, the latest
recorded runs of rows ``a`` and ``b`` (MC-indexing and FLC-300), pairs their answers by query
and has :mod:`harness.report.judge` score them (Figure 11 prompt, both answer orders). Each
judged pair is one MLflow run of the table's experiment, tagged ``table.run = a~b|group|x``
with the two runs' ids, holding the rates ``<score|round>/<win|tie|loss>`` (from ``a``'s side,
over the queries with an outcome), ``n``, ``invalid`` (a round never parsed) and the judge's
LLM calls; the per-query verdicts are its ``judged.jsonl``. The judge's LLM is built from the
composed config like every run component, so its calls go through the run's LLM-call cache:
a warm re-run computes nothing. Rendering (:func:`cells`, :func:`markdown_lines`,
:func:`plot`) reads those runs back from the record, like every other cell.
"""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.report.tables.cells import Cell, Rendered, fmt, ours_text, short_label
from harness.report.tables.figure import pyplot, save, write_with_csv
from harness.report.tables.records import recorded_runs
from harness.report.tables.spec import GridRun, TableSpec
from harness.report.tables.spec_blocks import OUTCOMES, Pairwise, show
from harness.types import ConfigError

KIND_NAMES = {"score": "score_based", "round": "round_based"}   # harness.report.judge.summarize's keys
FACTOR, DIGITS = 100.0, 1                                       # rates shown in percent


@dataclass(frozen=True)
class PairCell(Cell):
    n: int | None = None          # queries with an outcome
    invalid: int | None = None    # queries whose judge reply never parsed in a round


def compose_judge(spec: TableSpec, scale: str, extra: Sequence[str] = ()):
    from harness import registry

    pw = spec.pairwise_at(scale)
    return registry.compose([*pw.judge, f"scale={scale}", f"experiment_name={spec.experiment}", *extra])


def build_judge(spec: TableSpec, scale: str, extra: Sequence[str] = ()):
    """The judge's LLM as the composed config's ``llm`` (with ``cache: ${cache}``: cached calls)."""
    from harness.llm.base import LLM
    from harness.pipeline.components import build_component

    try:
        llm = build_component(compose_judge(spec, scale, extra).llm, "llm")
    except ConfigError as e:
        raise ConfigError(f"table {spec.id}, pairwise.judge: {e}") from e
    except Exception as e:  # Hydra's composition errors: unknown choice or key
        raise ConfigError(f"table {spec.id}, pairwise.judge: {type(e).__name__}: {e}") from e
    if not isinstance(llm, LLM):
        raise ConfigError(f"table {spec.id}, pairwise.judge: builds {type(llm).__name__}, not a language model")
    return llm


def pair_points(spec: TableSpec, scale: str) -> list[tuple[str, str | None, GridRun, GridRun]]:
    """(group, x value, a's grid point, b's grid point) for every judged pair of the layout."""
    pw = spec.pairwise
    by = {(p.row, p.group, p.x): p for p in spec.runs(scale)}
    xs = [show(v) for v in spec.x.values] if spec.x else [None]
    return [(g.key, x, by[(pw.a, g.key, x)], by[(pw.b, g.key, x)])
            for g in spec.groups if not g.missing for x in xs]


def x_point(spec: TableSpec, x: str | None) -> str | None:
    return None if x is None else f"{spec.x.param}={x}"


def tags(spec: TableSpec, scale: str, pw: Pairwise, group: str, x: str | None, a, b) -> dict[str, str]:
    return {"table": spec.id, "table.run": pw.run_key(group, x_point(spec, x)), "table.row": f"{pw.a}~{pw.b}",
            "table.group": group, "table.scale": scale, "table.pair.a": a.data.tags.get("table.run", ""),
            "table.pair.b": b.data.tags.get("table.run", ""), "table.pair.a_run": a.info.run_id,
            "table.pair.b_run": b.info.run_id}


def metrics(records: Sequence[dict], kinds: Sequence[str]) -> dict[str, float]:
    """The rates of each outcome kind, ``n``, ``invalid`` and the judge's unparsable replies."""
    from harness.report.judge import summarize

    summary, out = summarize(records), {}
    for kind in kinds:
        for outcome in OUTCOMES:
            out[f"{kind}/{outcome}"] = summary[KIND_NAMES[kind]][outcome]   # NaN when nothing was judged
    first = summary[KIND_NAMES[kinds[0]]]
    out.update(n=first["n"], invalid=first["invalid"], parse_failures=float(sum(r["parse_failures"] for r in records)))
    return out


def log_judged(uri: str, spec: TableSpec, scale: str, judge_cfg, run_tags: dict[str, str], values: dict[str, float],
               records: Sequence[dict], left_out: dict[str, int]) -> str:
    import mlflow
    from omegaconf import OmegaConf

    from harness.pipeline.record import flatten, git_state
    from harness.pipeline.store import store_lock

    with store_lock(uri):
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(spec.experiment)
        with mlflow.start_run(run_name=run_tags["table.run"]) as run:
            llm = OmegaConf.to_container(judge_cfg.llm, resolve=False)
            mlflow.log_params({f"judge.llm.{k}": v for k, v in flatten(llm).items()})
            mlflow.log_metrics({k: v for k, v in values.items() if math.isfinite(v)})
            mlflow.set_tags({"scale": scale, "experiment": spec.experiment, **git_state(), **run_tags,
                             "judge.left_out": json.dumps(left_out)})
            mlflow.log_text("\n".join(json.dumps(r) for r in records), "judged.jsonl")
            return run.info.run_id


def judge_table(spec: TableSpec, scale: str, extra: Sequence[str] = (), log: Callable[[str], None] = print,
                llm=None) -> list[str]:
    """Judge every pair whose two runs are recorded (finished) at ``scale``; one line each.
    Returns the judged runs' ids. ``llm``: a ready judge (tests), else built from ``pairwise.judge``."""
    from harness.pipeline.record import log_failure
    from harness.report.compare import per_query
    from harness.report.judge import JUDGE_PROMPT, judge, pair_runs

    pw, cfg = spec.pairwise_at(scale), compose_judge(spec, scale, extra)
    uri = cfg.tracking.uri
    if not uri:
        raise ConfigError(f"table {spec.id}: pairwise judging reads the record; tracking.uri is null")
    latest = {key: rs[0] for key, rs in recorded_runs(spec, uri, scale).items()}
    done = []
    for group, x, pa, pb in pair_points(spec, scale):
        name = pw.run_key(group, x_point(spec, x))
        if pa.skip or pb.skip:
            continue
        ra, rb = latest.get(pa.key), latest.get(pb.key)
        bad = [p.key for p, r in ((pa, ra), (pb, rb)) if r is None or r.info.status != "FINISHED"]
        if bad:
            log(f"[{spec.id}] {name}: not judged ({', '.join(bad)} not recorded as finished)")
            continue
        run_tags = tags(spec, scale, pw, group, x, ra, rb)
        pairs, left_out = pair_runs(per_query(uri, ra.info.run_id), per_query(uri, rb.info.run_id))
        if not pairs:
            why = f"no query has an answer and a gold answer in both runs ({left_out}): were both run with a responder?"
            log_failure(cfg, name, why, run_tags)
            log(f"[{spec.id}] {name}: failed ({why})")
            continue
        llm = llm or build_judge(spec, scale, extra)
        calls, t0 = llm.stats.calls, time.perf_counter()
        records = judge(pairs, llm, JUDGE_PROMPT, pw.temperature, pw.max_tokens, pw.seed, pw.retries)
        values = metrics(records, pw.outcomes)
        values.update({"llm_calls": float(llm.stats.calls - calls), "prompts": float(2 * len(pairs)),
                       "stage_seconds/judge": time.perf_counter() - t0})
        done.append(log_judged(uri, spec, scale, cfg, run_tags, values, records, left_out))
        kind = pw.outcomes[0]
        log(f"[{spec.id}] {name}: {kind} win/tie/loss "
            + "/".join(fmt(values[f"{kind}/{o}"], 2) or "n/a" for o in OUTCOMES)
            + f" over {int(values['n'])} queries ({int(values['invalid'])} invalid), "
              f"{int(values['llm_calls'])} judge calls computed in {values['stage_seconds/judge']:.1f}s")
    return done


# --- rendering, from the record ------------------------------------------------------------------

def cells(spec: TableSpec, scale: str, runs: dict, numbers: dict) -> dict[tuple[str, str], PairCell]:
    """(group, pairwise column) -> its rate in percent, or why there is none. ``runs``: the latest
    recorded run per ``table.run``."""
    pw, out = spec.pairwise, {}
    points = {(g, x): (pa, pb) for g, x, pa, pb in pair_points(spec, scale)}
    for g in spec.groups:
        for col in spec.pair_columns():
            paper = numbers.get((g.key, col.key))
            out[(g.key, col.key)] = _cell(spec, scale, pw, g, col, points.get((g.key, col.x)), runs, paper)
    return out


def _cell(spec, scale, pw, group, col, pair, runs, paper) -> PairCell:
    if group.missing:
        return PairCell(None, paper=paper, note="not built")
    pa, pb = pair
    if pa.skip or pb.skip:
        return PairCell(None, paper=paper, note=f"not run at {scale} scale")
    ra, rb = runs.get(pa.key), runs.get(pb.key)
    for r in (ra, rb):
        if r is not None and r.info.status != "FINISHED":
            return PairCell(None, paper=paper, note=r.data.tags.get("error", "failed").splitlines()[0])
    if ra is None or rb is None:
        return PairCell(None, paper=paper, note="not run yet")
    judged = runs.get(pw.run_key(group.key, x_point(spec, col.x)))
    if judged is None:
        return PairCell(None, paper=paper, note="not judged yet")
    if judged.info.status != "FINISHED":
        return PairCell(None, paper=paper, note=judged.data.tags.get("error", "failed").splitlines()[0])
    if (judged.data.tags.get("table.pair.a_run"), judged.data.tags.get("table.pair.b_run")) != (
            ra.info.run_id, rb.info.run_id):
        return PairCell(None, paper=paper, note="judged older runs of the pair: judge again (tables run)")
    m = judged.data.metrics
    n, invalid = int(m.get("n", 0)), int(m.get("invalid", 0))
    value = m.get(f"{col.kind}/{col.outcome}")
    if value is None:  # NaN is not recorded: no query had an outcome
        return PairCell(None, paper=paper, note=f"no query judged ({invalid} invalid)", n=n, invalid=invalid)
    return PairCell(value * FACTOR, n_runs=1, paper=paper, n=n, invalid=invalid)


def cell_text(c: PairCell) -> str:
    text = ours_text(c, DIGITS)
    if c.ours is not None:
        text += f" (n = {c.n}" + (f", {c.invalid} invalid" if c.invalid else "") + ")"
    if c.paper is not None:
        text += f"<br>paper {fmt(c.paper, DIGITS)}" + (f", Δ {c.diff:+.{DIGITS}f}" if c.diff is not None else "")
    return text


def names(t: Rendered) -> tuple[str, str]:
    rows = {r.key: r.label for r in t.spec.rows}
    return rows[t.spec.pairwise.a], rows[t.spec.pairwise.b]


def markdown_lines(t: Rendered) -> list[str]:

    s, a, b = t.spec, *names(t)
    pw, cols = s.pairwise_at(t.scale), s.pair_columns()
    about = (f"Judge: {pw.label or ', '.join(pw.judge)} (MC-indexing Figure 11 prompt, both answer orders, "
             f"replies up to {pw.max_tokens} tokens, temperature {pw.temperature:g}). Win = {a}'s answer judged "
             f"better, in % of the queries with an outcome (n); invalid: a round whose reply never parsed "
             f"(left out). Score-based: the two rounds' scores summed; round-based: a win needs both rounds.")
    lines = ["", f"## Pairwise judge: {a} against {b}", "", about, "",
             "| | " + " | ".join(c.label for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for g in s.groups:
        lines.append(f"| {short_label(s, g, 'groups', t.scale)} | "
                     + " | ".join(cell_text(t.pairwise[(g.key, c.key)]) for c in cols) + " |")
    return lines


def csv_text(t: Rendered) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row", "column", "ours", "n", "invalid", "paper", "diff", "note"])
    for g in t.spec.groups:
        for col in t.spec.pair_columns():
            c = t.pairwise[(g.key, col.key)]
            w.writerow([g.key, col.key, fmt(c.ours, 6), "" if c.n is None else c.n,
                        "" if c.invalid is None else c.invalid, fmt(c.paper, 6), fmt(c.diff, 6), c.note])
    return buf.getvalue()


COLOURS = {"win": "tab:green", "tie": "0.75", "loss": "tab:red"}


def draw(t: Rendered):
    """Stacked bars, one per group: a's win, tie, b's win; a panel per outcome kind and x value."""
    plt = pyplot()

    s, (a, b) = t.spec, names(t)
    groups = [g for g in s.groups if not g.missing]
    xs = list(zip([show(v) for v in s.x.values], s.x.names)) if s.x else [(None, "")]
    kinds = s.pairwise.outcomes
    size = (max(6.5, 3.8 * len(xs)), 1.4 + len(kinds) * (0.8 + 0.45 * len(groups)))
    fig, axes = plt.subplots(len(kinds), len(xs), figsize=size, squeeze=False)
    legend = {"win": f"{a} wins", "tie": "Tie", "loss": f"{b} wins"}
    kind_names = {"score": "Score-based", "round": "Round-based"}
    ys = list(range(len(groups)))
    for i, kind in enumerate(kinds):
        for j, (x, x_name) in enumerate(xs):
            ax = axes[i][j]
            key = f"{kind}/" + "{}" + ("" if x is None else f"@{x}")
            found = [t.pairwise[(g.key, key.format("win"))] for g in groups]
            left = [0.0] * len(groups)
            for outcome in OUTCOMES:
                vals = [t.pairwise[(g.key, key.format(outcome))].ours or 0.0 for g in groups]
                ax.barh(ys, vals, left=left, color=COLOURS[outcome], label=legend[outcome], height=0.6)
                for y, v, lo in zip(ys, vals, left):
                    if v >= 8:
                        ax.text(lo + v / 2, y, f"{v:.0f}", ha="center", va="center", fontsize=7)
                left = [lo + v for lo, v in zip(left, vals)]
            for y, c in zip(ys, found):
                if c.ours is None:
                    ax.text(2, y, textwrap.shorten(f"n/a ({c.note})", 50), va="center", fontsize=7, color="grey")
                elif c.n is not None:
                    ax.text(101, y, f"n={c.n}" + (f", {c.invalid} inv." if c.invalid else ""), va="center", fontsize=6)
            ax.set_yticks(ys, [short_label(s, g, "groups", t.scale) for g in groups])
            ax.invert_yaxis()
            ax.set_xlim(0, 100)
            ax.set_xlabel("% of judged queries")
            ax.set_title(kind_names[kind] + (f", {x_name}" if x is not None else ""), fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(f"{s.id}: {a} against {b}, pairwise LLM judge ({t.scale} scale)", 90), fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    return fig


def plot(t: Rendered, path: Path) -> Path:
    return save(draw(t), path)


def write(t: Rendered, base: Path) -> list[Path]:
    """``<table>_pairwise.csv`` and ``<table>.png`` (the stacked bars)."""
    return write_with_csv(t, base, "pairwise", csv_text, plot)
