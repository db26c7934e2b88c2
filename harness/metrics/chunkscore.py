"""ChunkScore (QChunker, Sec. 3.3): a direct, reference-free score of one document's chunking.

- Logical independence (3.3.1): for each of the K-1 internal boundaries,
  ``LI(c_i, c_{i-1}) = PPL(c_i | c_{i-1}) / PPL(c_i)``; ``Phi_LI`` is their arithmetic mean.
  PPL = exp(-mean token log-probability of ``c_i``). The conditional prompt is ``c_{i-1}``
  followed by the document's whitespace between the two chunks (none when they are not
  adjacent in the text: a single space). The unconditional score uses the empty prompt.
  Both come from ``llm.logprobs(prompts, continuations)``; should a backend score one token
  less without a prompt, the two are compared on the continuation's common last tokens.
- Semantic dispersion (3.3.2): Z = the K chunk embeddings as columns (d x K), feature
  centring ``J_d = I_d - 1 1^T / d`` (each embedding minus the mean of its own d
  coordinates, as the paper's J_d z_i), ``Sigma = Z^T J_d Z`` (K x K) and
  ``Phi_SD = (1/K) log det(Sigma + alpha I_K)``; K is the number of chunks, as in the paper.
- ``Phi_CS = lam * Phi_LI + (1 - lam) * Phi_SD`` (3.3.3; lam = 0.3 from Sec. 4.5, alpha = 1e-3).

The chunking scored is the document's retrievable text chunks (``indexed``, ``view ==
"text"``) in text order: the leaves of a structure tree. A multi-granular chunking has
several granularities indexed at once and is scored as one set (not a partition, so
LI's "adjacent" chunks then include a parent and its first child).

Outputs ``chunkscore_sd``, ``chunkscore_li`` and ``chunkscore``. Without an ``llm``
(``llm=none``) only SD is computed and LI and CS are NaN; with a single chunk LI (no
boundary) and CS are NaN; without chunks everything is NaN. Embeddings come from the
configured embedder as-is (the bundled one L2-normalises and truncates at its
max_seq_length), so SD is comparable only between runs with the same embedder.

``embedder`` and ``llm`` are objects (Hydra builds them from ``${embedder}`` and ``${llm}``;
``llm=none`` builds None); a config node is also accepted, a null ``_target_`` meaning none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.metrics.base import DocumentMetric
from harness.types import Chunk, ConfigError, Document


def semantic_dispersion(z: np.ndarray, alpha: float = 1e-3) -> float:
    """``(1/K) log det(Z^T J_d Z + alpha I)`` for ``z`` of shape (K, d), one row per chunk."""
    z = np.asarray(z, dtype=np.float64)
    k = z.shape[0]
    if k == 0:
        return math.nan
    centred = z - z.mean(axis=1, keepdims=True)  # J_d z_i for every chunk
    sign, logdet = np.linalg.slogdet(centred @ centred.T + alpha * np.eye(k))
    return float(logdet / k) if sign > 0 else math.nan


def perplexity_ratio(conditional: Sequence[float], unconditional: Sequence[float]) -> float:
    """``PPL(c | prev) / PPL(c)`` from the continuation's token log-probabilities."""
    n = min(len(conditional), len(unconditional))
    if n == 0:
        return math.nan
    return math.exp(float(np.mean(unconditional[-n:])) - float(np.mean(conditional[-n:])))


def logical_independence(llm: Any, doc: Document, chunks: Sequence[Chunk]) -> float:
    """Mean LI over the K-1 boundaries of ``chunks`` (in order); NaN below two chunks."""
    if len(chunks) < 2:
        return math.nan
    prompts, conts = [], []
    for prev, cur in zip(chunks, chunks[1:]):
        gap = doc.text[prev.end:cur.start] if prev.end <= cur.start else " "
        prompts.append(prev.text + (gap if gap.isspace() or not gap else " "))
        conts.append(cur.text)
    n = len(conts)
    scores = llm.logprobs(prompts + [""] * n, conts + conts)
    ratios = [perplexity_ratio(scores[i], scores[n + i]) for i in range(n)]
    ratios = [r for r in ratios if not math.isnan(r)]
    return float(np.mean(ratios)) if ratios else math.nan


class ChunkScore(DocumentMetric):
    """Document metric: ``chunkscore`` (CS), ``chunkscore_li`` and ``chunkscore_sd``."""

    def __init__(self, embedder: Any, llm: Any = None, lam: float = 0.3, alpha: float = 1e-3):
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not 0 <= lam <= 1:
            raise ConfigError(f"lam must be a number in [0, 1]; got {lam!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
            raise ConfigError(f"alpha must be a number > 0; got {alpha!r}")
        if not isinstance(embedder, SentenceTransformerEmbedder):
            raise ConfigError(f"embedder must build an embedder (embedder: ${{embedder}}); got {embedder!r}")
        if llm is not None and not callable(getattr(llm, "logprobs", None)):  # the LLM interface's scoring
            raise ConfigError(f"llm must build a language model (llm: ${{llm}}) or be null; got {type(llm).__name__}")
        self.embedder, self.llm = embedder, llm
        self.lam, self.alpha = float(lam), float(alpha)

    def keys(self) -> set[str]:
        return {"chunkscore", "chunkscore_li", "chunkscore_sd"}

    def __call__(self, doc: Document, chunks: Sequence[Chunk]) -> dict[str, float]:
        parts = sorted((c for c in chunks if c.indexed and c.view == "text"), key=lambda c: (c.start, c.end))
        nan = math.nan
        if not parts:
            return {"chunkscore": nan, "chunkscore_li": nan, "chunkscore_sd": nan}
        sd = semantic_dispersion(self.embedder.encode([c.text for c in parts]), self.alpha)
        li = logical_independence(self.llm, doc, parts) if self.llm is not None else nan
        cs = sd if self.lam == 0 else self.lam * li + (1 - self.lam) * sd
        return {"chunkscore": cs, "chunkscore_li": li, "chunkscore_sd": sd}
