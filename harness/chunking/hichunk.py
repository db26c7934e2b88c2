"""HiChunk (Lu et al. 2025, §4, Algorithm 1) with HC200 leaves (§5.2), the run's model predicting.

1. Sentences numbered as prompt lines, the model answers chunk points (see
   :mod:`harness.chunking.hichunk_format`: Listing A4, the output grammar, the parsing rules).
   A prompt line shows the sentence's head: ``max_sentence_chars`` (the authors' ``--limit``),
   times 10 for English under ``truncation="code"`` (``hichunk_format.prompt_text``).
2. Iterative inference (Algorithm 1, authors' code ``pipeline/chunking/HiChunk/HiChunk.py``):
   a window holds the prompt, the residual lines and as many sentences from ``a`` as fit in
   ``window`` tokens (at least one). Local points are mapped to global line numbers (points on
   residual lines are context and dropped). If the window reaches the end, its points are merged
   and inference stops. If it holds >= 2 level-1 points, the next window starts at the last of
   them (``a <- LCP_1[-1]``); points before it, and it, are merged, later ones re-predicted. Else
   (one or no level-1 point) the next window starts after this one, led by residual lines.
3. Residual lines (GetResLines; the authors' ``recurrent_type=2``, what ``hi_chunking.sh`` runs):
   the level-2 segments of the last level-1 segment so far, at most the first 2 and last 3, each
   at most 20 lines, numbered from 0 before the window's sentences; while they exceed half the
   window (characters, as the code measures) it keeps (1, 2) segments of 15 lines, then none.
4. Merge: global points are unique by line and ordered; a re-predicted line keeps its first point.
   (The code drops the restart point itself and relies on the next window predicting it again;
   here it is kept, as Algorithm 1 merges the whole LCP.)
5. Fallback: a reply with no readable point (``parse_failures``), or none left after dropping
   invalid ones, is replaced by one level-1 point at the window's first sentence (the code's
   rule for parse and check errors), counted as ``window_fallbacks``.
6. Tree: a point of level k opens a section that ends where the next point of level <= k starts
   (or at the document end); text before the first point is a level-1 section (the code's
   ``build_splits`` starts at level 1). An is_title point's sentence is the section title.
   ``max_level`` keeps levels 1..max_level (the L1..L4 ablation, §5.7; null = LA). Sections go
   to :class:`StructureTreeChunker`, which adds whole-sentence leaves of ``size`` tokens (HC200),
   so Auto-Merge sees the same representation as for gold structure.

Counts per document: ``llm_calls``, ``residual_windows``, ``parse_failures``, ``window_fallbacks``
and the parser's ``invalid_points``, ``duplicate_points``, ``unordered_points``,
``missing_is_title``, ``unparsed_lines``.

The model must hold a window plus ``max_tokens``: ``window`` is capped at the model's
``max_model_len`` minus ``max_tokens`` and ``TEMPLATE_TOKENS`` (a warning at construction), or
refused with ``window_cap: error`` (the full-scale tables: the paper's 16,384-token window).
Documents of one ``chunk`` call are stepped together: one batched call per step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from harness.chunking.base import require
from harness.chunking.hichunk_format import (PROMPT, TRUNCATIONS, Point, format_lines, parse_points,
                                             prompt_text, sentence_units, title_text)
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.structure_tree import StructureTreeChunker
from harness.chunking.units import Span, require_int, require_optional_size
from harness.llm.base import LLM, Sampling
from harness.types import Chunk, Document, Section

log = logging.getLogger(__name__)

TEMPLATE_TOKENS = 64                      # room left for the chat template around the prompt
RESIDUAL_SEGMENTS = ((2, 3, 20), (1, 2, 15))  # (first, last, lines per segment), tried in order


@dataclass
class _Walk:
    """One document's inference state (Algorithm 1): sentences, window start, residual lines, GCP."""

    doc: Document
    units: list[Span]
    lines: list[str]                     # prompt text of each sentence
    start: int = 0                       # a: first sentence of the next window
    residual: list[str] = field(default_factory=list)
    points: dict[int, Point] = field(default_factory=dict)  # global chunk points by line

    @property
    def done(self) -> bool:
        return self.start >= len(self.units)

    def merge(self, points: list[Point]) -> None:
        for p in points:
            self.points.setdefault(p.line, p)


class HiChunkChunker(LLMChunker):
    def __init__(self, llm: LLM, window: int = 16384, max_sentence_chars: int | None = 100,
                 truncation: str = "code", max_level: int | None = None, size: int = 200, unit: str = "tokens",
                 tokenizer: str = "bundled", temperature: float = 0.0, max_tokens: int = 4096, batch_size: int = 8,
                 window_cap: str = "shrink"):
        super().__init__(llm)
        require(window_cap in ("shrink", "error"), f"chunker.window_cap must be shrink or error (got {window_cap!r})")
        require_int("window", window, 1)
        require_optional_size("max_sentence_chars", max_sentence_chars)
        require(truncation in TRUNCATIONS, f"chunker.truncation must be one of {', '.join(TRUNCATIONS)} "
                                           f"(got truncation={truncation!r})")
        require_int("max_tokens", max_tokens, 1)
        require_int("batch_size", batch_size, 1)
        require(isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature >= 0,
                f"chunker.temperature must be a number >= 0 (got temperature={temperature!r})")
        limit = getattr(llm, "max_model_len", None)
        if isinstance(limit, int) and window + max_tokens + TEMPLATE_TOKENS > limit:
            capped = limit - max_tokens - TEMPLATE_TOKENS
            require(capped > 0, f"chunker.max_tokens={max_tokens} leaves no room for a window in "
                                f"llm.max_model_len={limit}; lower chunker.max_tokens")
            # the paper's setting must not be cut silently (full-scale tables set window_cap=error)
            require(window_cap == "shrink", f"chunker.window={window} + max_tokens={max_tokens} + {TEMPLATE_TOKENS} "
                                            f"exceeds the model's max_model_len={limit}: raise the llm's max_model_len "
                                            f"to {window + max_tokens + TEMPLATE_TOKENS} (window_cap=error)")
            log.warning("hichunk: window %d capped to %d (llm.max_model_len=%d - max_tokens=%d - %d)",
                        window, capped, limit, max_tokens, TEMPLATE_TOKENS)
            window = capped
        self.window, self.max_sentence_chars, self.truncation = window, max_sentence_chars, truncation
        self.sampling = Sampling(temperature=float(temperature), max_tokens=max_tokens)
        self.tree = StructureTreeChunker(size, max_level, unit, tokenizer)  # validates size, max_level, unit
        self.batch_size = batch_size  # documents stepped together by the pipeline
        self._prompt_tokens: int | None = None

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        return [self.tree.chunk_document(replace(w.doc, sections=tuple(_sections(w))))
                for w in self._infer(docs)]

    def chunk_points(self, docs: Sequence[Document]) -> list[list[Point]]:
        """The global chunk points of each document (sentence numbers of ``sentence_units``), in order."""
        return [sorted(w.points.values()) for w in self._infer(docs)]

    # --- Algorithm 1 ------------------------------------------------------------------

    def _infer(self, docs: Sequence[Document]) -> list[_Walk]:
        walks = [self._walk(d) for d in docs]
        while active := [w for w in walks if not w.done]:
            windows = [self._window(w) for w in active]
            prompts = [[{"role": "user", "content": prompt}] for prompt, _ in windows]
            for w, (_, n), reply in zip(active, windows, self.llm.chat(prompts, self.sampling, desc="hichunk")):
                self._advance(w, n, reply)
        return walks

    def _walk(self, doc: Document) -> _Walk:
        units = sentence_units(doc.text, doc.language)
        return _Walk(doc, units, [prompt_text(doc.text[s:e], self.max_sentence_chars, self.truncation)
                                  for s, e in units])

    def _window(self, w: _Walk) -> tuple[str, int]:
        """The prompt for the window at ``w.start`` and how many sentences it holds (>= 1)."""
        if self._prompt_tokens is None:
            self._prompt_tokens = self.llm.count_tokens(PROMPT)
        body = [format_lines([t], i) for i, t in enumerate(w.residual)]
        used = self._prompt_tokens + sum(self.llm.count_tokens(line) for line in body)
        r, n = len(w.residual), 0
        while w.start + n < len(w.units):
            line = format_lines([w.lines[w.start + n]], r + n)
            cost = self.llm.count_tokens(line)
            if n and used + cost > self.window:
                break
            used += cost
            body.append(line)
            n += 1
        return PROMPT + "".join(body), n

    def _advance(self, w: _Walk, n: int, reply: str) -> None:
        """Read one reply for the window of ``n`` sentences at ``w.start`` and move on."""
        doc_id, a, r = w.doc.doc_id, w.start, len(w.residual)
        self.count(doc_id, "llm_calls")
        if r:
            self.count(doc_id, "residual_windows")
        points, repairs = parse_points(reply, r + n)
        for name, k in repairs.items():
            self.count(doc_id, name, k)
        if not points:
            if not (repairs["invalid_points"] or repairs["duplicate_points"] or repairs["unordered_points"]):
                self.count(doc_id, "parse_failures")  # nothing shaped like a point at all
            self.count(doc_id, "window_fallbacks")
            local = [Point(a, 1)]
        else:
            local = [replace(p, line=a + p.line - r) for p in points if p.line >= r]
        firsts = [p.line for p in local if p.level == 1]
        if a + n >= len(w.units):  # the window reached the end of the document
            w.merge(local)
            w.start, w.residual = len(w.units), []
        elif len(firsts) >= 2:  # restart at the last level-1 point; later points are re-predicted
            w.start = firsts[-1]
            w.merge([p for p in local if p.line <= w.start])
            w.residual = []
        else:
            w.merge(local)
            w.start = a + n
            w.residual = self._residual_lines(w)

    def _residual_lines(self, w: _Walk) -> list[str]:
        """GetResLines: level-2 segments of the last level-1 segment before ``w.start``."""
        points = sorted(w.points.values())
        first = max((p.line for p in points if p.level == 1), default=0)
        bounds = [first, *(p.line for p in points if p.level == 2 and first < p.line < w.start), w.start]
        segments = list(zip(bounds, bounds[1:]))
        for head, tail, per in RESIDUAL_SEGMENTS:
            kept = segments if len(segments) <= head + tail else segments[:head] + segments[-tail:]
            lines = [w.lines[i] for s, e in kept for i in range(s, min(e, s + per))]
            if len("\n".join(lines)) < self.window / 2:
                return lines
        return []


# --- points -> sections -----------------------------------------------------------------


def _sections(w: _Walk) -> list[Section]:
    """The global chunk points of ``w`` as nested sections (rule 6 of the module docstring)."""
    if not w.units:
        return []
    points = sorted(w.points.values())
    if not points or points[0].line != 0:
        points.insert(0, Point(0, 1))
    text, out = w.doc.text, []
    open_: list[tuple[int, int]] = []  # (index in out, level) of sections still open, levels increasing
    for p in points:
        start, end = w.units[p.line]
        while open_ and open_[-1][1] >= p.level:  # the next point of level <= k closes a level-k section
            i = open_.pop()[0]
            out[i] = replace(out[i], end=start)
        title = title_text(text[start:end]) if p.is_title else ""
        open_.append((len(out), p.level))
        out.append(Section(start, len(text), p.level, title))
    return [s for s in out if s.start < s.end]
