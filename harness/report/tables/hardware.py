"""A hardware file (``configs/hardware/<name>.yaml``): how fast one GPU runs each model size, each
figure with its published source, so ``tables plan`` turns counted work into GPU-hours.

    gpu: NVIDIA H100 80GB SXM
    assumptions: [what the figures assume: engine, precision, batching]
    llm:        # per model size class, per GPU (a tensor-parallel engine's figure divided by its GPUs)
      - {name: 7b, up_to_b: 8.5,
         prefill_tokens_per_s: {value: 32928, source: URL, figure: "what the source prints", derived: "how"},
         decode_tokens_per_s: {value: null, source: "none found: run tables calibrate"}}
    encoders:   # per embedder size class (millions of parameters)
      - {name: large, up_to_m: 600, tokens_per_s: {value: null, source: "none found: run tables calibrate"}}
    memory_gb: 80   # one GPU's memory: whether a model's weights fit its tensor-parallel degree
    params:     # model id -> parameters (billions) where its name does not say
      deepseek-ai/DeepSeek-R1-0528: 671
    weight_bytes:   # model id -> bytes per parameter as released, where not bf16's 2
      deepseek-ai/DeepSeek-R1-0528: 1
    measured:   # written by `tables calibrate`: per model id, figures that replace the class's
      Qwen/Qwen3-8B: {prefill_tokens_per_s: {value: ..., source: "measured on <gpu> <date>"}, ...}

A figure with ``value: null`` is a gap, never a zero: the plan prints the role's estimate as
missing. Every error names the file and the key, on one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.types import ConfigError

HARDWARE = Path(__file__).resolve().parents[3] / "configs" / "hardware"
LLM_FIGURES = ("prefill_tokens_per_s", "decode_tokens_per_s")
ENCODER_FIGURES = ("tokens_per_s",)
NONE_FOUND = "none found: run tables calibrate"
# bytes per parameter of vLLM's quantization methods (llm.quantization); a method not named: 8-bit
QUANTIZED_BYTES = {"fp8": 1.0, "int8": 1.0, "bitsandbytes": 0.5, "awq": 0.5, "gptq": 0.5, "marlin": 0.5,
                   "gguf": 0.5, "compressed-tensors": 1.0}


@dataclass(frozen=True)
class Figure:
    value: float | None
    source: str
    note: str = ""   # what the source prints and how the value was derived from it

    @property
    def missing(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class SizeClass:
    name: str
    up_to: float               # billions of parameters (llm) or millions (encoders)
    figures: dict[str, Figure]


@dataclass
class Hardware:
    path: Path
    gpu: str
    assumptions: tuple[str, ...]
    llm: tuple[SizeClass, ...]
    encoders: tuple[SizeClass, ...]
    params: dict[str, float] = field(default_factory=dict)
    measured: dict[str, dict[str, Figure]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    memory_gb: float | None = None
    weight_bytes: dict[str, float] = field(default_factory=dict)

    def fit(self, model: str, tensor_parallel: int, quantization: str | None = None,
            share: float = 0.9) -> str | None:
        """Why an engine of ``model`` on ``tensor_parallel`` of these GPUs cannot load it, or None
        (it may, or the file cannot tell): its weights alone, split evenly over the GPUs, against
        the ``share`` of each GPU's memory the engine may take (vLLM's gpu_memory_utilization),
        before any KV cache or activation. Bytes per parameter: ``llm.quantization``'s (8-bit 1,
        4-bit 0.5), else the file's ``weight_bytes`` for the model, else bf16's 2."""
        size = self.size(model, "llm")
        if self.memory_gb is None or size is None:
            return None
        per = QUANTIZED_BYTES.get(str(quantization).lower(), 1.0) if quantization else self.weight_bytes.get(model, 2.0)
        need = size * per / tensor_parallel   # GB: billions of parameters x bytes each
        room = self.memory_gb * share
        if need <= room:
            return None
        return (f"does not fit: {size:g}B parameters x {per:g} bytes = {size * per:,.0f} GB of weights, "
                f"{need:,.1f} GB per GPU at TP {tensor_parallel} > {room:,.1f} GB ({share:g} of {self.memory_gb:g} GB); "
                f"the weights need at least {int(size * per // room) + 1} such GPUs, or quantization")

    def figure(self, kind: str, model: str, what: str) -> tuple[Figure, str]:
        """The figure for ``model`` (kind: llm | encoder) and what it stands for: the model's own
        measured one, else its size class's (a model larger than every class has none)."""
        own = self.measured.get(model, {}).get(what)
        if own is not None:
            return own, f"{model} (measured)"
        size = self.size(model, kind)
        classes = self.llm if kind == "llm" else self.encoders
        unit = "B" if kind == "llm" else "M"
        if size is None:
            return Figure(None, f"the size of {model} is unknown: add it under params in {self.path.name}"), "?"
        for c in sorted(classes, key=lambda c: c.up_to):
            if size <= c.up_to:
                return c.figures[what], f"class {c.name} (<= {c.up_to:g}{unit}; {model}: {size:g}{unit})"
        return Figure(None, f"no size class up to {size:g}{unit} in {self.path.name}: {NONE_FOUND}"), "?"

    def size(self, model: str, kind: str) -> float | None:
        """Billions (llm) or millions (encoder) of parameters: the file's ``params`` (billions),
        else the number the model id carries (``Qwen3-8B``, ``bge-m3`` has none)."""
        if model in self.params:
            b = self.params[model]
        else:
            m = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([BbMm])(?![a-z])", model.rsplit("/", 1)[-1])
            if not m:
                return None
            b = float(m.group(1)) / (1000 if m.group(2) in "Mm" else 1)
        return b if kind == "llm" else b * 1000


def _figure(node: Any, where: str) -> Figure:
    if not isinstance(node, dict) or "value" not in node or not node.get("source"):
        raise ConfigError(f"{where}: needs {{value, source}} (value null with source \"{NONE_FOUND}\" when no "
                          f"published figure is known), got {node!r}")
    value = node["value"]
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
        raise ConfigError(f"{where}.value: a positive number of tokens per second or null, got {value!r}")
    note = " ".join(str(node[k]) for k in ("figure", "derived") if node.get(k))
    return Figure(None if value is None else float(value), str(node["source"]), note)


def _classes(nodes: Any, where: str, bound: str, names: tuple[str, ...]) -> tuple[SizeClass, ...]:
    if not isinstance(nodes, list):
        raise ConfigError(f"{where}: a list of size classes, got {nodes!r}")
    out = []
    for i, node in enumerate(nodes):
        here = f"{where}[{i}]"
        if not isinstance(node, dict) or not node.get("name") or not isinstance(node.get(bound), (int, float)):
            raise ConfigError(f"{here}: needs name and {bound} (a number), got {node!r}")
        unknown = set(node) - {"name", bound, "note", *names}
        if unknown:
            raise ConfigError(f"{here}: unknown keys {sorted(unknown)} (keys: name, {bound}, note, {', '.join(names)})")
        out.append(SizeClass(str(node["name"]), float(node[bound]),
                             {n: _figure(node.get(n), f"{here}.{n}") for n in names}))
    return tuple(out)


def load_hardware(path: str | Path) -> Hardware:
    """The hardware file at ``path`` (or ``configs/hardware/<path>.yaml``), checked."""
    p = Path(path)
    if not p.is_file() and (HARDWARE / f"{path}.yaml").is_file():
        p = HARDWARE / f"{path}.yaml"
    if not p.is_file():
        known = ", ".join(sorted(f.stem for f in HARDWARE.glob("*.yaml")))
        raise ConfigError(f"hardware file {path}: not found (configs/hardware/ has: {known or 'none'})")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not YAML ({' '.join(str(e).split())})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: a mapping with gpu, llm, encoders, got {type(raw).__name__}")
    unknown = set(raw) - {"gpu", "assumptions", "llm", "encoders", "params", "measured", "note", "memory_gb",
                          "weight_bytes"}
    if unknown or not raw.get("gpu"):
        raise ConfigError(f"{p}: needs gpu; unknown keys {sorted(unknown)}" if unknown else f"{p}: gpu: needs the GPU's name")
    params = raw.get("params") or {}
    if not isinstance(params, dict) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in params.values()):
        raise ConfigError(f"{p}: params: model id -> billions of parameters, got {params!r}")
    measured = {}
    for model, figs in (raw.get("measured") or {}).items():
        if not isinstance(figs, dict):
            raise ConfigError(f"{p}: measured.{model}: a mapping of figures, got {figs!r}")
        measured[str(model)] = {k: _figure(v, f"{p}: measured.{model}.{k}") for k, v in figs.items()
                                if k in LLM_FIGURES + ENCODER_FIGURES}
    memory, weight_bytes = raw.get("memory_gb"), raw.get("weight_bytes") or {}
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float)) or memory <= 0):
        raise ConfigError(f"{p}: memory_gb: one GPU's memory in GB (a positive number), got {memory!r}")
    if not isinstance(weight_bytes, dict) or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0
                                                 for v in weight_bytes.values()):
        raise ConfigError(f"{p}: weight_bytes: model id -> bytes per parameter as released, got {weight_bytes!r}")
    assumptions = raw.get("assumptions") or []
    return Hardware(p, str(raw["gpu"]), tuple(str(a) for a in assumptions),
                    _classes(raw.get("llm") or [], f"{p}: llm", "up_to_b", LLM_FIGURES),
                    _classes(raw.get("encoders") or [], f"{p}: encoders", "up_to_m", ENCODER_FIGURES),
                    {str(k): float(v) for k, v in params.items()}, measured, raw,
                    None if memory is None else float(memory), {str(k): float(v) for k, v in weight_bytes.items()})


def write_measured(path: Path, model: str, figures: dict[str, Figure]) -> None:
    """Record a model's measured figures in the file (``tables calibrate``); the rest of the file
    is kept as it was, comments aside (the YAML is rewritten)."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entry = raw.setdefault("measured", {}) or {}
    raw["measured"] = entry
    entry[model] = {k: {"value": round(f.value, 1) if f.value is not None else None, "source": f.source,
                        **({"figure": f.note} if f.note else {})} for k, f in figures.items()}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")
    tmp.replace(path)
    load_hardware(path)  # what was written reads back
