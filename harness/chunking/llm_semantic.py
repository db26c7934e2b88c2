"""Chroma's LLMSemanticChunker (Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval",
Chroma 2024, the report's ★ LLM row, GPT-4o): the model names the pieces after which to split.

As the authors' code runs it (``chunking_evaluation/chunking/llm_semantic_chunker.py``):

- The document is cut into pieces of at most ``piece_size`` (50) cl100k tokens by the recursive
  splitter (:mod:`harness.chunking.chroma_pieces`).
- A window starts at the first piece not yet in a chunk (index ``pos``) and takes pieces until
  their tokens pass ``window_tokens`` (800; the piece that passes it is included). Each piece is
  shown as ``<|start_chunk_K|>text<|end_chunk_K|>`` with ``K`` = index + 1, concatenated.
- The model gets the authors' system and user prompts (:data:`SYSTEM`, :data:`USER`, verbatim),
  at temperature 0.2 with 200 reply tokens, and answers ``split_after: 3, 5``. The numbers of the
  first line holding ``split_after:`` are read; they must ascend and be ``>= pos``, else the
  question is asked again with the code's note on the invalid answer (:data:`RETRY`, verbatim,
  its stray backslash included). Since ``K`` is 1-based, ``pos`` is the ID of the piece before
  the window: "split after ``pos``" is the boundary already there.
- The chunk boundaries go after the pieces named; the next window starts after the last one.
  Once fewer than 5 pieces remain (``pos >= n - 4``) no more questions are asked: they end the
  last chunk.

A chunk is the span from its first piece's start to its last piece's end (the code joins the
pieces' texts with spaces).

Where the report and the code differ (``reading``): ``code`` (default) tags pieces as above;
``paper`` tags them as the report prints them, ``<start_chunk_0>text<end_chunk_0>`` with 0-based
IDs (the system prompt names those tags), so "split after ``K``" ends a chunk after piece ``K``.

Where the code would crash or never end, this counts a fallback instead (``take_counts``):

- no ``split_after:`` line with a number (``parse_failures``; the code raises IndexError): the
  window's end is the chunk boundary (``window_cuts``), with no second question (a cached or
  greedy model would answer the same prompt the same way);
- numbers not ascending, below ``pos``, past the window's last ID (the code accepts those and
  jumps over pieces the model never saw) or naming only the boundary before the window (the code
  would ask about the same window forever): ``invalid_replies``, asked again with the note up to
  ``retries`` times (the code: without limit), then the window's end (``window_cuts``).

Every question is counted in ``llm_calls``. Each document's next window depends on the previous
answer, so questions are sequential per document; the documents of one ``chunk`` call are
stepped together, one batched call per step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.chroma_pieces import Pieces, PieceSplitter
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.semantic_breakpoint import groups_from_breaks, require_number
from harness.chunking.units import require_int
from harness.llm.base import LLM, Message, Sampling
from harness.llm.replies import strip_reasoning
from harness.types import Chunk, Document

# The authors' prompts, verbatim but for the tags (llm_semantic_chunker.py, get_prompt).
SYSTEM = (
    "You are an assistant specialized in splitting text into thematically consistent sections. "
    "The text has been divided into chunks, each marked with {start} and {end} tags, where X is the chunk number. "
    "Your task is to identify the points where splits should occur, such that consecutive chunks of similar themes "
    "stay together. "
    "Respond with a list of chunk IDs where you believe a split should be made. For example, if chunks 1 and 2 belong "
    "together but chunk 3 starts a new topic, you would suggest a split after chunk 2. THE CHUNKS MUST BE IN "
    "ASCENDING ORDER."
    "Your response should be in the form: 'split_after: 3, 5'."
)
USER = ("CHUNKED_TEXT: {text}\n\n"
        "Respond only with the IDs of the chunks where you believe a split should occur. YOU MUST RESPOND WITH AT "
        "LEAST ONE SPLIT. THESE SPLITS MUST BE IN ASCENDING ORDER AND EQUAL OR LARGER THAN: {first}.")
RETRY = "\n\\The previous response of {numbers} was invalid. DO NOT REPEAT THIS ARRAY OF NUMBERS. Please try again."
# reading -> (start tag, end tag, ID of the first piece)
TAGS = {"code": ("<|start_chunk_{}|>", "<|end_chunk_{}|>", 1), "paper": ("<start_chunk_{}>", "<end_chunk_{}>", 0)}
TAIL_PIECES = 4  # the code stops asking once `pos >= n - 4`
_SPLIT_AFTER = re.compile(r"split[ _]after\**\s*:", re.IGNORECASE)


def parse_split_after(reply: str) -> list[int] | None:
    """The numbers after ``split_after:`` on the first line that has it (after any ``</think>``),
    or None when no such line holds a number."""
    for line in strip_reasoning(reply).splitlines():
        if match := _SPLIT_AFTER.search(line):
            numbers = [int(n) for n in re.findall(r"\d+", line[match.end():])]
            return numbers or None
    return None


@dataclass
class _Walk:
    """One document's progress: its pieces, the first piece not yet in a chunk, the pieces after
    which a chunk ends, and the invalid answer to the current window's last question."""

    doc: Document
    pieces: Pieces
    pos: int = 0
    ends: list[int] = field(default_factory=list)
    asked: int = 0
    invalid: list[int] | None = None

    def advance(self, ends: list[int]) -> None:
        self.ends += ends
        self.pos, self.asked, self.invalid = ends[-1] + 1, 0, None


class LLMSemanticChunker(LLMChunker):
    def __init__(self, llm: LLM, piece_size: int = 50, window_tokens: int = 800, temperature: float = 0.2,
                 max_tokens: int = 200, retries: int = 1, tokenizer: str = "cl100k", reading: str = "code",
                 batch_size: int = 8):
        super().__init__(llm)
        require(reading in TAGS, f"chunker.reading must be one of {', '.join(TAGS)} (got reading={reading!r})")
        require_int("window_tokens", window_tokens, 1)
        require_number("temperature", temperature, 0)
        require_int("max_tokens", max_tokens, 1)
        require_int("retries", retries, 0)
        require_int("batch_size", batch_size, 1)
        self.pieces = PieceSplitter(piece_size, tokenizer)
        self.window_tokens, self.retries, self.reading = window_tokens, retries, reading
        self.batch_size = batch_size  # documents stepped together
        self.sampling = Sampling(temperature=float(temperature), max_tokens=max_tokens)
        start, end, self.first_id = TAGS[reading]
        self.tags = start, end
        self.system = SYSTEM.format(start=start.format("X"), end=end.format("X"))

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        walks = [_Walk(d, self.pieces.split(d)) for d in docs]
        while asks := [(w, self.window_end(w)) for w in walks if w.pos < len(w.pieces) - TAIL_PIECES]:
            replies = self.llm.chat([self.prompt(w, end) for w, end in asks], self.sampling, desc="llm_semantic")
            for (w, end), reply in zip(asks, replies):
                self.count(w.doc.doc_id, "llm_calls")
                self.read(w, end, reply)
        return [spans_to_chunks(w.doc, [w.pieces.hull(a, b) for a, b in groups_from_breaks(len(w.pieces), w.ends)])
                for w in walks]

    def window_end(self, w: _Walk) -> int:
        """The end (exclusive) of the window from ``w.pos``: pieces until their tokens pass
        ``window_tokens``, that piece included."""
        total, end = 0, w.pos
        while end < len(w.pieces) and total <= self.window_tokens:
            total += w.pieces.tokens[end]
            end += 1
        return end

    def prompt(self, w: _Walk, end: int) -> list[Message]:
        start, stop = self.tags
        tagged = "".join(f"{start.format(k + self.first_id)}{w.pieces.texts[k]}{stop.format(k + self.first_id)}"
                         for k in range(w.pos, end))
        user = USER.format(text=tagged, first=w.pos)
        if w.invalid:
            user += RETRY.format(numbers=w.invalid)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def read(self, w: _Walk, end: int, reply: str) -> None:
        """Split where the reply says, or count the fallback (module docstring)."""
        doc_id = w.doc.doc_id
        numbers = parse_split_after(reply)
        if numbers is None:
            self.count(doc_id, "parse_failures")
            self.count(doc_id, "window_cuts")
            w.advance([end - 1])
            return
        ends = sorted({k - self.first_id for k in numbers if k - self.first_id >= w.pos})
        if numbers == sorted(numbers) and numbers[0] >= w.pos and ends and ends[-1] < end:
            w.advance(ends)
            return
        self.count(doc_id, "invalid_replies")
        w.asked += 1
        w.invalid = numbers
        if w.asked > self.retries:
            self.count(doc_id, "window_cuts")
            w.advance([end - 1])
