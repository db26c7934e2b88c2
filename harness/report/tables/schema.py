"""The shape of a table file, ``configs/tables/<paper>/<table>.yaml``, as structured config.

One validation, OmegaConf's, checks every key and type of the file against these dataclasses;
each failure is one line naming the key's path (:func:`read`). :mod:`harness.report.tables.spec`
turns the validated file into the table model and checks what a shape cannot say (the groups an
aggregate names, a sweep's values, which metrics a row may read); the blocks (``correlation``,
``series``, ``pairwise``, ``paper``, ``challenge``) are shaped by their own parsers
(:mod:`harness.report.tables.spec_blocks`, :mod:`harness.report.tables.setup`). The module
docstring of :mod:`harness.report.tables.spec` says what each key means.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import yaml
from omegaconf import MISSING, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from harness.types import ConfigError

# OmegaConf reads these annotations at run time: Optional[...] and typing's generics, not `X | None`.


@dataclass
class RowFile:
    label: Optional[str] = None
    overrides: list[str] = field(default_factory=list)
    sweep: Any = None                  # {param: [values]} or a list of such mappings
    missing: Optional[str] = None      # not built yet: the reason its cells print
    metrics: dict[str, str] = field(default_factory=dict)   # layout key -> this axis's own run metric


@dataclass
class AggregateFile:
    mean_of: list[str] = MISSING


@dataclass
class GroupFile(RowFile):
    aggregate: Optional[AggregateFile] = None   # computed from other groups' cells, no run


@dataclass
class MetricFile:
    metric: str = MISSING
    label: Optional[str] = None
    factor: float = 1.0
    digits: int = 4


@dataclass
class XFile:
    param: str = MISSING
    values: list[Any] = MISSING
    label: Optional[str] = None
    names: Optional[list[str]] = None


@dataclass
class ScaleGroupFile:
    label: Optional[str] = None              # the stand-in's name, shown in the header
    overrides: Optional[list[str]] = None    # None: the axis's own
    add: list[str] = field(default_factory=list)


@dataclass
class ScaleRowFile(ScaleGroupFile):
    sweep: Any = None                        # None: the row's own; {}: one run


@dataclass
class ScaleFile:
    shared: list[str] = field(default_factory=list)
    rows: dict[str, ScaleRowFile] = field(default_factory=dict)
    groups: dict[str, ScaleGroupFile] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)   # row, group, row/group or param=value -> why
    pairwise: Optional[dict[str, Any]] = None            # what this scale's judge replaces


@dataclass
class ReadingFile:
    label: str = MISSING                     # what the reading changes, as a column header says it
    overrides: list[str] = MISSING           # Hydra overrides on every point (the table's own config besides)
    why: str = ""                            # the protocol choice it measures, and where it comes from
    groups: list[str] = field(default_factory=list)   # the column groups it applies to (default: every one)


class SweepSelect(Enum):
    mean = "mean"
    best = "best"
    best_group = "best_group"


class Spread(Enum):
    ci = "ci"
    std = "std"


class Scale(Enum):
    smoke = "smoke"
    full = "full"


@dataclass
class TableFile:
    title: str = MISSING
    source: str = MISSING
    numbers: str = MISSING
    rows: dict[str, RowFile] = MISSING
    groups: dict[str, GroupFile] = MISSING
    metrics: dict[str, MetricFile] = MISSING
    shared: list[str] = field(default_factory=list)
    note: str = ""
    scale: dict[Scale, ScaleFile] = field(default_factory=dict)
    x: Optional[XFile] = None
    sweep_select: SweepSelect = SweepSelect.mean
    select_by: list[str] = field(default_factory=list)
    spread: Spread = Spread.ci
    correlation: Any = None
    series: Any = None
    pairwise: Any = None
    paper: Any = None
    challenge: Any = None
    sensitivity: dict[str, ReadingFile] = field(default_factory=dict)   # name -> another reading of the protocol


def read(path: Path, where: str) -> dict[str, Any]:
    """The table file at ``path``, validated against :class:`TableFile`, as plain containers with
    every default filled in (interpolations in its overrides stay as written: the run's config
    resolves them, so the file is not turned into the dataclasses, which would resolve them)."""
    try:
        text = path.read_text(encoding="utf-8")
        top = yaml.compose(text)  # the document's top node, nothing built yet
        if top is not None and not isinstance(top, yaml.MappingNode):
            got = "a list" if isinstance(top, yaml.SequenceNode) else f"the value {str(top.value)[:60]!r}"
            raise ConfigError(f"{where} ({path}): a table file is a mapping (title: ..., rows: ...), got {got}")
        loaded = OmegaConf.load(io.StringIO(text))
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as e:  # not YAML at all: OmegaConf passes yaml's error on
        raise ConfigError(f"{where} ({path}): {yaml_problem(e)}") from None
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(TableFile), loaded)
        raw = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    except ConfigKeyError as e:   # a key its dataclass does not have
        parent = str(e.full_key).rpartition(".")[0]
        keys = sorted(f.name for f in fields(e.object_type)) if is_dataclass(e.object_type) else []
        raise ConfigError(f"{where}{'.' + parent if parent else ''}: keys are {', '.join(keys)}, got {e.key!r}") \
            from None
    except OmegaConfBaseException as e:   # a wrong type or value
        raise ConfigError(f"{where}.{e.full_key}: {str(e.msg).splitlines()[0]}") from None
    missing = sorted(unset(raw))
    if missing:
        raise ConfigError(f"{where}: missing keys {missing}")
    return raw


def yaml_problem(e: Exception) -> str:
    """One line for a file that is no YAML: yaml's problem and its line (1-based), else the OS's."""
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        return f"not valid YAML at line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}: {e.problem}"
    if isinstance(e, OSError):
        return f"cannot be read ({e.strerror or e})"
    return f"not valid YAML ({str(e).splitlines()[0]})"


def unset(node: Any, at: str = "") -> list[str]:
    """The paths of the required keys the file leaves unset (OmegaConf's ``???``); OmegaConf's own
    search would resolve the overrides' interpolations."""
    if isinstance(node, dict):
        return [m for k, v in node.items() for m in unset(v, f"{at}.{k}" if at else str(k))]
    if isinstance(node, list):
        return [m for i, v in enumerate(node) for m in unset(v, f"{at}[{i}]")]
    return [at] if node == MISSING else []


def set_keys(entry: dict[str, Any]) -> dict[str, Any]:
    """A scale's entry for a row or group as the keys the file sets (None: not set)."""
    return {k: v for k, v in entry.items() if v is not None}
