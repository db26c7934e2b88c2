"""The optional blocks of a table file (their format: :mod:`harness.report.tables.spec`):
``correlation`` (QChunker's Figure 2), ``series`` (QChunker's Figure 3), ``pairwise``
(MC-indexing's Figure 3) and ``challenge`` (how a new chunker joins the table), each a typed
value parsed and checked for its shape; and what every block of a table file shares: override
lists and sweeps."""

from __future__ import annotations

import fnmatch
import itertools
from dataclasses import dataclass
from typing import Any

from harness.types import ConfigError

OUTCOME_KINDS = ("score", "round")   # score-based | round-based (harness.report.judge)
OUTCOMES = ("win", "tie", "loss")   # from row a's side
PAIRWISE_KEYS = {"a", "b", "judge", "outcomes", "label", "max_tokens", "temperature", "retries", "seed"}
PAIRWISE_SCALE_KEYS = PAIRWISE_KEYS - {"a", "b", "outcomes"}


# A sweep: the union of Cartesian products, each a tuple of (parameter, its values).
Product = tuple[tuple[str, tuple[Any, ...]], ...]
Sweep = tuple[Product, ...]


# A row or group of a table: its key, label and the overrides of its grid points.
@dataclass(frozen=True)
class Axis:
    key: str
    label: str
    overrides: tuple[str, ...]
    sweep: Sweep = ()
    missing: str | None = None   # not built yet: never run, the cells say why
    metrics: tuple[tuple[str, str], ...] = ()   # the axis's own run metric for a layout key
    aggregate: tuple[str, ...] = ()   # a computed group: the mean of these groups' cells (no run of its own)


def show(value: Any) -> str:
    return "null" if value is None else str(value)


def override_list(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of Hydra overrides (strings), got {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class Correlation:
    """Pearson r across rows between ``λ·mix[0] + (1-λ)·mix[1]`` and ``target`` (layout keys)."""

    mix: tuple[str, str]
    target: str
    lambdas: tuple[float, ...]


@dataclass(frozen=True)
class SeriesLine:
    key: str
    series: str   # the per-document series key of a document metric
    label: str


@dataclass(frozen=True)
class Series:
    """Per-chunk lines from each run's ``per_document.jsonl``: x = the chunk's index in the run."""

    label: str
    y_label: str
    lines: tuple[SeriesLine, ...]


@dataclass(frozen=True)
class PairColumn:
    """One column of the pairwise layout: a rate of one outcome kind (at one x value)."""

    key: str          # "<kind>/<outcome>" or "<kind>/<outcome>@<x value>"
    label: str
    kind: str         # score | round
    outcome: str      # win | tie | loss
    x: str | None = None
    x_name: str = ""


@dataclass(frozen=True)
class Pairwise:
    """Row ``a``'s answers judged against row ``b``'s (win = a better), per group and x value."""

    a: str
    b: str
    judge: tuple[str, ...]            # Hydra overrides composing the judge's ``llm``
    outcomes: tuple[str, ...] = OUTCOME_KINDS
    label: str = ""                   # the judge as the caption names it
    max_tokens: int = 512
    temperature: float = 0.0
    retries: int = 2
    seed: int = 0

    def run_key(self, group: str, x_point: str | None) -> str:
        """The judged pair's ``table.run`` tag: ``a~b|group[|param=value]``."""
        return "|".join((f"{self.a}~{self.b}", group, *((x_point,) if x_point else ())))


def parse_correlation(node: Any, layout: set[str], where: str) -> Correlation | None:
    if node is None:
        return None
    where = f"{where}.correlation"
    if not isinstance(node, dict) or set(node) != {"mix", "target", "lambdas"}:
        raise ConfigError(f"{where}: needs {{mix: [a, b], target, lambdas: {{start, stop, step}}}}, got {node!r}")
    mix, target, lam = node["mix"], str(node["target"]), node["lambdas"] or {}
    if isinstance(mix, str) or len(mix) != 2:
        raise ConfigError(f"{where}.mix: two layout metric keys, got {mix!r}")
    unknown = {str(k) for k in (*mix, target)} - layout
    if unknown:
        raise ConfigError(f"{where}: {sorted(unknown)} are not layout metrics ({sorted(layout)})")
    try:
        start, stop, step = float(lam["start"]), float(lam["stop"]), float(lam["step"])
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}.lambdas: needs numbers start, stop, step; got {lam!r}") from e
    if step <= 0 or stop < start:
        raise ConfigError(f"{where}.lambdas: needs step > 0 and stop >= start; got {lam!r}")
    n = int(round((stop - start) / step))
    return Correlation((str(mix[0]), str(mix[1])), target, tuple(round(start + i * step, 10) for i in range(n + 1)))


def parse_series(node: Any, where: str) -> Series | None:
    if node is None:
        return None
    where = f"{where}.series"
    lines = node.get("lines") if isinstance(node, dict) else None
    if not isinstance(node, dict) or set(node) - {"label", "y_label", "lines"} or not isinstance(lines, dict) \
            or not lines or not all(isinstance(v, dict) and v.get("series") for v in lines.values()):
        raise ConfigError(f"{where}: needs {{label, y_label, lines: {{key: {{series, label}}}}}}, got {node!r}")
    return Series(str(node.get("label", "chunk index")), str(node.get("y_label", "")),
                  tuple(SeriesLine(str(k), str(v["series"]), str(v.get("label", k))) for k, v in lines.items()))


def pairwise_fields(node: dict, where: str) -> dict[str, Any]:
    """The typed fields of a ``pairwise`` mapping (or a scale's replacement of some)."""
    out: dict[str, Any] = {}
    if "judge" in node:
        out["judge"] = override_list(node["judge"], f"{where}.judge")
        if not out["judge"]:
            raise ConfigError(f"{where}.judge: the Hydra overrides composing the judge's llm, e.g. [llm=openai, "
                              f"llm.model=gpt-4]; got none")
    try:
        for key, kind in (("max_tokens", int), ("retries", int), ("seed", int), ("temperature", float)):
            if key in node:
                out[key] = kind(node[key])
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: max_tokens, retries, seed are integers, temperature a number; {e}") from e
    if out.get("max_tokens", 1) < 1 or out.get("retries", 0) < 0 or out.get("temperature", 0.0) < 0:
        raise ConfigError(f"{where}: needs max_tokens >= 1, retries >= 0, temperature >= 0; got {node!r}")
    if "label" in node:
        out["label"] = str(node["label"])
    return out


def parse_pairwise(node: Any, rows: tuple[Axis, ...], scales: dict[str, Any], where: str) -> Pairwise | None:
    if node is None:
        stray = [scale for scale, at in scales.items() if at.get("pairwise") is not None]
        if stray:
            raise ConfigError(f"{where}.scale.{stray[0]}.pairwise: the table has no pairwise block to change")
        return None
    outer, where = where, f"{where}.pairwise"
    if not isinstance(node, dict) or set(node) - PAIRWISE_KEYS or not {"a", "b", "judge"} <= set(node):
        raise ConfigError(f"{where}: needs {{a: row, b: row, judge: [overrides]}} (optional: "
                          f"{', '.join(sorted(PAIRWISE_KEYS - {'a', 'b', 'judge'}))}), got {node!r}")
    by_key = {r.key: r for r in rows}
    for side in ("a", "b"):
        row = by_key.get(str(node[side]))
        if row is None:
            raise ConfigError(f"{where}.{side}: {node[side]!r} is not a row ({', '.join(by_key)})")
        if row.missing or row.sweep:
            raise ConfigError(f"{where}.{side}: row {row.key!r} must be one run per grid point "
                              f"({'missing' if row.missing else 'swept'})")
    if str(node["a"]) == str(node["b"]):
        raise ConfigError(f"{where}: a and b are the same row {node['a']!r}")
    outcomes = node.get("outcomes", list(OUTCOME_KINDS))
    if isinstance(outcomes, str) or not outcomes or set(map(str, outcomes)) - set(OUTCOME_KINDS):
        raise ConfigError(f"{where}.outcomes: a list of {' | '.join(OUTCOME_KINDS)}, got {outcomes!r}")
    for scale, at in scales.items():
        sub = at.get("pairwise")
        if sub is not None and (not isinstance(sub, dict) or set(sub) - PAIRWISE_SCALE_KEYS):
            raise ConfigError(f"{outer}.scale.{scale}.pairwise: may replace "
                              f"{', '.join(sorted(PAIRWISE_SCALE_KEYS))}; got {sub!r}")
        if sub:
            pairwise_fields(sub, f"{outer}.scale.{scale}.pairwise")
    return Pairwise(str(node["a"]), str(node["b"]), outcomes=tuple(str(o) for o in outcomes),
                    **pairwise_fields(node, where))


def sweep_points(sweep: Sweep) -> list[tuple[str, ...]]:
    """A sweep's points as override lists, each product in turn, a point that two products share once."""
    out: dict[tuple[str, ...], None] = {}
    for product in sweep:
        names = [name for name, _ in product]
        for values in itertools.product(*(vals for _, vals in product)):
            out.setdefault(tuple(f"{n}={v}" for n, v in zip(names, values)))
    return list(out) or [()]


def parse_sweep(node: Any, where: str = "sweep") -> Sweep:
    if node is None or node == {}:
        return ()
    products = node if isinstance(node, (list, tuple)) else [node]
    out = []
    for i, product in enumerate(products):
        here = f"{where}[{i}]" if isinstance(node, (list, tuple)) else where
        if (not isinstance(product, dict) or not product
                or any(isinstance(v, (str, dict)) or not hasattr(v, "__iter__") or not len(v)
                       for v in product.values())):
            raise ConfigError(f"{here}: must map a parameter to its values ({{chunker.size: [200, 300]}}; a list of "
                              f"such mappings for a union of grids), got {product!r}")
        out.append(tuple((str(p), tuple(v)) for p, v in product.items()))
    return tuple(out)


CHALLENGE_KEYS = {"skip", "rows", "by", "drop", "add", "sweep", "lower"}


@dataclass(frozen=True)
class Challenge:
    """How a challenger chunker joins the table (``chunkbench challenge``).

    The baseline ``rows`` (globs over row keys) fall into families by the values of the overrides
    ``by`` names (one per retriever, say); each family gets one challenger row: the family's first
    row's overrides at the scale, less those under ``drop`` (the chunker's, and a method-specific
    context assembler), plus the challenger's own and ``add`` (the assembler a plain chunker gets).
    ``sweep`` is the table's size parameter (LGMGC's theta), swept where the challenger takes it.
    ``lower`` names the layout metrics where lower is better (a chunking error). ``skip``: the
    table is not about chunkers (dataset statistics, a judge's figure), with the reason."""

    skip: str | None = None
    rows: tuple[str, ...] = ("*",)
    by: tuple[str, ...] = ()
    drop: tuple[str, ...] = ("chunker",)
    add: tuple[str, ...] = ()
    sweep: Sweep = ()
    lower: tuple[str, ...] = ()

    def drops(self, override: str) -> bool:
        """Whether ``override`` sets something the challenger replaces (``~chunker.base``,
        ``+chunker.base={...}`` and ``chunker.size=200`` all fall under ``chunker``)."""
        key = override.split("=", 1)[0].lstrip("~+")
        return any(key == d or key.startswith((f"{d}.", f"{d}@")) for d in self.drop)


def parse_challenge(node: Any, rows: tuple[str, ...], layout: set[str], x_param: str | None,
                    where: str) -> Challenge | None:
    if node is None:
        return None
    where = f"{where}.challenge"
    if not isinstance(node, dict) or set(node) - CHALLENGE_KEYS:
        raise ConfigError(f"{where}: keys are {', '.join(sorted(CHALLENGE_KEYS))}, got {node!r}")
    if "skip" in node:
        if set(node) != {"skip"} or not str(node["skip"] or "").strip():
            raise ConfigError(f"{where}.skip: the reason the table takes no challenger, and nothing else")
        return Challenge(skip=str(node["skip"]))

    def names(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        return override_list(node[key], f"{where}.{key}") if key in node else default

    c = Challenge(rows=names("rows", ("*",)), by=names("by", ()), drop=names("drop", ("chunker",)),
                  add=names("add", ()), sweep=parse_sweep(node.get("sweep"), f"{where}.sweep"),
                  lower=names("lower", ()))
    unmatched = [g for g in c.rows if not any(fnmatch.fnmatch(r, g) for r in rows)]
    if unmatched:
        raise ConfigError(f"{where}.rows: {unmatched} match no row ({', '.join(rows)})")
    if set(c.lower) - layout:
        raise ConfigError(f"{where}.lower: {sorted(set(c.lower) - layout)} are not layout metrics ({sorted(layout)})")
    if x_param is not None and x_param.startswith("chunker."):  # another chunker has no such parameter
        raise ConfigError(f"{where}: the x axis sweeps {x_param}, a parameter of the chunker a challenger "
                          f"replaces: give skip with the reason instead")
    return c



@dataclass(frozen=True)
class Reading:
    """Another reading of a protocol choice the paper leaves open (or its code and text disagree
    on): the table's grid run again with ``overrides``, each cell beside the table's own."""
    key: str
    label: str
    overrides: tuple[str, ...]
    why: str = ""
    groups: tuple[str, ...] = ()   # the column groups it applies to (empty: every one)


def parse_readings(raw: dict[str, Any], groups: set[str], where: str) -> tuple[Reading, ...]:
    """The ``sensitivity:`` block: each reading's overrides and the groups it names, checked."""
    out = []
    for key, v in raw.items():
        if unknown := sorted(set(v["groups"]) - groups):
            raise ConfigError(f"{where}.sensitivity.{key}.groups: {unknown} are not groups of the table ({sorted(groups)})")
        out.append(Reading(key, v["label"], override_list(v["overrides"], f"{where}.sensitivity.{key}.overrides"),
                           v["why"], tuple(v["groups"])))
    return tuple(out)
