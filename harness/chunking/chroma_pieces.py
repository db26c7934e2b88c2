"""The small pieces Chroma's three chunkers start from (Smith & Troynikov, "Evaluating Chunking
Strategies for Retrieval", Chroma 2024; the authors' code: github.com/brandonstarxel/chunking_evaluation).

ClusterSemantic, KamradtModified and LLMSemantic each first cut a document with the authors'
``RecursiveTokenChunker`` (their copy of LangChain's ``RecursiveCharacterTextSplitter``) at
``chunk_size=50``, ``chunk_overlap=0``, length = cl100k tokens (``openai_token_count``), separators
``["\\n\\n", "\\n", ".", "?", "!", " ", ""]`` (the cluster chunker passes them; they are the class's
default, which the other two use), each separator kept at the start of the piece after it. That is
:class:`~harness.chunking.recursive.RecursiveChunker` with ``style=langchain`` and these settings,
on spans: a piece is its span, whitespace trimmed (the authors' pieces are stripped text).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.chunking.recursive import RecursiveChunker
from harness.chunking.units import Span, require_int
from harness.types import Document

# The report's separators for every recursive split (LangChain's default lacks ".", "?", "!").
CHROMA_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


@dataclass(frozen=True)
class Pieces:
    """A document's pieces: spans, texts and tokens (each piece counted on its own, as the
    authors' length function counts it)."""

    spans: list[Span]
    texts: list[str]
    tokens: list[int]

    def __len__(self) -> int:
        return len(self.spans)

    def hull(self, first: int, last: int) -> Span:
        """The span from piece ``first``'s start to piece ``last``'s end."""
        return self.spans[first][0], self.spans[last][1]


class PieceSplitter:
    """Cuts a document into pieces of at most ``size`` tokens (see the module docstring)."""

    def __init__(self, size: int = 50, tokenizer: str = "cl100k"):
        require_int("piece_size", size, 1)
        self.recursive = RecursiveChunker(size=size, overlap=0, unit="tokens", tokenizer=tokenizer,
                                          separators=CHROMA_SEPARATORS, style="langchain")
        self.tokenizer = self.recursive.tokenizer

    def split(self, doc: Document) -> Pieces:
        chunks = self.recursive.chunk_document(doc)
        texts = [c.text for c in chunks]
        return Pieces([(c.start, c.end) for c in chunks], texts, self.tokenizer.count_many(texts))
