"""How the pipeline's cost grows with the corpus and the question count: synthetic corpora in the
local schema run through the real pipeline (`dataset=local chunker=fixed retriever.scope=corpus
tracking=none`), CPU seconds and peak RSS per stage, cache bytes, and the fitted growth.

    .venv/bin/python scripts/bench_scale.py [--sizes 1,10,50,200] [--questions 1000]
        [--question-sweep 250,4000,16000] [--sweep-mb 10] [--dense-max-mb 1] [--work DIR] [--out FILE]

Corpora: pseudo-words drawn from a Zipf-like vocabulary of 30,000, sentences of 6-24 words,
documents of about 7 KB (1 MB holds about 140), generated from a fixed seed. Each question is
six words of one sentence of one document; that sentence is its evidence span (``doc_ids`` and
``evidence`` set), so the retrieval metrics have something to find. ``--sizes`` MB corpora get
``--questions`` questions each; the ``--sweep-mb`` corpus is run again at each count of
``--question-sweep`` (the same documents, another queries.jsonl).

Peak RSS per stage: each stage runs in a child process of its own. The child builds the
components, reads the stages before it from the cache (the previous child stored them), computes
its stage and exits as soon as the runner logs it, reporting ``ru_maxrss`` (the peak of the whole
process: imports, models, its inputs read from the cache, the stage's own work) and the CPU
seconds between the runner's log line of the stage before and its own. A stage's peak is therefore
what a machine must hold to run that stage from cached inputs; ``start`` is the RSS when the stage
began (imports, components and inputs), so peak minus start is what the stage itself added. One
process for the whole run would report every stage's peak as at least the largest before it
(freed memory is not always returned to the system). Cache bytes: the size of each namespace the
run wrote, and its files (embeddings and per-document chunks are stored in packs: a file per batch).

The growth is the least-squares slope of log(value) on log(corpus MB) over the sizes run (1:
linear, 2: quadratic). ``--out`` writes the tables as markdown (``make bench-scale`` writes
results/scale.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGES = ("load", "chunk", "retrieve", "assemble", "evaluate")
SEED = 35
VOCAB = 30_000
DOC_CHARS = 7_300  # mean document size: 1 MB of text holds about 140 documents
QUESTION_WORDS = 6
MB = 1_000_000


# ---------------------------------------------------------------- synthetic corpora

def vocabulary(rng: random.Random) -> list[str]:
    """Distinct pseudo-words of 2-4 syllables (so WordPiece splits them as it does rare words)."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "th", "sh", "ch"]
    words: set[str] = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def documents(mb: float, seed: int = SEED):
    """(doc_id, text) until ``mb`` MB of text: sentences of Zipf-drawn words, ". "-separated."""
    import numpy as np

    vocab = vocabulary(random.Random(seed))
    random.Random(seed).shuffle(vocab)  # frequency unrelated to spelling
    words = np.array(vocab, dtype=object)
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / (np.arange(VOCAB) + 10.0))
    cdf /= cdf[-1]
    mean_chars = sum(len(w) for w in words) / VOCAB + 1  # vocabulary words are equally long on average
    total, i = 0, 0
    while total < mb * MB:
        n_words = int(rng.uniform(0.4, 1.6) * DOC_CHARS / mean_chars)
        lengths = rng.integers(6, 25, size=n_words // 6 + 1)
        lengths = lengths[:np.searchsorted(np.cumsum(lengths), n_words) + 1]
        drawn = words[np.minimum(cdf.searchsorted(rng.random(int(lengths.sum()))), VOCAB - 1)]
        sentences, at = [], 0
        for n in lengths:
            sentence = " ".join(drawn[at:at + n])
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
            at += n
        text = " ".join(sentences)
        yield f"d{i:06d}", text
        total += len(text.encode())
        i += 1


def write_corpus(folder: Path, mb: float) -> dict:
    """documents.jsonl of ``mb`` MB under ``folder`` (kept when already written)."""
    folder.mkdir(parents=True, exist_ok=True)
    path, stats = folder / "documents.jsonl", folder / "corpus.json"
    if stats.is_file() and path.is_file():
        return json.loads(stats.read_text())
    n, size = 0, 0
    with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as f:
        for doc_id, text in documents(mb):
            f.write(json.dumps({"doc_id": doc_id, "text": text}) + "\n")
            n, size = n + 1, size + len(text.encode())
    path.with_suffix(".tmp").rename(path)
    info = {"documents": n, "text_bytes": size}
    stats.write_text(json.dumps(info))
    return info


SENTENCE = re.compile(r"[^.]+\.")


def write_queries(corpus: Path, folder: Path, n: int, seed: int = SEED) -> None:
    """A dataset folder: ``corpus``'s documents (linked) and ``n`` questions, each six words of a
    random sentence, that sentence its evidence span."""
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "queries.jsonl").is_file():
        return
    docs = json.loads((corpus / "corpus.json").read_text())["documents"]
    rng = random.Random(seed + n)
    wanted: dict[int, int] = {}
    for _ in range(n):
        d = rng.randrange(docs)
        wanted[d] = wanted.get(d, 0) + 1
    rows = []
    with open(corpus / "documents.jsonl", encoding="utf-8") as f:
        for d, line in enumerate(f):
            for _ in range(wanted.get(d, 0)):
                doc = json.loads(line)
                spans = [(m.start(), m.end()) for m in SENTENCE.finditer(doc["text"])]
                start, end = rng.choice(spans)
                while doc["text"][start] == " ":
                    start += 1
                sentence = doc["text"][start:end]
                words = sentence.rstrip(".").lower().split()
                asked = rng.sample(words, min(QUESTION_WORDS, len(words)))
                rows.append({"question": "Where does the text say " + " ".join(asked) + "?",
                             "answers": [words[-1]], "doc_ids": [doc["doc_id"]],
                             "evidence": [{"doc_id": doc["doc_id"], "start": start, "end": end}]})
    rng.shuffle(rows)
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for i, row in enumerate(rows):
            f.write(json.dumps({"qid": f"q{i:06d}", **row}) + "\n")
    link = folder / "documents.jsonl"
    if not link.exists():
        link.symlink_to((corpus / "documents.jsonl").resolve())


# ---------------------------------------------------------------- one stage in a child process

def child(stage: str, overrides: list[str]) -> None:
    """Run the pipeline until ``stage`` is logged, then print its numbers as JSON and exit."""
    import resource

    from harness.pipeline.components import build_components
    from harness.pipeline.runner import Pipeline
    from harness.quiet import quiet_logs
    from harness.registry import compose

    quiet_logs()
    cfg = compose(overrides)
    components = build_components(cfg)
    marks = {"start": (time.process_time(), rss_mb())}

    def log(line: str) -> None:
        m = re.match(r"\[(\w+)\] (cached|computed) in ([0-9.]+)s", line)
        if not m:
            return
        name, status, wall = m.group(1), m.group(2), float(m.group(3))
        if name != stage:
            marks["start"] = (time.process_time(), rss_mb())
            return
        cpu0, rss0 = marks["start"]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        print(json.dumps({"stage": stage, "status": status, "cpu": time.process_time() - cpu0, "wall": wall,
                          "start_mb": rss0, "peak_mb": peak}), flush=True)
        sys.stdout.flush()
        os._exit(0)

    Pipeline(cfg, components, log=log).run()
    raise SystemExit(f"stage {stage} was never logged")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@dataclass
class StageRun:
    stage: str
    status: str
    cpu: float
    wall: float
    start_mb: float
    peak_mb: float


def run_stages(dataset: Path, retriever: str, cache: Path, extra: list[str]) -> list[StageRun]:
    overrides = ["dataset=local", f"dataset.path={dataset}", "chunker=fixed", f"retriever={retriever}",
                 "retriever.scope=corpus", "tracking=none", f"cache.dir={cache}", *extra]
    runs = []
    for stage in STAGES:
        out = subprocess.run([sys.executable, __file__, "--child", stage, "--", *overrides], cwd=REPO,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode != 0 or not lines:
            raise SystemExit(f"{stage} failed ({out.returncode}):\n{out.stderr[-3000:]}")
        runs.append(StageRun(**json.loads(lines[-1])))
    return runs


def cache_bytes(cache: Path) -> dict[str, tuple[int, int]]:
    """namespace -> (files, bytes)."""
    out = {}
    for ns in sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")):
        files = [f for f in ns.rglob("*") if f.is_file()]
        out[ns.name] = (len(files), sum(f.stat().st_size for f in files))
    return out


# ---------------------------------------------------------------- the benchmark

@dataclass
class Row:
    retriever: str
    mb: float
    documents: int
    questions: int
    stages: list[StageRun]
    cache: dict[str, tuple[int, int]]


def measure(work: Path, mb: float, questions: int, retriever: str, extra: list[str]) -> Row:
    corpus = work / f"corpus-{mb:g}mb"
    info = write_corpus(corpus, mb)
    dataset = work / f"data-{mb:g}mb-{questions}q"
    write_queries(corpus, dataset, questions)
    cache = work / f"cache-{mb:g}mb-{questions}q-{retriever}"
    shutil.rmtree(cache, ignore_errors=True)  # cold: every stage computed
    t0 = time.time()
    stages = run_stages(dataset, retriever, cache, extra)
    row = Row(retriever, mb, info["documents"], questions, stages, cache_bytes(cache))
    print(f"  {retriever} {mb:g} MB, {questions} questions: {time.time() - t0:.0f}s "
          + " ".join(f"{s.stage}={s.cpu:.1f}s/{s.peak_mb:.0f}MB" for s in stages), flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    return row


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def stage_table(rows: list[Row]) -> list[str]:
    head = "| retriever | corpus | documents | questions | " + " | ".join(
        f"{s} CPU s | {s} peak MB (start)" for s in STAGES) + " | cache MB (files) |"
    lines = [head, "|" + "---|" * (4 + 2 * len(STAGES) + 1)]
    for r in rows:
        cells = [r.retriever, f"{r.mb:g} MB", f"{r.documents:,}", f"{r.questions:,}"]
        for s in r.stages:
            cells += [f"{s.cpu:.1f}" + (" (cached)" if s.status == "cached" else ""),
                      f"{s.peak_mb:,.0f} ({s.start_mb:,.0f})"]
        files = sum(f for f, _ in r.cache.values())
        cells.append(f"{sum(b for _, b in r.cache.values()) / MB:,.1f} ({files:,})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def cache_table(rows: list[Row]) -> list[str]:
    names = sorted({ns for r in rows for ns in r.cache})
    lines = ["| retriever | corpus | questions | " + " | ".join(names) + " |", "|" + "---|" * (3 + len(names))]
    for r in rows:
        cells = [r.retriever, f"{r.mb:g} MB", f"{r.questions:,}"]
        cells += [f"{r.cache[n][1] / MB:,.2f} MB ({r.cache[n][0]:,})" if n in r.cache else "" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def growth_table(rows: list[Row]) -> list[str]:
    lines = ["| retriever | sizes | " + " | ".join(f"{s} CPU | {s} peak" for s in STAGES) + " |",
             "|" + "---|" * (2 + 2 * len(STAGES))]
    for retriever in dict.fromkeys(r.retriever for r in rows):
        mine = sorted((r for r in rows if r.retriever == retriever), key=lambda r: r.mb)
        if len({r.mb for r in mine}) < 2:
            continue
        cells = [retriever, ", ".join(f"{r.mb:g}" for r in mine) + " MB"]
        for i, _ in enumerate(STAGES):
            for value in (lambda s: s.cpu, lambda s: s.peak_mb - s.start_mb):
                fits = [slope([r.mb for r in part], [value(r.stages[i]) for r in part]) for part in (mine, mine[-2:])]
                cells.append(" ".join(f"{b:.2f}" if j == 0 else f"({b:.2f})" for j, b in enumerate(fits)
                                      if b is not None))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(sizes: list[Row], sweep: list[Row], args) -> str:
    load = os.getloadavg()[0]
    out = ["# Scale: cost per stage as the corpus and the question count grow", "",
           "Generated by `make bench-scale` (scripts/bench_scale.py). Do not edit.", "",
           f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
           f"load average at the end {load:.2f}",
           "- data: synthetic corpora in the local schema (see the script's docstring); "
           "`dataset=local chunker=fixed retriever.scope=corpus tracking=none`, cold cache",
           "- per stage: CPU seconds, and peak RSS of a process that ran only that stage from its "
           "cached inputs (in brackets the RSS when the stage began)", "",
           "## By corpus size", "", *stage_table(sizes), ""]
    if sweep:
        out += [f"## By question count ({args.sweep_mb:g} MB corpus, BM25)", "", *stage_table(sweep), ""]
    out += ["## Cache bytes by namespace (files)", "", *cache_table(sizes + sweep), "",
            "## Fitted growth (slope of log value on log corpus MB over every size, in brackets over the two "
            "largest, where fixed costs weigh least; peak: peak minus start)", "",
            *growth_table(sizes), ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,50,200", help="corpus sizes in MB (BM25)")
    ap.add_argument("--questions", type=int, default=1000, help="questions per corpus of --sizes")
    ap.add_argument("--question-sweep", default="250,4000,16000", help="question counts on the --sweep-mb corpus")
    ap.add_argument("--sweep-mb", type=float, default=10)
    ap.add_argument("--dense-max-mb", type=float, default=1,
                    help="dense retrieval on the sizes up to this (1 MB: about 200 CPU s on 2 cores)")
    ap.add_argument("--work", default="/tmp/chunkbench-scale", help="corpora and caches (reused corpora)")
    ap.add_argument("--out", default=None, help="write the markdown here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("overrides", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.overrides)
        return
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    work = Path(args.work)
    sizes = [float(s) for s in args.sizes.split(",") if s]
    rows = [measure(work, mb, args.questions, "bm25", []) for mb in sizes]
    rows += [measure(work, mb, args.questions, "dense", []) for mb in sizes if mb <= args.dense_max_mb]
    sweep = [measure(work, args.sweep_mb, n, "bm25", []) for n in
             (int(q) for q in args.question_sweep.split(",") if q)]
    text = report(rows, sweep, args)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
