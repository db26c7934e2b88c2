"""A paper table with the challenger's rows, as its ``challenge`` block says.

The baseline rows fall into families by the values of the block's ``by`` overrides (one family per
retriever in MC-indexing's Table 2, per reader in HiChunk's Table 4); each family gets one
challenger row, run at the family's first row's settings at this scale with the chunker (and what
``drop`` names) replaced, and is ranked and tested against that family only. The rows keep the
table's experiment, so a baseline's recorded run is the one the table renders.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from harness.report.challenge.challenger import Challenger
from harness.report.tables.records import point_runs
from harness.report.tables.spec import Axis, GridRun, TableSpec
from harness.report.tables.spec_blocks import Sweep
from harness.types import ConfigError


@dataclass(frozen=True)
class Family:
    row: str                       # the challenger's row key
    values: tuple[tuple[str, str | None], ...]   # the `by` overrides' values
    baselines: tuple[str, ...]     # the baseline rows it is compared with
    like: str                      # the row whose settings it runs at
    sweep_note: str                # how the table's size parameter applies to it

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values if v is not None)


@dataclass(frozen=True)
class Challenged:
    spec: TableSpec                # the table, challenger rows appended
    base: TableSpec                # the table as its file says
    families: tuple[Family, ...]
    lower: frozenset[str]          # layout metric keys where lower is better
    left_out: tuple[str, ...] = ()  # the labels of the baseline rows --no-llm-baselines left out

    def mine(self, scale: str) -> list[GridRun]:
        """The challenger's points that run at ``scale``."""
        rows = {f.row for f in self.families}
        return [p for p in self.spec.runs(scale) if p.row in rows and not p.skip]

    def baselines_missing(self, uri: str, scale: str, extra: Sequence[str]) -> list[GridRun]:
        """The baseline points that run at ``scale`` and no run in the record at ``uri`` holds
        (whatever code recorded the others: a challenge reads those as they are)."""
        recorded = point_runs(self.base, uri, scale, extra)
        return [p for p in self.base.runs(scale) if not p.skip and p.key not in recorded]


def override_value(overrides: tuple[str, ...], key: str) -> str | None:
    """The last value ``overrides`` give ``key`` (None where none sets it)."""
    found = None
    for o in overrides:
        k, eq, v = o.lstrip("~+").partition("=")
        if eq and k == key:
            found = v
    return found


LEFT_OUT = "left out: its chunker calls an LLM (--no-llm-baselines)"


@lru_cache(maxsize=64)
def _needs_llm(chunker: str) -> bool:
    from harness.registry import needs_llm

    return needs_llm(chunker)


def calls_llm(spec: TableSpec, row: Axis, scale: str) -> bool:
    """Whether the row's chunker calls a language model (:func:`harness.registry.needs_llm`)."""
    chunker = override_value((*spec.shared, *spec.overrides(row, "rows", scale)), "chunker")
    return chunker is not None and _needs_llm(chunker)


def _sweep(ch: Challenger, sweep: Sweep) -> tuple[Sweep, str]:
    """The part of ``sweep`` the challenger takes (as overrides of its config), and what was left."""
    if not sweep:
        return (), ""
    params = {p for product in sweep for p, _ in product}
    kept = tuple(tuple((ch.override(p), v) for p, v in product if ch.takes(p)) for product in sweep)
    kept = tuple(p for p in kept if p)
    left = sorted(p for p in params if not ch.takes(p))
    note = ""
    if left:
        why = ["fixed by its arguments" if p.removeprefix("chunker.") in ch.fixed else f"{ch.target} takes no "
               f"{p.removeprefix('chunker.')}" for p in left]
        note = f"not swept over {', '.join(left)} ({'; '.join(why)}): one run at its own settings"
    return kept, note


def challenged(spec: TableSpec, ch: Challenger, scale: str, sweep: Sweep | None = None,
               no_llm: bool = False) -> Challenged:
    """``spec`` with one challenger row per family; ``sweep`` replaces the block's (``--sweep``);
    ``no_llm``: the baseline rows whose chunker calls an LLM are skipped at ``scale``, as a row the
    table does not run there (in the table as well as in the challenge: nothing runs them)."""
    c = spec.challenge
    if c is None or c.skip:
        raise ConfigError(f"table {spec.id} takes no challenger: {c.skip if c else 'it has no challenge block'}")
    if ch.name in {r.key for r in spec.rows} or any(r.key.startswith(f"{ch.name}~") for r in spec.rows):
        raise ConfigError(f"challenger name {ch.name!r} is a row of table {spec.id}: give another with --name")
    skips: dict[str, Any] = dict((spec.scales.get(scale) or {}).get("skip") or {})
    left_out = [r for r in spec.rows if no_llm and not r.missing and r.key not in skips and calls_llm(spec, r, scale)]
    skips.update({r.key: LEFT_OUT for r in left_out})
    if left_out:
        spec = replace(spec, scales={**spec.scales, scale: {**(spec.scales.get(scale) or {}), "skip": dict(skips)}})
    built = [r for r in spec.rows if not r.missing and any(fnmatch.fnmatch(r.key, g) for g in c.rows)]
    by_values: dict[tuple, list[Axis]] = {}
    for r in built:  # a family by the rows' declared overrides (a scale may swap a reader for a stand-in)
        values = tuple((k, override_value((*spec.shared, *r.overrides), k)) for k in c.by)
        by_values.setdefault(values, []).append(r)
    kept, note = _sweep(ch, c.sweep if sweep is None else sweep)
    # a challenger with its own assembler takes none of the block's settings of the assembler it replaces
    add = tuple(f"context={ch.context}" if ch.context and o.startswith("context=") else o for o in c.add
                if not (ch.context and o.startswith("context.")))
    rows, families = [], []
    for values, members in by_values.items():
        like = members[0]
        key = ch.name if len(by_values) == 1 else f"{ch.name}~{like.key}"
        overrides = (*(o for o in spec.overrides(like, "rows", scale) if not c.drops(o)), *ch.overrides, *add)
        label = f"★ {ch.name}" + (f" ({', '.join(f'{k}={v}' for k, v in values if v is not None)})" if c.by else "")
        rows.append(Axis(key, label, overrides, kept))
        families.append(Family(key, values, tuple(m.key for m in members), like.key, note))
        if all(m.key in skips for m in members):
            skips[key] = f"the rows it is compared with ({', '.join(m.label for m in members)}) are not run at this scale"
    scales = {**spec.scales, scale: {**(spec.scales.get(scale) or {}), "skip": skips}}
    return Challenged(replace(spec, rows=(*spec.rows, *rows), scales=scales), spec, tuple(families), frozenset(c.lower),
                      tuple(r.label for r in left_out))
