"""The published facts about each model ``tables plan`` costs (``configs/hardware/models.yaml``):
parameters, active parameters, the weights' precision as released, and where each is printed.

    models:
      Qwen/Qwen3-32B: {params_b: 32.8, dtype: bf16, source: URL, figure: "what the source prints"}
      deepseek-ai/DeepSeek-R1-0528: {params_b: 671, active_b: 37, dtype: fp8, source: URL}

A model not listed has no size here: the plan says so on its line, never a zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from harness.types import ConfigError

MODELS = Path(__file__).resolve().parents[3] / "configs" / "hardware" / "models.yaml"
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


@dataclass(frozen=True)
class ModelFacts:
    params_b: float
    active_b: float
    dtype: str
    source: str
    figure: str = ""

    @property
    def bytes(self) -> float:
        return DTYPE_BYTES[self.dtype]


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def parse_models(raw: Any, where: str) -> dict[str, ModelFacts]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: model id -> {{params_b, dtype, source}}, got {raw!r}")
    out = {}
    for model, node in raw.items():
        here = f"{where}.{model}"
        if not isinstance(node, dict) or not _positive(node.get("params_b")) or not node.get("source"):
            raise ConfigError(f"{here}: needs params_b (billions, > 0) and source (where the count is printed), got {node!r}")
        unknown = set(node) - {"params_b", "active_b", "dtype", "source", "figure"}
        if unknown:
            raise ConfigError(f"{here}: unknown keys {sorted(unknown)} (keys: params_b, active_b, dtype, source, figure)")
        dtype = str(node.get("dtype", "bf16"))
        if dtype not in DTYPE_BYTES:
            raise ConfigError(f"{here}.dtype: one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
        active = node.get("active_b", node["params_b"])
        if not _positive(active) or active > node["params_b"]:
            raise ConfigError(f"{here}.active_b: billions active per token, > 0 and <= params_b, got {active!r}")
        out[str(model)] = ModelFacts(float(node["params_b"]), float(active), dtype, str(node["source"]),
                                     str(node.get("figure") or ""))
    return out


@lru_cache(maxsize=4)
def load_models(path: Path = MODELS) -> dict[str, ModelFacts]:
    """The checked-in model facts (one file for every hardware file: a model's size is not the GPU's)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: unreadable ({' '.join(str(e).split())})") from None
    return parse_models(raw.get("models"), f"{path}: models")
