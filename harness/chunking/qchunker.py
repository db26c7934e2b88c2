"""QChunker (Zhao et al., WWW 2026, Sec. 3.1-3.4): question-aware segmentation, then knowledge
completion, with the run's model in the role of its agents (the paper's fine-tuned 3B SLMs at
full scale, any chat model here). Prompts and reply formats: :mod:`harness.chunking.qchunker_format`.

1. Question outline + segmentation (A_QG + A_SEG; the authors' M_Gen prompt asks for both in one
   reply): ``n_samples`` replies per document, sample ``j`` with seed ``seed + j`` (the seed is in
   the LLM-call cache key, so samples never collide). Each reply is mapped to a tiling of the
   document (``qchunker_format.locate``).
2. Selection (Sec. 3.2.2): with more than one distinct candidate, the one of highest ChunkScore
   (``harness.metrics.chunkscore``, lam = 0.3, alpha = 1e-3; LI scored by the run's model, SD by
   the run's embedder) is kept; a NaN score ranks last, ties keep the earlier sample.
3. Integrity review (A_IR / M_Disc): each chunk with the whole document, answer 是/否 (greedy,
   the code's classifier takes the argmax).
4. Knowledge completion (A_KC / M_Ref), for chunks judged incomplete: the rewritten text
   replaces the chunk's text; the chunk keeps its source span and is marked ``rewritten``
   (see :class:`harness.types.Chunk`). ``knowledge_completion: false`` is the paper's
   "w/o M_Ref" ablation (Table 1): segmentation only, no review, no rewriting.

Defaults are the authors' inference code (``qchunker.py``, ``judge_rewrite.py``): one sample at
temperature 0.1, top_p 0.1, 2048 new tokens. The paper's multi-path sampling (Sec. 3.2.2, with
DeepSeek-R1 at temperature 0.7, top_p 0.8, Sec. 4.3) is ``n_samples > 1`` with those values
(``chunker=qchunker_multipath``); the paper gives no number of paths. The code's
``repetition_penalty=1.05`` has no counterpart in the harness's sampling parameters.

``question_view``: the authors' retrieval embeds "outline question + newline + chunk" and
returns the plain chunk; here that is a ``question`` view chunk of each content chunk, made
when the outline has one question per final chunk (else ``outline_mismatches``).

Fallbacks, counted per document (``chunker_<name>``): a reply with no ``<chunk>`` item
(``parse_failures``, the sample is dropped); no usable sample (``segmentation_fallbacks``:
whole sentences packed to ``fallback_size`` tokens, the paper's 178-token mean chunk length);
the selected sample's ``unmatched_heads`` / ``unmatched_chunks``; a review reply that is
neither yes nor no (``judge_parse_failures``: the chunk is kept); an empty rewrite
(``empty_rewrites``: the chunk is kept). Also counted: ``segment_calls``, ``candidates``
(distinct usable segmentations), ``judge_calls``, ``rewrites``.

Every prompt holds the whole document (as the authors' code): a document longer than the
model's context is an error of the backend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.qchunker_format import (JUDGE_PROMPT, REWRITE_PROMPT, SEGMENT_PROMPT, SYSTEM, locate,
                                              parse_judgement, parse_rewrite, parse_segmentation,
                                              spans_from_starts)
from harness.chunking.sentence import SentenceChunker
from harness.chunking.units import Span, require_int
from harness.llm.base import LLM, Sampling
from harness.metrics.chunkscore import ChunkScore
from harness.types import Chunk, Document


def _number(name: str, value: Any, low: float, high: float, low_open: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        (low < value if low_open else low <= value) and value <= high
    require(ok, f"chunker.{name} must be a number in {'(' if low_open else '['}{low}, {high}] (got {name}={value!r})")
    return float(value)


class QChunker(LLMChunker):
    def __init__(self, llm: LLM, embedder: Any = None, n_samples: int = 1, temperature: float = 0.1,
                 top_p: float = 0.1, max_tokens: int = 2048, seed: int = 0, repetition_penalty: float = 1.05,
                 lam: float = 0.3, alpha: float = 1e-3,
                 knowledge_completion: bool = True, judge_max_tokens: int = 8, rewrite_max_tokens: int = 2048,
                 question_view: bool = False, fallback_size: int = 178, batch_size: int = 8):
        super().__init__(llm)
        require_int("n_samples", n_samples, 1)
        for name, value in (("max_tokens", max_tokens), ("judge_max_tokens", judge_max_tokens),
                            ("rewrite_max_tokens", rewrite_max_tokens), ("fallback_size", fallback_size),
                            ("batch_size", batch_size)):
            require_int(name, value, 1)
        require_int("seed", seed, 0)
        for name, value in (("knowledge_completion", knowledge_completion), ("question_view", question_view)):
            require(isinstance(value, bool), f"chunker.{name} must be true or false (got {name}={value!r})")
        require(n_samples == 1 or embedder is not None,
                f"chunker.embedder is needed to select among n_samples={n_samples} by ChunkScore "
                "(embedder: ${embedder})")
        temperature = _number("temperature", temperature, 0, 2)
        top_p = _number("top_p", top_p, 0, 1, low_open=True)
        self.n_samples, self.seed, self.batch_size = n_samples, seed, batch_size
        self.sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed,
                                 repetition_penalty=repetition_penalty)
        self.judge_sampling = Sampling(max_tokens=judge_max_tokens)
        self.rewrite_sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=rewrite_max_tokens, seed=seed,
                                         repetition_penalty=repetition_penalty)
        self.knowledge_completion, self.question_view = knowledge_completion, question_view
        # ChunkScore itself validates lam, alpha and the embedder (ConfigError naming them)
        self.chunkscore = ChunkScore(embedder, llm, lam, alpha) if embedder is not None else None
        self.fallback = SentenceChunker(size=fallback_size)
        self._questions: dict[str, tuple[str, ...]] = {}  # the selected outline, per document

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        replies = self._segment(docs)
        out = []
        for doc, doc_replies in zip(docs, replies):
            spans, questions = self._select(doc, doc_replies)
            out.append(spans_to_chunks(doc, spans))
            self._questions[doc.doc_id] = questions
        if self.knowledge_completion:
            out = self._complete(docs, out)
        if self.question_view:
            out = [self._with_questions(d, chunks) for d, chunks in zip(docs, out)]
        for d in docs:
            self._questions.pop(d.doc_id, None)
        return out

    # --- 1. outline + segmentation, n samples --------------------------------------------------

    def _segment(self, docs: Sequence[Document]) -> list[list[str]]:
        convs = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": SEGMENT_PROMPT.format(d.text)}]
                 for d in docs]
        per_sample = [self.llm.chat(convs, replace(self.sampling, seed=self.seed + j), desc=f"qchunker segment {j}")
                      for j in range(self.n_samples)]
        for d in docs:
            self.count(d.doc_id, "segment_calls", self.n_samples)
        return [list(r) for r in zip(*per_sample)]

    # --- 2. candidates and ChunkScore selection ------------------------------------------------

    def _select(self, doc: Document, replies: list[str]) -> tuple[list[Span], tuple[str, ...]]:
        candidates: dict[tuple[Span, ...], tuple[tuple[str, ...], dict[str, int]]] = {}
        for reply in replies:
            parsed = parse_segmentation(reply)
            if parsed is None:
                self.count(doc.doc_id, "parse_failures")
                continue
            starts, repairs = locate(doc.text, parsed.items)
            candidates.setdefault(tuple(spans_from_starts(starts, len(doc.text))), (parsed.questions, repairs))
        if not candidates:
            self.count(doc.doc_id, "segmentation_fallbacks")
            return [(c.start, c.end) for c in self.fallback.chunk_document(doc)], ()
        self.count(doc.doc_id, "candidates", len(candidates))
        best = self.pick(doc, list(candidates))
        questions, repairs = candidates[best]
        for name, n in repairs.items():
            if n:
                self.count(doc.doc_id, name, n)
        return list(best), questions

    def pick(self, doc: Document, candidates: list[tuple[Span, ...]]) -> tuple[Span, ...]:
        """The candidate of highest ChunkScore (Sec. 3.2.2's argmax); the first when only one."""
        if len(candidates) == 1:
            return candidates[0]
        scores = [self.chunkscore(doc, spans_to_chunks(doc, c))["chunkscore"] for c in candidates]
        keyed = [(-math.inf if math.isnan(s) else s, -i) for i, s in enumerate(scores)]
        return candidates[-max(keyed)[1]]

    # --- 3-4. integrity review and knowledge completion ----------------------------------------

    def _complete(self, docs: Sequence[Document], chunked: list[list[Chunk]]) -> list[list[Chunk]]:
        todo = [(d, i, c) for d, chunks in zip(docs, chunked) for i, c in enumerate(chunks)]
        judged = self.llm.chat([[{"role": "user", "content": JUDGE_PROMPT.format(d.text, c.text)}] for d, _, c in todo],
                               self.judge_sampling, desc="qchunker review")
        incomplete = []
        for (d, i, c), reply in zip(todo, judged):
            self.count(d.doc_id, "judge_calls")
            verdict = parse_judgement(reply)
            if verdict is None:
                self.count(d.doc_id, "judge_parse_failures")
            elif verdict:
                incomplete.append((d, i, c))
        rewrites = self.llm.chat([[{"role": "system", "content": SYSTEM},
                                   {"role": "user", "content": REWRITE_PROMPT.format(d.text, c.text)}]
                                  for d, _, c in incomplete], self.rewrite_sampling, desc="qchunker complete")
        out = [list(chunks) for chunks in chunked]
        index = {d.doc_id: k for k, d in enumerate(docs)}
        for (d, i, c), reply in zip(incomplete, rewrites):
            text = parse_rewrite(reply)
            if not text:
                self.count(d.doc_id, "empty_rewrites")
                continue
            self.count(d.doc_id, "rewrites")
            if text != c.text:
                out[index[d.doc_id]][i] = replace(c, text=text, rewritten=True)
        return out

    def _with_questions(self, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        questions = self._questions.get(doc.doc_id, ())
        if len(questions) != len(chunks):
            self.count(doc.doc_id, "outline_mismatches")
            return chunks
        out = []
        for c, q in zip(chunks, questions):
            out += [c, Chunk(f"{c.chunk_id}@question", c.doc_id, f"{q}\n{c.text}", c.start, c.end, c.level,
                             c.chunk_id, view="question")]
        return out
