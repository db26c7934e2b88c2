"""DPR's encoders as the original checkpoints define them.

``facebook/dpr-ctx_encoder-*`` and ``facebook/dpr-question_encoder-*`` are not
sentence-transformers models: sentence-transformers loads them through ``AutoModel``,
which maps every ``dpr`` config to ``DPRQuestionEncoder``, so a context encoder loads with
its weights dropped and the question encoder's randomly initialised (verified with
sentence-transformers 6.2 / transformers 5.23). DPR's vector is the [CLS] state of the
last layer (``pooler_output``, no projection in these checkpoints), compared by dot
product without normalisation (Karpukhin et al., 2020).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DPR_ARCHITECTURES = ("DPRContextEncoder", "DPRQuestionEncoder", "DPRReader")


def architectures(path: str, revision: str | None = None) -> list[str]:
    """The ``architectures`` a model folder or Hub id (at ``revision``) declares in its config.json."""
    config = Path(path) / "config.json"
    if config.is_file():
        return json.loads(config.read_text()).get("architectures") or []
    if Path(path).exists():
        return []
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(path, revision=revision).architectures or []


def is_dpr(path: str, revision: str | None = None) -> bool:
    return any(a in DPR_ARCHITECTURES for a in architectures(path, revision))


class DPREncoder:
    """One DPR encoder (question or context, as its checkpoint declares), batched."""

    def __init__(self, path: str, device: str | None = None, revision: str | None = None):
        import torch
        import transformers
        from transformers import AutoTokenizer

        arch = next(a for a in architectures(path, revision) if a in DPR_ARCHITECTURES)
        if arch == "DPRReader":
            raise ValueError(f"{path} is a DPR reader, not a retrieval encoder")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = getattr(transformers, arch).from_pretrained(path, revision=revision).to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path, revision=revision)
        self.max_seq_length = 512  # BERT's limit; the embedder may lower it

    def tokenize(self, texts: Sequence[str]):
        return self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_seq_length,
                              return_tensors="pt")

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return self.tokenize(texts)["attention_mask"].sum(dim=1).tolist()

    def encode(self, texts: Sequence[str], batch_size: int, normalize: bool) -> np.ndarray:
        import torch

        out = []
        for b in range(0, len(texts), batch_size):
            batch = self.tokenize(texts[b:b + batch_size]).to(self.device)
            with torch.inference_mode():
                vecs = self.model(**batch).pooler_output.float()
            if normalize:
                vecs = torch.nn.functional.normalize(vecs, dim=-1)
            out.append(vecs.cpu().numpy())
        return np.concatenate(out).astype(np.float32)
