"""Fixed-size chunks counted in sentences (Qu et al., "Is Semantic Chunking Worth the
Computational Cost?", Sec. 2 "Fixed-size Chunker" and App. B).

Unlike :class:`~harness.chunking.sentence.SentenceChunker`, which fills a unit budget,
every chunk here holds the same number of sentences whatever their length: that is
the paper's baseline, against which its semantic chunkers are compared.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.chunking.base import Chunker, require, spans_to_chunks
from harness.chunking.sentence_source import SplitsSentences
from harness.chunking.units import require_int
from harness.sentence_splitters import DEFAULT_SENTENCE_SPLITTER
from harness.types import Chunk, Document


class SentenceCountChunker(SplitsSentences, Chunker):
    """Windows of ``sentences`` consecutive sentences; consecutive windows share ``overlap``.

    Qu et al. (App. B) tune the sentences per chunk over 2..10 per dataset and report no
    single best value, so the default 5 is a mid-range choice of ours; their overlap is
    0 or 1 sentence, and 1 "does not notably improve performance" (App. E.3), hence 0.
    """

    def __init__(self, sentences: int = 5, overlap: int = 0, sentence_splitter: str = DEFAULT_SENTENCE_SPLITTER):
        require_int("sentences", sentences, 1)
        require_int("overlap", overlap, 0)
        require(overlap < sentences, f"chunker.overlap must be < chunker.sentences "
                                     f"(got overlap={overlap}, sentences={sentences})")
        self.use_sentence_splitter(sentence_splitter)
        self.sentences, self.overlap = sentences, overlap

    def chunk_document(self, doc: Document) -> list[Chunk]:
        pieces = self.document_sentences(doc)
        spans = ((pieces[first][0], pieces[last - 1][1]) for first, last in self._windows(len(pieces)))
        return spans_to_chunks(doc, spans)

    def _windows(self, n: int) -> Iterator[tuple[int, int]]:
        """``[first, last)`` sentence indices of each window; the last window may be shorter,
        and none is emitted that would only repeat the previous window's tail."""
        first = 0
        while first < n:
            last = min(first + self.sentences, n)
            yield first, last
            if last == n:
                return
            first += self.sentences - self.overlap
