"""The work each chunking method does per 1,000 document tokens, measured once on bundled
documents by running the method's own code with recording stand-ins for its models
(``scripts/measure_method_work.py`` writes :data:`METHOD_WORK`; ``tables plan`` reads it).

The stand-in LLM records every prompt each method builds (tokens counted with tiktoken's
cl100k_base, the vocabulary Qwen's tokenizer starts from) and the reply budget of each call
(``max_tokens``), and replies with nothing: each method then takes its no-answer path, so a
window advances by its full length (LumberChunker and HiChunk move on from where the model
cut, so a real model makes at least as many calls: the counts are a lower bound there), and
calls that exist only for chunks the model names (QChunker's review and rewrite of each chunk)
follow the method's fallback chunks. Generated tokens are not measured (no model runs): a
call's reply budget is its upper bound. The stand-in embedder records the texts a method
embeds (counted in MiniLM's WordPiece, the BERT vocabulary of the BGE/E5/GTE English models)
and returns unit vectors drawn from each text's hash, so what a method embeds does not
depend on the vectors, except RAPTOR's clusters (their number follows the vectors).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from harness.llm.base import LLM, Message, Sampling
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.text import Tokenizer

METHOD_WORK = Path(__file__).with_name("method_work.json")
LLM_TOKENIZER, ENCODER_TOKENIZER = "cl100k", "bundled"


class _Tokens:
    """What a backend's Hugging Face tokenizer answers, from a ChunkBench tokenizer (ids are
    positions: only counts and offsets are read)."""

    eos_token = "<|im_end|>"   # a chat model's end of turn (LGMGC scores p(eos | prefix))

    def __init__(self, tokenizer: Tokenizer):
        self.t = tokenizer

    def __call__(self, text: str, add_special_tokens: bool = True, return_offsets_mapping: bool = False):
        spans = self.t.spans(text)
        out = {"input_ids": list(range(len(spans)))}
        if return_offsets_mapping:
            out["offset_mapping"] = spans
        return out


class RecordingLLM(LLM):
    """Records each call's prompt tokens and reply budget; replies with nothing."""

    def __init__(self):
        super().__init__("recording stand-in", batch_size=1 << 30)
        self.tokens = Tokenizer("tokens", LLM_TOKENIZER)
        self.calls: list[dict[str, Any]] = []

    @property
    def tokenizer(self):
        return _Tokens(self.tokens)

    def apply_chat_template(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + ("<|assistant|>\n" if add_generation_prompt else "")

    def _record(self, op: str, text: str, max_tokens: int = 0) -> None:
        self.calls.append({"op": op, "prompt": self.tokens.count(text), "max_tokens": max_tokens})

    def _generate(self, prompts: list[str], sampling: Sampling) -> list[str]:
        for p in prompts:
            self._record("generate", p, sampling.max_tokens)
        return [""] * len(prompts)

    def _chat(self, conversations: list[list[Message]], sampling: Sampling) -> list[str]:
        for c in conversations:
            self._record("chat", self.apply_chat_template(c), sampling.max_tokens)
        return [""] * len(conversations)

    def _logprobs(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        for p, c in zip(prompts, continuations):
            self._record("score", p + c)
        return [[0.0] * max(1, self.tokens.count(c)) for c in continuations]

    def _token_logprobs(self, texts: list[str]) -> list[list[float]]:
        for t in texts:
            self._record("score", t)
        return [[0.0] * self.tokens.count(t) for t in texts]

    def _prefix_logprobs(self, items: list[list]) -> list[list[float]]:
        for p, t, cuts, _ in items:  # one forward pass reads every cut (the backends that can)
            self._record("score", p + t)
        return [[0.0] * len(cuts) for _, _, cuts, _ in items]


class RecordingEmbedder(SentenceTransformerEmbedder):
    """Records the texts a method embeds; returns each text's own pseudo-random unit vector."""

    def __init__(self, dim: int = 384):
        super().__init__("bundled", batch_size=1)
        self.dim, self.texts = dim, []

    def encode(self, texts: Sequence[str], desc: str = "embed", normalize: bool = True) -> np.ndarray:
        self.texts += list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:16], 16)).standard_normal(self.dim)
                for t in texts]
        v = np.asarray(rows, dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def scalars(node: Any, prefix: str = "") -> dict[str, Any]:
    """A config node's settings by dotted path (nested chunkers included; a list is one setting,
    e.g. multi_view's ``views``, which tells the LLM views from the TF-IDF ones)."""
    out = {}
    for k, v in (node or {}).items():
        if isinstance(v, dict):
            out.update(scalars(v, f"{prefix}{k}."))
        elif k not in ("cache",):
            out[f"{prefix}{k}"] = list(v) if isinstance(v, (list, tuple)) else v
    return out


def measure_method(choice: str, docs, encoder: Tokenizer) -> dict[str, Any]:
    """One chunker choice run on ``docs`` with the recording stand-ins: its work per 1,000 cl100k
    document tokens."""
    from hydra.utils import instantiate

    from harness.pipeline.components import resolve_reader
    from harness import registry

    cfg = resolve_reader(registry.compose([f"chunker={choice}"]))
    node = OmegaConf.to_container(cfg.chunker, resolve=False)
    llm, embedder = RecordingLLM(), RecordingEmbedder()
    kwargs = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if k in node}
    chunker = instantiate(cfg.chunker, _convert_="all", **kwargs)
    chunks = []
    for i in range(0, len(docs), max(1, int(getattr(chunker, "batch_size", 1)))):
        for doc_chunks in chunker.chunk(docs[i:i + max(1, int(getattr(chunker, "batch_size", 1)))]):
            chunks += doc_chunks
    # the chunker's own settings (its model nodes' are the stand-ins', not the method's)
    settings = {k: v for k, v in scalars(OmegaConf.to_container(cfg.chunker, resolve=True)).items()
                if not k.startswith(("llm.", "embedder."))}
    doc_k = sum(llm.tokens.count(d.text) for d in docs) / 1000
    by_param, unattributed = Counter(), 0
    for c in llm.calls:
        if not c["max_tokens"]:
            continue
        names = [k for k, v in settings.items() if v == c["max_tokens"] and "max_tokens" in k or
                 (v == c["max_tokens"] and k.endswith("length"))]
        if len(names) == 1:
            by_param[names[0]] += 1
        else:
            unattributed += c["max_tokens"]
    per = {
        "llm_calls": sum(c["op"] != "score" for c in llm.calls) / doc_k,
        "llm_prompt": sum(c["prompt"] for c in llm.calls if c["op"] != "score") / doc_k,
        "llm_scored": sum(c["prompt"] for c in llm.calls if c["op"] == "score") / doc_k,
        "llm_calls_by_budget": {k: n / doc_k for k, n in by_param.items()},
        "llm_decode_unattributed": unattributed / doc_k,
        "embedded": sum(encoder.count_many(embedder.texts)) / doc_k,
        "indexed": sum(encoder.count_many([c.text for c in chunks if c.indexed])) / doc_k,
    }
    return {"target": str(node.get("_target_")), "uses_llm": "llm" in node, "uses_embedder": "embedder" in node,
            "settings": {k: v for k, v in settings.items() if not isinstance(v, str) or "${" not in v},
            "per_1k_doc_tokens": {k: (round(v, 4) if isinstance(v, float) else {a: round(b, 4) for a, b in v.items()})
                                  for k, v in per.items()}}


def measure_all(choices: Sequence[str], dataset: Sequence[str] = ("dataset=ohrbench",), log=print) -> dict[str, Any]:
    """Every chunker choice on the bundled documents of ``dataset``; the corpus's token and word
    counts, which the plan uses to turn a paper's words per document into tokens."""
    from harness.pipeline.components import build_component
    from harness import registry
    from harness.text import sentence_spans

    cfg = registry.compose(list(dataset))
    loaded = build_component(cfg.dataset, "dataset").load()
    docs, questions = loaded.documents, loaded.queries
    llm_tok, encoder = Tokenizer("tokens", LLM_TOKENIZER), Tokenizer("tokens", ENCODER_TOKENIZER)
    words = sum(len(d.text.split()) for d in docs)
    sentences = sum(len(sentence_spans(d.text, d.language)) for d in docs)
    cl100k = sum(llm_tok.count(d.text) for d in docs)
    out = {
        "script": "scripts/measure_method_work.py",
        "corpus": f"{' '.join(dataset)} (bundled): {len(docs)} documents, {words} words, {sentences} sentences, "
                  f"{cl100k} cl100k tokens",
        "tokenizers": {"llm": "tiktoken cl100k_base", "encoder": "all-MiniLM-L6-v2 WordPiece (BERT uncased)"},
        "cl100k_per_word": round(cl100k / words, 4),
        "wordpiece_per_cl100k": round(sum(encoder.count(d.text) for d in docs) / cl100k, 4),
        "words_per_sentence": round(words / sentences, 3),
        "question_cl100k": round(sum(llm_tok.count(q.question) for q in questions) / max(1, len(questions)), 2),
        **zh_ratio(),
        "methods": {},
    }
    for choice in choices:
        log(f"measuring {choice} ...")
        try:
            out["methods"][choice] = measure_method(choice, docs, encoder)
        except Exception as e:  # one method's failure is recorded (the plan says its work is unknown)
            log(f"  {choice} failed: {type(e).__name__}: {e}")
            out["methods"][choice] = {"target": None, "error": f"{type(e).__name__}: {' '.join(str(e).split())}"}
    return out


def zh_ratio(dataset: Sequence[str] = ("dataset=crud",)) -> dict[str, Any]:
    """cl100k tokens per character of Chinese text, on the bundled Chinese documents: what turns
    a Chinese dataset's published length (LongBench counts characters) into tokens."""
    from harness.pipeline.components import build_component
    from harness import registry

    docs = build_component(registry.compose(list(dataset)).dataset, "dataset").load().documents
    chars, tokens = sum(len(d.text) for d in docs), sum(Tokenizer("tokens", LLM_TOKENIZER).count(d.text) for d in docs)
    return {"cl100k_per_zh_char": round(tokens / chars, 4),
            "zh_corpus": f"{' '.join(dataset)} (bundled): {len(docs)} documents, {chars} characters, {tokens} cl100k tokens"}


def load_method_work(path: Path = METHOD_WORK) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
