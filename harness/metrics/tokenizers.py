"""Named word tokenizers for the answer metrics: each paper's metric tokenizes its own way,
and a score is only comparable to the paper's with the paper's tokenizer.

- ``whitespace``: ``str.split()``. HiChunk's sentence BLEU; LongBench's English ROUGE (the
  ``rouge`` package splits on spaces itself).
- ``jieba``: ``list(jieba.cut(text))`` as it comes, whitespace and punctuation tokens kept.
  CRUD-RAG's BLEU and ROUGE-L (``src/metric/common.py``), which QChunker's evaluation reuses.
- ``jieba_words``: ``" ".join(jieba.cut(text)).split()``: jieba words, whitespace dropped.
  QChunker's METEOR (``chunk.ipynb``, ``preprocess_text``).

``auto`` (where a metric accepts it) picks ``jieba`` for Chinese and the metric's own English
tokenizer otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.types import ConfigError

Tokenize = Callable[[str], list[str]]


def whitespace(text: str) -> list[str]:
    return text.split()


def jieba_tokens(text: str) -> list[str]:
    import jieba

    return list(jieba.cut(text))  # cut_all=False, HMM=True: jieba's defaults, as every reference uses


def jieba_words(text: str) -> list[str]:
    return " ".join(jieba_tokens(text)).split()


TOKENIZERS: dict[str, Tokenize] = {"whitespace": whitespace, "jieba": jieba_tokens, "jieba_words": jieba_words}


def check_choice(value: str, choices, where: str) -> str:
    """``value`` if it is one of ``choices``, else a ConfigError naming ``where``."""
    if value not in choices:
        raise ConfigError(f"{where} must be one of {sorted(choices)}, got {value!r}")
    return value


def get_tokenizer(name: str, where: str = "tokenizer") -> Tokenize:
    return TOKENIZERS[check_choice(name, TOKENIZERS, where)]
