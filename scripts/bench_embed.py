"""Speed of one-by-one embedding (embedder.batch_size=1, the bundled default), on real data.

    .venv/bin/python scripts/bench_embed.py [--texts 600] [--rounds 2]

On the bundled GutenQA book (Emma): its sentences, its paragraphs, and six paragraphs joined
(cut at the model's 256 tokens). Times, in milliseconds per text, best of interleaved rounds:
- one forward pass per text on all torch threads (how the embedder first ran);
- one pass per text on one thread, the cores taking texts side by side;
- texts of one token length sharing a pass (:func:`passes`), the cores taking passes (the
  embedder now);
and checks that both one-thread ways give the vectors of a plain one-thread loop, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=600, help="sentences and paragraphs (a sixth as many long texts)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import numpy as np
    import torch

    from harness.data.base import SAMPLES_DIR
    from harness.embedding.embedder import SentenceTransformerEmbedder, _load_model, on_every_core, passes, token_counts

    embedder = SentenceTransformerEmbedder(batch_size=1)
    model = _load_model(embedder.path, None, None)
    with open(SAMPLES_DIR / "gutenqa" / "GutenQA_paragraphs.jsonl", encoding="utf-8") as f:
        paragraphs = [json.loads(line)["Chunk"] for line in f]
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s][:args.texts]
    n_long = max(1, args.texts // 6)
    long = [" ".join(paragraphs[i:i + 6]) for i in range(0, 6 * n_long, 6)]

    def encode(batch: list[str]):
        return embedder._model_encode(model, batch, len(batch), True)

    cores = torch.get_num_threads()
    print(f"torch threads: {cores}")
    for name, texts in (("sentences", sentences), ("paragraphs", paragraphs[:args.texts]),
                        ("six paragraphs (256 tokens)", long)):
        groups = passes(token_counts(model, texts))
        ways = {"one pass a text on every thread": lambda: np.vstack([encode([t]) for t in texts]),
                "one pass a text, one thread each, side by side": lambda: on_every_core(encode, texts, [[i] for i in range(len(texts))]),
                "texts of one length share a pass, side by side": lambda: on_every_core(encode, texts, groups)}
        encode(texts[:1])
        best, out = dict.fromkeys(ways, float("inf")), {}
        for _ in range(args.rounds):
            for way, run in ways.items():
                t0 = time.perf_counter()
                out[way] = run()
                best[way] = min(best[way], time.perf_counter() - t0)
        torch.set_num_threads(1)
        plain = np.vstack([encode([t]) for t in texts])
        torch.set_num_threads(cores)
        first = next(iter(best))
        print(f"{name}, {len(texts)} texts, {len(groups)} passes when they share:")
        for way, seconds in best.items():
            print(f"  {way}: {seconds / len(texts) * 1000:.1f} ms/text ({best[first] / seconds:.2f}x)"
                  + ("" if way == first else f"; equal to a one-thread loop: {np.array_equal(out[way], plain)}"))


if __name__ == "__main__":
    main()
