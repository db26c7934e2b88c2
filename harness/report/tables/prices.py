"""API prices (``configs/prices/<provider>.yaml``): dollars per million input and output tokens
for each served model, each with the page it was read from and that page's date, so ``tables
plan`` prices the roles no GPU of ours runs.

    models:
      gpt-4: {input: 30.0, output: 60.0, source: URL, date: "2026-...", figure: "what it prints"}
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from harness.types import ConfigError

PRICES = Path(__file__).resolve().parents[3] / "configs" / "prices"


@dataclass(frozen=True)
class Price:
    input: float        # dollars per million prompt tokens
    output: float       # dollars per million completion tokens
    source: str
    date: str

    def dollars(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


@lru_cache(maxsize=4)
def load_prices(folder: Path = PRICES) -> dict[str, Price]:
    """Every price list in ``folder``, by model id; a model in two lists is an error."""
    out: dict[str, Price] = {}
    for path in sorted(folder.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for model, node in (raw.get("models") or {}).items():
            where = f"{path}: models.{model}"
            if model in out:
                raise ConfigError(f"{where}: priced in two lists")
            if not isinstance(node, dict) or not node.get("source") or not node.get("date"):
                raise ConfigError(f"{where}: needs input, output (dollars per million tokens), source and date, got {node!r}")
            values = [node.get(k, 0.0) for k in ("input", "output")]
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in values):
                raise ConfigError(f"{where}: input and output are dollars per million tokens (>= 0), got {values!r}")
            out[str(model)] = Price(float(values[0]), float(values[1]), str(node["source"]), str(node["date"]))
    return out
