"""``tables plan`` as text: one block per table and one for the total, every figure labelled an
estimate, each role's throughput source named, each gap said (never counted as zero); and the
smoke scale's CPU seconds where the cache recorded them."""

from __future__ import annotations

from typing import Any

from harness.cache import make_key, open_cache
from harness.report.tables.plan import Planner, TablePlan


def _n(x: float) -> str:
    """A count in a short, readable form (tokens run to billions)."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.1f}{unit}"
    return f"{x:.0f}"


def _hours(h: float, missing: dict[str, int]) -> str:
    text = f"{h:,.1f} GPU-h" if h >= 0.1 or not h else f"{h * 60:.1f} GPU-min"
    n = sum(missing.values())
    return text + (f" + unknown ({n} stage work(s) without a size or a throughput figure)" if n else "")


def _roles(rows: list[dict[str, Any]], indent: str) -> list[str]:
    out = []
    for r in sorted(rows, key=lambda r: (r["role"], r["model"])):
        tp = f" TP{r['tensor_parallel']}" if r["tensor_parallel"] > 1 else ""
        work = (f"embedded {_n(r['embedded'])}" if r["embedded"] or r["backend"] not in ("VLLM", "TransformersLLM", "OpenAILLM")
                else f"prefill {_n(r['prefill'])}, decode <= {_n(r['decode'])}, {_n(r['calls'])} calls")
        gpu = "served: API tokens" if r["backend"].startswith("OpenAI") else _hours(r["gpu_hours"], {})
        line = f"{indent}{r['role']:<28} {r['model'] + tp:<44} {work:<48} {gpu}"
        if r["missing"]:
            line += f"; {r['missing']} stage work(s) unknown: {'; '.join(w for w in r['why'] if not w.startswith('class'))[:200]}"
        out.append(line)
    return out


def text(r: dict[str, Any]) -> str:
    sl = r["launcher"]
    lines = [f"ChunkBench plan at {r['scale']} scale: {r['label']}",
             f"  work per method measured on {r['method_work']} (harness/report/tables/method_work.json)",
             f"  jobs: one SLURM array task per runnable point ({sl['file']}: gpus_per_task {sl['gpus_per_task']}, "
             f"at most {sl['array_parallelism']} at once, {sl['timeout_min']} min limit); a point whose vLLM role has "
             f"tensor_parallel_size n asks for n GPUs",
             "  shared stages (same name, version, config slices and upstream: the runner's cache key) count once", ""]
    for t in r["tables"]:
        gpus = ", ".join(f"{n} x {g} GPU" for g, n in sorted(t["jobs_by_gpus"].items(), key=lambda kv: int(kv[0])))
        stages = ", ".join(f"{k} {v}" for k, v in t["stages_computed"].items())
        lines += [f"[{t['table']}] {t['points']} points ({t['not_run_at_scale']} not run at this scale), "
                  f"{t['jobs']} jobs ({gpus or 'none'}); stages computed: {stages or 'none'}",
                  f"    {_hours(t['gpu_hours'], t['missing'])}"]
        lines += _roles(t["roles"], "    ")
    tot = r["total"]
    lines += ["", f"TOTAL: {tot['points']} points, {tot['jobs']} jobs; stages computed once across tables: "
                  + ", ".join(f"{k} {v}" for k, v in tot["stages_computed"].items()),
              f"    {_hours(tot['gpu_hours'], tot['missing'])}  [{r['label']}]"]
    lines += _roles(tot["roles"], "    ")
    if tot["missing"]:
        lines += ["", "Not estimated (missing, not zero):"]
        lines += [f"    {n:>5} x {why}" for why, n in sorted(tot["missing"].items(), key=lambda kv: -kv[1])[:15]]
    hw = r["hardware"]
    lines += ["", f"Hardware file {hw['file']} ({hw['gpu']}); assumptions:"]
    lines += [f"    - {a}" for a in hw["assumptions"]]
    lines += ["  figures (per GPU):"]
    for f in hw["figures"]:
        value = "none" if f["value"] is None else f"{f['value']:,.0f} tok/s"
        lines.append(f"    {f['kind']} {f['class']} {f['figure']}: {value} [{f['source']}]")
    if r.get("cached_cpu_seconds") is not None:
        c = r["cached_cpu_seconds"]
        lines += ["", f"CPU estimate from the cache ({c['cache']}): chunking {c['seconds']:,.0f} s for "
                      f"{c['found']} of {c['stages']} chunk stages" + (
                      "" if c["found"] == c["stages"] else f" ({c['stages'] - c['found']}: no cached timing)")
                  + "; other stages: no cached timing (their seconds are in the MLflow record of a run)"]
    return "\n".join(lines)


def cached_chunk_seconds(plans: list[TablePlan], planner: Planner) -> dict[str, Any]:
    """Chunking seconds of each distinct smoke chunk stage, read from the cache's per-document
    entries (``DocChunks.seconds``: what computing it cost, reused LLM calls included), where the
    cache has every document of it; the key is the runner's (namespace ``chunk_doc``)."""
    from harness.pipeline.runner import doc_digest
    from harness.pipeline.stages import STAGES

    stage = next(s for s in STAGES if s.name == "chunk")
    cache_dir = next(iter(planner.composed.values())).cache_dir
    cache = open_cache(cache_dir)
    seen, found, seconds = set(), 0, 0.0
    for tp in plans:
        for p in tp.points:
            identity = p.stages["chunk"]
            if identity in seen:
                continue
            seen.add(identity)
            ds = planner.loaded.get(make_key(p.slices["dataset"]))
            if ds is None:
                continue
            slices = [p.slices[g] for g in stage.reads]
            entries = [cache.get(f"{stage.name}_doc", make_key(f"{stage.name}_doc", stage.version, slices, doc_digest(d)))
                       for d in ds.documents]
            if entries and all(e is not None for e in entries):
                found += 1
                seconds += sum(e.seconds for e in entries)
    return {"cache": cache_dir, "stages": len(seen), "found": found, "seconds": seconds}
