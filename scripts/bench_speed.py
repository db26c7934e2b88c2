"""ChunkBench's rule and semantic chunkers against LangChain's and Chonkie's, side by side in one
process on the same text, tokenizer and embedder, by CPU time (and wall time), with the machine's
load; ``--out`` writes the markdown (``make bench`` writes results/performance.md).

    make bench                          # sets up .venv-bench (the `bench` extra), then this
    .venv-bench/bin/python scripts/bench_speed.py [--rounds 3] [--semantic-kb 200] [--out FILE]

Text: every bundled OHR-Bench page and the bundled GutenQA book (about 1.4 MB). Rule chunkers cut
256-token chunks, no overlap, counting with MiniLM's WordPiece (the bundled embedder's Hugging Face
tokenizer) and with tiktoken's cl100k; each library is given the same tokenizer object or
encoding. Rounds are interleaved (every method once per round) and the best round counts, so a
noisy moment hurts every method alike. Torch runs on one thread.

Semantic chunkers run on the first ``--semantic-kb`` KB of that text, with the bundled
all-MiniLM-L6-v2 and no embedding cache: the breakpoint chunker with 3-sentence windows
(buffer 1, 95th percentile; ChunkBench's ``window_embedding`` text and mean), LangChain's
SemanticChunker (same windows and threshold), Chonkie's SemanticChunker, and the floor: every
sentence of the text encoded once, nothing else. "same breaks" compares the mean-window
breakpoints with the text-window ones on each document (shared / union of chunk starts).
The peers are in the `bench` extra only (never in the main environment).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

SIZE = 256
PEERS = ("chonkie", "langchain-text-splitters", "langchain-experimental", "tiktoken", "tokenizers")


@dataclass
class Timing:
    cpu: float
    wall: float


def measure(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, Timing]:
    """Best CPU and wall seconds of each function over interleaved rounds (after a warm-up call)."""
    for fn in fns.values():
        fn()
    best = {name: Timing(float("inf"), float("inf")) for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            best[name] = Timing(min(best[name].cpu, cpu), min(best[name].wall, wall))
    return best


def bench_texts() -> list[str]:
    from harness.data.gutenqa import GutenQA
    from harness.data.ohrbench import OHRBench

    return [d.text for loader in (OHRBench(), GutenQA()) for d in loader.load().documents]


def rule_methods(texts: list[str], tokenizer: str) -> tuple[dict[tuple[str, str], Callable[[], object]], int]:
    """(family, library) -> one pass over ``texts``; and on how many texts ChunkBench's recursive
    chunker (``style=langchain``) returns LangChain's chunks exactly (stripped text, in order)."""
    from chonkie import RecursiveChunker as CkRecursive
    from chonkie import SentenceChunker as CkSentence
    from chonkie import TokenChunker as CkToken
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter
    from langchain_text_splitters.base import Tokenizer as LcTokenizer
    from langchain_text_splitters.base import split_text_on_tokens

    from harness.chunking.fixed import FixedSizeChunker
    from harness.chunking.recursive import RecursiveChunker
    from harness.chunking.sentence import SentenceChunker
    from harness.text import bundled_embedder_path
    from harness.types import Document

    docs = [Document(f"d{i}", t) for i, t in enumerate(texts)]
    ours = {"token windows": FixedSizeChunker(size=SIZE, tokenizer=tokenizer),
            "recursive": RecursiveChunker(size=SIZE, tokenizer=tokenizer),
            "sentence": SentenceChunker(size=SIZE, tokenizer=tokenizer)}
    if tokenizer == "cl100k":
        from harness.text import _tiktoken

        ck_tok = _tiktoken("cl100k_base")  # tiktoken's Encoding (offline); Chonkie counts with it
        lc_token = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=SIZE, chunk_overlap=0)
        lc_recursive = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", chunk_size=SIZE, chunk_overlap=0)
        lc_windows = lc_token.split_text
    else:
        from tokenizers import Tokenizer as HFTokenizer
        from transformers import AutoTokenizer

        path = str(bundled_embedder_path())
        ck_tok = HFTokenizer.from_file(f"{path}/tokenizer.json")
        ck_tok.no_truncation()
        ck_tok.no_padding()
        hf = AutoTokenizer.from_pretrained(path)
        hf.model_max_length = 10**9  # count whole texts, as our tokenizer does
        lc_recursive = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(hf, chunk_size=SIZE, chunk_overlap=0)
        # TokenTextSplitter's own windowing over the same Hugging Face tokenizer
        windows = LcTokenizer(chunk_overlap=0, tokens_per_chunk=SIZE, decode=hf.decode,
                              encode=lambda t: hf.encode(t, add_special_tokens=False))

        def lc_windows(text: str) -> list[str]:
            return split_text_on_tokens(text=text, tokenizer=windows)

    ck = {"token windows": CkToken(tokenizer=ck_tok, chunk_size=SIZE),
          "recursive": CkRecursive(tokenizer=ck_tok, chunk_size=SIZE),
          "sentence": CkSentence(tokenizer=ck_tok, chunk_size=SIZE)}
    lc = {"token windows": lc_windows, "recursive": lc_recursive.split_text}
    out: dict[tuple[str, str], Callable[[], object]] = {}
    for family, chunker in ours.items():
        out[(family, "ChunkBench")] = lambda c=chunker: c.chunk(docs)
        out[(family, "Chonkie")] = lambda c=ck[family]: [c.chunk(t) for t in texts]
        if family in lc:
            out[(family, "LangChain")] = lambda f=lc[family]: [f(t) for t in texts]
    same = sum([c.text.strip() for c in chunks] == [c.strip() for c in lc_recursive.split_text(t)]
               for t, chunks in zip(texts, ours["recursive"].chunk(docs)))
    return out, same


def starts_agreement(a: list, b: list) -> float:
    sa, sb = {c.start for c in a}, {c.start for c in b}
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def semantic_methods(texts: list[str], kb: int) -> tuple[dict[str, Callable[[], object]], dict[str, float]]:
    from chonkie import SemanticChunker as CkSemantic
    from chonkie import SentenceTransformerEmbeddings
    from langchain_core.embeddings import Embeddings
    from langchain_experimental.text_splitter import SemanticChunker as LcSemantic

    from harness.chunking.semantic_breakpoint import SemanticBreakpointChunker
    from harness.chunking.semantic_cluster import SemanticClusterChunker
    from harness.chunking.sentence import sentence_pieces
    from harness.embedding.embedder import SentenceTransformerEmbedder, _load_model
    from harness.types import Document

    budget, picked = kb * 1000, []
    for t in texts:  # whole documents up to the budget, the last one cut at a paragraph
        room = budget - sum(len(p.encode()) for p in picked)
        if room <= 0:
            break
        picked.append(t if len(t.encode()) <= room else t[:t.rfind("\n", 0, room) + 1 or room])
    docs = [Document(f"d{i}", t) for i, t in enumerate(picked)]
    embedder = SentenceTransformerEmbedder()  # no cache: every run encodes
    model = _load_model(embedder.path, None, None)

    class SameModel(Embeddings):  # LangChain's interface over the very same model object
        def embed_documents(self, texts):
            return model.encode(list(texts), batch_size=64, normalize_embeddings=True).tolist()

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    by_text = SemanticBreakpointChunker(embedder, buffer_size=1)
    by_mean = SemanticBreakpointChunker(embedder, buffer_size=1, window_embedding="mean")
    cluster = SemanticClusterChunker(embedder)
    lc = LcSemantic(SameModel(), buffer_size=1, breakpoint_threshold_type="percentile")
    ck = CkSemantic(embedding_model=SentenceTransformerEmbeddings(model))
    sentences = [d.text[s:e] for d in docs for s, e in sentence_pieces(d.text, 0, len(d.text), d.language)]
    fns = {"floor (each sentence encoded once)": lambda: embedder.encode(sentences),
           "ChunkBench semantic_breakpoint, window_embedding=text": lambda: by_text.chunk(docs),
           "ChunkBench semantic_breakpoint, window_embedding=mean": lambda: by_mean.chunk(docs),
           "ChunkBench semantic_cluster": lambda: cluster.chunk(docs),
           "LangChain SemanticChunker": lambda: [lc.split_text(d.text) for d in docs],
           "Chonkie SemanticChunker": lambda: [ck.chunk(d.text) for d in docs]}
    agree = [starts_agreement(a, b) for a, b in zip(by_text.chunk(docs), by_mean.chunk(docs))]
    facts = {"kb": sum(len(t.encode()) for t in picked) / 1000, "documents": len(docs),
             "sentences": len(sentences), "same_breaks_mean": sum(agree) / len(agree), "same_breaks_min": min(agree)}
    return fns, facts


def versions() -> str:
    out = []
    for name in PEERS:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--semantic-kb", type=int, default=200)
    ap.add_argument("--skip-semantic", action="store_true")
    ap.add_argument("--out", help="write the markdown here too (make bench: results/performance.md)")
    args = ap.parse_args()

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(1)
    load0 = os.getloadavg()
    texts = bench_texts()
    mb = sum(len(t.encode()) for t in texts) / 1e6
    lines = ["# Chunking speed: ChunkBench, LangChain and Chonkie side by side", "",
             f"Generated by `make bench` (scripts/bench_speed.py, {args.rounds} interleaved rounds, best round; "
             "torch on 1 thread). Do not edit.", "",
             f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}; load average before {load0[0]:.2f}",
             f"- peers: {versions()}",
             f"- text: bundled OHR-Bench pages + bundled GutenQA book, {len(texts)} documents, {mb:.2f} MB; "
             f"chunks of {SIZE} tokens, no overlap", "",
             "## Rule chunkers (MB of text per CPU second; wall in brackets)", "",
             "| family | tokenizer | ChunkBench | LangChain | Chonkie | ChunkBench / fastest peer (CPU) |",
             "|---|---|---|---|---|---|"]
    agreement = []
    for tokenizer, label in (("bundled", "MiniLM WordPiece"), ("cl100k", "tiktoken cl100k")):
        methods, same = rule_methods(texts, tokenizer)
        timings = measure(methods, args.rounds)
        agreement.append(f"{same} of {len(texts)} documents with {label}")
        for family in ("token windows", "recursive", "sentence"):
            speed = {lib: (mb / t.cpu, mb / t.wall) for (f, lib), t in timings.items() if f == family}
            cell = {lib: f"{s[0]:.2f} ({s[1]:.2f})" for lib, s in speed.items()}
            peer = max(s[0] for lib, s in speed.items() if lib != "ChunkBench")
            lines.append(f"| {family} | {label} | {cell['ChunkBench']} | {cell.get('LangChain', 'none')} | "
                         f"{cell['Chonkie']} | {speed['ChunkBench'][0] / peer:.2f}x |")
            print(lines[-1], flush=True)
    lines += ["", "Recursive (`style=langchain`) chunks identical to LangChain's RecursiveCharacterTextSplitter "
                  f"(text, stripped, in order): {'; '.join(agreement)}."]
    if not args.skip_semantic:
        fns, facts = semantic_methods(texts, args.semantic_kb)
        timings = measure(fns, args.rounds)
        floor = timings["floor (each sentence encoded once)"].cpu
        lines += ["", f"## Semantic chunkers ({facts['kb']:.0f} KB, {facts['documents']} documents, "
                      f"{facts['sentences']} sentences; bundled all-MiniLM-L6-v2, no cache)", "",
                  "| method | CPU s | wall s | floor / method (CPU) |", "|---|---|---|---|"]
        for name, t in timings.items():
            lines.append(f"| {name} | {t.cpu:.1f} | {t.wall:.1f} | {floor / t.cpu:.2f}x |")
            print(lines[-1], flush=True)
        lines += ["", f"Breakpoints with window_embedding=mean against =text: {facts['same_breaks_mean']:.0%} of "
                      f"chunk starts shared on average per document (lowest {facts['same_breaks_min']:.0%})."]
    load1 = os.getloadavg()
    lines += ["", f"Load average after: {load1[0]:.2f}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    sys.exit(main())
