"""Chroma's three chunkers (Smith & Troynikov 2024): ClusterSemantic, KamradtModified, LLMSemantic.

Unit and property tests use fake embedders and ScriptedLLM (no model); one slow test runs the
bundled MiniLM.
"""

from __future__ import annotations

import itertools
import re
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chunking.base import check_chunks
from harness.chunking.chroma_pieces import CHROMA_SEPARATORS, PieceSplitter
from harness.chunking.cluster_semantic import (
    ClusterSemanticChunker,
    matrix_blocks,
    optimal_segmentation,
    piece_reach,
    token_reach,
    vector_blocks,
)
from harness.chunking.kamradt_modified import (
    TOLERANCE,
    KamradtModifiedChunker,
    largest_chunk,
    threshold_for_cuts,
    threshold_for_largest,
)
from harness.chunking.llm_semantic import RETRY, SYSTEM, LLMSemanticChunker, parse_split_after
from harness.chunking.semantic_breakpoint import window_distances
from harness.embedding.embedder import SentenceTransformerEmbedder
from harness.types import ConfigError, Document
from tests.chunking.test_semantic_chunkers import GT, HashEmbedder, TopicEmbedder, _page_text, documents
from tests.conftest import ScriptedLLM

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class PositiveEmbedder(SentenceTransformerEmbedder):
    """Hash vectors with non-negative components: every cosine in [0, 1], so every distance is
    inside the code's search interval [0, 1]."""

    def _encode(self, texts, normalize=True):
        rows = [np.abs(np.random.default_rng(zlib.crc32(t.encode())).normal(size=6)) for t in texts]
        v = np.array(rows, dtype=np.float32).reshape(len(rows), 6)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class RecordingEmbedder(TopicEmbedder):
    def __init__(self):
        super().__init__()
        self.seen = []

    def _encode(self, texts, normalize=True):
        self.seen += list(texts)
        return super()._encode(texts, normalize)


TOPICS = ("Cats purr softly. Cats nap all day. Cats chase mice. Cars honk loudly. Cars race on roads. "
          "Cars need fuel. The sea is deep. The sea is blue.")


# --- pieces ------------------------------------------------------------------------------------

def test_pieces_are_langchains_recursive_splitter_at_50_cl100k_tokens():
    """The authors' RecursiveTokenChunker is LangChain's splitter: the same piece texts, on spans."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = PieceSplitter()
    text = _page_text("news/06_13.json", 5000) * 2
    reference = RecursiveCharacterTextSplitter(chunk_size=50, chunk_overlap=0, separators=list(CHROMA_SEPARATORS),
                                               length_function=splitter.tokenizer.count)
    doc = Document("d", text)
    pieces = splitter.split(doc)
    assert pieces.texts == reference.split_text(text)
    assert all(text[s:e] == t for (s, e), t in zip(pieces.spans, pieces.texts))
    assert pieces.tokens == [splitter.tokenizer.count(t) for t in pieces.texts] and max(pieces.tokens) <= 50
    assert pieces.spans[len(pieces) // 2 + 1][0] > len(text) // 2 - 100  # the repeat keeps its own offsets


# --- cluster: the dynamic programme -----------------------------------------------------------

def two_topics(n_a: int, n_b: int, within: float = 0.9, across: float = 0.1) -> np.ndarray:
    n = n_a + n_b
    m = np.full((n, n), across)
    m[:n_a, :n_a] = within
    m[n_a:, n_a:] = within
    np.fill_diagonal(m, 1.0)
    return m


def test_segmentation_of_a_hand_built_matrix():
    m = two_topics(3, 3)  # upper-triangle mean 0.42: within +0.48, across -0.32
    assert optimal_segmentation(6, matrix_blocks(m), piece_reach(6, 3)) == [(0, 2), (3, 5)]
    assert optimal_segmentation(6, matrix_blocks(m), piece_reach(6, 6)) == [(0, 2), (3, 5)]
    # Capped at two pieces: one pair per topic; of equal totals the shorter last chunk wins.
    assert optimal_segmentation(6, matrix_blocks(m), piece_reach(6, 2)) == [(0, 1), (2, 2), (3, 4), (5, 5)]
    assert optimal_segmentation(6, matrix_blocks(m), piece_reach(6, 1), floor=False) == [(i, i) for i in range(6)]
    # One piece a chunk scores 0 everywhere, which the code's floor never takes: one chunk
    # (the chunker refuses max_size < 2 * piece_size for reading=code).
    assert optimal_segmentation(6, matrix_blocks(m), piece_reach(6, 1)) == [(0, 5)]


def test_similarities_are_centred_on_the_upper_triangle_mean():
    """Without centring the raw cosines (all positive here) would fill every chunk to the cap."""
    m = two_topics(2, 2, within=0.8, across=0.5)
    b = matrix_blocks(m)(0, 4)
    assert np.allclose(b[np.triu_indices(4, 1)], np.array([0.8, 0.5, 0.5, 0.5, 0.5, 0.8]) - 0.6)
    assert np.allclose(np.diag(b), 0)
    assert optimal_segmentation(4, matrix_blocks(m), piece_reach(4, 4)) == [(0, 1), (2, 3)]
    raw = lambda lo, hi: m[lo:hi, lo:hi] - np.eye(hi - lo)  # noqa: E731  (uncentred, zero diagonal)
    assert optimal_segmentation(4, raw, piece_reach(4, 4), floor=False) == [(0, 3)]


def test_vector_blocks_equal_the_full_matrix_ones():
    v = np.random.default_rng(0).normal(size=(9, 5))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for lo, hi in [(0, 9), (2, 5), (8, 9)]:
        assert np.allclose(vector_blocks(v)(lo, hi), matrix_blocks(v @ v.T)(lo, hi))
    assert vector_blocks(v[:1])(0, 1).tolist() == [[0.0]]


def brute_force(m: np.ndarray, reach: list[int]) -> float:
    """The best total of any segmentation whose chunk ending at i holds at most reach[i] pieces."""
    block, n, best = matrix_blocks(m), len(m), -np.inf
    for cuts in itertools.product([False, True], repeat=n - 1):
        ends = [i for i, c in enumerate(cuts) if c] + [n - 1]
        starts = [0] + [e + 1 for e in ends[:-1]]
        if all(e - s + 1 <= reach[e] for s, e in zip(starts, ends)):
            best = max(best, sum(block(s, e + 1).sum() for s, e in zip(starts, ends)))
    return best


def code_recurrence(m: np.ndarray, max_pieces: int) -> list[tuple[int, int]]:
    """The recurrence as the module docstring states it, one candidate at a time."""
    block, n = matrix_blocks(m), len(m)
    dp, start = [0.0] * n, [0] * n
    for i in range(n):
        for size in range(1, max_pieces + 1):
            if size <= i + 1:
                value = block(i - size + 1, i + 1).sum() + (dp[i - size] if i >= size else 0.0)
                if value > dp[i]:
                    dp[i], start[i] = value, i - size + 1
    groups, i = [], n - 1
    while i >= 0:
        groups.append((start[i], i))
        i = start[i] - 1
    return groups[::-1]


@pytest.mark.parametrize("seed", range(12))
def test_segmentation_matches_references(seed):
    rng = np.random.default_rng(seed)
    n, cap = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    v = rng.normal(size=(n, 3))
    m = (v / np.linalg.norm(v, axis=1, keepdims=True)) @ (v / np.linalg.norm(v, axis=1, keepdims=True)).T
    assert optimal_segmentation(n, matrix_blocks(m), piece_reach(n, cap)) == code_recurrence(m, cap)
    tokens = rng.integers(1, 20, size=n).tolist()
    for reach in (piece_reach(n, cap), token_reach(tokens, 25)):
        groups = optimal_segmentation(n, matrix_blocks(m), reach, floor=False)
        assert all(b - a + 1 <= reach[b] for a, b in groups)
        total = sum(matrix_blocks(m)(a, b + 1).sum() for a, b in groups)
        assert total == pytest.approx(brute_force(m, reach))


def test_code_floor_lets_a_dissimilar_opening_outgrow_the_cap():
    """The authors' dp starts at 0: pieces before the first positive-scoring chunk keep the start
    0, so the first chunk runs from the document's start past the cap; the paper's reading never."""
    m = np.array([[1.0, 0.0, 0.0, 0.0, 0.0],
                  [0.0, 1.0, 0.0, 0.0, 0.0],
                  [0.0, 0.0, 1.0, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 1.0, 0.9],
                  [0.0, 0.0, 0.0, 0.9, 1.0]])   # mean 0.09: the opening pairs score -0.18
    assert optimal_segmentation(5, matrix_blocks(m), piece_reach(5, 2)) == [(0, 2), (3, 4)]
    assert optimal_segmentation(5, matrix_blocks(m), piece_reach(5, 2), floor=False) == [(0, 0), (1, 1), (2, 2), (3, 4)]


def test_token_reach():
    assert token_reach([10, 20, 30, 5, 50, 60], 50) == [1, 2, 2, 2, 1, 1]
    assert token_reach([], 10) == []


# --- cluster: the chunker ----------------------------------------------------------------------

def test_cluster_chunker_keeps_topics_together():
    doc = Document("d", TOPICS)
    chunker = ClusterSemanticChunker(TopicEmbedder(), max_size=24, piece_size=8)  # 3 pieces a chunk
    pieces = chunker.pieces.split(doc)
    assert pieces.texts[:2] == ["Cats purr softly", ". Cats nap all day"]  # the separator leads the next piece
    assert len(pieces) == 8
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert [c.text for c in chunks] == ["Cats purr softly. Cats nap all day. Cats chase mice",
                                        ". Cars honk loudly. Cars race on roads. Cars need fuel",
                                        ". The sea is deep. The sea is blue."]


def test_cluster_caps_pieces_in_code_and_tokens_in_paper():
    """max_size 16 with 8-token pieces: the code allows 16 // 8 = 2 pieces a chunk, the paper's
    reading 16 tokens, which the topics' 3 pieces hold (5 + 5 + 4 and 5 + 5 + 4 tokens)."""
    doc = Document("d", TOPICS)
    code = ClusterSemanticChunker(TopicEmbedder(), max_size=16, piece_size=8)
    assert [c.text for c in code.chunk_document(doc)] == [   # equal totals: the shorter last chunk
        "Cats purr softly. Cats nap all day", ". Cats chase mice", ". Cars honk loudly. Cars race on roads",
        ". Cars need fuel", ". The sea is deep. The sea is blue."]
    paper = ClusterSemanticChunker(TopicEmbedder(), max_size=16, piece_size=8, reading="paper")
    assert [c.text for c in paper.chunk_document(doc)] == [
        "Cats purr softly. Cats nap all day. Cats chase mice", ". Cars honk loudly. Cars race on roads. Cars need fuel",
        ". The sea is deep. The sea is blue."]
    paper = ClusterSemanticChunker(TopicEmbedder(), max_size=13, piece_size=8, reading="paper")
    pieces = paper.pieces.split(doc)
    for c in paper.chunk_document(doc):
        assert sum(t for (s, e), t in zip(pieces.spans, pieces.tokens) if c.start <= s and e <= c.end) <= 13


@FAST
@given(documents, st.sampled_from(["code", "paper"]), st.integers(1, 12), st.integers(2, 4))
def test_cluster_properties(doc, reading, piece_size, factor):
    chunker = ClusterSemanticChunker(HashEmbedder(), max_size=piece_size * factor, piece_size=piece_size,
                                     reading=reading)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    if reading == "paper":
        pieces = chunker.pieces.split(doc)
        for c in chunks:
            inside = [t for (s, e), t in zip(pieces.spans, pieces.tokens) if c.start <= s and e <= c.end]
            assert len(inside) == 1 or sum(inside) <= piece_size * factor


@pytest.mark.parametrize("kwargs, param", [
    (dict(max_size=0), "max_size"),
    (dict(max_size=40), "max_size"),          # under piece_size
    (dict(max_size=99), "max_size"),          # one piece a chunk: the code's recurrence never cuts
    (dict(piece_size=0), "piece_size"),
    (dict(reading="report"), "reading"),
    (dict(tokenizer=""), "tokenizer"),
    (dict(embedder=None), "embedder"),
])
def test_cluster_validation(kwargs, param):
    with pytest.raises(ConfigError, match=rf"chunker\.{param}"):
        ClusterSemanticChunker(**{"embedder": HashEmbedder(), **kwargs})


# --- kamradt modified --------------------------------------------------------------------------

DISTANCES = np.array([0.1, 0.5, 0.2, 0.8, 0.3])


def test_code_threshold_is_the_bisection_for_a_number_of_cuts():
    t = threshold_for_cuts(DISTANCES, 2)  # more than 2 breaks below 0.3
    assert abs(t - 0.3) <= TOLERANCE and np.count_nonzero(DISTANCES > t) in (2, 3)
    assert abs(threshold_for_cuts(DISTANCES, 0) - 0.8) <= TOLERANCE
    assert threshold_for_cuts(DISTANCES, 9) <= TOLERANCE                       # every gap breaks
    assert threshold_for_cuts(np.array([1.2, 1.5]), 0) > 1 - TOLERANCE          # the search never passes 1
    assert threshold_for_cuts(np.zeros(0), 0) <= TOLERANCE


def test_paper_threshold_keeps_the_largest_chunk_within_size():
    tokens = [10] * 6
    t = threshold_for_largest(DISTANCES, tokens, 30)  # chunks of at most 3 pieces
    assert 0.5 - TOLERANCE <= t < 0.5 and np.flatnonzero(DISTANCES > t).tolist() == [1, 3]
    assert largest_chunk(DISTANCES, tokens, t) == 20 and largest_chunk(DISTANCES, tokens, 0.5) == 40
    assert threshold_for_largest(DISTANCES, tokens, 60) >= 1                     # fits whole: no break
    t = threshold_for_largest(DISTANCES, tokens, 10)                            # every piece alone
    assert t < 0.1 and largest_chunk(DISTANCES, tokens, t) == 10
    assert largest_chunk(np.zeros(0), [7], 0.5) == 7


def test_kamradt_windows_are_three_pieces_either_side():
    embedder = RecordingEmbedder()
    doc = Document("d", TOPICS)
    chunks = KamradtModifiedChunker(embedder, size=16, piece_size=8).chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    assert embedder.seen[0] == "Cats purr softly . Cats nap all day . Cats chase mice . Cars honk loudly"
    assert embedder.seen[4] == ". Cats nap all day . Cats chase mice . Cars honk loudly . Cars race on roads " \
                               ". Cars need fuel . The sea is deep . The sea is blue."
    assert len(embedder.seen) == 8


def kamradt_run(doc, embedder, **kwargs):
    """The chunker's chunks on ``doc``, checked, one for each break above the threshold; its pieces,
    their windows' distances and the threshold (None without pieces)."""
    chunker = KamradtModifiedChunker(embedder, **kwargs)
    chunks = chunker.chunk_document(doc)
    check_chunks(doc, chunks, covering=True)
    pieces = chunker.pieces.split(doc)
    distances = window_distances(chunker.embed, pieces.texts, chunker.buffer_size)
    if not len(pieces):
        return pieces, distances, None
    t = chunker.threshold(distances, pieces.tokens)
    assert len(chunks) == np.count_nonzero(distances > t) + 1
    return pieces, distances, t


@FAST
@given(documents, st.integers(1, 12), st.integers(1, 5))
def test_kamradt_code_reading_searches_for_total_over_size_cuts(doc, piece_size, factor):
    size = piece_size * factor
    pieces, distances, t = kamradt_run(doc, PositiveEmbedder(), size=size, piece_size=piece_size)
    if t is not None:
        cuts = sum(pieces.tokens) // size
        # t is within TOLERANCE of where "more than `cuts` breaks" turns false (distances <= 1 here)
        assert np.count_nonzero(distances > t + TOLERANCE) <= cuts
        assert t <= TOLERANCE or np.count_nonzero(distances > t - TOLERANCE) > cuts


@FAST
@given(documents, st.integers(1, 12), st.integers(1, 5), st.sampled_from([0, 1, 3]))
def test_kamradt_paper_reading_largest_chunk_within_size(doc, piece_size, factor, buffer_size):
    size = piece_size * factor
    pieces, distances, t = kamradt_run(doc, HashEmbedder(), size=size, piece_size=piece_size, reading="paper",
                                       buffer_size=buffer_size)
    if t is not None and max(pieces.tokens) <= size:
        assert largest_chunk(distances, pieces.tokens, t) <= size
        # the largest such threshold: a little higher and some chunk is too large (or none is cut)
        assert t >= max(1.0, distances.max(initial=0)) or largest_chunk(distances, pieces.tokens, t + TOLERANCE) > size


@pytest.mark.parametrize("kwargs, param", [
    (dict(size=0), "size"),
    (dict(size=20), "size"),                  # under piece_size
    (dict(piece_size=True), "piece_size"),
    (dict(buffer_size=-1), "buffer_size"),
    (dict(reading="avg"), "reading"),
    (dict(window_embedding="max"), "window_embedding"),
    (dict(embedder="bundled"), "embedder"),
])
def test_kamradt_validation(kwargs, param):
    with pytest.raises(ConfigError, match=rf"chunker\.{param}"):
        KamradtModifiedChunker(**{"embedder": HashEmbedder(), **kwargs})


# --- llm semantic ------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, expected", [
    ("split_after: 3, 5", [3, 5]),
    ("Here you go.\n**split_after:** 4,9\nsplit_after: 12", [4, 9]),
    ("Split after: 7", [7]),
    ("<think>split_after: 1</think>split_after: 2", [2]),
    ("split_after:", None),
    ("split_after:\n3, 5", None),
    ("I would split after the second chunk.", None),
    ("", None),
])
def test_parse_split_after(reply, expected):
    assert parse_split_after(reply) == expected


COLOURS = ["red", "blue", "green", "black", "white", "brown", "pink", "gray", "gold", "silver", "orange", "purple",
           "yellow", "cyan", "navy", "olive", "teal", "lime", "tan", "plum"]
LINES = Document("d", "\n".join(f"The {w} line ends here." for w in COLOURS))  # a piece each, 6 cl100k tokens


def ids(prompt: str) -> list[int]:
    return [int(k) for k in re.findall(r"<\|start_chunk_(\d+)\|>", prompt)]


def chunker(reply, **kw) -> LLMSemanticChunker:
    return LLMSemanticChunker(ScriptedLLM(reply=reply), **{"piece_size": 8, "window_tokens": 30, **kw})


def test_llm_prompt_is_the_authors():
    llm_chunker = chunker(lambda p: "split_after: 2")
    assert llm_chunker.system.startswith("You are an assistant specialized in splitting text into thematically")
    assert "each marked with <|start_chunk_X|> and <|end_chunk_X|> tags" in llm_chunker.system
    assert llm_chunker.system.endswith("IN ASCENDING ORDER.Your response should be in the form: 'split_after: 3, 5'.")
    pieces = llm_chunker.pieces.split(LINES)
    assert len(pieces) == 20 and pieces.texts[1] == "The blue line ends here." and set(pieces.tokens) == {6}
    messages = llm_chunker.prompt(llm_chunker_walk(llm_chunker), 2)
    assert messages[0] == {"role": "system", "content": llm_chunker.system}
    assert messages[1]["content"] == (
        "CHUNKED_TEXT: <|start_chunk_1|>The red line ends here.<|end_chunk_1|><|start_chunk_2|>The blue line "
        "ends here.<|end_chunk_2|>\n\nRespond only with the IDs of the chunks where you believe a split should occur. "
        "YOU MUST RESPOND WITH AT LEAST ONE SPLIT. THESE SPLITS MUST BE IN ASCENDING ORDER AND EQUAL OR LARGER THAN: 0.")


def llm_chunker_walk(c):
    from harness.chunking.llm_semantic import _Walk

    return _Walk(LINES, c.pieces.split(LINES))


def test_llm_splits_where_the_model_says_and_windows_follow():
    llm_chunker = chunker(lambda p: f"split_after: {ids(p)[1]}, {ids(p)[3]}")
    chunks = llm_chunker.chunk([LINES])[0]
    check_chunks(LINES, chunks, covering=True)
    prompts = llm_chunker.llm.prompts
    # windows of 6 pieces (36 tokens pass 30); each starts after the last split; IDs from 1
    assert [ids(p) for p in prompts] == [[1, 2, 3, 4, 5, 6], [5, 6, 7, 8, 9, 10], [9, 10, 11, 12, 13, 14],
                                         [13, 14, 15, 16, 17, 18]]
    assert [p.rsplit(": ", 1)[1] for p in prompts] == ["0.", "4.", "8.", "12."]
    assert [c.text.count("line") for c in chunks] == [2, 2, 2, 2, 2, 2, 2, 2, 4]  # the last 4 pieces: no question
    assert chunks[0].text == "The red line ends here.\nThe blue line ends here."
    assert llm_chunker.take_counts("d") == {"llm_calls": 4}


def test_llm_paper_reading_tags_from_zero():
    llm = ScriptedLLM(reply=lambda p: "split_after: " + re.findall(r"<start_chunk_(\d+)>", p)[0])
    llm_chunker = LLMSemanticChunker(llm, piece_size=8, window_tokens=30, reading="paper")
    assert "marked with <start_chunk_X> and <end_chunk_X> tags" in llm_chunker.system
    chunks = llm_chunker.chunk([LINES])[0]
    check_chunks(LINES, chunks, covering=True)
    assert llm.prompts[0].startswith("CHUNKED_TEXT: <start_chunk_0>The red line ends here.<end_chunk_0>")
    assert chunks[0].text == "The red line ends here." and len(chunks) == 17  # one piece a question, 4 left


def test_llm_garbled_reply_cuts_at_the_window_end_and_is_counted():
    llm_chunker = chunker(lambda p: "These chunks are all about lines.")
    chunks = llm_chunker.chunk([LINES])[0]
    check_chunks(LINES, chunks, covering=True)
    assert [c.text.count("line") for c in chunks] == [6, 6, 6, 2]
    assert llm_chunker.take_counts("d") == {"llm_calls": 3, "parse_failures": 3, "window_cuts": 3}
    assert llm_chunker.take_counts("d") == {}


@pytest.mark.parametrize("bad", ["split_after: 5, 3", "split_after: 0", "split_after: 7", "split_after: 2, 99"])
def test_llm_invalid_reply_is_asked_again_with_the_note(bad):
    first_window = lambda p: ids(p)[0] == 1  # noqa: E731
    llm_chunker = chunker(lambda p: ("split_after: 2" if "was invalid" in p else bad) if first_window(p)
                          else f"split_after: {ids(p)[-1]}")
    chunks = llm_chunker.chunk([LINES])[0]
    check_chunks(LINES, chunks, covering=True)
    numbers = parse_split_after(bad)
    assert RETRY.format(numbers=numbers) in llm_chunker.llm.prompts[1]
    assert f"\n\\The previous response of {numbers} was invalid." in llm_chunker.llm.prompts[1]
    assert chunks[0].text == "The red line ends here.\nThe blue line ends here."
    assert llm_chunker.take_counts("d")["invalid_replies"] == 1


def test_llm_invalid_replies_cut_the_window_after_the_retries():
    llm_chunker = chunker(lambda p: "split_after: 9, 1", retries=2)
    chunks = llm_chunker.chunk([LINES])[0]
    check_chunks(LINES, chunks, covering=True)
    assert [c.text.count("line") for c in chunks] == [6, 6, 6, 2]
    assert llm_chunker.take_counts("d") == {"llm_calls": 9, "invalid_replies": 9, "window_cuts": 3}


def test_llm_batches_documents_and_short_documents_ask_nothing():
    short = Document("s", "One line here. Two lines here.")
    llm_chunker = chunker(lambda p: f"split_after: {ids(p)[2]}", batch_size=4)
    a, b = llm_chunker.chunk([LINES, short])
    check_chunks(short, b, covering=True)
    assert [c.text for c in b] == ["One line here. Two lines here."] and llm_chunker.take_counts("s") == {}
    assert [c.text.count("line") for c in a] == [3] * 6 + [2] and llm_chunker.take_counts("d")["llm_calls"] == 6
    assert llm_chunker.chunk([Document("e", "  ")]) == [[]]


@FAST
@given(documents, st.lists(st.sampled_from(["split_after: 1", "split_after: 3, 5", "split_after: 5, 2", "garbage",
                                            "split_after: 40", "split_after: 0, 2"]), min_size=1, max_size=5),
       st.sampled_from(["code", "paper"]))
def test_llm_semantic_properties(doc, replies, reading):
    cycle = itertools.cycle(replies)
    llm_chunker = LLMSemanticChunker(ScriptedLLM(reply=lambda p: next(cycle)), piece_size=3, window_tokens=12,
                                     reading=reading)
    chunks = llm_chunker.chunk([doc])[0]
    check_chunks(doc, chunks, covering=True)
    counts = llm_chunker.take_counts("d")
    assert counts.get("parse_failures", 0) + counts.get("invalid_replies", 0) <= counts.get("llm_calls", 0)


@pytest.mark.parametrize("kwargs, param", [
    (dict(piece_size=0), "piece_size"),
    (dict(window_tokens=0), "window_tokens"),
    (dict(temperature=-1), "temperature"),
    (dict(max_tokens=0), "max_tokens"),
    (dict(retries=-1), "retries"),
    (dict(reading="pipes"), "reading"),
    (dict(batch_size=0), "batch_size"),
    (dict(llm=None), "llm"),
])
def test_llm_semantic_validation(kwargs, param):
    with pytest.raises(ConfigError, match=rf"chunker\.{param}"):
        LLMSemanticChunker(**{"llm": ScriptedLLM(), **kwargs})


def test_system_prompt_template_has_only_the_tags():
    assert SYSTEM.format(start="<a>", end="<b>").count("<a>") == 1


# --- configs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls, settings_", [
    ("cluster_semantic", ClusterSemanticChunker, {"max_size": 400, "piece_size": 50, "reading": "code"}),
    ("kamradt_modified", KamradtModifiedChunker, {"size": 400, "buffer_size": 3, "reading": "code"}),
])
def test_embedding_configs_compose(make_cfg, name, cls, settings_):
    from harness.pipeline.components import build_components

    comps = build_components(make_cfg(f"chunker={name}"))
    assert isinstance(comps.chunker, cls) and all(getattr(comps.chunker, k) == v for k, v in settings_.items())
    assert comps.chunker.pieces.tokenizer.name == "cl100k"
    assert comps.chunker.embedder.model == comps.retriever.embedder.model
    assert comps.chunker.embedder.cache is comps.retriever.embedder.cache is not None


def test_llm_config_composes(make_cfg):
    from harness.llm.transformers_llm import TransformersLLM
    from harness.pipeline.components import build_components

    llm_chunker = build_components(make_cfg("chunker=llm_semantic")).chunker
    assert isinstance(llm_chunker, LLMSemanticChunker) and isinstance(llm_chunker.llm, TransformersLLM)
    sampling = llm_chunker.sampling
    assert (sampling.temperature, sampling.max_tokens, llm_chunker.window_tokens, llm_chunker.retries) == (0.2, 200, 800, 1)
    with pytest.raises(ConfigError, match="chunker.window_tokens"):
        build_components(make_cfg("chunker=llm_semantic", "chunker.window_tokens=0"))


# --- the bundled embedder ----------------------------------------------------------------------

@pytest.mark.slow
def test_real_embedder_chroma_chunkers():
    """MiniLM on a news story followed by a textbook page: valid chunks within the caps, one
    starting at the change of topic."""
    news, maths = _page_text("news/06_13.json", 2500), _page_text(
        "textbook/GTM40-Denumerable_Markov_Chains-with_a_chapter_of_Markov_Random_Fields_"
        "by_David_Griffeath1976.pdf_256.json", 1500)
    assert GT.is_dir()
    doc, seam = Document("stitched", news + "\n\n" + maths), len(news) + 2
    embedder = SentenceTransformerEmbedder()
    for chunker_ in (ClusterSemanticChunker(embedder, max_size=200),
                     KamradtModifiedChunker(embedder, size=200, reading="paper")):
        chunks = chunker_.chunk_document(doc)
        check_chunks(doc, chunks, covering=True)
        assert len(chunks) > 1 and max(chunker_.pieces.tokenizer.count(c.text) for c in chunks) <= 220
        assert seam in {c.start for c in chunks}, f"{type(chunker_).__name__}: no chunk starts at the topic change"
