"""Library chunkers as ChunkBench chunkers: LangChain's text splitters, Chonkie's chunkers,
LlamaIndex's node parsers, semchunk and semantic-text-splitter.

    pip install -e ".[adapters]"     # the five libraries (not in the base install)
    python -m harness chunker=langchain chunker.splitter=RecursiveCharacterTextSplitter \\
        "chunker.kwargs={chunk_size:1000,chunk_overlap:0}"
    python -m harness chunker=chonkie chunker.name=RecursiveChunker "chunker.kwargs={chunk_size:512}"
    python -m harness chunker=llama_index chunker.parser=SentenceSplitter "chunker.kwargs={chunk_size:256}"
    python -m harness chunker=semchunk chunker.chunk_size=256 chunker.tokenizer=cl100k_base
    python -m harness chunker=text_splitter chunker.capacity=256 chunker.tokenizer=bundled

A chunk's span is the library's own offset (LangChain's ``add_start_index``, Chonkie's
``start_index``/``end_index``, a LlamaIndex node's ``start_char_idx``/``end_char_idx``, semchunk's
``offsets``, semantic-text-splitter's ``chunk_indices``), checked
against the text: a chunk whose text is not at its offsets
is an error naming the library, the document and the chunk, never a search for where it might be.

A library that counts in tiktoken's encodings (LangChain's ``TokenTextSplitter``, LlamaIndex's
splitters, Chonkie given ``tokenizer: cl100k_base``) gets the ones ChunkBench ships (cl100k_base,
o200k_base: :data:`harness.text.TIKTOKEN`), offline; another encoding (LangChain's default
``gpt2``) is downloaded by tiktoken, and where that cannot be, the error says which ones ship.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.chunking.base import Chunker, spans_to_chunks
from harness.text import TIKTOKEN, Tokenizer
from harness.types import Chunk, ConfigError, Document, Unavailable

SHIPPED = {encoding: name for name, encoding in TIKTOKEN.items()}  # tiktoken's name -> harness.text's


def _library(module: str, extra: str = "adapters"):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(f"{module} is not installed: pip install -e \".[{extra}]\" ({e})") from None


def _class(module, name: str, what: str, param: str) -> type:
    found = getattr(module, name, None)
    if not isinstance(found, type):
        raise ConfigError(f"{param}: {module.__name__} has no {what} {name!r}")
    return found


def offline_encoding(encoding: str | None):
    """tiktoken's ``encoding`` from the file ChunkBench ships, None for one it does not ship. Loading
    it through :class:`Tokenizer` unpacks the file where tiktoken looks for its downloads and points
    ``TIKTOKEN_CACHE_DIR`` there, so a library's own ``tiktoken.get_encoding`` finds it too."""
    if encoding not in SHIPPED:
        return None
    Tokenizer("tokens", SHIPPED[encoding])
    import tiktoken

    return tiktoken.get_encoding(encoding)


def _encoding_name(kwargs: dict[str, Any]) -> str | None:
    """The tiktoken encoding LangChain's ``TokenTextSplitter`` loads: its ``encoding_name``, or the
    one tiktoken maps its ``model_name`` to."""
    if kwargs.get("model_name"):
        import tiktoken.model

        try:
            return tiktoken.model.encoding_name_for_model(kwargs["model_name"])
        except KeyError:  # a model tiktoken does not know: LangChain's own error says so
            return None
    return kwargs.get("encoding_name")


def _not_offline(what: str, e: OSError) -> Unavailable:
    return Unavailable(f"chunker.kwargs: {what}: its tiktoken encoding cannot be downloaded here "
                       f"({type(e).__name__}); ChunkBench ships {' and '.join(SHIPPED)}: give one as "
                       f"encoding_name (chunker.kwargs={{...,encoding_name:cl100k_base}})")


def checked_spans(library: str, doc: Document, pieces: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """(text, start, end) per library chunk as spans, each checked to hold its text exactly."""
    spans = []
    for i, (text, start, end) in enumerate(pieces):
        if not (0 <= start <= end <= len(doc.text)) or doc.text[start:end] != text:
            raise ValueError(f"{library} chunk {i} of document {doc.doc_id!r}: its text is not at its offsets "
                             f"[{start}, {end}) (starts {text[:40]!r}, the document there "
                             f"{doc.text[max(start, 0):max(start, 0) + 40]!r})")
        spans.append((start, end))
    return spans


class LangChainChunker(Chunker):
    """A ``langchain_text_splitters`` splitter by class name, its keyword arguments in ``kwargs``
    (``add_start_index`` is always on: it gives the offsets)."""

    def __init__(self, splitter: str = "RecursiveCharacterTextSplitter", kwargs: dict[str, Any] | None = None):
        cls = _class(_library("langchain_text_splitters"), splitter, "text splitter", "chunker.splitter")
        kwargs = dict(kwargs or {})
        offline_encoding(_encoding_name(kwargs))
        try:
            self.splitter = cls(**{**kwargs, "add_start_index": True})
        except (TypeError, ValueError) as e:
            raise ConfigError(f"chunker.kwargs: {splitter}: {e}") from None
        except OSError as e:  # requests' ConnectionError: tiktoken downloading an encoding not shipped
            raise _not_offline(splitter, e) from None

    def chunk_document(self, doc: Document) -> list[Chunk]:
        pieces = [(d.page_content, d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content))
                  for d in self.splitter.create_documents([doc.text])]
        return spans_to_chunks(doc, checked_spans("LangChain", doc, pieces))


class ChonkieChunker(Chunker):
    """A Chonkie chunker by class name (``chonkie.<name>``), its keyword arguments in ``kwargs``
    (``embedding_model: bundled``: the bundled all-MiniLM-L6-v2's folder, offline)."""

    def __init__(self, name: str = "RecursiveChunker", kwargs: dict[str, Any] | None = None):
        cls = _class(_library("chonkie"), name, "chunker", "chunker.name")
        kwargs = dict(kwargs or {})
        if encoding := offline_encoding(kwargs.get("tokenizer")):  # by name, Chonkie fetches it from the Hub
            kwargs["tokenizer"] = encoding
        if kwargs.get("embedding_model") == "bundled":  # ChunkBench's CPU embedder's folder (SemanticChunker)
            from harness.text import bundled_embedder_path

            kwargs["embedding_model"] = str(bundled_embedder_path())
        try:
            self.chunker = cls(**kwargs)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"chunker.kwargs: {name}: {e}") from None

    def chunk_document(self, doc: Document) -> list[Chunk]:
        pieces = [(c.text, c.start_index, c.end_index) for c in self.chunker.chunk(doc.text)]
        return spans_to_chunks(doc, checked_spans("Chonkie", doc, pieces))


class LlamaIndexChunker(Chunker):
    """A LlamaIndex node parser by class name (``llama_index.core.node_parser.<parser>``), its
    keyword arguments in ``kwargs``; a node without offsets is refused like a misplaced one."""

    def __init__(self, parser: str = "SentenceSplitter", kwargs: dict[str, Any] | None = None):
        # LlamaIndex counts in tiktoken's cl100k_base from its own copy, unless TIKTOKEN_CACHE_DIR is
        # set (ChunkBench sets it for its own tiktoken units): then it must be there, offline
        offline_encoding("cl100k_base")
        cls = _class(_library("llama_index.core.node_parser"), parser, "node parser", "chunker.parser")
        self._document = _library("llama_index.core").Document
        try:
            self.parser = cls(**dict(kwargs or {}))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"chunker.kwargs: {parser}: {e}") from None

    def chunk_document(self, doc: Document) -> list[Chunk]:
        nodes = self.parser.get_nodes_from_documents([self._document(text=doc.text)])
        pieces = [(n.get_content(), -1 if n.start_char_idx is None else n.start_char_idx,
                   -1 if n.end_char_idx is None else n.end_char_idx) for n in nodes]
        return spans_to_chunks(doc, checked_spans("LlamaIndex", doc, pieces))



def _token_counter(tokenizer: str, param: str):
    """What a size counts, for the libraries that take a tokenizer object: a tiktoken encoding
    ChunkBench ships, or ``bundled``, the bundled embedder's WordPiece (Hugging Face ``tokenizers``)."""
    if tokenizer == "bundled":
        from tokenizers import Tokenizer as HFTokenizer

        from harness.text import bundled_embedder_path

        hf = HFTokenizer.from_file(str(bundled_embedder_path() / "tokenizer.json"))
        hf.no_truncation()  # a size over the model's input must still be counted whole,
        hf.no_padding()     # and a short one as it is (the file pads every text to 128)
        return hf
    if encoding := offline_encoding(tokenizer):
        return encoding
    raise ConfigError(f"{param}: 'bundled' or a tiktoken encoding ChunkBench ships ({', '.join(SHIPPED)}); "
                      f"got {tokenizer!r}")


class SemchunkChunker(Chunker):
    """semchunk's recursive splitter (``semchunk.chunkerify``): chunks of at most ``chunk_size``
    tokens of ``tokenizer``; ``overlap``, semchunk's (a share of the size when below 1)."""

    def __init__(self, chunk_size: int = 512, tokenizer: str = "cl100k_base", overlap: float | None = None):
        semchunk = _library("semchunk")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ConfigError(f"chunker.chunk_size: a number of tokens above 0, got {chunk_size!r}")
        counter = _token_counter(tokenizer, "chunker.tokenizer")
        if tokenizer == "bundled":  # semchunk takes a callable counter for a tokenizer it does not know
            counter = (lambda hf: lambda text: len(hf.encode(text, add_special_tokens=False).ids))(counter)
        self.chunker = semchunk.chunkerify(counter, chunk_size)
        self.overlap = overlap

    def chunk_document(self, doc: Document) -> list[Chunk]:
        texts, offsets = self.chunker(doc.text, offsets=True, overlap=self.overlap)
        pieces = [(t, start, end) for t, (start, end) in zip(texts, offsets)]
        return spans_to_chunks(doc, checked_spans("semchunk", doc, pieces))


class TextSplitterChunker(Chunker):
    """semantic-text-splitter's ``TextSplitter`` (or ``MarkdownSplitter``): the largest semantic
    units (sentences, then words, graphemes) that fit ``capacity`` of ``tokenizer``: ``characters``,
    ``bundled`` or a shipped tiktoken encoding (the library carries its own copy, offline)."""

    MODELS = {"cl100k_base": "gpt-3.5-turbo", "o200k_base": "gpt-4o"}  # tiktoken's model -> encoding map, inverted

    def __init__(self, capacity: int = 512, tokenizer: str = "characters", splitter: str = "TextSplitter",
                 overlap: int = 0, trim: bool = True):
        cls = _class(_library("semantic_text_splitter"), splitter, "splitter", "chunker.splitter")
        try:
            if tokenizer == "characters":
                self.splitter = cls(capacity, overlap=overlap, trim=trim)
            elif tokenizer in self.MODELS:
                self.splitter = cls.from_tiktoken_model(self.MODELS[tokenizer], capacity, overlap=overlap, trim=trim)
            else:
                self.splitter = cls.from_huggingface_tokenizer(_token_counter(tokenizer, "chunker.tokenizer"),
                                                               capacity, overlap=overlap, trim=trim)
        except (TypeError, ValueError, OverflowError) as e:
            raise ConfigError(f"chunker.capacity/overlap: {splitter}: {e}") from None

    def chunk_document(self, doc: Document) -> list[Chunk]:
        pieces = [(t, start, start + len(t)) for start, t in self.splitter.chunk_indices(doc.text)]
        return spans_to_chunks(doc, checked_spans("semantic-text-splitter", doc, pieces))
