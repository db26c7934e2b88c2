"""Chroma's synthetic evaluation set (Smith & Troynikov, 2024), built from the user's documents.

One LLM call per question, in sequence: the model sees a slice of the corpus and the questions
kept so far (the last ``previous_questions``), and answers with a question and the excerpts that
answer it. A reply is read (:mod:`.proposals`), its excerpts placed in the document
(:mod:`.evidence`); the survivors then pass the relevance and duplicate filters (:mod:`.filters`).
Every rejection is counted by its reason.

Calls go through the LLM's call cache, keyed by the whole conversation: a rerun of the same
settings asks nothing, and an interrupted run replays its cached replies, which rebuilds the same
list of previous questions, and resumes at the first call it had not made.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from harness.llm.base import LLM, Sampling
from harness.progress import tqdm
from harness.synth import filters, proposals
from harness.synth.evidence import ExcerptMatcher, Placed
from harness.synth.prompt import messages, prompt_digest
from harness.synth.proposals import Proposal, read_reply
from harness.synth.slices import SPREADS, Slice, plan_slices
from harness.types import ConfigError, Document, Query

# every reason a question is rejected, in that order (the manifest lists each, zeros too)
REASONS = (*proposals.REASONS, "excerpt_not_found", "not_relevant", "duplicate")


@dataclass
class Candidate:
    call: int
    where: Slice
    proposal: Proposal
    placed: list[Placed]


@dataclass
class SynthResult:
    queries: list[Query]
    counts: dict[str, int]   # questions left after each step: asked, parsed, excerpts_found, relevant, not_duplicate
    rejected: Counter = field(default_factory=Counter)  # by reason (REASONS)
    llm: dict[str, Any] = field(default_factory=dict)   # calls, cached, tokens, seconds


class Synthesizer:
    """Built from ``configs/synth/*.yaml`` (``synth.<key>=...``); ``llm`` and ``embedder`` are the
    roles ``roles.synth.llm`` / ``roles.synth.embedder``, else the run's."""

    def __init__(self, llm: LLM | None, embedder, questions: int = 20, slice_chars: int = 4000,
                 spread: str = "stratified", previous_questions: int = 50, max_excerpts: int = 5,
                 match: str = "exact", fuzzy_min_score: float = 90.0, relevance_threshold: float = 0.40,
                 duplicate_threshold: float = 0.70, compound: str = "reject", temperature: float = 0.0,
                 max_tokens: int = 512, seed: int = 0, min_doc_words: int = 10):
        if llm is None:
            raise ConfigError("synth.llm: synth asks a language model; set one (llm=... or llm@roles.synth.llm=...)")
        for name, value in (("questions", questions), ("slice_chars", slice_chars), ("max_excerpts", max_excerpts),
                            ("max_tokens", max_tokens), ("min_doc_words", min_doc_words)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"synth.{name}: a whole number, 1 or more, got {value!r}")
        if not isinstance(previous_questions, int) or previous_questions < 0:
            raise ConfigError(f"synth.previous_questions: a whole number, 0 or more, got {previous_questions!r}")
        for name, value in (("relevance_threshold", relevance_threshold), ("duplicate_threshold", duplicate_threshold)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1 <= value <= 1:
                raise ConfigError(f"synth.{name}: a cosine similarity in [-1, 1], got {value!r}")
        if spread not in SPREADS:  # refused before any call, not at the first slice
            raise ConfigError(f"synth.spread: one of {', '.join(SPREADS)}, got {spread!r}")
        if compound not in ("reject", "allow"):
            raise ConfigError(f"synth.compound: reject or allow, got {compound!r}")
        self.llm, self.embedder = llm, embedder
        self.questions, self.slice_chars, self.spread = questions, slice_chars, spread
        self.previous_questions, self.max_excerpts = previous_questions, max_excerpts
        self.matcher = ExcerptMatcher(match, fuzzy_min_score)
        self.relevance_threshold, self.duplicate_threshold = float(relevance_threshold), float(duplicate_threshold)
        self.compound, self.seed, self.min_doc_words = compound, seed, min_doc_words
        self.sampling = Sampling(temperature=temperature, max_tokens=max_tokens, seed=seed)

    def settings(self) -> dict[str, Any]:
        """What the manifest records of how the set was made."""
        return {"questions": self.questions, "slice_chars": self.slice_chars, "spread": self.spread,
                "previous_questions": self.previous_questions, "max_excerpts": self.max_excerpts,
                "match": self.matcher.match, "relevance_threshold": self.relevance_threshold,
                "duplicate_threshold": self.duplicate_threshold, "compound": self.compound,
                "temperature": self.sampling.temperature, "max_tokens": self.sampling.max_tokens,
                "seed": self.seed, "prompt_sha256": prompt_digest()}

    def run(self, documents: list[Document]) -> SynthResult:
        plan = plan_slices(documents, self.questions, self.slice_chars, self.spread, self.seed)
        texts = {d.doc_id: d.text for d in documents}
        rejected = Counter(dict.fromkeys(REASONS, 0))
        kept: list[Candidate] = []
        cached_before = self._cache_hits()
        t0 = time.perf_counter()
        for call, where in enumerate(tqdm(plan, desc="synth: ask", unit="question")):
            previous = [c.proposal.question for c in kept][-self.previous_questions:] if self.previous_questions else []
            reply = self.llm.chat([messages(texts[where.doc_id][where.start:where.end], previous)],
                                  self._sampling(call), desc="synth")[0]
            found = read_reply(reply, self.max_excerpts, self.compound == "reject")
            if isinstance(found, str):
                rejected[found] += 1
                continue
            placed = self.matcher.place(texts[where.doc_id], where, found.excerpts)
            if placed is None:
                rejected["excerpt_not_found"] += 1
                continue
            kept.append(Candidate(call, where, found, placed))
        seconds = time.perf_counter() - t0
        counts = {"asked": len(plan), "parsed": len(kept) + rejected["excerpt_not_found"], "excerpts_found": len(kept)}
        keep = filters.relevant(self.embedder, [c.proposal.question for c in kept],
                                [[p.excerpt for p in c.placed] for c in kept], self.relevance_threshold)
        rejected["not_relevant"] += keep.count(False)
        kept = [c for c, k in zip(kept, keep) if k]
        counts["relevant"] = len(kept)
        keep = filters.not_duplicates(self.embedder, [c.proposal.question for c in kept], self.duplicate_threshold)
        rejected["duplicate"] += keep.count(False)
        kept = [c for c, k in zip(kept, keep) if k]
        counts["not_duplicate"] = len(kept)
        stats = self.llm.stats
        llm = {"calls": stats.calls, "cached": self._cache_hits() - cached_before,
               "prompt_tokens": stats.prompt_tokens, "generated_tokens": stats.generated_tokens,
               "seconds": round(seconds, 3)}
        return SynthResult([self._query(i, c) for i, c in enumerate(kept)], counts, rejected, llm)

    def _sampling(self, call: int) -> Sampling:
        # each call its own seed: a sampled model does not answer every slice alike
        return replace(self.sampling, seed=self.seed + call)

    def _cache_hits(self) -> int:
        cache = getattr(self.llm, "cache", None)
        return cache.counts().get("llm", {}).get("hits", 0) if cache is not None else 0

    @staticmethod
    def _query(i: int, c: Candidate) -> Query:
        meta: dict[str, Any] = {"call": c.call, "slice": [c.where.start, c.where.end]}
        moved = [{"method": p.method, "distance": p.distance} for p in c.placed]
        wording: tuple[str, ...] = ()
        if any(p.method != "exact" for p in c.placed):  # match=fuzzy moved a span: say how far
            meta["excerpt_alignment"] = moved
            wording = tuple(p.excerpt for p in c.placed)
        return Query(qid=f"synth-{i:04d}", question=c.proposal.question, doc_ids=(c.where.doc_id,),
                     evidence=tuple(p.span for p in c.placed), task="synth", meta=meta,
                     evidence_wording=wording)
