"""Atomic-unit chunking, MC-indexing's baseline (Dong et al., Appendix C.3; after Raina and Gales 2024).

The procedure of the appendix (no public code of the authors is known, so the paper is the
reference):

- The document is cut into NLTK sentences and whole sentences are packed into segments of at
  most ``segment_size`` tokens ("2000-token segments using the NLTK library"). A sentence longer
  than that is a segment of its own.
- The model splits each segment into atomic sections with the Figure 12 prompt ("Return each
  section on a new line"): every non-blank line of the reply is a section (list markers such
  as "1." or "-" are dropped; text after a ``</think>`` only).
- The sections are mapped back to contiguous source sentences ("Atomic Chunking Details"):
  each section S_i is cut into NLTK sentences s_ik; D(y_j, S_i) = min_k d(y_j, s_ik) with d the
  Levenshtein distance; walking the segment's sentences y_j in order, the current section S_i
  hands over to S_i+1 at the first j where D(y_j, S_i) > D(y_j, S_i+1) (re-checked against the
  next pair at the same j, since j_i+1 >= j_i). The sentences each section gets form one chunk.
  Whitespace runs are read as one space when measuring distances (the reply puts a section on
  one line). ``mapping=alignment`` (an option, not the paper's) instead takes the non-decreasing
  assignment of sentences to sections with the least total D (dynamic programming): the walk
  compares neighbours only, so a duplicated section, or a next section that matches nothing,
  stops it and the current section takes the rest of the segment; the alignment skips those.

The mapping only moves forward through the sentences, so whatever the reply (paraphrased,
reordered, duplicated or invented sections), the chunks are contiguous runs of whole source
sentences that tile the document: chunk spans are true character spans, cut at sentence starts.

Counted fallbacks (``RepairCounts``; logged as ``chunker_<name>``):

- ``unlocated_sections``: sections that get no sentence (invented, duplicated or out-of-order
  sections, a preamble line, or the sections after the point where the walk stopped). Their
  text, if it is the document's, stays in the chunk of a neighbouring located section (the one
  the mapping was on).
- ``empty_replies``: replies with no section at all; the segment is then one chunk (what a
  one-section reply gives).

``llm_calls`` counts the questions; a segment of one sentence needs none (it is one chunk
whatever the model says). The segments of every document of a ``chunk`` call go out in one
batched call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from string import Template

import numpy as np

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.units import Span, UnitIndex, make_tokenizer, pack, require_int
from harness.llm.base import LLM, Sampling
from harness.llm.replies import strip_reasoning
from harness.text import punkt_spans, sentence_spans
from harness.types import Chunk, Document

# MC-indexing Appendix G, Figure 12, as published ($text is the segment).
PROMPT = Template(
    "You are a helpful text chunking assistant that can divide a piece of text into sections. Given a piece of "
    "text, your task is to partition the sentences in the given text into sections according to the following "
    "guidelines:\n"
    "1. The sentences in each section should make up one stand-alone atomic fact.\n"
    "2. Each section should be a contiguous chunk of text from the given text. The text in each section should be "
    "faithful and unchanged from the given text.\n"
    "3. No sentences in the given text should be divided across two different sections.\n"
    "Return each section on a new line.\n\n"
    "Please breakdown the following text into sections: $text")

SPLITTERS = ("nltk", "sentencex")
DISTANCES = ("levenshtein", "normalized")
MAPPINGS = ("walk", "alignment")
# A list marker the model may put before a section: "1.", "2)", "-", "*", "•", "Section 3:".
_MARKER = re.compile(r"^\s*(?:(?:section|chunk)\s*\d+\s*[:.)-]|\d+\s*[.)]|[-*•])\s+", re.IGNORECASE)


def parse_sections(reply: str) -> list[str]:
    """The sections of a reply: its non-blank lines (after any ``</think>``), list markers removed."""
    sections = []
    for line in strip_reasoning(reply).splitlines():
        text = _MARKER.sub("", line, count=1).strip()
        if text:
            sections.append(text)
    return sections


def _flat(text: str) -> str:
    return " ".join(text.split())


def assign_sentences(sentences: Sequence[str], sections: Sequence[Sequence[str]],
                     distance: str = "levenshtein", mapping: str = "walk") -> list[int]:
    """The section each source sentence goes to (non-decreasing indices).

    ``sections``: each section's sentences (sections without any are left out by the caller).
    ``mapping``: ``walk``, the appendix's walk; ``alignment``, the non-decreasing assignment of
    least total D. With fewer than two sections every sentence goes to section 0.
    """
    if not sentences or len(sections) < 2:
        return [0] * len(sentences)
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cdist

    scorer = Levenshtein.distance if distance == "levenshtein" else Levenshtein.normalized_distance
    pieces = [_flat(s) for sec in sections for s in sec]
    offsets = np.cumsum([0] + [len(sec) for sec in sections[:-1]])
    pairwise = cdist([_flat(s) for s in sentences], pieces, scorer=scorer, workers=1)
    dist = np.minimum.reduceat(pairwise, offsets, axis=1).astype(float)  # D(y_j, S_i): j rows, i columns
    return _walk(dist) if mapping == "walk" else _align(dist)


def _walk(dist: np.ndarray) -> list[int]:
    """The appendix: S_i hands over to S_i+1 at the first y_j closer to S_i+1 (strictly), checked
    again at the same j. Only neighbours are compared, so a section the walk cannot leave (a
    duplicate of the current one, or a next one that matches nothing) keeps the rest."""
    owners, i = [], 0
    for row in dist:
        while i + 1 < len(row) and row[i] > row[i + 1]:
            i += 1
        owners.append(i)
    return owners


def _align(dist: np.ndarray) -> list[int]:
    """Dynamic programming over non-decreasing assignments: least sum of D(y_j, S_owner(j));
    ties go to the earlier section. Sections may get nothing, so invented or repeated ones are
    skipped instead of stopping the mapping."""
    m, n = dist.shape
    cost, back = dist[0].copy(), np.zeros((m, n), dtype=int)
    for j in range(1, m):
        best, arg, prev = np.empty(n), np.empty(n, dtype=int), cost
        for i in range(n):  # best[i] = min over i' <= i of prev[i'], earliest on ties
            if i == 0 or prev[i] < best[i - 1]:
                best[i], arg[i] = prev[i], i
            else:
                best[i], arg[i] = best[i - 1], arg[i - 1]
        cost, back[j] = dist[j] + best, arg
    owners = [int(np.argmin(cost))]
    for j in range(m - 1, 0, -1):
        owners.append(int(back[j][owners[-1]]))
    return owners[::-1]


class AtomicUnitChunker(LLMChunker):
    def __init__(self, llm: LLM, segment_size: int = 2000, unit: str = "tokens", tokenizer: str = "bundled",
                 splitter: str = "nltk", distance: str = "levenshtein", mapping: str = "walk",
                 temperature: float = 0.0,
                 max_tokens: int = 4096, batch_size: int = 8):
        super().__init__(llm)
        require_int("segment_size", segment_size, 1)
        require_int("max_tokens", max_tokens, 1)
        require_int("batch_size", batch_size, 1)
        require(splitter in SPLITTERS, f"chunker.splitter must be one of {', '.join(SPLITTERS)} (got {splitter!r})")
        require(distance in DISTANCES, f"chunker.distance must be one of {', '.join(DISTANCES)} (got {distance!r})")
        require(mapping in MAPPINGS, f"chunker.mapping must be one of {', '.join(MAPPINGS)} (got {mapping!r})")
        require(isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature >= 0,
                f"chunker.temperature must be a number >= 0 (got temperature={temperature!r})")
        self.segment_size, self.splitter, self.distance, self.mapping = segment_size, splitter, distance, mapping
        self.tokenizer = make_tokenizer(unit, tokenizer)
        self.sampling = Sampling(temperature=float(temperature), max_tokens=max_tokens)
        self.batch_size = batch_size  # documents whose segments share one batched model call

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def sentences(self, text: str, language: str = "en") -> list[Span]:
        return punkt_spans(text) if self.splitter == "nltk" else sentence_spans(text, language)

    def segments(self, doc: Document, sentences: Sequence[Span]) -> list[tuple[int, int]]:
        """``[a, b)`` sentence ranges of at most ``segment_size`` units each (one sentence at least)."""
        index = {start: i for i, (start, _) in enumerate(sentences)}
        firsts = [index[start] for start, _ in pack(sentences, UnitIndex(doc.text, self.tokenizer), self.segment_size)]
        return list(zip(firsts, firsts[1:] + [len(sentences)]))

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        plans = []  # per document: its sentences and its segments
        asks: list[tuple[int, tuple[int, int]]] = []  # (document, segment) the model is asked about
        for d, doc in enumerate(docs):
            sentences = self.sentences(doc.text, doc.language)
            segments = self.segments(doc, sentences) if sentences else []
            plans.append((sentences, segments))
            asks += [(d, seg) for seg in segments if seg[1] - seg[0] > 1]
        prompts = [[{"role": "user", "content": PROMPT.substitute(
            text=docs[d].text[plans[d][0][a][0]:plans[d][0][b - 1][1]])}] for d, (a, b) in asks]
        replies = dict(zip(asks, self.llm.chat(prompts, self.sampling, desc="atomic units")))
        out = []
        for d, (doc, (sentences, segments)) in enumerate(zip(docs, plans)):
            starts = []  # first sentence of every chunk
            for seg in segments:
                reply = replies.get((d, seg))
                starts += [seg[0] + k for k in self._group_starts(doc, sentences[seg[0]:seg[1]], reply)]
            cuts = [0] + [sentences[k][0] for k in starts[1:]] + [len(doc.text)]
            out.append(spans_to_chunks(doc, zip(cuts, cuts[1:])))
        return out

    def _group_starts(self, doc: Document, sentences: Sequence[Span], reply: str | None) -> list[int]:
        """Offsets (in the segment) of the sentences that start a chunk; ``reply`` None: not asked."""
        if reply is None:
            return [0]
        self.count(doc.doc_id, "llm_calls")
        sections = [split for split in (self._split(s, doc.language) for s in parse_sections(reply)) if split]
        if not sections:
            self.count(doc.doc_id, "empty_replies")
            return [0]
        owners = assign_sentences([doc.text[s:e] for s, e in sentences], sections, self.distance, self.mapping)
        unlocated = len(sections) - len(set(owners))
        if unlocated:
            self.count(doc.doc_id, "unlocated_sections", unlocated)
        return [k for k in range(len(owners)) if k == 0 or owners[k] != owners[k - 1]]

    def _split(self, section: str, language: str) -> list[str]:
        return [section[s:e] for s, e in self.sentences(section, language)]
