"""Speed of a language-model backend and the LLM-call cache, measured on real data.

    .venv/bin/python scripts/bench_llm.py                         # transformers, bundled model
    .venv-vllm/bin/python scripts/bench_llm.py --llm vllm --set enforce_eager=true dtype=float32
    .venv/bin/python scripts/bench_llm.py --llm openai --set base_url=http://127.0.0.1:8000/v1
    .venv/bin/python scripts/bench_llm.py --decode 7800 [--set dtype=float32]   # one decoding step
    .venv/bin/python scripts/bench_llm.py --unequal     # a batch of unequal lengths: padded or one by one

Prints generation tokens/s (greedy chat answers), scoring tokens/s (token log-probabilities
of passages), and an answer run on the bundled OHR-Bench sample run twice: the second time
with the responder's stage entry removed, so every model call must come from the LLM-call
cache (its hit rate is printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", default="transformers", help="configs/llm/<name>.yaml")
    ap.add_argument("--set", nargs="*", default=[], help="llm overrides, e.g. dtype=float32")
    ap.add_argument("--prompts", type=int, default=8, help="prompts per speed measurement")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--queries", type=int, default=16, help="questions in the answer run")
    ap.add_argument("--decode", type=int, default=0, metavar="N",
                    help="transformers only: time one decoding step after an N-token context, with this "
                         "backend's attention and with plain SDPA, then exit")
    ap.add_argument("--unequal", action="store_true",
                    help="transformers only: score 8 sequences of 124-729 tokens and read 8 prompts of 850-1400 "
                         "tokens, in one padded pass and one by one (the CPU path), then exit")
    args = ap.parse_args()

    from harness.data.ohrbench import OHRBench
    from harness.llm.base import Sampling
    from harness.pipeline.components import build_component
    from harness.pipeline.runner import Pipeline
    from harness.registry import compose
    from harness.registry import llm_overrides as overrides_for

    llm_overrides = overrides_for(args.llm, args.set)
    # llm.cache=null: the speeds are of model calls, none may come from the run's cache
    llm = build_component(compose([*llm_overrides, "llm.cache=null"]).llm, "llm")
    docs = OHRBench(path=None, name="ohrbench").load().documents
    passages = [d.text[i * 3000:i * 3000 + 1200] for d in docs for i in range(2)][:args.prompts]

    if args.decode:
        return decode_steps(llm, args.decode)
    if args.unequal:
        return unequal_batches(llm, " ".join(d.text for d in docs))
    llm.chat([[{"role": "user", "content": "Hello"}]], Sampling(max_tokens=4))  # load the model first
    before = llm.stats.generated_tokens
    t0 = time.perf_counter()
    llm.chat([[{"role": "user", "content": f"Summarise in two sentences:\n\n{p}"}] for p in passages],
             Sampling(max_tokens=args.max_tokens))
    gen_s = time.perf_counter() - t0
    gen_tokens = llm.stats.generated_tokens - before
    before = llm.stats.scored_tokens
    t0 = time.perf_counter()
    llm.token_logprobs(passages)
    score_s = time.perf_counter() - t0
    scored = llm.stats.scored_tokens - before
    print(f"backend {args.llm} ({llm.identity}), {len(passages)} prompts in one batched call")
    print(f"  generation: {gen_tokens} tokens in {gen_s:.1f} s = {gen_tokens / gen_s:.1f} tokens/s")
    print(f"  scoring:    {scored} tokens in {score_s:.1f} s = {scored / score_s:.1f} tokens/s")

    cache = Path(tempfile.mkdtemp(prefix="chunkbench-bench-llm-"))
    try:
        cfg = compose([*llm_overrides, f"cache.dir={cache}", "tracking=none", "responder=llm", "context=budget",
                       "context.budget=512", f"dataset.limit_queries={args.queries}", "dataset.seed=0"])
        first = Pipeline(cfg, log=lambda *_: None).run()
        for stage in ("respond", "evaluate"):  # keep the model calls, drop the stage results
            shutil.rmtree(cache / stage, ignore_errors=True)
        second = Pipeline(cfg, log=lambda *_: None).run()
        hits, misses = second.cache_counts["llm"]["hits"], second.cache_counts["llm"]["misses"]
        print(f"answer run: {args.queries} OHR-Bench questions, 512-token contexts")
        print(f"  first run: respond stage {first.stage_seconds['respond']:.1f} s, "
              f"{first.metrics['answer_seconds']:.2f} s and {first.metrics['answer_prompt_tokens']:.0f} prompt tokens"
              " per question")
        print(f"  rerun without the respond stage entry: {hits} LLM-call cache hits, {misses} misses "
              f"({hits / (hits + misses):.0%} hit rate), respond stage {second.stage_seconds['respond']:.2f} s")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def decode_steps(llm, n: int, steps: int = 32) -> None:
    """Milliseconds per greedy decoding step after an n-token context (random token ids)."""
    import torch

    model = llm._model
    ids = torch.randint(100, model.config.vocab_size - 100, (1, n), generator=torch.Generator().manual_seed(0))
    own = model.config._attn_implementation
    for attention in (own, "sdpa") if own != "sdpa" else (own,):
        model.set_attn_implementation(attention)
        with torch.inference_mode():
            out = model(input_ids=ids, use_cache=True)
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
            t0 = time.perf_counter()
            for _ in range(steps):
                out = model(input_ids=token, past_key_values=cache, use_cache=True)
                cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        print(f"{llm.identity['dtype']}, attention {attention}: {(time.perf_counter() - t0) / steps * 1000:.0f} ms "
              f"per decoding step after {n} tokens")
    model.set_attn_implementation(own)


def unequal_batches(llm, text: str, rounds: int = 3) -> None:
    """Seconds for a batch of unequal lengths, in one right/left-padded pass against the backend's
    CPU path (one sequence a pass; prompts read one by one, harness.llm.prefill), interleaved
    rounds, the best of each; the outputs' largest difference."""
    import torch

    from harness.llm import prefill

    ids = llm.tokenizer(text)["input_ids"]

    def cut(lengths):
        return [ids[sum(lengths[:i]):sum(lengths[:i + 1])] for i in range(len(lengths))]

    scored = [(row, len(row) // 2) for row in cut([124, 729, 500, 650, 300, 700, 420, 226])]
    prompts = cut([900, 1100, 1250, 1100, 1400, 1100, 850, 950])
    width, pad = max(map(len, prompts)), llm.tokenizer.pad_token_id
    padded = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = (torch.arange(width)[None] >= torch.tensor([width - len(p) for p in prompts])[:, None]).long()
    one_pass = type(llm)._passes

    def score(together: bool):
        llm._passes = (lambda lengths: [list(range(len(lengths)))]) if together else one_pass.__get__(llm)
        return llm._score(scored)

    def read(together: bool):
        with torch.inference_mode():
            if together:
                return llm._model(input_ids=padded, attention_mask=mask, use_cache=True, logits_to_keep=1)
            return prefill.batch_cache(llm._model, prompts)

    for name, run in (("score 8 sequences of 124-729 tokens", score), ("read 8 prompts of 850-1400 tokens", read)):
        best, outputs = {True: float("inf"), False: float("inf")}, {}
        for _ in range(rounds):
            for together in (True, False):
                t0 = time.perf_counter()
                outputs[together] = run(together)
                best[together] = min(best[together], time.perf_counter() - t0)
        line = f"{name}: {best[True]:.1f} s in one padded pass, {best[False]:.1f} s one by one " \
               f"({best[True] / best[False]:.2f}x)"
        if run is score:
            diff = max(abs(a - b) for x, y in zip(outputs[True], outputs[False]) for a, b in zip(x, y))
            line += f"; largest log-probability difference {diff:.3g}"
        print(line)
    llm._passes = one_pass.__get__(llm)


if __name__ == "__main__":  # vLLM starts its engine in a child process
    main()
