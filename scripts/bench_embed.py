"""Speed of the embedder on real data: how one-by-one embedding computes, and which batch size costs least.

    .venv/bin/python scripts/bench_embed.py [--texts 600] [--rounds 2]
    .venv/bin/python scripts/bench_embed.py --batch-sweep [--batches 1,4,16,64] [--out FILE] [--set OVERRIDE ...]
    make bench-embed                    # --batch-sweep --out results/embed_batch.md

Text: the bundled GutenQA book (Emma): its sentences, its paragraphs, and six paragraphs joined
(cut at the model's 256 tokens); ``--texts`` of the first two, a sixth as many of the third.

Default mode, ``embedder.batch_size=1`` in milliseconds per text, best of interleaved rounds:
- one forward pass per text on all torch threads (how the embedder first ran);
- one pass per text on one thread, the cores taking texts side by side;
- texts of one token length sharing a pass (:func:`passes`), the cores taking passes (the
  embedder now);
and checks that both one-thread ways give the vectors of a plain one-thread loop, bit for bit.

``--batch-sweep``: CPU seconds (wall in brackets) per 1,000 texts at each batch size, through the
embedder a run composes (``--set`` takes the run's overrides, e.g. ``embedder.device=cuda``) and
the path a run takes: uncached texts shortest first, in steps of ``texts_per_step(batch_size)``,
each step encoded at the batch size; nothing is stored, so every round computes every text. It
names the cheapest batch on this machine beside the configured one; ``--out`` writes the markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TQDM_DISABLE", "1")  # the embedder's per-step bars would bury the table


class NothingStored:
    """A cache that holds nothing: the embedder takes a run's cached path (shortest first, in
    steps) and computes every text, every time."""

    def get_arrays(self, namespace: str, keys) -> list[None]:
        return [None] * len(keys)

    def put_arrays(self, namespace: str, values) -> None:
        pass


def run_embedder(overrides: list[str] = ()):
    """The embedder the run composes with ``overrides`` (its model, batch size, device...), over
    :class:`NothingStored`."""
    from harness.pipeline.components import build_component
    from harness.registry import check_overrides, compose

    overrides = ["tracking=none", *overrides]
    check_overrides(overrides, sweep=False)  # an unknown key or choice: one line naming the nearest
    node = compose(overrides).embedder
    node.cache = None  # no cache folder is opened; NothingStored stands in below
    embedder = build_component(node, "embedder")
    embedder.cache = NothingStored()
    return embedder


def sample_texts(n: int) -> dict[str, list[str]]:
    """The bundled GutenQA book's sentences, paragraphs and six-paragraph passages."""
    from harness.data.base import SAMPLES_DIR

    with open(SAMPLES_DIR / "gutenqa" / "GutenQA_paragraphs.jsonl", encoding="utf-8") as f:
        paragraphs = [json.loads(line)["Chunk"] for line in f]
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s][:n]
    n_long = max(1, n // 6)
    return {"sentences": sentences, "paragraphs": paragraphs[:n],
            "six paragraphs (256 tokens)": [" ".join(paragraphs[i:i + 6]) for i in range(0, 6 * n_long, 6)]}


def ways_of_one_by_one(n: int, rounds: int) -> None:
    import numpy as np
    import torch

    from harness.embedding.embedder import SentenceTransformerEmbedder, _load_model, on_every_core, passes, token_counts

    embedder = SentenceTransformerEmbedder(batch_size=1)
    model = _load_model(embedder.path, None, None)

    def encode(batch: list[str]):
        return embedder._model_encode(model, batch, len(batch), True)

    cores = torch.get_num_threads()
    print(f"torch threads: {cores}")
    for name, texts in sample_texts(n).items():
        groups = passes(token_counts(model, texts))
        ways = {"one pass a text on every thread": lambda: np.vstack([encode([t]) for t in texts]),
                "one pass a text, one thread each, side by side": lambda: on_every_core(encode, texts, [[i] for i in range(len(texts))]),
                "texts of one length share a pass, side by side": lambda: on_every_core(encode, texts, groups)}
        encode(texts[:1])
        best, out = dict.fromkeys(ways, float("inf")), {}
        for _ in range(rounds):
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


def batch_sweep(n: int, rounds: int, batches: list[int], overrides: list[str]) -> str:
    """The sweep's markdown: per text kind and batch size, CPU (wall) seconds per 1,000 texts."""
    import torch

    from harness.embedding.embedder import _load_model, token_counts

    load0 = os.getloadavg()
    configured = run_embedder(overrides)
    embedders = {b: run_embedder([*overrides, f"embedder.batch_size={b}"]) for b in batches}
    kinds = sample_texts(n)
    model = _load_model(configured.path, configured.device, configured.pooling, configured.trust_remote_code,
                        configured.revision)
    tokens = {k: sum(token_counts(model, texts)) / len(texts) for k, texts in kinds.items()}
    for e in embedders.values():  # warm-up: the model loaded, each batch size's first call paid
        e.encode(kinds["sentences"][:8])
    cpu = {(k, b): float("inf") for k in kinds for b in batches}
    wall = dict(cpu)
    for _ in range(rounds):  # interleaved: a noisy moment hurts every batch size alike
        for kind, texts in kinds.items():
            for b, e in embedders.items():
                c0, w0 = time.process_time(), time.perf_counter()
                e.encode(texts)
                per = 1000 / len(texts)
                cpu[kind, b] = min(cpu[kind, b], (time.process_time() - c0) * per)
                wall[kind, b] = min(wall[kind, b], (time.perf_counter() - w0) * per)
    total_cpu = {b: sum(cpu[k, b] for k in kinds) for b in batches}
    total_wall = {b: sum(wall[k, b] for k in kinds) for b in batches}
    cheapest, fastest = min(batches, key=total_cpu.get), min(batches, key=total_wall.get)
    device = str(model.device) if hasattr(model, "device") else configured.device
    lines = ["# Embedding batch size: what a run pays per 1,000 texts", "",
             "Generated by `make bench-embed` (scripts/bench_embed.py --batch-sweep, "
             f"{rounds} interleaved rounds, best round). Do not edit.", "",
             f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads "
             f"{torch.get_num_threads()}, device {device}; load average before {load0[0]:.2f}",
             f"- embedder: {configured.identity} (the run's config{', with ' + ' '.join(overrides) if overrides else ''}); "
             f"configured batch_size {configured.batch_size}",
             "- path: the run's (uncached texts shortest first, in steps of max(4 x batch, 256) texts; batch 1: "
             "texts of one token length share a pass, the cores take passes); nothing cached", "",
             "CPU seconds per 1,000 texts (wall in brackets):", "",
             "| texts | mean tokens | " + " | ".join(f"batch {b}" for b in batches) + " |",
             "|---|---|" + "---|" * len(batches)]
    for kind, texts in kinds.items():
        lines.append(f"| {kind} ({len(texts)}) | {tokens[kind]:.0f} | "
                     + " | ".join(f"{cpu[kind, b]:.2f} ({wall[kind, b]:.2f})" for b in batches) + " |")
    lines.append("| all three | | " + " | ".join(f"{total_cpu[b]:.2f} ({total_wall[b]:.2f})" for b in batches) + " |")
    if cheapest == configured.batch_size:
        against = " (the configured batch size)"
    elif configured.batch_size in batches:
        against = (f" ({total_cpu[configured.batch_size] / total_cpu[cheapest]:.2f}x less CPU than the configured "
                   f"{configured.batch_size})")
    else:
        against = ""
    lines += ["", f"Cheapest batch on this device (CPU seconds, all three): {cheapest}{against}.",
              f"Fastest by wall time: {fastest}. Vectors computed at batch 1 and batched ones are cached apart "
              "(the embedder's identity), so changing the batch recomputes every vector once."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--texts", type=int, default=600, help="sentences and paragraphs (a sixth as many long texts)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-sweep", action="store_true", help="CPU seconds per 1,000 texts at each --batches")
    ap.add_argument("--batches", default="1,4,16,64", help="batch sizes of --batch-sweep, comma-separated")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="OVERRIDE",
                    help="a run config override for --batch-sweep's embedder (repeatable), e.g. embedder.device=cuda")
    ap.add_argument("--out", help="--batch-sweep: write the markdown here too (make bench-embed: results/embed_batch.md)")
    args = ap.parse_args()
    if not args.batch_sweep:
        ways_of_one_by_one(args.texts, args.rounds)
        return
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        ap.error(f"--batches: comma-separated whole numbers, got {args.batches!r}")
    if any(b <= 0 for b in batches):
        ap.error(f"--batches: each batch size must be > 0, got {args.batches!r}")
    from harness.types import ConfigError

    try:
        text = batch_sweep(args.texts, args.rounds, batches, args.overrides)
    except ConfigError as e:  # a bad --set: one line, as the CLI says it
        ap.error(f"--set: {e}")
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
