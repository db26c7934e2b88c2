"""One chunk per paragraph, long paragraphs optionally packed by sentences."""

from __future__ import annotations

import logging
import re

from harness.chunking.base import Chunker, require, spans_to_chunks
from harness.chunking.sentence import pack_sentences
from harness.chunking.units import Span, UnitIndex, make_tokenizer, require_optional_size
from harness.text import trim_span
from harness.types import Chunk, ConfigError, Document

log = logging.getLogger(__name__)

# A document this long that the pattern leaves whole is almost surely not one paragraph: its
# paragraphs are set apart some other way (single newlines, indentation) than the pattern expects.
LONG_DOCUMENT_CHARS = 5000


class ParagraphChunker(Chunker):
    """Splits the text wherever ``pattern`` matches (blank lines by default).

    Matched text stays with the paragraph before it, so a pattern that matches more
    than whitespace loses nothing. With ``max_size`` set, a paragraph longer than that
    many units is sub-split into packs of whole sentences. A long document (over
    ``LONG_DOCUMENT_CHARS`` characters) found to be one paragraph is logged as a warning.
    """

    def __init__(self, pattern: str = r"\n\s*\n", max_size: int | None = None,
                 unit: str = "tokens", tokenizer: str = "bundled"):
        require(isinstance(pattern, str), f"chunker.pattern must be a string (got pattern={pattern!r})")
        try:
            self.pattern = re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"chunker.pattern is not a valid regular expression "
                              f"(got pattern={pattern!r}): {e}") from e
        # A pattern matching the empty string would cut between every pair of characters.
        require(self.pattern.fullmatch("") is None,
                f"chunker.pattern must not match the empty string (got pattern={pattern!r})")
        require_optional_size("max_size", max_size)
        self.max_size = max_size
        self.tokenizer = make_tokenizer(unit, tokenizer)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        paragraphs = self.paragraphs(doc.text)
        if len(paragraphs) == 1 and len(doc.text) > LONG_DOCUMENT_CHARS:
            log.warning("paragraph chunker: document %r is one paragraph of %d characters: chunker.pattern "
                        "'%s' finds no break (paragraphs on single lines need chunker.pattern='\\n')",
                        doc.doc_id, len(doc.text), self.pattern.pattern.replace("\n", "\\n"))
        if self.max_size is None:
            return spans_to_chunks(doc, paragraphs)
        units = UnitIndex(doc.text, self.tokenizer)
        spans: list[Span] = []
        for start, end in paragraphs:
            if units.count(start, end) <= self.max_size:
                spans.append((start, end))
            else:
                spans += pack_sentences(doc.text, start, end, doc.language, units, self.max_size)
        return spans_to_chunks(doc, spans)

    def paragraphs(self, text: str) -> list[Span]:
        """Trimmed, non-empty paragraph spans in order."""
        cuts = sorted({m.end() for m in self.pattern.finditer(text) if 0 < m.end() < len(text)})
        bounds = [0, *cuts, len(text)]
        spans = (trim_span(text, a, b) for a, b in zip(bounds, bounds[1:]))
        return [(a, b) for a, b in spans if a < b]
