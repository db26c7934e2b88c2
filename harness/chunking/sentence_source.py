"""Where a sentence-based chunker's sentences come from: ``chunker.sentence_splitter``.

Read by Qu et al.'s three chunkers (``fixed_sentences``, ``semantic_breakpoint``,
``semantic_cluster``): ``sentencex`` (the default, :func:`harness.chunking.sentence.sentence_pieces`)
or ``spacy`` (en_core_web_sm, the paper's; :mod:`harness.sentence_splitters`).
"""

from __future__ import annotations

from harness.chunking.sentence import sentence_pieces
from harness.chunking.units import Span
from harness.sentence_splitters import DEFAULT_SENTENCE_SPLITTER, require_sentence_splitter, split_sentences
from harness.types import Document


class SplitsSentences:
    """A chunker that cuts documents into sentences by ``chunker.sentence_splitter``.

    The default lives on the class: an instance sets its own only for another splitter, so a
    default chunker object stands for the same config node as before the setting existed
    (``harness.api.describe`` reads instance attributes), just as the config files leave the key
    out (``+chunker.sentence_splitter=spacy`` adds it) so that existing cache keys stay.
    """

    sentence_splitter: str = DEFAULT_SENTENCE_SPLITTER

    def use_sentence_splitter(self, name: str) -> None:
        """Check ``name`` (and, for spacy, that spaCy and the model are installed) and use it."""
        require_sentence_splitter(name)
        if name != DEFAULT_SENTENCE_SPLITTER:
            self.sentence_splitter = name

    def document_sentences(self, doc: Document) -> list[Span]:
        """The document's sentences as trimmed, non-empty spans in order. spaCy's sentences
        partition the document's tokens, so between two of them lies only whitespace."""
        if self.sentence_splitter == DEFAULT_SENTENCE_SPLITTER:
            return sentence_pieces(doc.text, 0, len(doc.text), doc.language)
        return split_sentences(doc.text, doc.language, self.sentence_splitter)
