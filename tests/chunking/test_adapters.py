"""LangChain's and Chonkie's chunkers as ChunkBench chunkers (harness/chunking/adapters.py): the
libraries' own offsets, checked against the text, held to the span contract like every chunker."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given

from harness.chunking import adapters
from harness.chunking.base import check_chunks
from harness.data.ohrbench import OHRBench
from harness.types import ConfigError, Document

from tests.chunking.test_chunk_properties import FAST, documents

pytest.importorskip("langchain_text_splitters")
pytest.importorskip("chonkie")
pytest.importorskip("llama_index.core")
pytest.importorskip("semchunk")
pytest.importorskip("semantic_text_splitter")

LIBRARY = [
    ("langchain", lambda: adapters.LangChainChunker("RecursiveCharacterTextSplitter", {"chunk_size": 300, "chunk_overlap": 0})),
    ("langchain", lambda: adapters.LangChainChunker("RecursiveCharacterTextSplitter", {"chunk_size": 200, "chunk_overlap": 50})),
    ("langchain", lambda: adapters.LangChainChunker("MarkdownTextSplitter", {"chunk_size": 300, "chunk_overlap": 0})),
    ("chonkie", lambda: adapters.ChonkieChunker("RecursiveChunker", {"chunk_size": 256})),
    ("chonkie", lambda: adapters.ChonkieChunker("TokenChunker", {"chunk_size": 200, "chunk_overlap": 20})),
    ("chonkie", lambda: adapters.ChonkieChunker("SentenceChunker", {"chunk_size": 300})),
    ("llama_index", lambda: adapters.LlamaIndexChunker("SentenceSplitter", {"chunk_size": 128, "chunk_overlap": 16})),
    ("llama_index", lambda: adapters.LlamaIndexChunker("TokenTextSplitter", {"chunk_size": 96, "chunk_overlap": 0})),
    ("semchunk", lambda: adapters.SemchunkChunker(128, "cl100k_base")),
    ("semchunk", lambda: adapters.SemchunkChunker(96, "bundled")),
    ("semchunk", lambda: adapters.SemchunkChunker(128, "o200k_base", overlap=0.25)),
    ("semantic_text_splitter", lambda: adapters.TextSplitterChunker(400)),
    ("semantic_text_splitter", lambda: adapters.TextSplitterChunker(96, "bundled")),
    ("semantic_text_splitter", lambda: adapters.TextSplitterChunker(128, "cl100k_base", "MarkdownSplitter", overlap=16)),
]
IDS = ["lc-recursive", "lc-recursive-overlap", "lc-markdown", "chonkie-recursive", "chonkie-token", "chonkie-sentence",
       "li-sentence", "li-token", "semchunk-cl100k", "semchunk-bundled", "semchunk-o200k-overlap", "sts-chars",
       "sts-bundled", "sts-markdown-cl100k-overlap"]


@pytest.fixture(scope="module")
def real_documents():
    """The bundled OHR-Bench pages, real text in the publisher's layout (tables, lists, headings)."""
    return OHRBench().load().documents


@pytest.mark.parametrize("make", [m for _, m in LIBRARY], ids=IDS)
def test_library_chunkers_keep_the_span_contract_on_real_pages(make, real_documents):
    chunker = make()
    for doc in real_documents:
        chunks = chunker.chunk_document(doc)
        assert chunks, doc.doc_id
        check_chunks(doc, chunks)
        assert all(doc.text[c.start:c.end] == c.text for c in chunks)


@pytest.mark.parametrize("make", [m for _, m in LIBRARY], ids=IDS)
@FAST
@given(doc=documents)
def test_library_chunkers_keep_the_span_contract_on_generated_text(make, doc):
    check_chunks(doc, make().chunk_document(doc))


def test_chonkies_semantic_chunker_runs_on_the_bundled_embedder(real_documents):
    from harness.text import bundled_embedder_path

    chunker = adapters.ChonkieChunker("SemanticChunker", {"embedding_model": str(bundled_embedder_path()),
                                                          "chunk_size": 256, "threshold": 0.5})
    doc = min(real_documents, key=lambda d: len(d.text))  # a page: every sentence is embedded on 2 cores
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks)
    assert len(chunks) > 1


class Misplaced:
    """A splitter whose second chunk's offset is off by one (as a library bug would be)."""

    def create_documents(self, texts):
        text = texts[0]
        return [SimpleNamespace(page_content=text[:10], metadata={"start_index": 0}),
                SimpleNamespace(page_content=text[10:20], metadata={"start_index": 11})]


def test_a_chunk_not_at_its_offsets_is_an_error_naming_it():
    chunker = adapters.LangChainChunker("RecursiveCharacterTextSplitter")
    chunker.splitter = Misplaced()
    doc = Document("d7", "abcdefghijklmnopqrstuvwxyz")
    with pytest.raises(ValueError, match=r"LangChain chunk 1 of document 'd7': its text is not at its offsets \[11, 21\)"):
        chunker.chunk_document(doc)


def test_a_library_chunk_that_is_not_document_text_is_refused(real_documents):
    """LangChain's CharacterTextSplitter joins its splits with the separator: where a page has a
    blank line, a chunk holds text the page does not, and LangChain's own offset is -1."""
    chunker = adapters.LangChainChunker("CharacterTextSplitter", {"separator": "\n", "chunk_size": 300, "chunk_overlap": 0})
    doc = next(d for d in real_documents if d.doc_id == "finance/AMAZON_2019_10K")
    with pytest.raises(ValueError, match=r"LangChain chunk 0 of document 'finance/AMAZON_2019_10K': its text is not at "
                                         r"its offsets \[-1, "):
        chunker.chunk_document(doc)


@pytest.mark.parametrize("make, message", [
    (lambda: adapters.LangChainChunker("NoSuchSplitter"), "chunker.splitter: langchain_text_splitters has no text splitter 'NoSuchSplitter'"),
    (lambda: adapters.ChonkieChunker("NoSuchChunker"), "chunker.name: chonkie has no chunker 'NoSuchChunker'"),
    (lambda: adapters.LlamaIndexChunker("NoSuchParser"), "chunker.parser: llama_index.core.node_parser has no node parser"),
    (lambda: adapters.ChonkieChunker("TokenChunker", {"colour": 1}), "chunker.kwargs: TokenChunker"),
    (lambda: adapters.LangChainChunker("RecursiveCharacterTextSplitter", {"chunk_size": 10, "chunk_overlap": 20}),
     "chunker.kwargs: RecursiveCharacterTextSplitter"),
    (lambda: adapters.SemchunkChunker(0), "chunker.chunk_size: a number of tokens above 0, got 0"),
    (lambda: adapters.SemchunkChunker(128, "gpt2"), "chunker.tokenizer: 'bundled' or a tiktoken encoding ChunkBench ships"),
    (lambda: adapters.TextSplitterChunker(128, splitter="CodeSplitterX"), "chunker.splitter: semantic_text_splitter has no "
                                                                           "splitter 'CodeSplitterX'"),
    (lambda: adapters.TextSplitterChunker(100, overlap=200), "chunker.capacity/overlap: TextSplitter: "),
])
def test_a_bad_adapter_config_is_one_line(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_the_adapters_compose_from_their_configs():
    from harness.pipeline.components import build_component
    from harness.registry import compose

    cfg = compose(["chunker=langchain", "chunker.splitter=CharacterTextSplitter", "chunker.kwargs={chunk_size:300,separator:'\\n'}"])
    lc = build_component(cfg.chunker, "chunker")
    assert lc.splitter._chunk_size == 300
    cfg = compose(["chunker=chonkie", "chunker.name=TokenChunker", "chunker.kwargs={chunk_size:128}"])
    assert build_component(cfg.chunker, "chunker").chunker.chunk_size == 128
    cfg = compose(["chunker=llama_index", "chunker.kwargs={chunk_size:200,chunk_overlap:0}"])
    assert build_component(cfg.chunker, "chunker").parser.chunk_size == 200
    assert build_component(compose(["chunker=semchunk", "chunker.chunk_size=64"]).chunker, "chunker").chunker.chunk_size == 64
    text_splitter = build_component(compose(["chunker=text_splitter", "chunker.capacity=40"]).chunker, "chunker")
    assert max(len(t) for t in text_splitter.splitter.chunks("word " * 200)) <= 40


@pytest.fixture
def offline_tiktoken(tmp_path, monkeypatch):
    """tiktoken with an empty download cache and no network: only the encodings ChunkBench ships
    (unpacked by the adapters from bpe-openai) can load."""
    import tiktoken.load
    import tiktoken.registry

    from harness.text import _tiktoken

    def no_network(url):
        raise ConnectionError(f"offline: {url}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    _tiktoken.cache_clear()
    yield
    _tiktoken.cache_clear()


@pytest.mark.parametrize("make", [
    lambda: adapters.LangChainChunker("TokenTextSplitter", {"chunk_size": 200, "chunk_overlap": 0,
                                                             "encoding_name": "cl100k_base"}),
    lambda: adapters.ChonkieChunker("TokenChunker", {"chunk_size": 200, "chunk_overlap": 20, "tokenizer": "o200k_base"}),
    lambda: adapters.LlamaIndexChunker("TokenTextSplitter", {"chunk_size": 96, "chunk_overlap": 0}),
    lambda: adapters.LangChainChunker("TokenTextSplitter", {"chunk_size": 200, "chunk_overlap": 0, "model_name": "gpt-4o"}),
], ids=["lc-token-cl100k", "chonkie-token-o200k", "li-token", "lc-token-model-name"])
def test_token_splitters_count_in_the_shipped_tiktoken_encodings_offline(make, offline_tiktoken, real_documents):
    chunker = make()
    for doc in real_documents:
        chunks = chunker.chunk_document(doc)
        assert chunks, doc.doc_id
        check_chunks(doc, chunks)


def test_an_encoding_that_does_not_ship_is_one_line_naming_those_that_do(offline_tiktoken):
    from harness.types import Unavailable

    with pytest.raises(Unavailable, match=r"^chunker.kwargs: TokenTextSplitter: its tiktoken encoding cannot be "
                                          r"downloaded here \(ConnectionError\); ChunkBench ships cl100k_base and "
                                          r"o200k_base: give one as encoding_name"):
        adapters.LangChainChunker("TokenTextSplitter", {"chunk_size": 200})  # LangChain's default: gpt2
