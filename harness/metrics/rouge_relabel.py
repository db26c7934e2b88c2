"""DCG@k and Recall@k with ROUGE relabelling (LGMGC, Sec. 4 "Datasets and Metrics", GutenQA).

LGMGC follows LumberChunker's GutenQA scheme (DCG@k and Recall@k over the top-k chunks,
binary relevance, ``DCG@k = sum_i (2^rel_i - 1) / log2(i + 1)``, not normalised), but
re-labels which chunk is relevant: "for each evidence, we compute its ROUGE score with
respect to each chunk and select the chunk with the highest score as the relevant chunk".

- Evidence: the query's evidence strings (``Query.evidence_texts``: aligned and unaligned
  alike, since relabelling exists for evidence not found verbatim); without any, the text
  of its evidence spans. NaN when there is none, or when no chunk shares a token with it.
- Candidates: the retrievable text chunks of the query's documents (``doc_ids``, else the
  evidence spans' documents), resolved with ``expand`` as the ranking is, so under LGMGC's
  parent scoring (``expand=root``) the relevant unit is a parent.
- ROUGE: Google's ``rouge-score``; the paper names no variant. Default ROUGE-L *recall*
  (the share of the evidence's tokens found in order in the chunk): the evidence is one or
  two sentences against chunks of 200-500 words, where F-measure (dominated by precision)
  would prefer a short chunk sharing a few common words over the long chunk that holds the
  whole sentence. ``rouge_type`` (rouge1, rouge2, rougeL, rougeLsum) and ``measure``
  (recall, precision, fmeasure) are configurable. Ties go to the shortest chunk, then the
  earliest (the finest chunk that holds the evidence). Text with CJK characters is
  tokenised with jieba (rouge-score's tokenizer drops everything outside [a-z0-9]).
- Relevance at rank i: the ranked chunk is, or contains, a relabelled chunk not credited
  at an earlier rank. Recall@k = credited relabelled chunks / all of them. With GutenQA's
  single evidence per question both reduce to LumberChunker's definitions.

ROUGE-L scoring is exact but pruned: a candidate's unigram overlap bounds its LCS, so
candidates whose ROUGE-1 bound is below the best ROUGE-L so far are not scored.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from harness.hierarchy import contains, resolve
from harness.metrics.base import QueryEval
from harness.metrics.ranking import RankedMetric
from harness.text import is_cjk, lexical_tokens
from harness.types import Chunk, ConfigError

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
MEASURES = ("recall", "precision", "fmeasure")


class _Tokenizer:
    """rouge-score's tokenizer (or jieba for CJK text), memoised: chunks recur across queries."""

    def __init__(self, use_stemmer: bool, max_entries: int = 200_000):
        from rouge_score.tokenizers import DefaultTokenizer

        self._default = DefaultTokenizer(use_stemmer=use_stemmer)
        self._cache: dict[str, list[str]] = {}
        self._max = max_entries

    def tokenize(self, text: str) -> list[str]:
        tokens = self._cache.get(text)
        if tokens is None:
            tokens = lexical_tokens(text, "zh") if is_cjk(text) else self._default.tokenize(text)
            if len(self._cache) >= self._max:
                self._cache.clear()
            self._cache[text] = tokens
        return tokens


def _measure(overlap: int, n_target: int, n_pred: int, measure: str) -> float:
    p = overlap / n_pred if n_pred else 0.0
    r = overlap / n_target if n_target else 0.0
    if measure == "recall":
        return r
    if measure == "precision":
        return p
    return 2 * p * r / (p + r) if p + r else 0.0


def dcg(relevance: Sequence[int]) -> float:
    return sum((2 ** rel - 1) / math.log2(i + 2) for i, rel in enumerate(relevance))


class RougeRelabelRanking(RankedMetric):
    """``dcg_at_<k>`` and ``chunk_recall_at_<k>`` against ROUGE-relabelled relevant chunks."""

    def __init__(self, ks: Sequence[int] = (1, 2, 5, 10, 20), rouge_type: str = "rougeL",
                 measure: str = "recall", use_stemmer: bool = False, credit: str = "held"):
        super().__init__(ks, credit=credit)
        if rouge_type not in ROUGE_TYPES:
            raise ConfigError(f"rouge_type must be one of {', '.join(ROUGE_TYPES)}; got {rouge_type!r}")
        if measure not in MEASURES:
            raise ConfigError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
        from rouge_score.rouge_scorer import RougeScorer

        self.rouge_type, self.measure = rouge_type, measure
        self.tokenizer = _Tokenizer(bool(use_stemmer))
        self.scorer = RougeScorer([rouge_type], tokenizer=self.tokenizer)
        self._counts: dict[str, Counter] = {}

    def keys(self) -> set[str]:
        return {f"{m}_at_{k}" for k in self.ks for m in ("dcg", "chunk_recall")}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        names = [(f"dcg_at_{k}", f"chunk_recall_at_{k}") for k in self.ks]
        relevant = self.relabel(item)
        if not relevant:
            return {n: math.nan for pair in names for n in pair}
        ranked = item.ranked(max(self.ks), self.credit)
        rel, credits, left = [], [], list(relevant)
        for chunk in ranked:
            hits = [i for i, g in enumerate(left) if contains(chunk, g)]
            left = [g for i, g in enumerate(left) if i not in hits]
            rel.append(1 if hits else 0)
            credits.append(len(hits))
        out = {}
        for (dcg_name, rec_name), k in zip(names, self.ks):
            out[dcg_name] = dcg(rel[:k])
            out[rec_name] = sum(credits[:k]) / len(relevant)
        return out

    def candidates(self, item: QueryEval) -> list[Chunk]:
        docs = item.query.doc_ids or tuple(dict.fromkeys(s.doc_id for s in item.query.evidence))
        seen: dict[str, Chunk] = {}
        expand = item.context.ranking.expand if item.context.ranking is not None else "none"
        for d in docs:
            for c in item.chunks_by_doc.get(d, ()):
                if c.indexed and c.view == "text":
                    r = resolve(c, item.chunks_by_id, expand)
                    seen.setdefault(r.chunk_id, r)
        return sorted(seen.values(), key=lambda c: (c.doc_id, c.start, c.end))

    def evidence(self, item: QueryEval) -> list[str]:
        texts = [t for t in item.evidence_texts if t and t.strip()]
        if not texts:
            texts = [item.documents[s.doc_id].text[s.start:s.end] for s in item.query.evidence
                     if s.doc_id in item.documents]
        return list(dict.fromkeys(texts))

    def relabel(self, item: QueryEval) -> list[Chunk]:
        """The best-scoring candidate of each evidence, deduplicated, in evidence order."""
        cands = self.candidates(item)
        out: dict[str, Chunk] = {}
        for ev in self.evidence(item):
            best = self.best_chunk(ev, cands)
            if best is not None:
                out.setdefault(best.chunk_id, best)
        return list(out.values())

    def best_chunk(self, evidence: str, cands: Sequence[Chunk]) -> Chunk | None:
        ev_tokens = self.tokenizer.tokenize(evidence)
        if not ev_tokens or not cands:
            return None
        prunable = self.rouge_type in ("rouge1", "rougeL")
        ev_counts = Counter(ev_tokens)
        bounds = []
        for c in cands:
            if prunable:
                counts = self._chunk_counts(c)
                overlap = sum(min(n, counts[t]) for t, n in ev_counts.items())
                bounds.append(_measure(overlap, len(ev_tokens), sum(counts.values()), self.measure))
            else:
                bounds.append(math.inf)
        best_score, best = 0.0, None
        for i in sorted(range(len(cands)), key=lambda i: -bounds[i]):
            if bounds[i] == 0 or bounds[i] < best_score:
                break  # no later candidate can reach the best (bounds are sorted)
            c = cands[i]
            score = getattr(self.scorer.score(evidence, c.text)[self.rouge_type], self.measure)
            if score > 0 and (best is None or score > best_score or (
                    score == best_score and (c.end - c.start, c.start) < (best.end - best.start, best.start))):
                best_score, best = score, c
        return best

    def _chunk_counts(self, chunk: Chunk) -> Counter:
        counts = self._counts.get(chunk.text)
        if counts is None:
            if len(self._counts) >= 200_000:
                self._counts.clear()
            counts = self._counts[chunk.text] = Counter(self.tokenizer.tokenize(chunk.text))
        return counts
