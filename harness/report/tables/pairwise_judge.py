"""Judging a table's pairs of runs (MC-indexing Sec. 5.4, Figure 3).

After a table's grid has run, :func:`judge_table` takes, per group and x value, the latest
recorded runs of rows ``a`` and ``b`` (MC-indexing and FLC-300), pairs their answers by query
and has :mod:`harness.report.judge` score them (Figure 11 prompt, both answer orders). Each
judged pair is one MLflow run of the table's experiment (:mod:`harness.report.tables.pairwise`
reads it back); the per-query verdicts are its ``judged.jsonl``. The judge's LLM is built from
the composed config like every run component, so its calls go through the run's LLM-call cache:
a warm re-run computes nothing.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence

from harness.report.tables.cells import fmt
from harness.report.tables.pairwise import KIND_NAMES, pair_points, x_point
from harness.report.tables.records import recorded_runs
from harness.report.tables.spec import TableSpec
from harness.report.tables.spec_blocks import OUTCOMES, Pairwise
from harness.types import ConfigError


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
    from harness.pipeline.store import open_store, owner_tags, store_lock

    open_store(uri)
    with store_lock(uri):
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(spec.experiment)
        with mlflow.start_run(run_name=run_tags["table.run"], tags=owner_tags()) as run:
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
