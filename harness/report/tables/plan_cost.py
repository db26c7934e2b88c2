"""``tables plan``'s costing: each distinct stage's work once, its GPU-seconds from the hardware
file's figures (a gap when a figure or a size is missing, never a zero), summed per role, per
table and in total; and the plan as the data the text and ``--json`` print."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from harness.report.tables.hardware import Hardware
from harness.report.tables.prices import Price, load_prices
from harness.report.tables.plan import LAUNCHER, Planner, PointPlan, TablePlan, launcher
from harness.report.tables.spec import REPO
from harness.report.tables.workload import RoleWork

ESTIMATE = "estimate: counted work / throughput derived from cited constants (or cited, or measured)"


def gpu_seconds(w: RoleWork, hw: Hardware) -> tuple[float | None, str]:
    """GPU-seconds of one role's work (per-GPU figures: a tensor-parallel engine on n GPUs runs
    n times faster on n GPUs, so its GPU-seconds are the same), and what they rest on: the
    figures' basis (derived | cited | measured), or why there are none."""
    if w.missing:
        return None, w.missing
    if w.served:
        return 0.0, "served"
    if w.kind == "llm":
        pf = hw.figure("llm", w.model, "prefill_tokens_per_s", w.tensor_parallel, w.quantization)
        df = hw.figure("llm", w.model, "decode_tokens_per_s", w.tensor_parallel, w.quantization)
        if pf.missing or (df.missing and w.decode):
            return None, f"{w.model}: no throughput ({pf.source if pf.missing else df.source})"
        basis = pf.basis if not w.decode or df.basis == pf.basis else f"{pf.basis}+{df.basis}"
        return w.prefill / pf.value + (w.decode / df.value if w.decode else 0.0), basis
    model = w.model.split(" | ")[0]
    f = hw.figure("encoder", model, "tokens_per_s")
    if f.missing:
        return None, f"{model}: no throughput ({f.source})"
    return w.embedded / f.value, f.basis


def dollars(w: RoleWork, prices: dict[str, Price]) -> tuple[float | None, str]:
    """An API role's price: its prompt (or embedded) and completion tokens at the list's rates."""
    price = prices.get(w.model)
    if price is None:
        return None, f"{w.model}: no price in configs/prices/"
    return price.dollars(w.prefill + w.embedded, w.decode), f"cited ({price.source}, {price.date})"


@dataclass
class Totals:
    """Work, GPU-seconds and API dollars summed over stage identities (each once)."""

    by_role: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    gpu_s: float = 0.0
    job_s: float = 0.0     # seconds of the jobs that do the work: GPU-seconds / the GPUs each job holds
    usd: float = 0.0
    basis: dict[str, float] = field(default_factory=dict)    # derived | cited | measured -> GPU-seconds
    missing: dict[str, int] = field(default_factory=dict)   # why -> stage works left out

    def add(self, w: RoleWork, hw: Hardware, prices: dict[str, Price], gpus: int = 1) -> None:
        """A stage's work for one role: its tokens whenever its size is known; its GPU-seconds
        (or, served, its dollars) when a figure (or a price) is there too, else the gap is counted,
        never a zero."""
        s, why = gpu_seconds(w, hw)
        usd = None
        if s is not None and w.served:
            usd, why = dollars(w, prices)
            s = None if usd is None else 0.0
        row = self.by_role.setdefault((w.role, w.model, w.backend), {
            "role": w.role, "model": w.model, "backend": w.backend, "tensor_parallel": w.tensor_parallel,
            "fit": hw.fit(w.model, w.tensor_parallel, w.quantization, w.memory_share)
            if w.kind == "llm" and w.backend == "VLLM" else None,
            "prefill": 0.0, "decode": 0.0, "embedded": 0.0, "calls": 0.0, "gpu_s": 0.0, "usd": 0.0,
            "counted": 0, "work_unknown": 0, "no_figure": 0, "why": set()})
        row["why"].add(why)
        if w.missing:
            row["work_unknown"] += 1
        else:
            row["counted"] += 1
            for k in ("prefill", "decode", "embedded", "calls"):
                row[k] += getattr(w, k)
            if s is None:
                row["no_figure"] += 1
        if s is None:
            self.missing[why] = self.missing.get(why, 0) + 1
            return
        row["gpu_s"] += s
        self.gpu_s += s
        self.job_s += s / max(1, gpus)
        if usd is not None:
            row["usd"] += usd
            self.usd += usd
        else:
            self.basis[why] = self.basis.get(why, 0.0) + s


def totals(points: list[PointPlan], planner: Planner, hw: Hardware, prices: dict[str, Price] | None = None
           ) -> tuple[Totals, dict[str, int]]:
    """Each distinct stage identity of ``points`` once; and how many distinct each stage has."""
    prices = load_prices() if prices is None else prices
    t, seen, distinct = Totals(), set(), defaultdict(int)
    for p in points:
        for stage, identity in p.stages.items():
            if identity is None or identity in seen:
                continue
            seen.add(identity)
            distinct[stage] += 1
            for w in planner.stage_work[identity]:
                t.add(w, hw, prices, p.gpus)
    return t, dict(distinct)


def point_gpu_hours(p: PointPlan, planner: Planner, hw: Hardware) -> tuple[float, int]:
    """The point on its own (nothing shared): its GPU-hours and the role works without a figure."""
    hours, missing = 0.0, 0
    for identity in filter(None, p.stages.values()):
        for w in planner.stage_work[identity]:
            s, _ = gpu_seconds(w, hw)
            hours, missing = (hours + s / 3600, missing) if s is not None else (hours, missing + 1)
    return hours, missing


def wall_hours(t: Totals, points: list[PointPlan], planner: Planner, hw: Hardware, parallelism: int,
               limit_h: float | None = None) -> dict[str, Any]:
    """The array's wall-clock, a lower bound: its jobs' hours spread evenly over ``parallelism``
    jobs at once, and never less than its longest job (a point alone, on the GPUs it asks for);
    and how many jobs alone would run past the launcher's time limit (``limit_h``)."""
    jobs = [point_gpu_hours(p, planner, hw)[0] / max(1, p.gpus) for p in points]
    longest, spread = max(jobs, default=0.0), t.job_s / 3600 / max(1, parallelism)
    return {"hours": max(longest, spread), "longest_job_hours": longest, "spread_hours": spread,
            "parallelism": parallelism, "over_limit": sum(h > limit_h for h in jobs) if limit_h else 0,
            "limit_hours": limit_h}


def report(plans: list[TablePlan], planner: Planner, hw: Hardware, cached: dict[str, float] | None = None
           ) -> dict[str, Any]:
    """Everything the text and ``--json`` print: per table and in total."""
    sl, prices = launcher(), load_prices()
    parallelism = int(sl.get("array_parallelism") or 1)
    limit_h = float(sl["timeout_min"]) / 60 if sl.get("timeout_min") else None
    tables = []
    for tp in plans:
        t, distinct = totals(tp.points, planner, hw, prices)
        tables.append({
            "table": tp.spec.id, "points": len(tp.points), "not_run_at_scale": tp.not_run,
            "jobs": len(tp.points), "jobs_by_gpus": _count(p.gpus for p in tp.points),
            "stages_computed": distinct, **_sums(t), "wall": wall_hours(t, tp.points, planner, hw, parallelism, limit_h),
            "roles": [_role_row(r) for r in t.by_role.values()],
            "sizes": _count(f"{p.group}: {p.size.source}" for p in tp.points),
            "documents": sum(p.size.documents or 0 for p in tp.points),
            "questions": sum(p.size.questions or 0 for p in tp.points),
            "points_detail": [_point_row(p, planner, hw) for p in tp.points],
            "pairwise": (f"row {tp.spec.pairwise.a} against row {tp.spec.pairwise.b}, each answer order"
                         if tp.spec.pairwise else None),
        })
    everything = [p for tp in plans for p in tp.points]
    t, distinct = totals(everything, planner, hw, prices)
    return {
        "label": f"{ESTIMATE} ({hw.path.name}: {hw.gpu})", "scale": plans[0].scale if plans else None,
        "hardware": {"file": str(hw.path), "gpu": hw.gpu, "assumptions": list(hw.assumptions),
                     "constants": {k: vars(f) for k, f in hw.constants.items()}, "checks": hw.check_ratios(),
                     "measured": {m: {k: vars(f) for k, f in figs.items()} for m, figs in hw.measured.items()}},
        "launcher": {"file": str(LAUNCHER.relative_to(REPO)), "array_parallelism": sl.get("array_parallelism"),
                     "gpus_per_task": sl.get("gpus_per_task"), "timeout_min": sl.get("timeout_min")},
        "method_work": planner.work.get("corpus"),
        "tables": tables,
        "total": {"points": sum(x["points"] for x in tables), "jobs": sum(x["jobs"] for x in tables),
                  "stages_computed": distinct, **_sums(t),
                  "wall": wall_hours(t, everything, planner, hw, parallelism, limit_h),
                  "roles": [_role_row(r) for r in t.by_role.values()]},
        "cached_cpu_seconds": cached,
    }


def _count(values) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[str(v)] += 1
    return dict(out)


def _role_row(r: dict[str, Any]) -> dict[str, Any]:
    return {**r, "gpu_hours": r["gpu_s"] / 3600, "why": sorted(r["why"])}


def _point_row(p: PointPlan, planner: Planner, hw: Hardware) -> dict[str, Any]:
    hours, missing = point_gpu_hours(p, planner, hw)
    work = [{"stage": stage, **{k: v for k, v in vars(w).items() if k != "notes"}, "notes": w.notes}
            for stage, identity in p.stages.items() if identity for w in planner.stage_work[identity]]
    return {"point": p.key, "documents": p.size.documents, "questions": p.size.questions,
            "doc_tokens": p.size.doc_tokens, "size_source": p.size.source, "gpus": p.gpus,
            "gpu_hours_alone": hours, "role_works_missing": missing, "work": work}


def _sums(t: Totals) -> dict[str, Any]:
    return {"gpu_hours": t.gpu_s / 3600, "usd": t.usd, "missing": t.missing,
            "basis_hours": {k: v / 3600 for k, v in sorted(t.basis.items())}}


def to_json(r: dict[str, Any]) -> str:
    return json.dumps(r, indent=1, default=lambda o: sorted(o) if isinstance(o, set) else str(o))
