"""Speed of one-text-per-pass embedding (embedder.batch_size=1, the bundled default), on real data.

    .venv/bin/python scripts/bench_embed.py [--texts 600]

On the bundled GutenQA book (Emma): its paragraphs as short texts and six paragraphs joined as
long ones (cut at the model's 256 tokens). Times one forward pass per text on all torch threads
(how the embedder ran before) against :func:`solo_on_every_core` (one thread per pass, the cores
taking texts), in milliseconds per text, and checks that the latter's vectors equal those of a
plain one-thread loop, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=600, help="short texts (a sixth as many long ones)")
    args = ap.parse_args()

    import numpy as np
    import torch

    from harness.data.base import SAMPLES_DIR
    from harness.retrieval.embedders import SentenceTransformerEmbedder, _load_model, solo_on_every_core

    model = _load_model(SentenceTransformerEmbedder().path, None, None)
    with open(SAMPLES_DIR / "gutenqa" / "GutenQA_paragraphs.jsonl", encoding="utf-8") as f:
        paragraphs = [json.loads(line)["Chunk"] for line in f]
    short = paragraphs[:args.texts]
    long = [" ".join(paragraphs[i:i + 6]) for i in range(0, 6 * (args.texts // 6), 6)][:max(1, args.texts // 6)]

    def one(text: str):
        return model.encode([text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)[0]

    cores = torch.get_num_threads()
    print(f"torch threads: {cores}")
    for name, texts in (("paragraphs", short), ("six paragraphs (256 tokens)", long)):
        one(texts[0])
        t0 = time.perf_counter()
        for t in texts:
            one(t)
        t1 = time.perf_counter()
        pooled = np.vstack(solo_on_every_core(one, texts))
        t2 = time.perf_counter()
        torch.set_num_threads(1)
        plain = np.vstack([one(t) for t in texts])
        torch.set_num_threads(cores)
        before, after = (t1 - t0) / len(texts) * 1000, (t2 - t1) / len(texts) * 1000
        print(f"{name}, {len(texts)} texts: {before:.1f} ms/text one pass on {cores} threads, {after:.1f} ms/text "
              f"one thread per pass side by side ({before / after:.2f}x); equal to a one-thread loop: "
              f"{np.array_equal(pooled, plain)}")


if __name__ == "__main__":
    main()
