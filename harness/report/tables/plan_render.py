"""``tables plan`` as text: one block per table and one for the total, every figure labelled an
estimate, each role's throughput source named, each gap said (never counted as zero); and the
smoke scale's CPU seconds where the cache recorded them."""

from __future__ import annotations

import re
from typing import Any

from harness.cache import open_cache
from harness.report.tables.plan import Planner, TablePlan, data_key


def _n(x: float) -> str:
    """A count in a short, readable form (tokens run to billions)."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.1f}{unit}"
    return f"{x:.0f}"


BASES = ("derived", "cited", "measured")
ASSUMED = re.compile(r"\[assumed: ([^\]]*)\]")   # a data size's mark (harness/report/tables/dataset_sizes.py)


def _hours(h: float, missing: dict[str, int]) -> str:
    text = f"{h:,.1f} GPU-h" if h >= 0.1 or not h else f"{h * 60:.1f} GPU-min"
    if not (n := sum(missing.values())):
        return text
    kinds: dict[str, int] = {}
    for why, k in missing.items():
        kind = ("a throughput" if "no throughput" in why else "a price" if "no price" in why
                else "a data size" if why.startswith("unknown:") else "a model of its work")
        kinds[kind] = kinds.get(kind, 0) + k
    return text + f" + unknown ({n} stage work(s): " + ", ".join(f"{k} without {w}" for w, k in kinds.items()) + ")"


def assumed_sizes(tables: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each declared assumption a size rests on (its ``[assumed: ...]`` mark), and the tables it sizes."""
    out: dict[str, dict[str, None]] = {}
    for t in tables:
        for source in t["sizes"]:
            for what in ASSUMED.findall(source):
                out.setdefault(what, {})[t["table"]] = None
    return {what: list(ids) for what, ids in out.items()}


def _basis(r: dict[str, Any]) -> str:
    """What a role's figures are: derived, cited or measured (a price is cited)."""
    found = sorted({b for w in r["why"] for b in BASES if w.startswith(b) or f"+{b}" in w})
    return "/".join(found) or "-"


def _cost(t: dict[str, Any], smoke: bool = False) -> str:
    """A block's cost line: GPU-hours by basis, API dollars, the wall-clock at the array's parallelism."""
    basis = ", ".join(f"{k} {v:,.1f}" for k, v in t.get("basis_hours", {}).items() if v >= 0.05)
    wall = t.get("wall") or {}
    out = _hours(t["gpu_hours"], t["missing"]) + (f" ({basis})" if basis else "")
    out += f"; API ${t.get('usd', 0.0):,.0f}"
    if wall:
        out += (f"; wall-clock >= {wall['hours']:,.1f} h at {wall['parallelism']} jobs at once "
                f"(longest job {wall['longest_job_hours']:,.1f} h")
        if wall.get("over_limit"):
            out += f"; {wall['over_limit']} job(s) past the {wall['limit_hours']:g} h time limit"
        out += ")"
    return out


def _roles(rows: list[dict[str, Any]], indent: str, smoke: bool = False) -> list[str]:
    """One line per role and model: the work counted, its GPU-hours (or dollars) and what they
    rest on, and what is not counted."""
    out = []
    for r in sorted(rows, key=lambda r: (r["role"], r["model"])):
        tp = f" TP{r['tensor_parallel']}" if r["tensor_parallel"] > 1 else ""
        if not r["counted"]:
            work = "work unknown"
        elif r["backend"] in ("VLLM", "TransformersLLM", "OpenAILLM"):
            work = f"prefill {_n(r['prefill'])} tok, decode <= {_n(r['decode'])} tok, {_n(r['calls'])} calls"
        else:
            work = f"embedded {_n(r['embedded'])} tok"
        if smoke:
            gpu = ""
        elif r["backend"].startswith("OpenAI"):
            gpu = f"API ${r['usd']:,.0f} [cited price]" + (" + unknown" if r["no_figure"] or not r["counted"] else "")
        elif r["no_figure"] or not r["counted"]:
            gpu = "GPU-h unknown" if not r["gpu_s"] else f"{_hours(r['gpu_hours'], {})} + unknown"
        else:
            gpu = f"{_hours(r['gpu_hours'], {})} [{_basis(r)}]"
        line = f"{indent}{r['role']:<26} {r['model'] + tp:<42} {work:<56} {gpu}"
        if r.get("fit"):  # before a submission: the engine would fail to load
            line += f"  [{r['fit']}]"
        gaps = [w for w in r["why"] if not w.startswith(BASES)]
        if r["work_unknown"] or (r["no_figure"] and not smoke):
            line += f"  ({r['work_unknown'] + r['no_figure']} of {r['counted'] + r['work_unknown']} stage works: " \
                    f"{'; '.join(gaps)[:160]})"
        out.append(line)
    return out


def _cpu(c: dict[str, Any] | None, index: dict[str, Any] | None = None) -> str:
    """The cache's recorded chunking seconds; where it has none (a cold cache), the estimate the
    committed results index gives: the seconds the table's own smoke runs computed when rendered."""
    if c and c["stages"] and c["found"]:
        got = f"CPU from the cache: chunking {c['seconds']:,.0f} s ({c['found']} of {c['stages']} chunk stages"
        return got + (")" if c["found"] == c["stages"] else f"; {c['stages'] - c['found']} with no cached timing)")
    if not index:
        return "CPU: no cached timing, and no row in results/index.json"
    tables = "" if "tables" not in index else f", {index['tables']} of {index['of']} tables indexed"
    return (f"CPU: no cached timing; estimate from results/index.json (commit {index['commit']}, {index['date']}"
            f"{tables}): {index['computed']:,.0f} s computed by its smoke runs (+ {index['reused']:,.0f} s of "
            f"other tables' runs read from the cache, computed anew in a cold one)")


def indexed_cpu_seconds(r: dict[str, Any]) -> None:
    """Each smoke table's cold CPU seconds from the committed ``results/index.json`` (its runs'
    computed and reused seconds when last rendered), set on the report's tables and total."""
    from harness.report.tables.index import load
    from harness.report.tables.render import RESULTS

    rows = load(RESULTS, "smoke")
    for t in r["tables"]:
        row = rows.get(t["table"])
        t["index"] = None if row is None else {"computed": row.computed, "reused": row.reused,
                                               "commit": row.commit, "date": row.date}
    found = [t["index"] for t in r["tables"] if t["index"]]
    r["total"]["index"] = {"computed": sum(i["computed"] for i in found), "reused": sum(i["reused"] for i in found),
                           "commit": ", ".join(sorted({i["commit"] for i in found})) or "-",
                           "date": ", ".join(sorted({i["date"] for i in found})) or "-",
                           "tables": len(found), "of": len(r["tables"])} if found else None


def text(r: dict[str, Any]) -> str:
    sl, smoke = r["launcher"], r["scale"] == "smoke"
    cached = r.get("cached_cpu_seconds") or {}
    head = ("ChunkBench plan at smoke scale: what the smoke run does here (bundled data and CPU models); work "
            "counted as at full scale, time from the cache's recorded seconds" if smoke
            else f"ChunkBench plan at {r['scale']} scale: {r['label']}")
    jobs = ("  runs: each point in turn, in this process (`tables run`), on the CPU" if smoke else
            f"  jobs: one SLURM array task per runnable point ({sl['file']}: gpus_per_task {sl['gpus_per_task']}, "
            f"at most {sl['array_parallelism']} at once, {sl['timeout_min']} min limit); a point whose vLLM role has "
            f"tensor_parallel_size n asks for n GPUs")
    lines = [head, f"  work per method measured on {r['method_work']} (harness/report/tables/method_work.json)", jobs,
             "  shared stages (same name, version, config slices and upstream: the runner's cache key) count once", ""]
    for t in r["tables"]:
        gpus = ", ".join(f"{n} x {g} GPU" for g, n in sorted(t["jobs_by_gpus"].items(), key=lambda kv: int(kv[0])))
        stages = ", ".join(f"{k} {v}" for k, v in t["stages_computed"].items())
        jobs = "run here one after another by `tables run`" if smoke else f"{t['jobs']} jobs ({gpus or 'none'})"
        lines += [f"[{t['table']}] {t['points']} points ({t['not_run_at_scale']} not run at this scale), "
                  f"{jobs}; {_n(t['documents'])} documents and {_n(t['questions'])} "
                  f"questions read (summed over points); stages computed: {stages or 'none'}",
                  f"    {_cpu((cached.get('tables') or {}).get(t['table']), t.get('index')) if smoke else _cost(t)}"
                  + ("" if t["roles"] else " (no model role: no GPU work)")]
        lines += _roles(t["roles"], "    ", smoke)
        lines += [f"    size {why} [{n} point(s)]" for why, n in t["sizes"].items()]
        for p in t.get("points_detail") or []:
            hours = "" if smoke else f", {p['gpu_hours_alone']:.2f} GPU-h alone" + (
                f" + unknown ({p['role_works_missing']} role work(s))" if p["role_works_missing"] else "")
            lines.append(f"      point {p['point']}: {_n(p['documents'] or 0) if p['documents'] is not None else '?'} docs, "
                         f"{_n(p['questions'] or 0) if p['questions'] is not None else '?'} questions, "
                         f"{p['gpus']} GPU(s){hours}")
        if t.get("pairwise"):
            lines.append(f"    + pairwise judging ({t['pairwise']}): not counted here")
    tot = r["total"]
    lines += ["", f"TOTAL: {tot['points']} points{'' if smoke else ', ' + str(tot['jobs']) + ' jobs'}; "
                  f"stages computed once across tables: "
                  + ", ".join(f"{k} {v}" for k, v in tot["stages_computed"].items()),
              f"    {_cpu(cached.get('total'), tot.get('index')) if smoke else _cost(tot)}"
              + ("" if smoke else f"  [{r['label']}]")]
    lines += _roles(tot["roles"], "    ", smoke)
    if smoke:
        lines += ["", "Other stages' seconds are in the MLflow record of a run (stage_seconds/*), not in the cache."]
        return "\n".join(lines)
    if unfit := sorted({f"{r['model']} at TP {r['tensor_parallel']}: {r['fit']}" for r in tot["roles"] if r.get("fit")}):
        lines += ["", "Will not load on this hardware (fix before submitting):"] + [f"    - {u}" for u in unfit]
    if tot["missing"]:
        lines += ["", "Not estimated (missing, not zero): stage works by reason"]
        lines += [f"    {n:>5} x {why}" for why, n in sorted(tot["missing"].items(), key=lambda kv: -kv[1])[:15]]
    if assumed := assumed_sizes(r["tables"]):
        lines += ["", "Data sizes resting on a declared assumption, not a published or counted figure "
                      "(results/papers/dataset_sizes.csv):"]
        lines += [f"    - {what} [{', '.join(ids)}]" for what, ids in assumed.items()]
    hw = r["hardware"]
    lines += ["", f"Hardware file {hw['file']} ({hw['gpu']}); assumptions:"]
    lines += [f"    - {a}" for a in hw["assumptions"]]
    lines += ["  constants (derived figures: harness/report/tables/throughput.py; models: configs/hardware/models.yaml):"]
    for name, f in hw["constants"].items():
        lines.append(f"    {name}: {f['value']:g} [{f['source']}] ({f['note']})")
    for model, figs in hw.get("measured", {}).items():
        lines += [f"    measured {model} {what}: {f['value']:,.0f} tok/s [{f['source']}]" for what, f in figs.items()]
    lines += ["  checks (derived under the published run's conditions / published):"]
    for c in hw["checks"]:
        lines.append(f"    {c['model']} {c['what']} (batch {c['batch']}, TP {c['tp']}, {c['dtype']}): derived "
                     f"{c['derived']:,.0f} / published {c['value']:,.0f} = {c['ratio']:.2f}x [{c['source']}, {c['date']}]")
    if not hw["checks"]:
        lines.append("    none: no published throughput for this GPU is cited in the hardware file")
    return "\n".join(lines)


def cached_chunk_seconds(plans: list[TablePlan], planner: Planner) -> dict[str, Any]:
    """Chunking seconds of each distinct smoke chunk stage, read from the cache's per-document
    entries (``DocChunks.seconds``: what computing it cost, reused LLM calls included), where the
    cache has every document of it; the key is the runner's (namespace ``chunk_doc``). Per table
    (its own distinct stages) and in total (each once)."""
    from harness.code_digest import target_digest
    from harness.pipeline.runner import document_key
    from harness.pipeline.stages import STAGES

    stage = next(s for s in STAGES if s.name == "chunk")
    cache_dir = next(iter(planner.composed.values())).cache_dir
    cache = open_cache(cache_dir)
    seconds: dict[str, float | None] = {}

    def of(p) -> float | None:
        identity = p.stages["chunk"]
        if identity not in seconds:
            ds = planner.loaded.get(data_key(p.slices))
            slices = [p.slices[g] for g in stage.reads]
            code = target_digest(str(p.slices["chunker"].get("_target_", "")))  # the chunker's, unbuilt
            entries = cache.get_objects(f"{stage.name}_doc", [document_key(stage, slices, d, code)
                                                              for d in (ds.documents if ds is not None else [])])
            seconds[identity] = sum(e.seconds for e in entries) if entries and all(e is not None for e in entries) else None
        return seconds[identity]

    def summed(points) -> dict[str, Any]:
        found = {p.stages["chunk"]: of(p) for p in points}
        known = [v for v in found.values() if v is not None]
        return {"stages": len(found), "found": len(known), "seconds": sum(known)}

    return {"cache": cache_dir, "tables": {tp.spec.id: summed(tp.points) for tp in plans},
            "total": summed([p for tp in plans for p in tp.points])}
