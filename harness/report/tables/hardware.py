"""A hardware file (``configs/hardware/<name>.yaml``): one GPU's published constants, each with
its source and date, from which ``tables plan`` derives every model's throughput
(:mod:`.throughput`), the models' parameter counts coming from ``configs/hardware/models.yaml``.

    gpu: NVIDIA H100 80GB SXM
    memory_gb: 80            # one GPU's memory: whether a model's weights fit its tensor-parallel degree
    constants:               # each {value, source, date, figure}
      peak_tflops_bf16, peak_tflops_fp8, peak_tflops_fp32, memory_bandwidth_gbs,
      compute_utilisation, memory_utilisation, engine_batch
    encoder_dtype: fp32      # the precision sentence-transformers computes in
    assumptions: [what the derivation leaves out]
    checks:                  # published throughputs the derived figures are compared with
      - {model, params_b, dtype, batch, tp, what, value, source, date, figure}
    cited:                   # per model id, a published figure for this GPU that replaces the derived one
      Qwen/Qwen3-8B: {decode_tokens_per_s: {value: ..., source: URL, date: ...}}
    measured:                # written by `tables calibrate`: per model id, replaces cited and derived
      Qwen/Qwen3-8B: {prefill_tokens_per_s: {value: ..., source: "measured on <gpu> <date>"}, ...}

Each figure the plan uses says what it is: ``measured``, ``cited`` or ``derived``. Every error
names the file and the key, on one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.report.tables.model_facts import DTYPE_BYTES, ModelFacts, load_models
from harness.report.tables.throughput import decode_rate, prefill_rate
from harness.types import ConfigError

HARDWARE = Path(__file__).resolve().parents[3] / "configs" / "hardware"
LLM_FIGURES = ("prefill_tokens_per_s", "decode_tokens_per_s")
ENCODER_FIGURES = ("tokens_per_s",)
CONSTANTS = ("peak_tflops_bf16", "peak_tflops_fp8", "peak_tflops_fp32", "memory_bandwidth_gbs",
             "compute_utilisation", "memory_utilisation", "engine_batch")
# bytes per parameter of vLLM's quantization methods (llm.quantization); a method not named: 8-bit
QUANTIZED_BYTES = {"fp8": 1.0, "int8": 1.0, "bitsandbytes": 0.5, "awq": 0.5, "gptq": 0.5, "marlin": 0.5,
                   "gguf": 0.5, "compressed-tensors": 1.0}
KEYS = {"gpu", "assumptions", "constants", "encoder_dtype", "checks", "cited", "measured", "note", "memory_gb"}


@dataclass(frozen=True)
class Figure:
    value: float | None
    source: str
    note: str = ""      # what the source prints, or the arithmetic that derived the value
    basis: str = "cited"  # derived | cited | measured

    @property
    def missing(self) -> bool:
        return self.value is None


@dataclass
class Hardware:
    path: Path
    gpu: str
    assumptions: tuple[str, ...]
    constants: dict[str, Figure]
    models: dict[str, ModelFacts]
    encoder_dtype: str = "fp32"
    memory_gb: float | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    cited: dict[str, dict[str, Figure]] = field(default_factory=dict)
    measured: dict[str, dict[str, Figure]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def c(self, name: str) -> float:
        return self.constants[name].value

    def weight_bytes(self, model: str, quantization: str | None = None) -> float:
        """Bytes per parameter as served: ``llm.quantization``'s, else the release's (an fp32
        release is served in bf16, vLLM's dtype auto)."""
        if quantization:
            return QUANTIZED_BYTES.get(str(quantization).lower(), 1.0)
        facts = self.models.get(model)
        return min(facts.bytes, 2.0) if facts else 2.0

    def fit(self, model: str, tensor_parallel: int, quantization: str | None = None,
            share: float = 0.9) -> str | None:
        """Why an engine of ``model`` on ``tensor_parallel`` of these GPUs cannot load it, or None
        (it may, or the file cannot tell): its weights alone, split evenly over the GPUs, against
        the ``share`` of each GPU's memory the engine may take (vLLM's gpu_memory_utilization),
        before any KV cache or activation."""
        facts = self.models.get(model)
        if self.memory_gb is None or facts is None:
            return None
        size, per = facts.params_b, self.weight_bytes(model, quantization)
        need = size * per / tensor_parallel   # GB: billions of parameters x bytes each
        room = self.memory_gb * share
        if need <= room:
            return None
        return (f"does not fit: {size:g}B parameters x {per:g} bytes = {size * per:,.0f} GB of weights, "
                f"{need:,.1f} GB per GPU at TP {tensor_parallel} > {room:,.1f} GB ({share:g} of {self.memory_gb:g} GB); "
                f"the weights need at least {int(size * per // room) + 1} such GPUs, or quantization")

    def figure(self, kind: str, model: str, what: str, tp: int = 1, quantization: str | None = None,
               batch: int | None = None) -> Figure:
        """The figure for ``model`` (kind: llm | encoder): measured, else cited, else derived from
        the constants and the model's parameters; a model without a parameter count has none."""
        for table in (self.measured, self.cited):
            own = table.get(model, {}).get(what)
            if own is not None:
                return own
        facts = self.models.get(model)
        if facts is None:
            return Figure(None, f"no parameter count for {model}: add it to configs/hardware/models.yaml", basis="derived")
        if kind != "llm":
            rate, how = prefill_rate(self.c(f"peak_tflops_{self.encoder_dtype}"), self.c("compute_utilisation"),
                                     facts.active_b)
            return Figure(rate, f"derived ({self.encoder_dtype})", how, "derived")
        per = self.weight_bytes(model, quantization)
        peak_name = "peak_tflops_fp8" if per == 1.0 else "peak_tflops_bf16"
        peak = self.c(peak_name)
        if what == "prefill_tokens_per_s":
            rate, how = prefill_rate(peak, self.c("compute_utilisation"), facts.active_b)
        else:
            rate, how = decode_rate(peak, self.c("compute_utilisation"), self.c("memory_bandwidth_gbs"),
                                    self.c("memory_utilisation"), facts.params_b, facts.active_b, per,
                                    int(batch or self.c("engine_batch")), tp)
        return Figure(rate, f"derived ({peak_name.rsplit('_', 1)[1]})", how, "derived")

    def check_ratios(self) -> list[dict[str, Any]]:
        """Each published throughput beside the figure derived under its conditions: derived / cited."""
        out = []
        for ck in self.checks:
            facts = ModelFacts(ck["params_b"], ck.get("active_b", ck["params_b"]), ck["dtype"], ck["source"])
            peak = self.c("peak_tflops_fp8" if facts.bytes == 1.0 else "peak_tflops_bf16")
            if ck["what"] == "prefill_tokens_per_s":
                rate, how = prefill_rate(peak, self.c("compute_utilisation"), facts.active_b)
            else:
                rate, how = decode_rate(peak, self.c("compute_utilisation"), self.c("memory_bandwidth_gbs"),
                                        self.c("memory_utilisation"), facts.params_b, facts.active_b, facts.bytes,
                                        int(ck["batch"]), int(ck["tp"]))
            out.append({**ck, "derived": rate, "derivation": how, "ratio": rate / ck["value"]})
        return out


def _figure(node: Any, where: str, basis: str = "cited") -> Figure:
    if not isinstance(node, dict) or "value" not in node or not node.get("source"):
        raise ConfigError(f"{where}: needs {{value, source}} (and date, figure: when and what the source prints), "
                          f"got {node!r}")
    value = node["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where}.value: a positive number, got {value!r}")
    note = " ".join(str(node[k]) for k in ("figure", "derived") if node.get(k))
    source = str(node["source"]) + (f", {node['date']}" if node.get("date") else "")
    return Figure(float(value), source, note, basis)


def _per_model(node: Any, where: str, basis: str) -> dict[str, dict[str, Figure]]:
    out = {}
    for model, figs in (node or {}).items():
        if not isinstance(figs, dict):
            raise ConfigError(f"{where}.{model}: a mapping of figures, got {figs!r}")
        out[str(model)] = {k: _figure(v, f"{where}.{model}.{k}", basis) for k, v in figs.items()
                           if k in LLM_FIGURES + ENCODER_FIGURES}
    return out


def _checks(node: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(node, list):
        raise ConfigError(f"{where}: a list of published throughputs, got {node!r}")
    need = ("model", "params_b", "dtype", "batch", "tp", "what", "value", "source")
    for i, ck in enumerate(node):
        if not isinstance(ck, dict) or any(ck.get(k) in (None, "") for k in need):
            raise ConfigError(f"{where}[{i}]: needs {', '.join(need)}, got {ck!r}")
        if ck["what"] not in LLM_FIGURES or ck["dtype"] not in DTYPE_BYTES:
            raise ConfigError(f"{where}[{i}]: what is one of {', '.join(LLM_FIGURES)} and dtype one of "
                              f"{', '.join(DTYPE_BYTES)}, got {ck['what']!r}, {ck['dtype']!r}")
    return list(node)


def load_hardware(path: str | Path, models: dict[str, ModelFacts] | None = None) -> Hardware:
    """The hardware file at ``path`` (or ``configs/hardware/<path>.yaml``), checked; ``models``
    replaces the checked-in model facts (a test's)."""
    p = Path(path)
    if not p.is_file() and (HARDWARE / f"{path}.yaml").is_file():
        p = HARDWARE / f"{path}.yaml"
    if not p.is_file():
        known = ", ".join(sorted(f.stem for f in HARDWARE.glob("*.yaml") if f.stem != "models"))
        raise ConfigError(f"hardware file {path}: not found (configs/hardware/ has: {known or 'none'})")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not YAML ({' '.join(str(e).split())})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: a mapping with gpu, constants, got {type(raw).__name__}")
    unknown = set(raw) - KEYS
    if unknown or not raw.get("gpu"):
        raise ConfigError(f"{p}: unknown keys {sorted(unknown)} (keys: {', '.join(sorted(KEYS))})" if unknown
                          else f"{p}: gpu: needs the GPU's name")
    constants = raw.get("constants") or {}
    missing = [k for k in CONSTANTS if k not in constants]
    if missing:
        raise ConfigError(f"{p}: constants: missing {', '.join(missing)} (each {{value, source, date}})")
    consts = {k: _figure(constants[k], f"{p}: constants.{k}") for k in CONSTANTS}
    memory = raw.get("memory_gb")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float)) or memory <= 0):
        raise ConfigError(f"{p}: memory_gb: one GPU's memory in GB (a positive number), got {memory!r}")
    encoder_dtype = str(raw.get("encoder_dtype") or "fp32")
    if f"peak_tflops_{encoder_dtype}" not in consts:
        raise ConfigError(f"{p}: encoder_dtype: one of fp32, bf16, fp8, got {encoder_dtype!r}")
    return Hardware(p, str(raw["gpu"]), tuple(str(a) for a in raw.get("assumptions") or []), consts,
                    load_models() if models is None else models, encoder_dtype,
                    None if memory is None else float(memory), _checks(raw.get("checks") or [], f"{p}: checks"),
                    _per_model(raw.get("cited"), f"{p}: cited", "cited"),
                    _per_model(raw.get("measured"), f"{p}: measured", "measured"), raw)


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
