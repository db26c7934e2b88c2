"""Checking a table's grid point by point: does each point compose and build, does it record the
table's metrics, and, at full scale, is it the paper's experiment (:mod:`.setup`)?

Every point is checked (a failing one never hides the rest) and gets one status:

    config error   it does not compose or build, or records no metric the table needs
    undeclared     it differs from the paper's declared setup where no deviation says why
                   (full scale; a table with no ``paper:`` block declares nothing)
    needs data     its dataset is a local path that is not there (how to get it is said)
    needs a model  a role's model is neither bundled, a local folder nor in the Hub cache
    deviates       it differs from the paper only where its ``deviations`` say why
    ok             none of the above

The first two fail ``tables validate``; data and models absent here are statuses, not failures
(a full-scale run fetches them on the cluster). Nothing is built that loads weights or reads data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness.pipeline.roles import Role, roles
from harness.report.tables.setup import Finding
from harness.report.tables.spec import GridRun, TableSpec
from harness.types import ConfigError, Unavailable

FAILING = ("config error", "undeclared")
ORDER = ("config error", "undeclared", "needs data", "needs a model", "deviates", "ok", "skipped")


@dataclass
class PointCheck:
    point: GridRun
    status: str = "ok"
    problems: list[str] = field(default_factory=list)   # config errors, needs data / a model
    findings: list[Finding] = field(default_factory=list)
    roles: dict[str, Role] = field(default_factory=dict)
    dataset: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class TableCheck:
    spec: TableSpec
    scale: str
    points: list[PointCheck]

    @property
    def failed(self) -> list[PointCheck]:
        return [p for p in self.points if p.status in FAILING]

    def counts(self) -> Counter:
        return Counter(p.status for p in self.points)

    def summary(self) -> list[str]:
        """One line for the table, then one per distinct reason of each non-ok status. A point
        that needs data or a model and also deviates counts under both: availability is a status,
        a declared deviation is what the point is."""
        counts = self.counts()
        head = ", ".join(f"{counts[s]} {s}" for s in ORDER if counts[s])
        deviating = sum(1 for p in self.points if p.status not in FAILING and any(f.declared for f in p.findings))
        if deviating > counts["deviates"]:
            head += f"; {deviating} with declared deviations"
        lines = [f"[{self.spec.id}] {len(self.points)} point(s) at {self.scale} scale: {head or 'none'}"]
        for status in ORDER[:5]:
            reasons = Counter(r for p in self.points if _under(p, status) for r in set(_reasons(p, status)))  # points, not roles
            for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
                lines.append(f"    {status}: {reason}" + (f" ({n} points)" if n > 1 else f" ({_first(self, status, reason)})"))
        return lines


def _under(p: PointCheck, status: str) -> bool:
    """Whether ``p``'s reasons are listed under ``status``: its own, or (``deviates``) any status
    that does not fail, so that needing data hides no deviation."""
    return p.status not in FAILING if status == "deviates" else p.status == status


def _reasons(p: PointCheck, status: str) -> list[str]:
    if status in ("config error", "needs data", "needs a model"):
        return p.problems
    if status == "undeclared":
        return [f.line() for f in p.findings if not f.declared]
    return [f.line() for f in p.findings if f.declared]


def _first(check: TableCheck, status: str, reason: str) -> str:
    return next(p.point.key for p in check.points if _under(p, status) and reason in _reasons(p, status))


def model_available(role: Role) -> str | None:
    """None when the role's model can be had here, else how to get it."""
    if role.bundled or role.backend in ("OpenAILLM", "OpenAIEmbedder"):  # a served model: no download
        return None
    missing = []
    for name in role.model.split(" | "):
        if name.startswith(("/", ".", "~")) or Path(name).exists():
            if not Path(name).expanduser().exists():
                missing.append(f"no model folder at {name}")
        elif not _in_hub_cache(name):
            missing.append(f"{name} (from the Hub: `huggingface-cli download {name}`, or a local folder)")
    return "; ".join(missing) or None


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a name that is no repo id
        return False


def data_available(dataset: dict[str, Any]) -> str | None:
    """None when the dataset's source can be read here (a Hub dataset is fetched at run time),
    else what is missing."""
    if dataset.get("source") != "path":
        return None
    path = dataset.get("path")
    if path and Path(str(path)).expanduser().exists():
        return None
    return (f"dataset {dataset.get('name')}: {'no ' + str(path) if path else 'dataset.path is not set'}"
            f" (give dataset.path=<folder>{'; ' + dataset['how'] if dataset.get('how') else ''})")


def check_point(spec: TableSpec, point: GridRun, scale: str, extra: Sequence[str] = ()) -> PointCheck:
    """One point's status; its roles, dataset and declared settings for ``tables explain``."""
    from harness.data.base import describe_source
    from harness.report.tables.grid import compose

    out = PointCheck(point)
    if point.skip:
        out.status, out.problems = "skipped", [point.skip]
        return out
    try:
        cfg = compose(spec, point, scale, extra)
        out.roles = roles(cfg)
        out.dataset = describe_source(OmegaConf.to_container(cfg.dataset, resolve=True))
    except Exception as e:  # a Hydra composition error (an unknown choice or key) or a bad source
        out.status, out.problems = "config error", [_one_line(e)]
        return out
    if spec.paper is not None:
        keys = [str(s["key"]) for s in spec.paper.declared(point.row, point.group)["settings"]]
        keys += [s.key for s in _protocol_settings(spec, point, extra)]
        out.settings = {k: _select(cfg, k) for k in keys}
    if scale == "full":
        out.findings = (spec.paper.check(point.row, point.group, out.roles, out.dataset, cfg, (*point.overrides, *extra))
                        if spec.paper
                        else [Finding("paper", "the table file declares no paper setup (a `paper:` block)")])
    missing_data = data_available(out.dataset)
    unavailable = [m for m in (model_available(r) for r in out.roles.values()) if m]
    try:
        _build(spec, point, cfg, dataset=missing_data is None)
    except Unavailable as e:  # a tokenizer or file named right that is not here
        unavailable.append(_one_line(e))
    except Exception as e:
        out.status, out.problems = "config error", [_one_line(e)]
        return out
    if any(not f.declared for f in out.findings):
        out.status = "undeclared"
    elif missing_data:
        out.status, out.problems = "needs data", [missing_data]
    elif unavailable:
        out.status, out.problems = "needs a model", unavailable
    elif out.findings:
        out.status = "deviates"
    return out


def _build(spec: TableSpec, point: GridRun, cfg, dataset: bool) -> None:
    """The point's components built (no weights loaded, no data read) and its metrics checked
    against what the table reads."""
    from harness.metrics.keys import is_recorded, recorded_keys, recorded_series
    from harness.pipeline.components import build_components

    built = build_components(cfg, dataset=dataset, scale_checks=False)
    row = next(r for r in spec.rows if r.key == point.row)
    names = {spec.metric_name(row, c) for c in spec.columns() if c.group.key == point.group} | set(spec.select_by)
    unknown = sorted(n for n in names if not is_recorded(n, built.metrics))
    if unknown:
        raise ConfigError(f"no metric of this run records {', '.join(unknown)} (its metrics: "
                          f"{', '.join(sorted(recorded_keys(built.metrics)))})")
    series = recorded_series(built.metrics)
    unknown = sorted(ln.series for ln in (spec.series.lines if spec.series else ()) if ln.series not in series)
    if unknown:
        raise ConfigError(f"no metric of this run records the series {', '.join(unknown)} (its series: "
                          f"{', '.join(sorted(series)) or 'none'})")


def _one_line(e: Exception) -> str:
    text = str(e) if isinstance(e, ConfigError) else f"{type(e).__name__}: {e}"
    return " ".join(text.split())


BUNDLED_NAMES = {"llm": "bundled SmolLM2-135M-Instruct", "embedder": "bundled all-MiniLM-L6-v2",
                 "encoder": "bundled all-MiniLM-L6-v2"}


def incomparable(spec: TableSpec, point: GridRun, scale: str, extra: Sequence[str] = ()) -> str:
    """Why ``point``'s numbers cannot be set against the paper's ('' when they can): it runs a
    stand-in (a bundled model or sample, another model) where the paper's setup says otherwise and
    no deviation gives the reason. Composes the point; builds nothing."""
    from harness.data.base import describe_source
    from harness.report.tables.grid import compose

    if spec.paper is None:
        return "the table declares no paper setup"
    try:
        cfg = compose(spec, point, scale, extra)
        found = roles(cfg)
        dataset = describe_source(OmegaConf.to_container(cfg.dataset, resolve=True))
    except Exception as e:  # the point's own error is reported where it runs
        return _one_line(e)
    reasons = []
    for f in spec.paper.check(point.row, point.group, found, dataset, cfg, (*point.overrides, *extra)):
        if f.declared:
            continue
        role = found.get(f.subject)
        if role is not None and role.bundled:
            reasons.append(BUNDLED_NAMES[role.kind])
        elif f.subject == "dataset" and dataset.get("sample"):
            reasons.append(f"bundled sample of {dataset.get('name')}")
        elif role is not None:
            reasons.append(f"{f.subject} {role.model}")
        else:
            reasons.append(f.subject)
    return ", ".join(dict.fromkeys(reasons))


def _select(cfg, key: str) -> Any:
    value = OmegaConf.select(cfg, key, default=None)
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def check_table(spec: TableSpec, scale: str, extra: Sequence[str] = ()) -> TableCheck:
    """Every grid point of ``spec`` at ``scale``, and the table-level checks (paper numbers in
    the layout; a pairwise table's judge builds) as a config error of the first point."""
    from harness.report.tables.grid import paper_numbers

    points = [check_point(spec, p, scale, extra) for p in spec.runs(scale)]
    table_errors = []
    try:
        for (row, column) in paper_numbers(spec):
            if not spec.in_layout(row, column):
                raise ConfigError(f"{spec.numbers.name} has ({row}, {column}), not in the layout")
        if spec.pairwise is not None:
            from harness.report.tables import pairwise_judge

            pairwise_judge.build_judge(spec, scale, extra)  # composes and builds the judge's llm (loads no weights)
    except ConfigError as e:
        table_errors.append(str(e))
    if table_errors and points:
        points[0].status, points[0].problems = "config error", [*table_errors, *points[0].problems]
    elif table_errors:
        raise ConfigError(f"table {spec.id}: {table_errors[0]}")
    return TableCheck(spec, scale, points)


def _protocol_settings(spec: TableSpec, point: GridRun, extra: Sequence[str] = ()) -> list:
    protocol = spec.paper.protocol if spec.paper else None
    return protocol.applying((*point.overrides, *extra)) if protocol else []


def _protocol_deviations(spec: TableSpec, point: GridRun) -> list:
    protocol = spec.paper.protocol if spec.paper else None
    return protocol.deviating(point.overrides) if protocol else []


def explain(check: TableCheck) -> list[dict[str, Any]]:
    """Per grid point: what it runs (roles, dataset, the declared settings' values), beside what
    the paper declares, and how it differs (``tables explain --json``)."""
    spec = check.spec
    out = []
    for p in check.points:
        paper = spec.paper.declared(p.point.row, p.point.group) if spec.paper else {}
        out.append({
            "table": spec.id, "point": p.point.key, "row": p.point.row, "group": p.point.group,
            "scale": check.scale, "status": p.status,
            "roles": {path: r.model for path, r in p.roles.items()},
            "role_settings": {path: {k: v for k, v in r.settings.items() if v is not None}
                              for path, r in p.roles.items()},
            "dataset": {k: v for k, v in p.dataset.items() if k in ("name", "source", "path")},
            "settings": p.settings,
            "paper": paper,
            "protocol": [{"key": s.key, "value": s.value, "cite": s.cite} for s in _protocol_settings(spec, p.point)],
            "deviations": (spec.paper.deviations(p.point.row, p.point.group) if spec.paper else [])
            + [{"key": d.about, "why": d.why} for d in _protocol_deviations(spec, p.point)],
            "unstated": spec.paper.unstated(p.point.row, p.point.group) if spec.paper else [],
            "findings": [f.line() for f in p.findings],
            "problems": p.problems,
        })
    return out


def explain_text(records: list[dict[str, Any]]) -> str:
    lines = []
    for r in records:
        lines.append(f"{r['point']}  [{r['status']}]")
        for path, model in r["roles"].items():
            rev = r["role_settings"].get(path, {}).get("revision")
            lines.append(f"    role {path}: {model}" + (f"@{rev[:7]}" if rev else ""))
        if r["dataset"]:
            d = r["dataset"]
            lines.append(f"    dataset: {d.get('name')} ({d.get('source')}: {d.get('path')})")
        for key, value in r["settings"].items():
            lines.append(f"    {key} = {value!r}")
        for kind in ("models", "datasets"):
            for e in r["paper"].get(kind, []):
                what = e.get("model") or f"{e.get('name')} ({e.get('documents', '?')} docs, {e.get('questions', '?')} questions)"
                lines.append(f"    paper {kind[:-1]}{' ' + e['role'] if 'role' in e else ''}: {what} [{e.get('cite', '')}]")
        for e in r.get("protocol", []):
            lines.append(f"    authors' code: {e['key']} = {e['value']!r} [{e['cite']}]")
        for kind in ("deviations", "unstated"):
            for e in r.get(kind, []):
                about = e.get("role") or e.get("key") or "dataset"
                value = f" = {e['value']!r}" if "value" in e else ""
                lines.append(f"    {'deviation' if kind == 'deviations' else 'unstated, chosen here'}: {about}{value}: {e['why']}")
        for line in r["findings"] + r["problems"]:
            lines.append(f"    ! {line}")
    return "\n".join(lines)


def validate(spec: TableSpec, scale: str, extra: Sequence[str] = ()) -> None:
    """Fails (ConfigError naming the table, grid point and problem) when a point does not compose
    or build, records no metric the table needs, or (full scale) differs from the paper's declared
    setup without a declared reason; paper numbers must be in the layout. Every point is checked
    (:func:`check_table`); builds no model. ``extra``: the overrides
    :func:`harness.report.tables.grid.run_table` will add, so each point is composed once for both."""
    failed = check_table(spec, scale, extra).failed
    if failed:
        first = failed[0]
        reason = first.problems[0] if first.problems else next(f.line() for f in first.findings if not f.declared)
        more = f" (and {len(failed) - 1} more point(s))" if len(failed) > 1 else ""
        raise ConfigError(f"table {spec.id}, {first.point.key}: {reason}{more}")
