"""Token counts and speed of the size/budget tokenizers on the bundled OHR-Bench documents:
tokens per MB of UTF-8 text, and MB per second for counting (``count``) and for locating every
token (``spans``, what the chunkers index), best of ``--repeat`` passes after one warm-up.

    .venv/bin/python scripts/bench_tokenizers.py [--names bundled,cl100k,o200k,reader] [--repeat 3]

'reader' is the bundled llm's tokenizer (SmolLM2, ``llm:bundled``; converted on first use).
"""

from __future__ import annotations

import argparse
import time

# The harness loads only once the options are parsed: `--help` answers at once.


def best_seconds(fn, texts: list[str], repeat: int) -> float:
    for t in texts:  # warm-up: loading and first-call costs are not throughput
        fn(t)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for t in texts:
            fn(t)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default="bundled,cl100k,o200k,reader")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from harness.data.ohrbench import OHRBench
    from harness.llm.tokens import PREFIX, READER, tokenizer_for

    texts = [d.text for d in OHRBench().load().documents]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    print(f"OHR-Bench sample: {len(texts)} documents, {mb:.3f} MB")
    print(f"{'tokenizer':10} {'tokens':>8} {'tokens/MB':>10} {'count MB/s':>11} {'spans MB/s':>11}")
    for name in args.names.split(","):
        tok = tokenizer_for("tokens", PREFIX + "bundled" if name == READER else name)
        tokens = sum(tok.count(t) for t in texts)
        assert tokens == sum(len(tok.spans(t)) for t in texts)
        count_s, spans_s = (best_seconds(fn, texts, args.repeat) for fn in (tok.count, tok.spans))
        print(f"{name:10} {tokens:8d} {tokens / mb:10.0f} {mb / count_s:11.2f} {mb / spans_s:11.2f}")


if __name__ == "__main__":
    main()
