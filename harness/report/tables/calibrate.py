"""``tables calibrate``: a short, bounded throughput probe per model on the machine it runs on
(a GPU node before a large submission), written into the hardware file under ``measured:``,
where it replaces the derived (or cited) figures for that model in ``tables plan``.

    encoder:<model>  sentence-transformers: a fixed set of passages embedded until the time limit
    llm:<model>      vLLM (the default kind): a batch of long prompts with one reply token
                     (prefill tokens/s), then a batch of short prompts each decoding a fixed budget
                     with end-of-sequence ignored (decode tokens/s); per GPU (divided by
                     ``tensor_parallel_size`` when the model id is followed by ``@tp<n>``)

Nothing is downloaded that the model id does not name; on a machine without vLLM the LLM probe
stops in one line saying so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import date

from harness.report.tables.hardware import Figure, load_hardware, write_measured
from harness.types import ConfigError

PASSAGES, PASSAGE_WORDS = 256, 200        # encoder probe: texts and words per text
PREFILL_PROMPTS, PREFILL_TOKENS = 64, 2048
DECODE_PROMPTS, DECODE_TOKENS = 64, 512


def device_name() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return "cpu (no GPU)"


def passages(n: int, words: int) -> list[str]:
    """Deterministic English passages cut from the bundled OHR-Bench sample (no download)."""
    from harness.pipeline.components import build_component
    from harness import registry

    text = " ".join(d.text for d in build_component(registry.compose([]).dataset, "dataset").load().documents).split()
    return [" ".join(text[(i * words) % max(1, len(text) - words):][:words]) for i in range(n)]


def probe_encoder(model: str, seconds: float) -> dict[str, Figure]:
    from sentence_transformers import SentenceTransformer

    from harness.text import resolve_model

    n, words = PASSAGES, PASSAGE_WORDS
    m = SentenceTransformer(resolve_model(model), device="cuda" if device_name() != "cpu (no GPU)" else "cpu")
    texts = passages(n, words)
    tokens_per_pass = sum(len(ids) for ids in m.tokenizer(texts, truncation=True, max_length=m.max_seq_length)["input_ids"])
    m.encode(texts[:8], batch_size=8)  # warm-up: weights on the device, kernels chosen
    done, t0 = 0, time.perf_counter()
    while True:
        m.encode(texts, batch_size=64)
        done += 1
        if time.perf_counter() - t0 >= seconds or done >= 20:
            break
    rate = done * tokens_per_pass / (time.perf_counter() - t0)
    return {"tokens_per_s": Figure(rate, f"measured on {device_name()} {date.today().isoformat()}",
                                   f"sentence-transformers, batch 64, {n} passages of {words} words, {done} pass(es)")}


def probe_llm(model: str, seconds: float, tp: int = 1) -> dict[str, Figure]:
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        raise ConfigError(f"tables calibrate: vllm is not installed here, so {model} cannot be probed (run it on a "
                          f"GPU node with the GPU environment: make setup-gpu)") from None
    engine = LLM(model=model, tensor_parallel_size=tp, max_model_len=PREFILL_TOKENS + DECODE_TOKENS + 16)
    tok = engine.get_tokenizer()
    words = passages(PREFILL_PROMPTS, PREFILL_TOKENS)
    prompts = [{"prompt_token_ids": tok(w, add_special_tokens=False)["input_ids"][:PREFILL_TOKENS]} for w in words]
    engine.generate(prompts[:2], SamplingParams(max_tokens=1), use_tqdm=False)  # warm-up
    t0 = time.perf_counter()
    engine.generate(prompts, SamplingParams(max_tokens=1), use_tqdm=False)
    prefill = sum(len(p["prompt_token_ids"]) for p in prompts) / (time.perf_counter() - t0) / tp
    short = [{"prompt_token_ids": p["prompt_token_ids"][:128]} for p in prompts[:DECODE_PROMPTS]]
    budget = max(16, min(DECODE_TOKENS, int(seconds * 20)))   # a bounded number of decode steps
    t0 = time.perf_counter()
    out = engine.generate(short, SamplingParams(max_tokens=budget, ignore_eos=True), use_tqdm=False)
    decode = sum(len(o.outputs[0].token_ids) for o in out) / (time.perf_counter() - t0) / tp
    source = f"measured on {device_name()} {date.today().isoformat()}"
    return {"prefill_tokens_per_s": Figure(prefill, source, f"vLLM, {PREFILL_PROMPTS} prompts of {PREFILL_TOKENS} "
                                                            f"tokens, 1 reply token, TP {tp}, per GPU"),
            "decode_tokens_per_s": Figure(decode, source, f"vLLM, {DECODE_PROMPTS} prompts of 128 tokens, {budget} "
                                                          f"reply tokens each (end ignored), TP {tp}, per GPU")}


def calibrate(hardware: str, models: list[str], seconds: float = 60.0) -> Iterator[str]:
    """Probe each ``[llm:|encoder:]<model>[@tp<n>]`` and write its figures; one line per model."""
    hw = load_hardware(hardware)
    if not models:
        raise ConfigError(f"tables calibrate: name the models to probe, e.g. --models llm:Qwen/Qwen3-8B,"
                          f"encoder:BAAI/bge-m3 (measured ones in {hw.path.name}: {', '.join(hw.measured) or 'none'})")
    if seconds <= 0:
        raise ConfigError(f"tables calibrate: --seconds must be > 0, got {seconds}")
    for spec in models:
        kind, _, model = spec.partition(":") if spec.startswith(("llm:", "encoder:")) else ("", "", spec)
        model, _, tp = model.partition("@tp")
        figures = (probe_encoder(model, seconds) if kind == "encoder"
                   else probe_llm(model, seconds, int(tp or 1)))
        write_measured(hw.path, model, figures)
        yield f"{model}: " + ", ".join(f"{k} {f.value:,.0f}" for k, f in figures.items()) + f" -> {hw.path}"
