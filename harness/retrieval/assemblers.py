"""Context assembly: from ranked chunks to the text a responder reads.

``topk``: the k best chunks. ``budget``: ranked chunks are added until the next one
would pass the budget, as the papers do (4096 tokens in HiChunk, 1500 words in LGMGC,
1424 tokens in QChunker); ``overflow=truncate`` instead cuts that chunk to fill the
budget exactly. Chunk order in the context is rank order.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.text import Tokenizer
from harness.types import Chunk, ConfigError, Context, Retrieved, Span

OVERFLOW = ("stop", "truncate")


class Assembler:
    def __init__(self, unit: str = "tokens", tokenizer: str = "bundled", separator: str = "\n\n"):
        self.tokenizer = Tokenizer(unit, tokenizer)
        self.separator = separator
        self._sizes: dict[str, int] = {}  # chunk id -> size; chunks recur across queries

    def size(self, chunk: Chunk) -> int:
        if chunk.chunk_id not in self._sizes:
            self._sizes[chunk.chunk_id] = self.tokenizer.count(chunk.text)
        return self._sizes[chunk.chunk_id]

    def assemble(self, retrieved: Retrieved, chunks: Mapping[str, Chunk]) -> Context:
        raise NotImplementedError

    def _context(self, qid: str, picked: list[tuple[Chunk, int]]) -> Context:
        """``picked``: (chunk, characters of it kept from its start)."""
        texts = [c.text[:n] for c, n in picked]
        spans = tuple(Span(c.doc_id, c.start, c.start + n) for c, n in picked)
        n_tokens = sum(self.size(c) if n == len(c.text) else self.tokenizer.count(c.text[:n]) for c, n in picked)
        return Context(qid, tuple(c.chunk_id for c, _ in picked), self.separator.join(texts), n_tokens, spans)


class TopKAssembler(Assembler):
    def __init__(self, k: int = 5, unit: str = "tokens", tokenizer: str = "bundled", separator: str = "\n\n"):
        if k <= 0:
            raise ConfigError(f"context.k must be > 0, got {k}")
        super().__init__(unit, tokenizer, separator)
        self.k = k

    def assemble(self, retrieved: Retrieved, chunks: Mapping[str, Chunk]) -> Context:
        picked = [(chunks[cid], len(chunks[cid].text)) for cid, _ in retrieved.ranked[: self.k]]
        return self._context(retrieved.qid, picked)


class TokenBudgetAssembler(Assembler):
    def __init__(self, budget: int = 4096, unit: str = "tokens", tokenizer: str = "bundled",
                 overflow: str = "stop", separator: str = "\n\n"):
        if budget <= 0:
            raise ConfigError(f"context.budget must be > 0, got {budget}")
        if overflow not in OVERFLOW:
            raise ConfigError(f"context.overflow must be one of {', '.join(OVERFLOW)}; got {overflow!r}")
        super().__init__(unit, tokenizer, separator)
        self.budget, self.overflow = budget, overflow

    def assemble(self, retrieved: Retrieved, chunks: Mapping[str, Chunk]) -> Context:
        picked, used = [], 0
        for cid, _ in retrieved.ranked:
            chunk = chunks[cid]
            n = self.size(chunk)
            if used + n <= self.budget:
                picked.append((chunk, len(chunk.text)))
                used += n
                continue
            if self.overflow == "truncate" and used < self.budget:
                cut = self.tokenizer.cut(chunk.text, self.budget - used)
                if cut > 0:
                    picked.append((chunk, cut))
            break
        return self._context(retrieved.qid, picked)
