"""Multi-view indexing (MC-indexing, Dong et al. Section 3.3): each content chunk of a base
chunker is also indexed through other representations of it.

A view chunk has ``view`` set to the view's name, ``parent_id`` = the content chunk it
describes, that chunk's span, and the view's text; assemblers resolve it back to the
content chunk (see :mod:`harness.retrieval.assemblers`), and ``context=multi_view``
merges the per-view rankings as the paper does.

Views available here:

- ``text``: the content chunk itself (always indexed).
- ``keywords``: the ``n_keywords`` terms of highest TF-IDF weight in the chunk, IDF taken
  over the document's chunks (scikit-learn): an extractive stand-in that needs no model.
- ``summary``: the model's summary of each chunk longer than ``summary_min_tokens`` tokens
  (the paper summarises sections of more than 200 tokens), with the paper's Figure 8 prompt.
- ``llm_keywords``: the model's keyword list, with the paper's Figure 9 prompt.

The two LLM views need ``llm`` (``chunker=multi_view_llm`` sets ``llm: ${llm}``). Each view's
prompts for every chunk of a batch of documents go out in one call. A keyword reply without
a list, and an empty summary, give that chunk no view of that kind; both are counted
(``chunker_llm_keywords_parse_failures``, ``chunker_empty_summaries``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence

import numpy as np

from harness.chunking.base import Chunker, require
from harness.chunking.llm_chunker import RepairCounts
from harness.chunking.units import require_int
from harness.llm.base import LLM, Sampling
from harness.llm.replies import strip_reasoning
from harness.text import lexical_tokens
from harness.types import Chunk, Document

VIEWS = ("keywords", "summary", "llm_keywords")
LLM_VIEWS = ("summary", "llm_keywords")

# MC-indexing Appendix G, Figure 8 (summary) and Figure 9 (keywords), as published.
SUMMARY_PROMPT = ("You are a helpful summarization assistant. Please help me summarize the following section into "
                  "no more than 10 sentences or 200 words.\n\nSection Name: {name}\n\nSection Text: {text}")
KEYWORDS_PROMPT = ("You are a helpful keyword extractor. You need to extract keywords from the following section. "
                   "The keywords should consist of concepts, entities, or important descriptions that are related "
                   "to the section text, which could be used to answer any questions from users.\n\n"
                   "Section Name: {name}\n\nSection Text: **Beginning of text** {text} **End of text**\n\n"
                   "Please output format in list format: [...]. Do not output anything else aside from this list.")


class MultiViewChunker(RepairCounts, Chunker):
    def __init__(self, base: Chunker, views: Sequence[str] = ("keywords",), n_keywords: int = 10,
                 llm: LLM | None = None, summary_min_tokens: int = 200, max_tokens: int = 300):
        require(isinstance(base, Chunker), f"chunker.base must build a chunker; got {base!r}")
        require(not isinstance(views, str) and all(v in VIEWS for v in views),
                f"chunker.views must be a list drawn from {', '.join(VIEWS)}; got views={views!r}")
        require(isinstance(llm, LLM) or not set(views) & set(LLM_VIEWS),
                f"chunker.views {sorted(set(views) & set(LLM_VIEWS))} need a language model: "
                f"chunker=multi_view_llm (llm: ${{llm}}); got llm={llm!r}")
        require_int("n_keywords", n_keywords, 1)
        require_int("summary_min_tokens", summary_min_tokens, 0)
        require_int("max_tokens", max_tokens, 1)
        self.base, self.views, self.n_keywords = base, tuple(views), n_keywords
        self.llm, self.summary_min_tokens, self.max_tokens = llm, summary_min_tokens, max_tokens
        self.batch_size = base.batch_size
        super().__init__()

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        chunked = self.base.chunk(docs)
        model_views = self._model_views(docs, chunked)
        return [self._with_views(d, chunks, model_views) for d, chunks in zip(docs, chunked)]

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def _with_views(self, doc: Document, chunks: list[Chunk], model_views: dict[str, dict[str, str]]) -> list[Chunk]:
        content = [c for c in chunks if c.indexed and c.view == "text"]
        views = {"keywords": self._keywords(doc, content)} if "keywords" in self.views else {}
        views.update(model_views)
        out = []
        for c in chunks:
            out.append(c)
            for name, texts in views.items():
                if c.chunk_id in texts and texts[c.chunk_id]:
                    out.append(Chunk(f"{c.chunk_id}@{name}", c.doc_id, texts[c.chunk_id], c.start, c.end,
                                     c.level, c.chunk_id, view=name))
        return out

    def _keywords(self, doc: Document, content: list[Chunk]) -> dict[str, str]:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not content:
            return {}
        vectorizer = TfidfVectorizer(tokenizer=lambda t: lexical_tokens(t, doc.language), lowercase=True,
                                     token_pattern=None,
                                     stop_words="english" if doc.language.startswith("en") else None)
        try:
            weights = vectorizer.fit_transform([c.text for c in content])
        except ValueError:  # no term in any chunk (punctuation only)
            return {}
        terms = vectorizer.get_feature_names_out()
        out = {}
        for row, c in enumerate(content):
            w = weights[row].toarray().ravel()
            top = [i for i in np.argsort(-w, kind="stable")[: self.n_keywords] if w[i] > 0]
            out[c.chunk_id] = ", ".join(terms[i] for i in top)
        return out

    def _model_views(self, docs: Sequence[Document], chunked: list[list[Chunk]]) -> dict[str, dict[str, str]]:
        """``{view: {chunk_id: text}}`` for the LLM views, one batched call per view."""
        out: dict[str, dict[str, str]] = {}
        content = [(d, c) for d, chunks in zip(docs, chunked) for c in chunks if c.indexed and c.view == "text"]
        sampling = Sampling(max_tokens=self.max_tokens)
        for view, prompt in (("summary", SUMMARY_PROMPT), ("llm_keywords", KEYWORDS_PROMPT)):
            if view not in self.views:
                continue
            todo = content if view != "summary" else \
                [(d, c) for d, c in content if self.llm.count_tokens(c.text) > self.summary_min_tokens]
            replies = self.llm.chat([[{"role": "user", "content": prompt.format(name=_section_name(d, c), text=c.text)}]
                                     for d, c in todo], sampling, desc=f"view {view}")
            texts = {}
            for (d, c), reply in zip(todo, replies):
                text = strip_reasoning(reply).strip() if view == "summary" else parse_keywords(reply)
                if text:
                    texts[c.chunk_id] = text
                else:
                    self.count(d.doc_id, "empty_summaries" if view == "summary" else "llm_keywords_parse_failures")
            out[view] = texts
        return out


def _section_name(doc: Document, chunk: Chunk) -> str:
    """The title of the smallest section holding the chunk (the document's title outside any)."""
    holding = [s for s in doc.sections if s.start <= chunk.start and chunk.end <= s.end and s.title]
    return min(holding, key=lambda s: s.end - s.start).title if holding else doc.title


def parse_keywords(reply: str) -> str:
    """The keywords of a ``[...]`` list reply (after any ``</think>``) joined by ", "; "" when there is no list."""
    m = re.search(r"\[(.*?)\]", strip_reasoning(reply), re.S)
    if not m:
        return ""
    for parse in (json.loads, ast.literal_eval):
        try:
            items = parse(m.group(0))
            if isinstance(items, list):
                return ", ".join(str(i).strip() for i in items if str(i).strip())
        except (ValueError, SyntaxError):
            pass
    return ", ".join(w.strip(" '\"\n") for w in m.group(1).split(",") if w.strip(" '\"\n"))
