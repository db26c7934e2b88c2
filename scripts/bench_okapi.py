"""What `retriever.method=okapi` costs against the default BM25 (`lucene`, bm25s) at corpus scope:
bench_scale's synthetic corpus (10 MB by default) in fixed 200-token windows, its questions, one
retriever per method, CPU seconds of `retrieve` (index and search) in this process; and the
rank_bm25 loop okapi used to be, on the same chunks, as the reference its scores are checked
against (top 10 of every question equal, scores to 1e-9).

    .venv/bin/python scripts/bench_okapi.py [--mb 10] [--questions 1000] [--work DIR] [--repeats 3]

Prints the median CPU seconds of each over ``--repeats`` and the ratios to `lucene`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_scale import write_corpus, write_queries  # noqa: E402  (the same corpus as make bench-scale)


def cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/chunkbench-scale"))  # bench_scale's, corpora reused
    args = ap.parse_args()

    from rank_bm25 import BM25Okapi

    from harness.chunking.fixed import FixedSizeChunker
    from harness.data.local import LocalDataset
    from harness.retrieval.base import top_k
    from harness.retrieval.lexical import BM25Retriever

    corpus = args.work / f"corpus-{args.mb:g}mb"
    info = write_corpus(corpus, args.mb)
    folder = args.work / f"okapi-{args.mb:g}mb-{args.questions}q"
    write_queries(corpus, folder, args.questions)
    data = LocalDataset(path=folder).load()
    chunks = [c for doc in FixedSizeChunker(size=200).chunk(data.documents) for c in doc]
    queries = list(data.queries)
    print(f"{info['text_bytes'] / 1e6:.1f} MB, {len(chunks):,} chunks, {len(queries):,} questions")

    seconds: dict[str, list[float]] = {}
    results = {}
    for method in ("lucene", "okapi"):
        r = BM25Retriever(scope="corpus", method=method, top_k=10)
        for _ in range(args.repeats):
            s, (results[method], _) = cpu(lambda: r.retrieve(queries, chunks))
            seconds.setdefault(method, []).append(s)

    tokens = BM25Retriever().tokens
    def loop():  # okapi as it was: rank_bm25's get_scores, a Python loop over chunks per term
        index = BM25Okapi([tokens(c.text) for c in chunks])
        return np.vstack([index.get_scores(tokens(q.question)) for q in queries])
    s, ref = cpu(loop)
    seconds["rank_bm25 loop"] = [s]  # once: it is the slow one

    ids = {c.chunk_id: i for i, c in enumerate(chunks)}
    ours = [[ids[cid] for cid, _ in res.ranked] for res in results["okapi"]]
    order, best = top_k(ref, 10)
    same = sum(o == list(row) for o, row in zip(ours, order))
    close = all(np.allclose([sc for _, sc in res.ranked], b, rtol=1e-9, atol=1e-9)
                for res, b in zip(results["okapi"], best))
    base = statistics.median(seconds["lucene"])
    for name, xs in seconds.items():
        m = statistics.median(xs)
        print(f"{name:15s} median {m:7.2f} CPU s over {len(xs)} run(s)  {m / base:5.2f}x lucene")
    print(f"okapi's top 10 equal rank_bm25's for {same} of {len(queries)} questions; scores within 1e-9: {close}")


if __name__ == "__main__":
    main()
