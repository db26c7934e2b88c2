"""Embedding-based answer metrics of Qu et al. ("Is semantic chunking worth...", Appendix D,
Tables 3 and 7): BERTScore between answer and gold answer, and the cosine similarity between
query and answer ("QA Similarity").

BERTScore is the ``bert-score`` package's ``BERTScorer`` (greedy token matching of one layer's
contextual embeddings; no idf weighting, no baseline rescaling: the package's defaults). Qu et
al. used ``microsoft/deberta-xlarge-mnli`` (layer 40, from the package's table: a GPU model);
the CPU default is the bundled all-MiniLM-L6-v2 folder, which needs ``num_layers`` (6 = its
last layer). Everything loads from local files; a Hub id works only when already cached.
With several gold answers P, R and F1 are each the maximum over them, as ``bert_score.score``
does for multiple references. A blank answer scores 0 (bert-score's rule for an empty
candidate; its own code path for it fails under transformers 5), blank gold answers are
skipped.

QA similarity embeds the question and the answer with the run's embedder (normalised
vectors, so the dot product is the cosine); a blank answer scores 0.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from harness.metrics.answers import NAN, answer_inputs, nan_scores
from harness.metrics.base import QueryEval, QueryMetric
from harness.text import resolve_model
from harness.types import ConfigError

BERTSCORE_KEYS = ("p", "r", "f1")


@lru_cache(maxsize=2)
def _bert_scorer(path: str, num_layers: int, batch_size: int, device: str | None, max_length: int | None):
    from bert_score import BERTScorer

    scorer = BERTScorer(model_type=path, num_layers=num_layers, batch_size=batch_size, device=device)
    if max_length:
        scorer._tokenizer.model_max_length = max_length
    return scorer


def bertscore(prediction: str, references: list[str], model: str = "bundled", num_layers: int = 6,
              batch_size: int = 64, device: str | None = None, max_length: int | None = None) -> dict[str, float]:
    """BERTScore P, R, F1 of ``prediction`` against ``references`` (each the max over them)."""
    refs = [r for r in references if r.strip()]
    if not refs:
        return {k: NAN for k in BERTSCORE_KEYS}
    if not prediction.strip():
        return {k: 0.0 for k in BERTSCORE_KEYS}
    scorer = _bert_scorer(resolve_model(model), num_layers, batch_size, device, max_length)
    p, r, f = scorer.score([prediction], [refs], batch_size=batch_size)  # the package's multi-reference max
    return {"p": float(p[0]), "r": float(r[0]), "f1": float(f[0])}


def default_num_layers(model: str) -> int | None:
    """bert-score's tuned layer for a model it knows (by Hub id), else None."""
    from bert_score.utils import model2layers

    return model2layers.get(model)


class BertScore(QueryMetric):
    """BERTScore P/R/F1 (keys ``<name>_p``, ``<name>_r``, ``<name>_f1``).

    - ``model``: ``bundled``, a local model folder or a (cached) Hub id.
    - ``num_layers``: which layer's embeddings; required unless bert-score's table knows the model.
    - ``batch_size``, ``device`` (null = cuda when available), ``max_length`` (null = the
      tokenizer's own limit; longer texts are truncated, as in bert-score).
    """

    def __init__(self, model: str = "bundled", num_layers: int | None = None, batch_size: int = 64,
                 device: str | None = None, max_length: int | None = None, name: str = "bertscore"):
        if num_layers is None:
            num_layers = default_num_layers(model)
            if num_layers is None:
                raise ConfigError(f"num_layers: required for model {model!r}, which bert-score's table does not "
                                  "know (6 = the last layer of the bundled MiniLM)")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ConfigError(f"num_layers must be a positive integer, got {num_layers!r}")
        if batch_size <= 0:
            raise ConfigError(f"batch_size must be > 0, got {batch_size}")
        if max_length is not None and max_length <= 0:
            raise ConfigError(f"max_length must be > 0 or null, got {max_length}")
        path = resolve_model(model)
        if (model == "bundled" or model.startswith((".", "/"))) and not Path(path).is_dir():
            raise ConfigError(f"model: no model folder at {path}")
        self.model, self.num_layers, self.batch_size, self.device = model, num_layers, batch_size, device
        self.max_length, self.name = max_length, name

    def keys(self) -> set[str]:
        return {f"{self.name}_{k}" for k in BERTSCORE_KEYS}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item)
        if inp is None:
            return nan_scores(self.keys())
        s = bertscore(inp.prediction, list(inp.golds), self.model, self.num_layers, self.batch_size, self.device,
                      self.max_length)
        return {f"{self.name}_{k}": s[k] for k in BERTSCORE_KEYS}


def qa_similarity(embedder, question: str, answer: str) -> float:
    """Cosine similarity of the question's and the answer's embeddings (0 for a blank answer)."""
    if not answer.strip():
        return 0.0
    q, a = np.asarray(embedder.encode([question, answer]), dtype=np.float64)
    return float(q @ a / (np.linalg.norm(q) * np.linalg.norm(a)))


class QASimilarity(QueryMetric):
    """Query-answer cosine similarity (Qu et al. Table 7) with ``embedder`` (the run's:
    ``embedder: ${embedder}`` in the config; default the bundled model)."""

    def __init__(self, embedder=None, name: str = "qa_similarity"):
        if embedder is None:
            from harness.embedding.embedder import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder(model="bundled")
        if not callable(getattr(embedder, "encode", None)):
            raise ConfigError(f"embedder must have an encode(texts) method, got {type(embedder).__name__}")
        self.embedder, self.name = embedder, name

    def keys(self) -> set[str]:
        return {self.name}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item, need_gold=False)
        if inp is None:
            return nan_scores([self.name])
        return {self.name: qa_similarity(self.embedder, item.query.question, inp.prediction)}
