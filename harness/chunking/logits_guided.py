"""LGMGC's Logits-Guided chunker "LG" and the full LGMGC (Liu et al., Sec. 3.1 and 3.3).

LG: the document is a stream of blocks of at most ``theta`` words of whole sentences. For an
input s_1..s_n and every k, the model's probability of ending its answer right after
s_1..s_k, p([EOS] | rho, s_1 + ... + s_k) (Eq. 1); the chunk ends at the argmax (the
earliest on a tie). What follows the cut makes the next input, by ``window``:

- ``paper`` (Sec. 3.1: "the remaining content is concatenated with the next fixed-size chunk
  to form the input"): the rest of the input followed by the next block, so inputs and
  chunks reach about ``2 * theta`` words. The first input is the first block. A rest of
  ``theta`` words or more is an input by itself (the next block waits): the paper bounds the
  chunk size, and a model that keeps cutting early would otherwise grow the input by a block
  per cut. Once the blocks run out, the rest is cut again while it exceeds ``theta`` words
  (the paper's "until the input falls below a threshold", whose value it does not give).
- ``capped`` (ChunkBench's earlier reading): the rest filled up again with the following
  sentences to at most ``theta`` words, so no chunk exceeds ``theta`` words except a single
  longer sentence; what is left of the document is the last chunk once it fits in ``theta``.

An input of one sentence is a chunk without asking the model.

The paper makes the blocks by recursive chunking and does not publish rho. Here blocks are
greedy packs of whole sentences (the candidate break points are sentence ends either way),
and rho is ``prompt`` (config): with ``chat: true`` it is the user turn of the model's chat
template and the text so far is the start of the assistant's answer, so [EOS] is the
end-of-turn token (``eos: null`` takes the tokenizer's ``eos_token``).

The inputs of all documents of a batch are scored in one ``llm.prefix_logprobs`` call:
the transformers backend reads every sentence end of an input off one forward pass, vLLM
scores the prefixes as a batch; the LLM-call cache makes a rerun free.

LGMGC: the LG chunks are the level-1 parents of the Multi-Granular chunker (Sec. 3.3),
children of theta/2 and theta/4 words below them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.multi_granular import MultiGranularChunker
from harness.chunking.units import UnitIndex, make_tokenizer, require_int
from harness.llm.base import LLM
from harness.text import sentence_spans
from harness.types import Chunk, Document

DEFAULT_PROMPT = "Write a passage of text."
WINDOWS = ("paper", "capped")


@dataclass
class _Walk:
    """One document's progress: its sentences, the first unchunked one (``pos``) and, for
    ``window="paper"``, the end of the blocks read into the input so far (``fed``)."""

    doc: Document
    sentences: list[tuple[int, int]]
    units: UnitIndex
    pos: int = 0
    fed: int = 0
    cuts: list[tuple[int, int]] = field(default_factory=list)

    def count(self, first: int, stop: int) -> int:
        """Units of sentences ``first .. stop - 1``."""
        return self.units.count(self.sentences[first][0], self.sentences[stop - 1][1])

    @property
    def done(self) -> bool:
        return self.pos >= len(self.sentences)


class LogitsGuidedChunker(LLMChunker):
    def __init__(self, llm: LLM, theta: int = 200, window: str = "paper", unit: str = "words",
                 tokenizer: str = "bundled", prompt: str = DEFAULT_PROMPT, chat: bool = True, eos: str | None = None,
                 batch_size: int = 8):
        super().__init__(llm)
        require_int("theta", theta, 1)
        require(window in WINDOWS, f"chunker.window must be one of {', '.join(WINDOWS)} (got window={window!r})")
        require_int("batch_size", batch_size, 1)
        require(isinstance(prompt, str), f"chunker.prompt must be a string, got {prompt!r}")
        self.theta, self.window, self.prompt, self.chat, self._eos = theta, window, prompt, chat, eos
        self.tokenizer = make_tokenizer(unit, tokenizer)
        self.batch_size = batch_size  # documents stepped together by the pipeline

    @property
    def eos(self) -> str:
        eos = self._eos or getattr(getattr(self.llm, "tokenizer", None), "eos_token", None)
        require(bool(eos), "chunker.eos: the model's tokenizer has no eos_token; set chunker.eos")
        return eos

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        walks = [_Walk(d, sentence_spans(d.text, d.language), UnitIndex(d.text, self.tokenizer)) for d in docs]
        head = self.llm.apply_chat_template([{"role": "user", "content": self.prompt}]) if self.chat \
            else self.prompt + "\n\n"
        while True:
            # Each active document offers one window; all their prefixes are scored at once.
            asks: list[_Walk] = []
            prompts: list[tuple[str, str, list[int], str]] = []  # (rho, window, sentence ends, [EOS])
            for w in walks:
                if w.done:
                    continue
                n, last = self._input(w)
                if last or n == 1:
                    # The last chunk, or one sentence fills the input: nothing to choose.
                    self._cut(w, n)
                    continue
                start = w.sentences[w.pos][0]
                end = w.sentences[w.pos + n - 1][1]
                cuts = [w.sentences[w.pos + k][1] - start for k in range(n)]
                prompts.append((head, w.doc.text[start:end], cuts, self.eos))
                asks.append(w)
                self.count(w.doc.doc_id, "windows")
            if not asks and all(w.done for w in walks):
                break
            if not asks:
                continue
            scores = self.llm.prefix_logprobs(prompts, desc="logits-guided")
            for w, window in zip(asks, scores):
                self._cut(w, int(np.argmax(window)) + 1)
        return [spans_to_chunks(w.doc, w.cuts, level=1) for w in walks]

    def _input(self, w: _Walk) -> tuple[int, bool]:
        """The sentences of the next input from ``w.pos`` (reading the next block into it, for
        ``window="paper"``) and whether they are the document's last chunk."""
        if self.window == "capped":
            n = self._fill(w, w.pos)
            return n, w.pos + n == len(w.sentences)
        if w.fed < len(w.sentences) and (w.fed == w.pos or w.count(w.pos, w.fed) < self.theta):
            w.fed += self._fill(w, w.fed)
        return w.fed - w.pos, w.fed == len(w.sentences) and w.count(w.pos, w.fed) <= self.theta

    def _fill(self, w: _Walk, first: int) -> int:
        """How many sentences from ``first`` fit in ``theta`` units (at least one)."""
        n = 1
        while first + n < len(w.sentences) and w.count(first, first + n + 1) <= self.theta:
            n += 1
        return n

    @staticmethod
    def _cut(w: _Walk, k: int) -> None:
        w.cuts.append((w.sentences[w.pos][0], w.sentences[w.pos + k - 1][1]))
        w.pos += k


class LGMGCChunker(LogitsGuidedChunker):
    """LGMGC (Sec. 3.3): logits-guided parents (up to about ``2 * theta`` words with
    ``window="paper"``, at most ``theta`` with ``"capped"``), multi-granular
    children of ``theta // d`` words for each of ``divisors`` (pair with context=parent_max)."""

    def __init__(self, llm: LLM, theta: int = 200, divisors: Sequence[int] = (2, 4), window: str = "paper",
                 unit: str = "words", tokenizer: str = "bundled", prompt: str = DEFAULT_PROMPT, chat: bool = True,
                 eos: str | None = None, batch_size: int = 8):
        super().__init__(llm, theta, window, unit, tokenizer, prompt, chat, eos, batch_size)
        self.granular = MultiGranularChunker(theta, divisors, unit, tokenizer)

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        return [self.granular.with_children(d, parents) for d, parents in zip(docs, super().chunk(docs))]
