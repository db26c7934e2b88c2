"""``tables plan``: what running the papers' tables costs, counted before anything runs.

Per table and in total: grid points, SLURM jobs, the stages that run once for the points that
share them, the tokens each model role prefills, decodes and embeds, and GPU-hours from a
hardware file's cited throughput (:mod:`.hardware`). Every number is an estimate from counted
work and published (or calibrated) throughput, and is printed as one.

Composing all 7,600 full-scale points takes minutes, so a point is composed once per distinct
set of its table's row and group overrides (680 at full scale), and its sweep and x-axis values
(``chunker.size=300``) are set into the resolved config slices of that composition. That is what
Hydra does with a value override too (registry.compose: the defaults list once per set of group
choices, then values set on a copy), so the slices are the same, except where another key
interpolates the swept one: such a point is composed on its own. The model roles are the
composition's (a sweep sets chunker parameters, not model nodes; a point whose sweep touches a
role's node is composed on its own too).

Stages shared through the cache: a stage's identity is the one the runner derives (its name,
version, the resolved slices of the config groups it declares, its upstream identities;
:mod:`harness.pipeline.stages`), so two points that chunk the same dataset with the same chunker
config do the chunking work once, in the table's total and in the grand total (one cache). The
load stage's data fingerprint is left out: the same dataset slice reads the same files.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml
from omegaconf import OmegaConf

from harness.cache import make_key
from harness.pipeline.roles import Role, roles
from harness.report.tables.spec import REPO, GridRun, TableSpec
from harness.report.tables.workload import DataSize, RoleWork, complete_here, paper_size, role_work

LAUNCHER = REPO / "configs" / "hydra" / "launcher" / "slurm.yaml"


@dataclass
class Composed:
    """One composition, as plain data (it crosses process boundaries): the resolved slices of
    every group a stage reads, the roles, the interpolation strings (to see whether a swept
    key is read elsewhere), the resolved dataset node and the cache folder."""

    slices: dict[str, Any]
    roles: dict[str, Role]
    interpolations: list[str] | None   # None: not read (a base no point sweeps)
    dataset: dict[str, Any]
    cache_dir: str

    def interpolated(self, key: str) -> bool:
        """Whether an interpolation may read ``key`` (its full path, or its last part for a
        relative one): erring on yes costs only a composition."""
        last = key.rsplit(".", 1)[-1]
        return any(key in v or f".{last}" in v for v in self.interpolations)


def composition(overrides: tuple[str, ...], scale: str, extra: tuple[str, ...], swept: bool = True) -> Composed:
    from harness.pipeline.components import resolve_reader
    from harness.pipeline.runner import config_slice
    from harness.pipeline.stages import STAGES
    from harness import registry

    # Hydra composes a set of group choices in a fifth of a second and the tables have 254 at
    # full scale: kept in the run's cache (keyed by every config file's bytes), a rerun reads them
    cfg = registry.compose([*overrides, f"scale={scale}", *extra], _store(extra))
    resolved = resolve_reader(cfg)  # the runner keys stages on this
    groups = dict.fromkeys(g for s in STAGES for g in s.reads)
    return Composed({g: config_slice(resolved, g) for g in groups}, roles(cfg),
                    [v for v in _strings(OmegaConf.to_container(cfg, resolve=False)) if "${" in v] if swept else None,
                    OmegaConf.to_container(resolved.dataset, resolve=True), str(resolved.cache.dir))


@lru_cache(maxsize=4)
def _store(extra: tuple[str, ...]):
    from harness.cache import open_cache
    from harness import registry

    return open_cache(str(registry.compose(list(extra)).cache.dir))


def _compose_many(job: tuple[list[tuple[str, ...]], str, tuple[str, ...], set]) -> dict[tuple[str, ...], Composed]:
    bases, scale, extra, swept = job
    return {b: composition(b, scale, extra, b in swept) for b in bases}


def _strings(node: Any):
    if isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


@dataclass
class PointPlan:
    table: str
    key: str
    row: str
    group: str
    size: DataSize
    stages: dict[str, str | None]       # stage name -> identity (None: skipped optional stage)
    gpus: int                           # GPUs its job asks for
    slices: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class TablePlan:
    spec: TableSpec
    scale: str
    points: list[PointPlan]
    not_run: int                         # points the table skips at this scale


class Planner:
    """Composes, identifies and sizes points; keeps each stage identity's work once."""

    def __init__(self, scale: str, extra: list[str], work: dict[str, Any]):
        from harness.text import Tokenizer

        self.scale, self.extra, self.work = scale, extra, work
        self.composed: dict[tuple[str, ...], Composed] = {}
        self.stage_work: dict[str, list[RoleWork]] = {}
        self.sizes: dict[str, DataSize] = {}
        self.loaded: dict[str, Any] = {}
        self.tokens = Tokenizer("tokens", "cl100k")
        self._counts: dict[str, int] = {}
        self._parsed: dict[str, tuple[str, Any]] = {}

    def count(self, text: str) -> int:
        if text not in self._counts:
            self._counts[text] = self.tokens.count(text)
        return self._counts[text]

    def compose(self, overrides: tuple[str, ...], swept: bool = True) -> Composed:
        c = self.composed.get(overrides)
        if c is None or (swept and c.interpolations is None):
            c = self.composed[overrides] = composition(overrides, self.scale, tuple(self.extra), swept)
        return c

    def compose_all(self, bases: list[tuple[str, ...]], swept: set, workers: int | None = None) -> None:
        """Every base composed, on up to ``workers`` processes (Hydra composes at a few a second;
        the bases of one set of group choices go to one process, which composes that set once)."""
        from harness.registry import first_step

        todo = [b for b in dict.fromkeys(bases) if b not in self.composed]
        workers = min(workers or os.cpu_count() or 1, 8)
        if workers < 2 or len(todo) < 40:
            for b in todo:
                self.compose(b, b in swept)
            return
        by_choices: dict[tuple[str, ...], list] = defaultdict(list)
        for b in todo:
            by_choices[first_step([*b, f"scale={self.scale}", *self.extra])].append(b)
        # a set of choices costs Hydra about five bases' worth of work: the heaviest first, to the lightest job
        jobs: list[list] = [[] for _ in range(workers)]
        load = [0] * workers
        for group in sorted(by_choices.values(), key=len, reverse=True):
            i = load.index(min(load))
            jobs[i].extend(group)
            load[i] += 5 + len(group)
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            for done in pool.map(_compose_many, [(j, self.scale, tuple(self.extra), swept) for j in jobs if j]):
                self.composed.update(done)

    def parsed(self, value: str) -> tuple[str, Any]:
        """A value override's key and value as Hydra parses it (one parser, each text once)."""
        if value not in self._parsed:
            from hydra.core.override_parser.overrides_parser import OverridesParser

            self._parser = getattr(self, "_parser", None) or OverridesParser.create()
            o = self._parser.parse_overrides([value])[0]
            self._parsed[value] = (o.key_or_group, o.value())
        return self._parsed[value]

    def point(self, spec: TableSpec, p: GridRun) -> PointPlan:
        base, values = _split(p)
        c = self.compose(base, bool(values))
        slices = c.slices
        if values:
            parsed = [self.parsed(v) for v in values]
            keys = [k for k, _ in parsed]
            if any("." not in k or k.startswith("dataset.") or c.interpolated(k) or any(k.startswith(r) for r in c.roles)
                   for k in keys):
                # a group choice, the data, a key interpolated elsewhere or a model node's: composed on its own
                c = self.compose(tuple(p.overrides))
                slices = c.slices
            else:
                slices = dict(slices)
                for key, value in parsed:
                    group, *path = key.split(".")
                    node = slices[group] = copy.deepcopy(slices[group])
                    for k in path[:-1]:
                        node = node[k]
                    node[path[-1]] = copy.deepcopy(value)
        stages = self.identities(slices)
        size = self.size(spec, p, slices, c)
        for stage, identity in stages.items():
            if identity is not None and identity not in self.stage_work:
                self.stage_work[identity] = [role_work(r, slices, size, self.work, self.count)
                                             for r in c.roles.values() if _stage_of(r) == stage]
        gpus = max([int(r.settings.get("tensor_parallel_size") or 1) for r in c.roles.values()
                    if r.backend == "VLLM"] + [int(launcher().get("gpus_per_task") or 1)])
        return PointPlan(spec.id, p.key, p.row, p.group, size, stages, gpus, slices)

    @staticmethod
    def identities(slices: dict[str, Any]) -> dict[str, str | None]:
        """Each stage's identity as the runner keys it (the load stage's data fingerprint aside)."""
        from harness.pipeline.stages import STAGES

        keys: dict[str, str | None] = {}
        for s in STAGES:
            if s.optional and (slices.get(s.reads[0]) or {}).get("_target_") is None:
                keys[s.name] = None
                continue
            keys[s.name] = make_key(s.name, s.version, [slices[g] for g in s.reads], [keys[a] for a in s.after])
        return keys

    def size(self, spec: TableSpec, p: GridRun, slices: dict[str, Any], c: Composed) -> DataSize:
        key = make_key(*((spec.id, p.row, p.group) if self.scale == "full" else ()), data_key(slices))
        if key not in self.sizes:
            whole = complete_here(slices["dataset"]) if self.scale == "full" else c.dataset
            if whole is None:
                declared = [e.as_dict() for e in spec.paper.of("datasets", p.row, p.group)] if spec.paper else []
                self.sizes[key] = paper_size(declared, slices["dataset"], self.work)
            else:  # counted once per data, whichever tables, rows and groups share it
                counted = make_key("counted", data_key(slices))
                if counted not in self.sizes:
                    self.sizes[counted] = self.loaded_size(whole, slices)
                self.sizes[key] = self.sizes[counted]
        return self.sizes[key]

    def loaded_size(self, dataset: dict[str, Any], slices: dict[str, Any]) -> DataSize:
        """A smoke point's size (or a full one whose whole dataset is bundled), counted on the data
        ``dataset`` (its config) loads, as the runner's load stage keeps it."""
        from harness.data.base import only_queried_documents
        from harness.pipeline.components import build_component

        try:
            reader = build_component(OmegaConf.create(dataset), "dataset")
            ds = reader.load()
        except Exception as e:  # data that is not here: its size is unknown, and said so
            return DataSize(None, None, None, None, f"data not loadable here ({' '.join(str(e).split())[:160]})")
        if reader.limit_queries is not None and slices["retriever"].get("scope") == "document":
            ds = only_queried_documents(ds)
        docs, qs = ds.documents, ds.queries
        self.loaded[data_key(slices)] = ds
        tokens = sum(self.tokens.count(d.text) for d in docs)
        return DataSize(float(len(docs)), float(len(qs)), tokens / max(1, len(docs)),
                        sum(self.tokens.count(q.question) for q in qs) / max(1, len(qs)),
                        f"counted on the loaded data ({len(docs)} docs, {len(qs)} questions)")


def data_key(slices: dict[str, Any]) -> str:
    """What decides the documents a run keeps: the dataset, and whether only queried ones stay."""
    return make_key(slices["dataset"], slices["retriever"].get("scope"))


def _split(p: GridRun) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A point's overrides: its row's and group's, and its x and sweep values (appended last)."""
    n = len(p.key.split("|")) - 2
    return tuple(p.overrides[:len(p.overrides) - n]), tuple(p.overrides[len(p.overrides) - n:])


def _stage_of(role: Role) -> str:
    """The stage that runs a role: the one whose declaration reads the role's config group."""
    from harness.pipeline.stages import STAGES

    group = role.path.split(".")[0].split("[")[0]
    return next(s.name for s in STAGES if group in s.reads)


@lru_cache(maxsize=1)
def launcher() -> dict[str, Any]:
    return yaml.safe_load(LAUNCHER.read_text(encoding="utf-8")) or {}


def plan_tables(specs: list[TableSpec], scale: str, extra: list[str], work: dict[str, Any]
                ) -> tuple[list[TablePlan], Planner]:
    planner = Planner(scale, extra, work)
    split = [_split(p) for s in specs for p in s.runs(scale) if not p.skip]
    planner.compose_all([b for b, _ in split], {b for b, v in split if v})
    out = []
    for spec in specs:
        points = spec.runs(scale)
        runnable = [planner.point(spec, p) for p in points if not p.skip]
        out.append(TablePlan(spec, scale, runnable, len(points) - len(runnable)))
    return out, planner
