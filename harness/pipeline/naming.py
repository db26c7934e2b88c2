"""A run's name: what it is, and what it changed from the defaults.

``ohrbench/fixed/dense/budget`` (dataset, chunker, retriever, context: always named), then
every other config group whose choice differs from ``configs/config.yaml``'s defaults
(``responder=llm``, ``experiment=...``, ``profile=...``) and every value override
(``chunker.size=400``, ``retriever.scope=corpus``, ``dataset.limit_queries=10``), so that runs
with different settings never share a name. Where a run is stored and cached (``cache.*``,
``tracking=``/``tracking.*``, ``hydra.*``) is no part of its name, nor is a secret (``llm.api_key=``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from omegaconf import OmegaConf

from harness.secrets import is_secret_name, mask_text, secret_values

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "config.yaml"
ALWAYS = ("dataset", "chunker", "retriever", "context")
NOT_NAMED = ("cache", "tracking", "hydra", "scale")  # scale: the title shows it; the run has it as a tag
MAX_LENGTH = 250  # MLflow keeps run names up to this many characters


@cache
def default_choices(config: Path = CONFIG) -> dict[str, str | None]:
    """Group -> default choice in the primary config's defaults list (``optional`` ones: None)."""
    out: dict[str, str | None] = {}
    for entry in OmegaConf.to_container(OmegaConf.load(config)).get("defaults", []):
        if isinstance(entry, dict):
            for group, choice in entry.items():
                if not group.startswith("override "):  # Hydra's own groups (hydra/help): no part of a run
                    out[group.removeprefix("optional ").strip()] = choice
    return out


def run_name(choices: Mapping[str, str | None], overrides: Sequence[str],
             defaults: Mapping[str, str | None] | None = None) -> str:
    """``choices``: Hydra's ``runtime.choices`` (group -> chosen config); ``overrides``: the
    job's task overrides as typed (``chunker.size=400``)."""
    defaults = default_choices() if defaults is None else defaults
    parts = ["/".join(str(choices.get(g)) for g in ALWAYS)]
    parts += [f"{g}={c}" for g, c in sorted(choices.items())
              if g in defaults and g not in ALWAYS and g not in NOT_NAMED and c != defaults[g]]
    values = []
    for o in overrides:
        key, sep, _ = str(o).lstrip("+~").partition("=")
        path = key.split("@")[0]
        if not sep or path in choices or path.split(".")[0] in NOT_NAMED:
            continue  # a group choice (named above when not the default), or a service setting
        if any(is_secret_name(p) for p in path.split(".")):
            continue
        values.append(str(o).lstrip("+~"))
    name = mask_text(" ".join(parts + sorted(values)), secret_values(overrides=overrides))  # a key typed elsewhere
    return name if len(name) <= MAX_LENGTH else name[:MAX_LENGTH - 1] + "…"
