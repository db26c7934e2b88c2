"""A chunker written outside the harness, the README's challenger: sentences packed greedily up to `size` words.

    python -m harness.cli challenge examples/packer.py:SentencePacker
"""
import re

from harness.chunking.base import Chunker, spans_to_chunks

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class SentencePacker(Chunker):
    def __init__(self, size: int = 200):
        self.size = size

    def chunk_document(self, doc):
        spans, start, words, pos = [], 0, 0, 0
        for m in list(SENTENCE_END.finditer(doc.text)) + [None]:
            end = m.start() if m else len(doc.text)
            n = len(doc.text[pos:end].split())
            if words and words + n > self.size:
                spans.append((start, pos))
                start, words = pos, 0
            words += n
            pos = m.end() if m else len(doc.text)
        spans.append((start, len(doc.text)))
        return spans_to_chunks(doc, spans)
