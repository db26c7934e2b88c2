"""A paper's protocol: what its authors' code does beyond what the paper states, one file per
paper (``configs/protocols/<name>.yaml``), each setting with the line of code it comes from.

    source: github.com/TencentYoutuResearch/HiChunk
    settings:
      - {key: context.overflow, value: truncate, when: {context: budget}, cite: "retrieval_algo.py: ..."}
    deviations:   # what the code does that ChunkBench cannot set, and why
      - {about: metrics.fact_cov.llm, when: {metrics: fact_cov}, why: "..."}

A table whose ``paper:`` block names the protocol (``protocol: hichunk``) runs each grid point
with every setting whose ``when`` holds there, before the table's own overrides. ``when`` maps a
config group (``chunker``, ``llm@roles.chunker.llm``) to the choice or choices it must have at
the point ("*": any); a point's choice is its last override of the group, else the group's
default in ``configs/config.yaml``. A table that sets a key otherwise wins, and at full scale
``tables validate`` checks every setting that applies to a point, not only the keys the table
declares: a point that drifts from the protocol, whatever key moved, is undeclared unless a
deviation of the table says why. The protocol's own ``deviations`` are what its code does that no
setting here reproduces: ``tables explain`` lists each on the points its ``when`` holds for; they
declare no finding (nothing can be checked).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from harness.types import ConfigError

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
PROTOCOLS = CONFIGS / "protocols"
SETTING_KEYS = {"key", "value", "when", "cite"}
DEVIATION_KEYS = {"about", "when", "why"}


When = tuple[tuple[str, tuple[str, ...]], ...]   # group -> the choices it applies under ("*": any)


def _holds(when: When, choices: dict[str, str | None]) -> bool:
    return all(choices.get(group) is not None and ("*" in wanted or choices[group] in wanted) for group, wanted in when)


@dataclass(frozen=True)
class Setting:
    key: str
    value: Any
    when: When
    cite: str

    def override(self) -> str:
        return f"{self.key}={_hydra_value(self.value)}"


@dataclass(frozen=True)
class Deviation:
    about: str
    when: When
    why: str


@dataclass(frozen=True)
class Protocol:
    name: str
    source: str
    settings: tuple[Setting, ...]
    deviations: tuple[Deviation, ...]

    def applying(self, overrides: tuple[str, ...]) -> list[Setting]:
        """The settings whose ``when`` holds for a point of these overrides."""
        choices = group_choices(overrides, {g for s in self.settings for g, _ in s.when})
        return [s for s in self.settings if _holds(s.when, choices)]

    def deviating(self, overrides: tuple[str, ...]) -> list[Deviation]:
        """The deviations whose ``when`` holds for a point of these overrides."""
        choices = group_choices(overrides, {g for d in self.deviations for g, _ in d.when})
        return [d for d in self.deviations if _holds(d.when, choices)]

    def overrides(self, overrides: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(s.override() for s in self.applying(overrides))


def _hydra_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, str) and any(c in value for c in "\\'\"=,[]{}() ") or value == "":
        return "'" + value.replace("'", "\\'") + "'"  # Hydra reads backslashes in quotes as they are
    return str(value)


@functools.cache
def _defaults() -> dict[str, str | None]:
    """``configs/config.yaml``'s group defaults (``llm@roles.chunker.llm``: None)."""
    raw = yaml.safe_load((CONFIGS / "config.yaml").read_text(encoding="utf-8"))
    out: dict[str, str | None] = {}
    for item in raw.get("defaults", []):
        if isinstance(item, dict):
            for group, choice in item.items():
                out[str(group).removeprefix("override ")] = choice
    return out


def group_choices(overrides: tuple[str, ...], groups: set[str]) -> dict[str, str | None]:
    """Each of ``groups``' choice at a point of these overrides (its last, else the default)."""
    out = {g: _defaults().get(g) for g in groups}
    for o in overrides:
        key, eq, value = o.lstrip("+").partition("=")
        if eq and key in groups:
            out[key] = None if value in ("null", "") else value
    return out


def parse_protocol(name: Any, where: str) -> Protocol:
    """``configs/protocols/<name>.yaml``, checked for its shape."""
    if not isinstance(name, str) or not (PROTOCOLS / f"{name}.yaml").is_file():
        known = ", ".join(sorted(p.stem for p in PROTOCOLS.glob("*.yaml")))
        raise ConfigError(f"{where}.protocol: {name!r} is not a protocol (configs/protocols/: {known})")
    return _load(name)


@functools.cache
def _load(name: str) -> Protocol:
    path = PROTOCOLS / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if set(raw) - {"source", "settings", "deviations"} or not raw.get("source"):
        raise ConfigError(f"{path}: keys are source (required), settings, deviations; got {sorted(raw)}")
    def when(node: Any, at: str) -> When:
        if not isinstance(node or {}, dict):
            raise ConfigError(f"{at}.when: maps a config group to its choice(s), got {node!r}")
        return tuple((str(g), tuple(str(c) for c in (v if isinstance(v, list) else [v]))) for g, v in (node or {}).items())

    settings = []
    for i, s in enumerate(raw.get("settings") or []):
        at = f"{path}: settings[{i}]"
        if not isinstance(s, dict) or set(s) - SETTING_KEYS or "key" not in s or "value" not in s or not s.get("cite"):
            raise ConfigError(f"{at}: needs key, value and cite (and when), got {s!r}")
        settings.append(Setting(str(s["key"]), s["value"], when(s.get("when"), at), str(s["cite"])))
    deviations = []
    for i, d in enumerate(raw.get("deviations") or []):
        at = f"{path}: deviations[{i}]"
        if not isinstance(d, dict) or set(d) - DEVIATION_KEYS or not d.get("why") or not d.get("about"):
            raise ConfigError(f"{at}: needs about (a role or key) and why (and when); got {d!r}")
        deviations.append(Deviation(str(d["about"]), when(d.get("when"), at), str(d["why"])))
    return Protocol(name, str(raw["source"]), tuple(settings), tuple(deviations))


def drift(protocol: Protocol, overrides: tuple[str, ...], cfg) -> list[tuple[str, str]]:
    """(key, how it differs) for each setting of ``protocol`` that applies to the point and does
    not hold in its composed ``cfg``."""
    out = []
    for s in protocol.applying(overrides):
        got = OmegaConf.select(cfg, s.key, default=None)
        got = OmegaConf.to_container(got, resolve=True) if OmegaConf.is_config(got) else got
        if got != s.value:
            out.append((s.key, f"{got!r}, the authors' code {s.value!r} (protocol {protocol.name}: {s.cite})"))
    return out
