"""Throughput derived from a GPU's published constants and a model's parameter count: the
formulas ``tables plan`` uses where no measured or cited figure exists, each printed with its
numbers so a reader can redo it.

- prefill (and an encoder's forward pass) is compute-bound: a token costs 2 FLOPs per active
  parameter, at the GPU's peak FLOP/s times a stated utilisation;
- a decoding step of the engine's batch reads every weight on the GPU once (memory-bound) and
  computes 2 x active parameters x batch FLOPs: its time is the slower of the two.

Per GPU: a tensor-parallel engine on ``tp`` GPUs holds ``1/tp`` of the weights on each.
"""

from __future__ import annotations


def prefill_rate(peak_tflops: float, utilisation: float, active_b: float) -> tuple[float, str]:
    """Tokens/s per GPU of a compute-bound forward pass, and the arithmetic."""
    rate = peak_tflops * 1e12 * utilisation / (2 * active_b * 1e9)
    return rate, f"{peak_tflops:g} TFLOP/s x {utilisation:g} / (2 x {active_b:g}B) = {rate:,.0f} tok/s"


def decode_rate(peak_tflops: float, compute_util: float, bandwidth_gbs: float, memory_util: float,
                params_b: float, active_b: float, weight_bytes: float, batch: int, tp: int) -> tuple[float, str]:
    """Output tokens/s per GPU at ``batch`` sequences in flight, and the arithmetic."""
    read_s = params_b * weight_bytes / tp / (bandwidth_gbs * memory_util)          # GB / (GB/s)
    compute_s = 2 * active_b * 1e9 * batch / tp / (peak_tflops * 1e12 * compute_util)
    step = max(read_s, compute_s)
    rate = batch / step / tp
    bound = "weights read" if read_s >= compute_s else "compute"
    return rate, (f"step = max({params_b:g}B x {weight_bytes:g} bytes / TP {tp} / ({bandwidth_gbs:g} GB/s x "
                  f"{memory_util:g}) = {read_s * 1e3:.2f} ms, 2 x {active_b:g}B x {batch} / TP {tp} / "
                  f"({peak_tflops:g} TFLOP/s x {compute_util:g}) = {compute_s * 1e3:.2f} ms) [{bound}]; "
                  f"{batch} / step / {tp} GPU(s) = {rate:,.0f} tok/s")
