"""LumberChunker (Duarte et al., EMNLP Findings 2024), HiChunk's "LC" baseline (HiChunk §5.2).

The rules, from the paper (§3) and the authors' code (github.com/joaodsmarques/LumberChunker,
``Code/LumberChunker-Segmentation.py``):

- Units are paragraphs (blank-line separated, :class:`ParagraphChunker`'s rule). A document
  without a paragraph break falls back to sentences (counted as ``sentence_units``).
- A group is the longest run of consecutive units from the current start that holds at most
  ``threshold`` tokens of the run's model, counted on the "ID k: text" lines the model sees
  (the code adds paragraphs until ~550 tokens are reached, then drops the last one).
- The model gets the authors' prompt with the group and names the first paragraph, not the
  first one, where the content clearly shifts ("Answer: ID XXXX"); the chunk ends before that
  paragraph and the next group starts at it (the paper's rule; the code restarts one later).
- A group of one unit (the next one would overflow ``threshold``) needs no question: the chunk
  is that unit. Once at most ``TAIL_UNITS`` units remain and they fit in ``threshold``, they form
  the last chunk (the code's ``while chunk_number < len(id_chunks) - 5``, which also stops on a
  longer rest; here a longer rest is still grouped, so a short document is not one huge chunk).

Fallbacks (never a crash): a reply without "Answer: ID <n>" (``parse_failures``) or naming a
paragraph that is not in the group or is its first one (``invalid_ids``) cuts the chunk at the
group's end, so the chunk holds at most ``threshold`` tokens. (The authors re-ask the same
prompt, which a greedy or cached model would answer the same way forever.) Every question is
counted in ``llm_calls``; a document cut into sentences in ``sentence_units``.

Each document's next question depends on the previous answer, so questions are sequential per
document; the documents of one ``chunk`` call are stepped together, one batched call per step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.paragraph import ParagraphChunker
from harness.chunking.sentence import sentence_pieces
from harness.chunking.units import Span, require_int
from harness.llm.base import LLM, Sampling
from harness.llm.replies import strip_reasoning
from harness.types import Chunk, Document

# The authors' prompt, verbatim (joaodsmarques/LumberChunker, Code/LumberChunker-Segmentation.py).
PROMPT = """You will receive as input an english document with paragraphs identified by 'ID XXXX: <text>'.

Task: Find the first paragraph (not the first one) where the content clearly changes compared to the previous paragraphs.

Output: Return the ID of the paragraph with the content shift as in the exemplified format: 'Answer: ID XXXX'.

Additional Considerations: Avoid very long groups of paragraphs. Aim for a good balance between identifying content shifts and keeping groups manageable."""

# tokens: the run's model's, on the lines it sees (the LumberChunker paper's ~550 tokens) |
# words_x1.2: round(1.2 x whitespace words), the authors' count_words "1 word ~ 1.2 tokens"
# (HiChunk's lumber_chunk.py and LumberChunker's own code)
THRESHOLD_UNITS = ("tokens", "words_x1.2")
TAIL_UNITS = 5  # the authors' loop stops once this many paragraphs or fewer remain
# "Answer: ID 12" as the authors' regex ("Answer: ID \w+", then its first number) reads it;
# case, spacing, markdown bold and a colon after ID are tolerated.
_ANSWER = re.compile(r"answer\s*:?\s*\**\s*id\s*:?\s*(\d+)", re.IGNORECASE)
_WS = re.compile(r"\s+")


def parse_shift_id(reply: str) -> int | None:
    """The paragraph id of the first "Answer: ID <n>" in ``reply`` (after any ``</think>``), or None."""
    match = _ANSWER.search(strip_reasoning(reply))
    return int(match.group(1)) if match else None


@dataclass
class _Walk:
    """One document's progress: its units, the first unit not yet in a chunk, the chunks so far."""

    doc: Document
    units: list[Span]
    lines: list[str]  # "ID k: text" as the model sees unit k
    sizes: list[int]  # tokens of each line
    pos: int = 0
    cuts: list[Span] = field(default_factory=list)

    def cut(self, end: int) -> None:
        """Chunk the units [pos, end) and continue at ``end``."""
        self.cuts.append((self.units[self.pos][0], self.units[end - 1][1]))
        self.pos = end


class LumberChunker(LLMChunker):
    def __init__(self, llm: LLM, threshold: int = 550, temperature: float = 0.1, max_tokens: int = 64,
                 paragraph_pattern: str = r"\n\s*\n", batch_size: int = 8, threshold_unit: str = "tokens",
                 strip_marks: str = ""):
        super().__init__(llm)
        require(threshold_unit in THRESHOLD_UNITS, f"chunker.threshold_unit must be one of "
                f"{', '.join(THRESHOLD_UNITS)} (got threshold_unit={threshold_unit!r})")
        require(isinstance(strip_marks, str), f"chunker.strip_marks must be a string (got {strip_marks!r})")
        self.threshold_unit, self.strip_marks = threshold_unit, strip_marks
        require_int("threshold", threshold, 1)
        require_int("max_tokens", max_tokens, 1)
        require_int("batch_size", batch_size, 1)
        require(isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature >= 0,
                f"chunker.temperature must be a number >= 0 (got temperature={temperature!r})")
        self.threshold, self.batch_size = threshold, batch_size  # batch_size: documents stepped together
        self.sampling = Sampling(temperature=float(temperature), max_tokens=max_tokens)
        self.paragraphs = ParagraphChunker(pattern=paragraph_pattern, unit="chars")

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        walks = [self._walk(d) for d in docs]
        while True:
            asks: list[tuple[_Walk, int]] = []  # (walk, end of its group)
            for w in walks:
                end = self._settle(w)
                if end is not None:
                    asks.append((w, end))
            if not asks:
                break
            prompts = [[{"role": "user", "content": f"{PROMPT}\nDocument:\n" + "\n".join(w.lines[w.pos:end])}]
                       for w, end in asks]
            for (w, end), reply in zip(asks, self.llm.chat(prompts, self.sampling, desc="lumber")):
                self.count(w.doc.doc_id, "llm_calls")
                shift = parse_shift_id(reply)
                if shift is None:
                    self.count(w.doc.doc_id, "parse_failures")
                elif not w.pos < shift < end:
                    self.count(w.doc.doc_id, "invalid_ids")
                w.cut(shift if shift is not None and w.pos < shift < end else end)
        return [spans_to_chunks(w.doc, w.cuts) for w in walks]

    def _walk(self, doc: Document) -> _Walk:
        units = self.paragraphs.paragraphs(doc.text)
        if len(units) == 1:  # no paragraph break: sentences are the units
            sentences = sentence_pieces(doc.text, units[0][0], units[0][1], doc.language)
            if len(sentences) > 1:
                units = sentences
                self.count(doc.doc_id, "sentence_units")
        # strip_marks: what the model is not shown of a unit's head (HiChunk's code: "# " header marks)
        lines = [f"ID {k}: {_WS.sub(' ', doc.text[s:e]).lstrip(self.strip_marks)}" for k, (s, e) in enumerate(units)]
        sizes = ([self.llm.count_tokens(line) for line in lines] if self.threshold_unit == "tokens"
                 else [round(1.2 * len(line.split())) for line in lines])
        return _Walk(doc, units, lines, sizes)

    def _settle(self, w: _Walk) -> int | None:
        """Cut what needs no question; return the end of the group to ask about, or None when done."""
        while w.pos < len(w.units):
            end, total = w.pos + 1, w.sizes[w.pos]
            while end < len(w.units) and total + w.sizes[end] <= self.threshold:
                total += w.sizes[end]
                end += 1
            if end == len(w.units) and end - w.pos <= TAIL_UNITS:  # a short rest: the last chunk
                w.cut(end)
                break
            if end - w.pos > 1:
                return end
            w.cut(end)  # one unit fills the group: it is a chunk of its own
        return None
