"""A leaderboard's suite: ``configs/suite/<name>.yaml`` (the datasets, the settings every run shares,
the target chunk sizes, the contenders) read into data, and the grid it stands for as a table spec.

The suite is expressed as a :class:`harness.report.tables.spec.TableSpec` built in code (as a
challenge on the user's own data builds one): rows are the contenders at each size, groups are the
datasets, the one layout column is each dataset's primary metric. So the suite runs, caches and
records exactly as a paper table does (``harness.report.tables.grid.run_table``), and its cells are
read back from the record with their intervals (``harness.report.tables.render.build``). The table's
id carries the suite's name and version: another version is another MLflow experiment, never mixed in.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from harness.report.tables.spec import REPO, Axis, Metric, TableSpec
from harness.types import ConfigError

SUITES = REPO / "configs" / "suite"
KEYS = {"name", "version", "title", "shared", "budget", "sizes", "datasets", "pending", "contenders", "refused"}
DATASET_KEYS = {"label", "overrides", "primary", "secondary", "licence", "source"}
CONTENDER_KEYS = {"label", "family", "overrides", "context"}
CHARS_PER_TOKEN = 4    # {chars}: a library that counts characters gets size x this
WORDS_PER_TOKEN = 0.75  # {words}: a chunker that counts words gets size x this


@dataclass(frozen=True)
class Dataset:
    key: str
    label: str
    overrides: tuple[str, ...]
    primary: str
    secondary: tuple[str, ...]
    licence: str
    source: str


@dataclass(frozen=True)
class Contender:
    """One contender at one target size: ``key`` = ``<name>@<size>``."""

    key: str
    name: str
    label: str
    family: str
    size: int
    overrides: tuple[str, ...]


@dataclass(frozen=True)
class Left:
    """A dataset or a contender the suite leaves out, with the reason."""

    key: str
    label: str
    why: str


@dataclass(frozen=True)
class Suite:
    name: str
    version: int
    title: str
    shared: tuple[str, ...]
    budget: str
    sizes: tuple[int, ...]
    datasets: tuple[Dataset, ...]
    contenders: tuple[Contender, ...]
    pending: tuple[Left, ...] = ()
    refused: tuple[Left, ...] = ()
    path: Path | None = None

    @property
    def id(self) -> str:
        """``<name>-v<version>``: what a leaderboard names, and its experiment's last part."""
        return f"{self.name}-v{self.version}"

    def dataset(self, key: str) -> Dataset:
        return next(d for d in self.datasets if d.key == key)

    def contender(self, key: str) -> Contender:
        return next(c for c in self.contenders if c.key == key)


def _sized(override: str, size: int) -> str:
    """``{size}``, ``{chars}``, ``{words}`` filled in (replaced, not formatted: the kwargs' braces stay)."""
    return (override.replace("{size}", str(size)).replace("{chars}", str(size * CHARS_PER_TOKEN))
            .replace("{words}", str(round(size * WORDS_PER_TOKEN))))


def _strings(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of strings, got {value!r}")
    return tuple(value)


def _mapping(raw: dict, key: str, where: str, allowed: set[str] | None = None) -> dict:
    node = raw.get(key) or {}
    if not isinstance(node, dict):
        raise ConfigError(f"{where}.{key}: must be a mapping, got {type(node).__name__}")
    for k, v in node.items():
        if not isinstance(v, dict):
            raise ConfigError(f"{where}.{key}.{k}: must be a mapping, got {v!r}")
        if allowed is not None and (unknown := set(v) - allowed):
            raise ConfigError(f"{where}.{key}.{k}: unknown keys {sorted(unknown)} (keys: {', '.join(sorted(allowed))})")
    return node


def path_of(name: str | Path) -> Path:
    """A suite by name (``configs/suite/<name>.yaml``) or by path."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml"):
        return p
    found = SUITES / f"{name}.yaml"
    if not found.is_file():
        known = sorted(q.stem for q in SUITES.glob("*.yaml"))
        raise ConfigError(f"no suite {name!r} (suites: {', '.join(known) or 'none'}; or give a .yaml path)")
    return found


def load(name: str | Path = "leaderboard") -> Suite:
    """The suite file, checked: unknown keys, a dataset without a primary metric, a contender
    without overrides, a size that is not a positive integer each fail in one line."""
    from omegaconf import OmegaConf

    path = path_of(name)
    if not path.is_file():
        raise ConfigError(f"suite file {path} does not exist")
    where = f"suite {path.stem}"
    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as e:  # yaml's ParserError/ScannerError (or OmegaConf's): the file and the place
        raise ConfigError(f"{where}: {path} is not readable YAML ({' '.join(str(e).split())})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping")
    if unknown := set(raw) - KEYS:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (keys: {', '.join(sorted(KEYS))})")
    for key in ("name", "version", "datasets", "contenders", "sizes"):
        if raw.get(key) in (None, "", [], {}):
            raise ConfigError(f"{where}: {key} is required")
    if not isinstance(raw["version"], int):
        raise ConfigError(f"{where}.version: an integer, got {raw['version']!r}")
    sizes = raw["sizes"]
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s > 0 for s in sizes):
        raise ConfigError(f"{where}.sizes: a list of positive integers (tokens), got {sizes!r}")
    datasets = []
    for key, d in _mapping(raw, "datasets", where, DATASET_KEYS).items():
        if not d.get("primary") or not d.get("overrides"):
            raise ConfigError(f"{where}.datasets.{key}: needs overrides and a primary metric")
        datasets.append(Dataset(key, d.get("label") or key, _strings(d["overrides"], f"{where}.datasets.{key}.overrides"),
                                d["primary"], _strings(d.get("secondary"), f"{where}.datasets.{key}.secondary"),
                                d.get("licence") or "", d.get("source") or ""))
    contenders = []
    for name_, c in _mapping(raw, "contenders", where, CONTENDER_KEYS).items():
        given = _strings(c.get("overrides"), f"{where}.contenders.{name_}.overrides")
        if not given:
            raise ConfigError(f"{where}.contenders.{name_}: needs overrides")
        context = (f"context={c.get('context') or 'budget'}",)
        for size in sizes:
            contenders.append(Contender(f"{name_}@{size}", name_, c.get("label") or name_, c.get("family") or "",
                                        size, (*(_sized(o, size) for o in given), *context)))
    left = {k: tuple(Left(key, v.get("label") or key, " ".join(str(v.get("why") or "").split()))
                     for key, v in _mapping(raw, k, where, {"label", "why"}).items()) for k in ("pending", "refused")}
    return Suite(raw["name"], raw["version"], raw.get("title") or raw["name"], _strings(raw.get("shared"), f"{where}.shared"),
                 str(raw.get("budget") or ""), tuple(sizes), tuple(datasets), tuple(contenders),
                 left["pending"], left["refused"], path)


def _globs(text: str | None) -> list[str]:
    return [g.strip() for g in (text or "").split(",") if g.strip()]


def select(suite: Suite, chunkers: str | None = None, datasets: str | None = None) -> Suite:
    """The suite with the contenders ``chunkers`` names (comma-separated globs over ``name@size``
    or ``name``: ``fixed*,chonkie_*@128``) and the datasets ``datasets`` names (globs over their
    keys); all when empty."""
    from dataclasses import replace

    if globs := _globs(chunkers):
        kept = tuple(c for c in suite.contenders
                     if any(fnmatch.fnmatchcase(c.key, g) or fnmatch.fnmatchcase(c.name, g) for g in globs))
        if not kept:
            raise ConfigError(f"--chunkers {chunkers}: matches no contender "
                              f"({', '.join(dict.fromkeys(c.name for c in suite.contenders))})")
        suite = replace(suite, contenders=kept)
    if globs := _globs(datasets):
        found = tuple(d for d in suite.datasets if any(fnmatch.fnmatchcase(d.key, g) for g in globs))
        if not found:
            raise ConfigError(f"--datasets {datasets}: matches no dataset ({', '.join(d.key for d in suite.datasets)})")
        suite = replace(suite, datasets=found)
    return suite


PRIMARY = "primary"


def table(suite: Suite) -> TableSpec:
    """The suite as a table spec: a row per contender and size, a group per dataset, one column
    (each group reads its own primary metric)."""
    rows = tuple(Axis(c.key, f"{c.label} @{c.size}", c.overrides) for c in suite.contenders)
    groups = tuple(Axis(d.key, d.label, d.overrides, metrics=((PRIMARY, d.primary),)) for d in suite.datasets)
    return TableSpec(f"leaderboard/{suite.id}", suite.title, f"ChunkBench suite {suite.id} ({suite.path or 'in code'})",
                     None, "", suite.shared, rows, groups, (Metric(PRIMARY, suite.datasets[0].primary, "Primary", 100.0, 1),),
                     {})
