"""Fuzz every rule chunker and the embedding chunkers for span-contract violations.

    .venv/bin/python scripts/fuzz_spans.py [--docs 1000] [--seed 0]

Documents are random concatenations of fragments that have broken chunkers before: sentence
ends and abbreviations, blank lines, CJK text and punctuation, combining marks (``e`` + U+0301),
variation selectors (U+FE0F), ZWJ emoji sequences and skin-tone modifiers, text repeated so
offsets cannot be recovered by searching; and the hostile battery's (issue 51): RTL text and
direction marks, mixed newlines (CRLF, CR, U+2028/2029, NEL), tabs, every kind of whitespace, very
long words, emoji, repeated separators, NUL and control characters, characters tokenizers drop.
Half the documents draw from one battery kind alone (a document of tabs only, of emoji only...).
Each chunker runs with several settings, each document through the run's contract
(:func:`harness.chunking.contract.check_document`: a non-blank document has a chunk) and
:func:`harness.chunking.base.check_chunks` with ``covering`` where its overlap is 0.
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
# The hostile battery's kinds of text (issue 51).
BATTERY = {
    "rtl": ["שלום עולם. ", "مرحبا بالعالم. ", "עברית\u200fעם סימן. ", "\u200f", "\u202b", "\u202c", "\u2067\u2069",
            "ذهب الولد إلى المدرسة؟ "],
    "newlines": ["\r\n", "\r", "\n\r", "\u2028", "\u2029", "\x85", "\v", "\f", "line", " end.\r\n"],
    "tabs": ["\t", "\t\t\t"],
    "whitespace": [" ", "\u00a0", "\u3000", "\u2003", "\u202f", "\n", "\t", "\x1c", "\x1f"],
    "long words": ["a" * 3000 + " ", "Donaudampfschifffahrtsgesellschaftskapitän" * 40, "x" * 10_000,
                   "https://example.org/" + "path/" * 300],
    "emoji": ["🙂", "🙂🙂🙂 ", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F44D\U0001F3FD", "\u2764\ufe0f",
              "\U0001F1FA\U0001F1F8"],
    "separators": ["\n\n\n\n", ". . . ", "----------", "|||", ";;;;", "。。。", "!!!???", "\n\n", ". ", "\n"],
    "controls": ["\x00", "\x01", "\x07", "\x1b[0m", "\x7f", "\u200b", "\u200f", "\u00ad", "\ufeff", "\x00\x00",
                 "\u200c\u200d"],
}


def document(rng: random.Random, i: int):
    """Odd documents mix every fragment, even ones one battery kind alone."""
    from harness.types import Document

    if i % 2:
        pool = [*FRAGMENTS, *(f for kind in BATTERY.values() for f in kind)]
        parts = "".join(f for f in (rng.choice(pool) for _ in range(rng.randint(0, 120)))
                        if len(f) < 1000 or rng.random() < 0.1)  # long words now and then: documents stay small
    else:
        kind = BATTERY[rng.choice(sorted(BATTERY))]
        parts = "".join(rng.choice(kind) for _ in range(rng.randint(1, 12)))
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
    import logging

    logging.disable(logging.WARNING)  # the chunkers' advice (a paragraph with no break) is no violation
    from harness.chunking.base import check_chunks
    from harness.chunking.contract import check_document

    rng = random.Random(args.seed)
    docs = [document(rng, i) for i in range(args.docs)]
    total, chunk_count = 0, 0
    print(f"{args.docs} documents, {sum(len(d.text) for d in docs):,} characters, seed {args.seed}")
    print("  bad  chunks  chunker")
    found = chunkers()
    for name, (chunker, covering) in found.items():
        bad, first, made = 0, "", 0
        for doc in docs:
            try:
                chunks = chunker.chunk_document(doc)
                made += len(chunks)
                check_document(doc, chunks)
                check_chunks(doc, chunks, covering=covering)
            except Exception as e:  # a violation or a crash: both break the contract
                bad += 1
                first = first or f"{doc.doc_id}: {type(e).__name__}: {str(e)[:160]}"
        total, chunk_count = total + bad, chunk_count + made
        print(f"{bad:5d} {made:7d}  {name}" + (f"   first: {first}" if first else ""))
    print(f"{total} violations in {chunk_count:,} chunks: {args.docs} documents x {len(found)} chunker settings")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
