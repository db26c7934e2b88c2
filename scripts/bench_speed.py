"""ChunkBench's rule and semantic chunkers against LangChain's and Chonkie's, side by side in one
process on the same text, tokenizer and embedder, by CPU time (and wall time), with the machine's
load; ``--out`` writes the markdown (``make bench`` writes results/performance.md).

    make bench                          # sets up .venv-bench (the `bench` extra), then this
    .venv-bench/bin/python scripts/bench_speed.py [--rounds 3] [--semantic-kb 200] [--out FILE]
        [--set OVERRIDE ...] [--compare-batch N] [--skip-rule] [--skip-semantic]

Text: every bundled OHR-Bench page and the bundled GutenQA book (about 1.4 MB). Rule chunkers cut
256-token chunks, no overlap, counting with MiniLM's WordPiece (the bundled embedder's Hugging Face
tokenizer) and with tiktoken's cl100k; each library is given the same tokenizer object or
encoding. Rounds are interleaved (every method once per round) and the best round counts, so a
noisy moment hurts every method alike. Torch runs on one thread.

Semantic chunkers run on the first ``--semantic-kb`` KB of that text, all embedding through the
embedder a run composes (configs/embedder/bundled.yaml: its ``batch_size``, which the output
states; ``--set embedder.batch_size=64`` or any run override changes it) and the path a run takes
(uncached texts shortest first, in steps), with nothing cached: the floor (every sentence of the
text encoded once, nothing else), the breakpoint chunker with 3-sentence windows (buffer 1, 95th
percentile) as published (``window_embedding=text``: every window encoded, about three times the
floor's tokens, the count printed) and with ``mean`` windows, the cluster chunker, LangChain's
SemanticChunker (same windows and threshold) and Chonkie's SemanticChunker, the peers handed the
run's embedder behind their own embeddings interfaces. ``--compare-batch N`` adds a column at
batch N. "same breaks" compares the mean-window breakpoints with the text-window ones on each
document (shared / union of chunk starts). The peers are in the `bench` extra only (never in the
main environment).
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


def rule_section(texts: list[str], mb: float, rounds: int) -> list[str]:
    """The rule chunkers' table: MB of text per CPU second, each library beside ChunkBench."""
    lines = ["", "## Rule chunkers (MB of text per CPU second; wall in brackets)", "",
             "| family | tokenizer | ChunkBench | LangChain | Chonkie | ChunkBench / fastest peer (CPU) |",
             "|---|---|---|---|---|---|"]
    agreement = []
    for tokenizer, label in (("bundled", "MiniLM WordPiece"), ("cl100k", "tiktoken cl100k")):
        methods, same = rule_methods(texts, tokenizer)
        timings = measure(methods, rounds)
        agreement.append(f"{same} of {len(texts)} documents with {label}")
        for family in ("token windows", "recursive", "sentence"):
            speed = {lib: (mb / t.cpu, mb / t.wall) for (f, lib), t in timings.items() if f == family}
            cell = {lib: f"{s[0]:.2f} ({s[1]:.2f})" for lib, s in speed.items()}
            peer = max(s[0] for lib, s in speed.items() if lib != "ChunkBench")
            lines.append(f"| {family} | {label} | {cell['ChunkBench']} | {cell.get('LangChain', 'none')} | "
                         f"{cell['Chonkie']} | {speed['ChunkBench'][0] / peer:.2f}x |")
            print(lines[-1], flush=True)
    return lines + ["", "Recursive (`style=langchain`) chunks identical to LangChain's RecursiveCharacterTextSplitter "
                        f"(text, stripped, in order): {'; '.join(agreement)}."]


def semantic_docs(texts: list[str], kb: int) -> list:
    """Whole documents up to ``kb`` KB, the last one cut at a paragraph."""
    from harness.types import Document

    budget, picked = kb * 1000, []
    for t in texts:
        room = budget - sum(len(p.encode()) for p in picked)
        if room <= 0:
            break
        picked.append(t if len(t.encode()) <= room else t[:t.rfind("\n", 0, room) + 1 or room])
    return [Document(f"d{i}", t) for i, t in enumerate(picked)]


FLOOR = "floor: each sentence encoded once"
BY_TEXT = "ChunkBench semantic_breakpoint, window_embedding=text (the published method: encodes every 3-sentence window)"
BY_MEAN = "ChunkBench semantic_breakpoint, window_embedding=mean (each sentence once, windows averaged)"


def semantic_methods(docs: list, embedder) -> dict[str, Callable[[], object]]:
    """Each method on ``docs``, every one embedding through ``embedder`` (the run's, nothing
    cached): the peers too, so that the table compares chunking, not batching."""
    from chonkie import SemanticChunker as CkSemantic
    from chonkie import SentenceTransformerEmbeddings
    from langchain_core.embeddings import Embeddings
    from langchain_experimental.text_splitter import SemanticChunker as LcSemantic

    from harness.chunking.semantic_breakpoint import SemanticBreakpointChunker
    from harness.chunking.semantic_cluster import SemanticClusterChunker
    from harness.chunking.sentence import sentence_pieces
    from harness.embedding.embedder import _load_model

    class RunEmbeddingsLc(Embeddings):  # LangChain's interface over the run's embedder
        def embed_documents(self, texts):
            return embedder.encode(list(texts)).tolist()

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    class RunEmbeddingsCk(SentenceTransformerEmbeddings):  # Chonkie's (its tokenizer and sizes from the same model)
        def embed(self, text):
            return embedder.encode([text], normalize=False)[0]

        def embed_batch(self, texts):
            return list(embedder.encode(list(texts), normalize=False)) if texts else []

    model = _load_model(embedder.path, embedder.device, embedder.pooling, embedder.trust_remote_code,
                        embedder.revision)
    by_text = SemanticBreakpointChunker(embedder, buffer_size=1)
    by_mean = SemanticBreakpointChunker(embedder, buffer_size=1, window_embedding="mean")
    cluster = SemanticClusterChunker(embedder)
    lc = LcSemantic(RunEmbeddingsLc(), buffer_size=1, breakpoint_threshold_type="percentile")
    ck = CkSemantic(embedding_model=RunEmbeddingsCk(model))
    sentences = [d.text[s:e] for d in docs for s, e in sentence_pieces(d.text, 0, len(d.text), d.language)]
    return {FLOOR: lambda: embedder.encode(sentences),
            BY_TEXT: lambda: by_text.chunk(docs),
            BY_MEAN: lambda: by_mean.chunk(docs),
            "ChunkBench semantic_cluster": lambda: cluster.chunk(docs),
            "LangChain SemanticChunker (3-sentence windows, as published)": lambda: [lc.split_text(d.text) for d in docs],
            "Chonkie SemanticChunker": lambda: [ck.chunk(d.text) for d in docs]}


def semantic_facts(docs: list, embedder) -> dict[str, float]:
    """What the methods encode (tokens: the floor's sentences, the published method's windows)
    and how far the mean windows' breakpoints are from the text windows'."""
    from harness.chunking.semantic_breakpoint import SemanticBreakpointChunker, window_texts
    from harness.chunking.sentence import sentence_pieces
    from harness.embedding.embedder import _load_model, token_counts

    model = _load_model(embedder.path, embedder.device, embedder.pooling, embedder.trust_remote_code,
                        embedder.revision)
    per_doc = [[d.text[s:e] for s, e in sentence_pieces(d.text, 0, len(d.text), d.language)] for d in docs]
    sentences = [s for doc in per_doc for s in doc]
    windows = [w for doc in per_doc for w in window_texts(doc, 1)]
    by_text = SemanticBreakpointChunker(embedder, buffer_size=1)
    by_mean = SemanticBreakpointChunker(embedder, buffer_size=1, window_embedding="mean")
    agree = [starts_agreement(a, b) for a, b in zip(by_text.chunk(docs), by_mean.chunk(docs))]
    return {"kb": sum(len(d.text.encode()) for d in docs) / 1000, "documents": len(docs),
            "sentences": len(sentences), "sentence_tokens": sum(token_counts(model, sentences)),
            "window_tokens": sum(token_counts(model, windows)),
            "same_breaks_mean": sum(agree) / len(agree), "same_breaks_min": min(agree)}


def semantic_embedders(args: argparse.Namespace) -> tuple:
    """The embedder the run composes (``--set``) and ``--compare-batch``'s (or None), built before
    anything is timed so that a bad override fails at once; the model loads on first use."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_embed import run_embedder  # the run's embedder on its cached path, nothing stored

    embedder = run_embedder(args.overrides)
    batched = run_embedder([*args.overrides, f"embedder.batch_size={args.compare_batch}"]) if args.compare_batch else None
    return embedder, batched


def semantic_section(texts: list[str], args: argparse.Namespace, embedder, batched) -> list[str]:
    """The semantic chunkers' table at the run's embedding batch (and ``--compare-batch``'s)."""
    docs = semantic_docs(texts, args.semantic_kb)
    facts = semantic_facts(docs, embedder)
    timings = measure(semantic_methods(docs, embedder), args.rounds)
    other = measure(semantic_methods(docs, batched), args.rounds) if batched else None
    floor = timings[FLOOR].cpu
    extra = f" CPU s at batch {args.compare_batch} |" if other else ""
    lines = ["", f"## Semantic chunkers ({facts['kb']:.0f} KB, {facts['documents']} documents, "
                 f"{facts['sentences']} sentences; no cache)", "",
             f"Every method embeds through the run's embedder ({embedder.identity}) at the run's embedding "
             f"batch, **batch_size {embedder.batch_size}** (configs/embedder; `--set` overrides it), the peers "
             "too, so the table compares the chunkers' work, not their batching. Each text takes the run's "
             "path (shortest first, in steps; nothing cached).", "",
             f"| method | CPU s | wall s | floor / method (CPU) |{extra}",
             "|---|---|---|---|" + ("---|" if other else "")]
    for name, t in timings.items():
        lines.append(f"| {name} | {t.cpu:.1f} | {t.wall:.1f} | {floor / t.cpu:.2f}x |"
                     + (f" {other[name].cpu:.1f} |" if other else ""))
        print(lines[-1], flush=True)
    lines += ["", f"The published breakpoint method (window_embedding=text, as LangChain's) encodes each "
                  f"sentence's 3-sentence window, {facts['window_tokens']:,} tokens against the floor's "
                  f"{facts['sentence_tokens']:,} ({facts['window_tokens'] / facts['sentence_tokens']:.2f}x), so it "
                  "costs more than the floor by design; window_embedding=mean encodes the floor's sentences.",
              f"Breakpoints with window_embedding=mean against =text: {facts['same_breaks_mean']:.0%} of "
              f"chunk starts shared on average per document (lowest {facts['same_breaks_min']:.0%})."]
    return lines


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
    ap.add_argument("--skip-rule", action="store_true")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="OVERRIDE",
                    help="a run config override for the semantic chunkers' embedder (repeatable), "
                         "e.g. embedder.batch_size=64")
    ap.add_argument("--compare-batch", type=int, metavar="N",
                    help="time the semantic chunkers at embedding batch N too, in a column of its own")
    ap.add_argument("--out", help="write the markdown here too (make bench: results/performance.md)")
    args = ap.parse_args()
    if args.compare_batch is not None and args.compare_batch <= 0:
        ap.error(f"--compare-batch: a batch size must be > 0, got {args.compare_batch}")

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TQDM_DISABLE", "1")  # tqdm reads it on import: the embedder's bars would bury the tables
    from harness.types import ConfigError

    try:
        embedders = None if args.skip_semantic else semantic_embedders(args)
    except ConfigError as e:
        ap.error(f"--set: {e}")
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
             f"chunks of {SIZE} tokens, no overlap"]
    if not args.skip_rule:
        lines += rule_section(texts, mb, args.rounds)
    if embedders:
        lines += semantic_section(texts, args, *embedders)
    load1 = os.getloadavg()
    lines += ["", f"Load average after: {load1[0]:.2f}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    sys.exit(main())
