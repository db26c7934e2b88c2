"""Fuzz every rule chunker and the embedding chunkers for span-contract violations.

    .venv/bin/python scripts/fuzz_spans.py [--docs 1000] [--seed 0]

Documents are random concatenations of fragments that have broken chunkers before: sentence
ends and abbreviations, blank lines, CJK text and punctuation, combining marks (``e`` + U+0301),
variation selectors (U+FE0F), ZWJ emoji sequences and skin-tone modifiers, text repeated so
offsets cannot be recovered by searching. Each chunker runs with several settings, each document
through :func:`harness.chunking.base.check_chunks` (with ``covering`` where its overlap is 0).
The embedding chunkers get a deterministic hash embedder (no model): the contract is about
spans, not about which breaks a model would choose. Prints the violations per chunker and the
first one of each, and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import random
import sys
import zlib

FRAGMENTS = ["the ", "quick ", "brown ", "fox", " ", "  ", "\t", ". ", "! ", "? ", "\n", "\n\n", " \n \n",
             "Dr. ", "e.g. ", "3.14 ", "U.S.A. ", "The cat sat on the mat. ", "Is it? Yes! ", "数据", "分块",
             "检索", "。", "！", "“引号”", "café ", "naïve ", "e\u0301" * 7, "\u2764\ufe0f ", "\ufe0f",
             "\U0001F468\u200d\U0001F469\u200d\U0001F467 ", "\U0001F44D\U0001F3FD", "\u0301\u0301", "🙂", "---"]


def document(rng: random.Random, i: int):
    from harness.types import Document

    parts = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 120)))
    return Document(f"d{i}", parts * rng.randint(1, 3), language=rng.choice(["en", "zh"]))


def hash_embedder():
    """Unit vectors from a stable hash of the text: deterministic, no model."""
    import numpy as np

    from harness.embedding.embedder import SentenceTransformerEmbedder

    class HashEmbedder(SentenceTransformerEmbedder):
        def _encode(self, texts, normalize=True):
            rows = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=8) for t in texts]
            v = np.array(rows, dtype=np.float32).reshape(len(rows), 8)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    return HashEmbedder()


def chunkers() -> dict[str, tuple[object, bool]]:
    """name -> (a chunker, whether its leaves must cover the text)."""
    from harness.chunking.cluster_semantic import ClusterSemanticChunker
    from harness.chunking.fixed import FixedSizeChunker
    from harness.chunking.fixed_sentences import SentenceCountChunker
    from harness.chunking.kamradt_modified import KamradtModifiedChunker
    from harness.chunking.paragraph import ParagraphChunker
    from harness.chunking.recursive import STYLES, RecursiveChunker
    from harness.chunking.semantic_breakpoint import SemanticBreakpointChunker
    from harness.chunking.semantic_cluster import SemanticClusterChunker
    from harness.chunking.sentence import SentenceChunker
    from harness.chunking.sentence_splitter import SentenceSplitterChunker

    embedder = hash_embedder()
    out: dict[str, tuple[object, bool]] = {}
    for unit in ("tokens", "words", "chars"):
        for size, overlap in ((5, 0), (40, 0), (40, 10)):
            out[f"fixed {unit} {size}/{overlap}"] = (FixedSizeChunker(size, overlap, unit), overlap == 0)
        for style in STYLES:
            for size, overlap in ((8, 0), (60, 0), (60, 15)):
                out[f"recursive {style} {unit} {size}/{overlap}"] = (
                    RecursiveChunker(size, overlap, unit, style=style), overlap == 0)
        out[f"sentence {unit} 30"] = (SentenceChunker(30, unit=unit), True)
        out[f"sentence {unit} 30 overlap 1"] = (SentenceChunker(30, 1, unit=unit), False)
        out[f"paragraph {unit} max 20"] = (ParagraphChunker(max_size=20, unit=unit), True)
    out["fixed_sentences 3/1"] = (SentenceCountChunker(3, 1), False)
    out["sentence_splitter 40/10"] = (SentenceSplitterChunker(40, 10), False)
    out["semantic_breakpoint"] = (SemanticBreakpointChunker(embedder, max_size=40), True)
    out["semantic_cluster single_linkage"] = (SemanticClusterChunker(embedder, max_size=40), False)
    out["semantic_cluster dbscan"] = (SemanticClusterChunker(embedder, method="dbscan", max_size=40), False)
    for reading in ("code", "paper"):
        out[f"cluster_semantic {reading}"] = (ClusterSemanticChunker(embedder, 40, 10, reading=reading), True)
        out[f"kamradt_modified {reading}"] = (KamradtModifiedChunker(embedder, 40, 10, reading=reading), True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from harness.chunking.base import check_chunks

    rng = random.Random(args.seed)
    docs = [document(rng, i) for i in range(args.docs)]
    total = 0
    print(f"{args.docs} documents, {sum(len(d.text) for d in docs):,} characters, seed {args.seed}")
    for name, (chunker, covering) in chunkers().items():
        bad, first = 0, ""
        for doc in docs:
            try:
                check_chunks(doc, chunker.chunk_document(doc), covering=covering)
            except Exception as e:  # a violation or a crash: both break the contract
                bad += 1
                first = first or f"{doc.doc_id}: {type(e).__name__}: {str(e)[:160]}"
        total += bad
        print(f"{bad:5d}  {name}" + (f"   first: {first}" if first else ""))
    print(f"{total} violations in all")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
