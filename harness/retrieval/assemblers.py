"""Context assembly: from ranked chunks to the text a responder reads.

``topk``: the k best chunks. ``budget``: ranked chunks are added until the next one
would pass the budget, as the papers do (4096 tokens in HiChunk, 1500 words in LGMGC,
1424 tokens in QChunker); ``overflow=truncate`` instead cuts that chunk to fill the
budget exactly. Chunk order in the context is rank order (the papers'); ``order=document`` puts
the picked chunks in document order instead (by document, then start), so text that runs over a
chunk boundary reads on in the context when both chunks are picked, as a whole-string look-up
(``evidence_recall``, ``evidence_span_recall``) needs: in rank order such evidence is split by
other chunks and missed even with every chunk retrieved.

Every assembler reads the ranking resolved once by :func:`harness.hierarchy.rank` (views
to their content chunk, ``expand`` applied, contained chunks skipped; see that module) and
records it in the context (``Context.ranking``), so ranking metrics read the same ranking
and never assemble again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import replace

from harness.hierarchy import check_expand, check_k, check_k_factor, k_for, rank
from harness.llm.tokens import tokenizer_for
from harness.types import Chunk, ConfigError, Context, Ranking, Retrieved

OVERFLOW = ("stop", "truncate")
ORDERS = ("rank", "document")


class Assembler(ABC):
    def __init__(self, unit: str = "tokens", tokenizer: str = "bundled", separator: str = "\n\n",
                 expand: str = "none", order: str = "rank"):
        if order not in ORDERS:
            raise ConfigError(f"context.order must be one of {', '.join(ORDERS)}; got {order!r}")
        if not isinstance(separator, str):
            raise ConfigError(f"context.separator must be a string (\"\" joins chunks with nothing between "
                              f"them); got {separator!r}")
        self.tokenizer = tokenizer_for(unit, tokenizer)
        self.separator, self.expand, self.order = separator, check_expand(expand), order
        self._sizes: dict[str, int] = {}  # chunk id -> size; chunks recur across queries

    def size(self, chunk: Chunk) -> int:
        if chunk.chunk_id not in self._sizes:
            self._sizes[chunk.chunk_id] = self.tokenizer.count(chunk.text)
        return self._sizes[chunk.chunk_id]

    def holds(self, chunk: Chunk) -> bool:
        """Whether a context can hold ``chunk`` whole: no longer than the budget, where the
        assembler has one (``budget``, in its units). Ranking metrics score a chunk it cannot
        hold as a miss (:meth:`harness.metrics.base.QueryEval.credited`)."""
        budget = getattr(self, "budget", None)
        return budget is None or self.size(chunk) <= budget

    def assemble(self, retrieved: Retrieved, chunks: Mapping[str, Chunk]) -> Context:
        """The context for one query, with the resolved ranking it was built from.
        ``chunks``: every chunk of the run by id, structure nodes included."""
        ranking = rank(retrieved, chunks, self.expand)
        return replace(self.build(ranking, chunks), ranking=ranking)

    @abstractmethod
    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        """The context from the resolved ranking."""

    def _context(self, qid: str, picked: list[tuple[Chunk, int]], merges: int = 0) -> Context:
        """``picked``: (chunk, characters of its text kept from the start), in rank order."""
        if self.order == "document":
            picked = sorted(picked, key=lambda p: (p[0].doc_id, p[0].start))
        texts = [c.text[:n] for c, n in picked]
        spans = tuple(s for c, n in picked for s in c.spans_upto(n))
        n_tokens = sum(self.size(c) if n == len(c.text) else self.tokenizer.count(c.text[:n]) for c, n in picked)
        return Context(qid, tuple(c.chunk_id for c, _ in picked), self.separator.join(texts), n_tokens,
                       spans, merges)

    def fill(self, qid: str, nodes: Sequence[Chunk], budget: int, overflow: str, merges: int = 0) -> Context:
        """Context of ``nodes`` in order, stopping at ``budget`` units: the node that does not
        fit is left out (``stop``) or cut to fill the budget (``truncate``)."""
        picked, used = [], 0
        for chunk in nodes:
            n = self.size(chunk)
            if used + n <= budget:
                picked.append((chunk, len(chunk.text)))
                used += n
                continue
            if overflow == "truncate" and used < budget:
                cut = self.tokenizer.cut(chunk.text, budget - used)
                if cut > 0:
                    picked.append((chunk, cut))
            break
        return self._context(qid, picked, merges)


class TopKAssembler(Assembler):
    """The k best chunks; ``k_factor`` times as many (k drawn first when fractional) for
    MC-indexing's "Atomic Unit: Plus", which retrieves more of the short atomic chunks so the
    context is about as long as k sections (``context=atomic_plus``)."""

    def __init__(self, k: float = 5, unit: str = "tokens", tokenizer: str = "bundled", separator: str = "\n\n",
                 expand: str = "none", seed: int = 0, k_factor: int = 1, order: str = "rank"):
        self.k, self.k_factor = check_k(k), check_k_factor(k_factor)
        super().__init__(unit, tokenizer, separator, expand, order)
        self.seed = seed

    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        k = k_for(self.k, ranking.qid, self.seed) * self.k_factor
        return self._context(ranking.qid, [(chunks[c], len(chunks[c].text)) for c in ranking.chunk_ids[:k]])


class TokenBudgetAssembler(Assembler):
    def __init__(self, budget: int = 4096, unit: str = "tokens", tokenizer: str = "bundled",
                 overflow: str = "stop", separator: str = "\n\n", expand: str = "none", order: str = "rank"):
        self.budget, self.overflow = check_budget(budget, overflow)
        super().__init__(unit, tokenizer, separator, expand, order)

    def build(self, ranking: Ranking, chunks: Mapping[str, Chunk]) -> Context:
        return self.fill(ranking.qid, [chunks[c] for c in ranking.chunk_ids], self.budget, self.overflow)


def check_budget(budget: int, overflow: str) -> tuple[int, str]:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ConfigError(f"context.budget must be an integer > 0, got {budget!r}")
    if overflow not in OVERFLOW:
        raise ConfigError(f"context.overflow must be one of {', '.join(OVERFLOW)}; got {overflow!r}")
    return budget, overflow

