"""The paper's setup as a table file declares it (its ``paper:`` block), and the check of a
composed full-scale grid point against it.

    paper:
      models:      # a model role (config path of a model node) -> the model the paper used
        - {role: retriever.embedder, model: BAAI/bge-m3, cite: "Sec. 5.1"}
        - {role: responder.llm, rows: "qwen*", model: Qwen/Qwen3-8B, settings: {thinking: false}, cite: "pred.py"}
      datasets:    # a column group -> the paper's dataset, its size and the loader settings it implies
        - {group: qasper, name: Qasper, documents: 416, questions: 1372, config: {split: test}, cite: "Table 2"}
      settings:    # a config key -> the paper's value (chunk sizes, thresholds, budget, top-k)
        - {key: context.budget, value: 4096, cite: "Sec. 5.1"}
      deviations:  # where a row knowingly differs, and why
        - {rows: "*_hc*", role: chunker.llm, why: "the paper's fine-tuned Qwen3-4B is not public"}
      unstated:    # where the paper and its code are silent: what ChunkBench chose, and why
        - {key: responder.prompt, value: "answer briefly", why: "..."}
      protocol: hichunk   # the authors' code beyond the paper (configs/protocols/, :mod:`.protocol`)

``rows`` and ``groups`` (a glob or a list of globs, default every one) narrow an entry to part
of the grid. A full-scale point is checked against every entry that applies to it: each declared
role resolves to the declared model and settings, no role is left undeclared, no role runs a
bundled CPU model, no dataset reads a bundled sample, each declared setting holds, each setting of the protocol that applies holds. A finding
that a deviation covers (same role or key, rows and groups) is declared; any other is not. ``unstated`` choices are no findings: ``tables
explain`` lists them beside the deviations.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.pipeline.roles import Role
from harness.report.tables.protocol import Protocol, drift, parse_protocol
from harness.types import ConfigError

BLOCKS = {"models", "datasets", "settings", "deviations", "unstated"}
ENTRY_KEYS = {
    "models": {"role", "model", "settings", "rows", "groups", "cite"},
    "datasets": {"group", "rows", "name", "documents", "questions", "config", "cite"},
    "settings": {"key", "value", "rows", "groups", "cite"},
    "deviations": {"role", "key", "dataset", "rows", "groups", "why"},
    "unstated": {"role", "key", "dataset", "value", "rows", "groups", "why"},
}


def _globs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ("*",)
    return tuple(str(v) for v in (value if isinstance(value, list) else [value]))


@dataclass(frozen=True)
class Entry:
    """One declared fact (a model, a dataset, a setting) or deviation of the paper's setup."""

    kind: str                       # models | datasets | settings | deviations
    fields: tuple[tuple[str, Any], ...]
    rows: tuple[str, ...] = ("*",)
    groups: tuple[str, ...] = ("*",)

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.fields).get(key, default)

    def applies(self, row: str, group: str) -> bool:
        return (any(fnmatch.fnmatch(row, g) for g in self.rows)
                and any(fnmatch.fnmatch(group, g) for g in self.groups))

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.fields)
        if self.rows != ("*",):
            out["rows"] = list(self.rows)
        if self.groups != ("*",):
            out["groups"] = list(self.groups)
        return out


@dataclass(frozen=True)
class Finding:
    """Where a point differs from the declared setup: ``subject`` is a role, a config key or
    ``dataset``."""

    subject: str
    text: str
    declared: str | None = None   # the deviation's reason when one covers it

    def line(self) -> str:
        return f"{self.subject}: {self.text}" + (f" (declared: {self.declared})" if self.declared else "")


@dataclass(frozen=True)
class PaperSetup:
    entries: tuple[Entry, ...]
    protocol: Protocol | None = None

    def of(self, kind: str, row: str, group: str) -> list[Entry]:
        return [e for e in self.entries if e.kind == kind and e.applies(row, group)]

    def declared(self, row: str, group: str) -> dict[str, list[dict[str, Any]]]:
        """What the paper used at this point, entry by entry (deviations apart)."""
        return {kind: [e.as_dict() for e in self.of(kind, row, group)] for kind in ("models", "datasets", "settings")}

    def deviations(self, row: str, group: str) -> list[dict[str, Any]]:
        return [e.as_dict() for e in self.of("deviations", row, group)]

    def unstated(self, row: str, group: str) -> list[dict[str, Any]]:
        return [e.as_dict() for e in self.of("unstated", row, group)]

    def check(self, row: str, group: str, roles: dict[str, Role], dataset: dict[str, Any],
              cfg: DictConfig, overrides: tuple[str, ...] = ()) -> list[Finding]:
        """Every way the point (its roles, dataset source and config; ``overrides``: those it
        was composed with, for the protocol's conditions) differs from the paper."""
        found: list[Finding] = []
        if self.protocol is not None:
            found += [Finding(key, text) for key, text in drift(self.protocol, overrides, cfg)]
        claimed = set()
        for e in self.of("models", row, group):
            path = str(e.get("role"))
            claimed.add(path)
            role = roles.get(path)
            if role is None:
                found.append(Finding(path, f"the paper's {e.get('model')} has no role here (no model node at {path})"))
                continue
            if e.get("model") is not None and role.model != str(e.get("model")):
                found.append(Finding(path, f"runs {role.describe()}, the paper {e.get('model')}"))
            for key, want in (e.get("settings") or {}).items():
                if role.settings.get(key) != want:
                    found.append(Finding(path, f"{key}={role.settings.get(key)!r}, the paper {want!r}"))
        for path, role in roles.items():
            if role.bundled:
                found.append(Finding(path, f"runs the bundled CPU model ({role.describe()})"))
            elif path not in claimed:
                found.append(Finding(path, f"runs {role.describe()}, which the paper's setup does not declare"))
        if dataset.get("sample"):
            found.append(Finding("dataset", f"{dataset.get('name')} reads the bundled sample "
                                            f"({dataset.get('path')}), not the paper's data"))
        for e in self.of("datasets", row, group):
            for key, want in (e.get("config") or {}).items():
                got = OmegaConf.select(cfg, f"dataset.{key}", default=None)
                got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
                if got != want:
                    found.append(Finding("dataset", f"dataset.{key}={got!r}, the paper's {e.get('name')}: {want!r}"))
        for e in self.of("settings", row, group):
            key = str(e.get("key"))
            got = OmegaConf.select(cfg, key, default=None)
            got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
            if got != e.get("value"):
                found.append(Finding(key, f"{got!r}, the paper {e.get('value')!r}"))
        return [self._declare(f, row, group) for f in found]

    def questions_differ(self, row: str, group: str, n_queries: float | None) -> str:
        """Why a run of ``n_queries`` questions is not the paper's dataset ('' when it is, when
        nothing is declared, or when a ``dataset.questions`` deviation says why)."""
        declared = [e.get("questions") for e in self.of("datasets", row, group) if e.get("questions")]
        if n_queries is None or not declared or int(n_queries) == int(declared[0]):
            return ""
        finding = self._declare(Finding("dataset.questions", ""), row, group)
        return "" if finding.declared else f"{int(n_queries)} questions, the paper's {declared[0]}"

    def _declare(self, finding: Finding, row: str, group: str) -> Finding:
        for e in self.of("deviations", row, group):
            subject = e.get("role") or e.get("key") or ("dataset" if e.get("dataset") else None)
            if subject == finding.subject or (subject and finding.subject.startswith(f"{subject}.")):
                return Finding(finding.subject, finding.text, str(e.get("why")))
        return finding


def parse_paper(node: Any, rows: set[str], groups: set[str], where: str) -> PaperSetup | None:
    """The ``paper:`` block, checked for its shape and for globs that name no row or group."""
    if node is None:
        return None
    where = f"{where}.paper"
    if not isinstance(node, dict) or set(node) - BLOCKS - {"protocol"}:
        raise ConfigError(f"{where}: keys are {', '.join(sorted(BLOCKS | {'protocol'}))}, got {node!r}")
    protocol = parse_protocol(node["protocol"], where) if "protocol" in node else None
    entries = []
    for kind in sorted(BLOCKS):
        for i, raw in enumerate(node.get(kind) or []):
            at = f"{where}.{kind}[{i}]"
            if not isinstance(raw, dict) or set(raw) - ENTRY_KEYS[kind]:
                raise ConfigError(f"{at}: keys are {', '.join(sorted(ENTRY_KEYS[kind]))}, got {raw!r}")
            if kind == "models" and not raw.get("role"):
                raise ConfigError(f"{at}: needs a role (the config path of a model node, e.g. chunker.llm)")
            if kind == "settings" and "key" not in raw:
                raise ConfigError(f"{at}: needs a key (a config path, e.g. context.budget)")
            if kind in ("deviations", "unstated") and not (raw.get("why") and (raw.get("role") or raw.get("key") or raw.get("dataset"))):
                raise ConfigError(f"{at}: needs why, and the role, key or dataset it is about")
            row_globs = _globs(raw.get("rows"))
            group_globs = _globs(raw.get("group") if kind == "datasets" else raw.get("groups"))
            for globs, names, axis in ((row_globs, rows, "row"), (group_globs, groups, "group")):
                for g in globs:
                    if not any(fnmatch.fnmatch(n, g) for n in names):
                        raise ConfigError(f"{at}: {axis} {g!r} matches no {axis} of the table ({', '.join(sorted(names))})")
            fields = tuple((k, v) for k, v in raw.items() if k not in ("rows", "groups"))
            entries.append(Entry(kind, fields, row_globs, group_globs))
    return PaperSetup(tuple(entries), protocol)
