"""MoC's meta-chunker without its router (Zhao et al., ACL 2025, "MoC: Mixtures of Text Chunking
Learners"), QChunker's "MoC MetaChunker" baseline.

MoC = a trained granularity router (Qwen2.5-1.5B: which of four chunk-length classes, 0-120,
120-150, 150-180, >180 characters) + one fine-tuned meta-chunker per class. Neither the router
nor the experts are reachable offline, so this is the rule-generation path alone, with the
run's ``llm`` as the one meta-chunker (hence the name). What it does, per the authors' code
(``MoC/chunk_MoC.py``):

- The document is cut into windows of whole sentences up to ``window`` units (the code: 512
  characters, ``split_text_by_punctuation``); each window is one question.
- The model gets the authors' prompt (``moc_rules.PROMPT_ZH`` verbatim; ``prompt: en`` is our
  English rendering) with the system message " You are a helpful assistant.", sampled at
  temperature 0.1, top_p 0.1, up to 1280 new tokens.
- A reply with no JSON list is asked again up to ``retries`` times at temperature/top_p 0.5
  (the code's ``max_attempts = 3``), each retry counted in ``retries``.
- Each listed rule "head[MASK]tail" is located in the window (``moc_rules.locate``: regex match,
  else the edit-distance recovery, counted in ``recovered_rules``).

Where this departs from the code, and why (the code's chunks are ``findall`` matches copied out,
which may overlap, repeat, come out of order or leave text out; spans must partition the text):

- A located rule contributes its chunk's start; the window is cut at the sorted, distinct
  starts, so text between one rule's tail and the next rule's head stays with the earlier chunk.
- A rule found only before the previous rule's match is still a cut (it is a place the model
  named), counted in ``out_of_order_rules``.
- Fallbacks: a window whose replies never parse (``parse_failures``; the code asks a second,
  7B model to rewrite the text into chunks) or whose list locates no rule (``no_rules_located``)
  is cut by length: whole sentences packed up to ``fallback_size`` units, the code's
  ``split_text_by_punctuation`` rule. List elements that are not strings count in
  ``invalid_rules``; rules that cannot be located (empty head, or recovery beyond
  ``max_edit_ratio``) in ``unlocatable_rules``; every question in ``llm_calls``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness.chunking.base import require, spans_to_chunks
from harness.chunking.llm_chunker import LLMChunker
from harness.chunking.moc_rules import PROMPTS, RULE_SYNTAXES, locate, parse_rules, prompt_for
from harness.chunking.sentence import pack_sentences
from harness.chunking.units import Span, UnitIndex, make_tokenizer, require_int
from harness.llm.base import LLM, Sampling
from harness.types import Chunk, Document


@dataclass
class _Window:
    doc: Document
    units: UnitIndex
    span: Span
    rules: list | None = None


def _number(name: str, value, low: float, high: float | None = None) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low
    ok = ok and (high is None or value <= high)
    bound = f">= {low}" if high is None else f"in [{low}, {high}]"
    require(ok, f"chunker.{name} must be a number {bound} (got {name}={value!r})")


class MoCMetaChunkerNoRouter(LLMChunker):
    def __init__(self, llm: LLM, window: int = 512, fallback_size: int = 150, unit: str = "chars",
                 tokenizer: str = "bundled", prompt: str = "zh", rule_syntax: str = "regex",
                 max_edit_ratio: float | None = None, temperature: float = 0.1, top_p: float = 0.1,
                 retries: int = 3, retry_temperature: float = 0.5, retry_top_p: float = 0.5,
                 max_tokens: int = 1280, batch_size: int = 8):
        super().__init__(llm)
        require_int("window", window, 1)
        require_int("fallback_size", fallback_size, 1)
        require_int("retries", retries, 0)
        require_int("max_tokens", max_tokens, 1)
        require_int("batch_size", batch_size, 1)
        require(prompt in PROMPTS, f"chunker.prompt must be one of {', '.join(PROMPTS)} (got prompt={prompt!r})")
        require(rule_syntax in RULE_SYNTAXES,
                f"chunker.rule_syntax must be one of {', '.join(RULE_SYNTAXES)} (got rule_syntax={rule_syntax!r})")
        if max_edit_ratio is not None:
            _number("max_edit_ratio", max_edit_ratio, 0.0)
        _number("temperature", temperature, 0.0)
        _number("retry_temperature", retry_temperature, 0.0)
        for name, value in (("top_p", top_p), ("retry_top_p", retry_top_p)):
            _number(name, value, 0.0, 1.0)
            require(value > 0, f"chunker.{name} must be > 0 (got {name}={value!r})")
        self.window, self.fallback_size, self.batch_size = window, fallback_size, batch_size
        self.prompt, self.rule_syntax, self.max_edit_ratio = prompt, rule_syntax, max_edit_ratio
        self.tokenizer = make_tokenizer(unit, tokenizer)
        self.retries = retries
        self.sampling = Sampling(temperature=float(temperature), top_p=float(top_p), max_tokens=max_tokens)
        self.retry_sampling = Sampling(temperature=float(retry_temperature), top_p=float(retry_top_p),
                                       max_tokens=max_tokens)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        return self.chunk([doc])[0]

    def chunk(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        windows = []
        for doc in docs:
            units = UnitIndex(doc.text, self.tokenizer)
            windows += [_Window(doc, units, span) for span in
                        pack_sentences(doc.text, 0, len(doc.text), doc.language, units, self.window)]
        self._ask(windows)
        spans: dict[str, list[Span]] = {d.doc_id: [] for d in docs}
        for w in windows:
            spans[w.doc.doc_id] += self._cut(w)
        return [spans_to_chunks(d, spans[d.doc_id]) for d in docs]

    def _ask(self, windows: list[_Window]) -> None:
        """Every window's rules (None where no attempt parsed): one batched call per attempt."""
        todo = list(windows)
        for attempt in range(1 + self.retries):
            if not todo:
                break
            if attempt:
                if self.retry_sampling.greedy and self.sampling.greedy:
                    break  # a greedy model answers the same prompt the same way
                for w in todo:
                    self.count(w.doc.doc_id, "retries")
            sampling = self.sampling if attempt == 0 else replace(self.retry_sampling, seed=attempt)
            prompts = [prompt_for(w.doc.text[w.span[0]:w.span[1]], self.prompt) for w in todo]
            for w, reply in zip(todo, self.llm.chat(prompts, sampling, desc="moc")):
                self.count(w.doc.doc_id, "llm_calls")
                w.rules = parse_rules(reply)
            todo = [w for w in todo if w.rules is None]

    def _cut(self, w: _Window) -> list[Span]:
        """The window's chunk spans: cut at the located rules' starts, or by length (fallback)."""
        doc_id, text, (lo, hi) = w.doc.doc_id, w.doc.text, w.span
        if w.rules is None:
            self.count(doc_id, "parse_failures")
            return self._by_length(w)
        starts, cursor = [], lo
        for rule in w.rules:
            if not isinstance(rule, str):
                self.count(doc_id, "invalid_rules")
                continue
            if not rule.strip():
                continue  # the authors skip empty rules too
            found = locate(rule, text, lo, hi, cursor, self.rule_syntax, self.max_edit_ratio)
            if found is None:
                self.count(doc_id, "unlocatable_rules")
                continue
            if found.how == "recovered":
                self.count(doc_id, "recovered_rules")
            if starts and found.start < starts[-1]:
                self.count(doc_id, "out_of_order_rules")
            starts.append(found.start)
            cursor = max(cursor, found.end)
        if not starts:
            self.count(doc_id, "no_rules_located")
            return self._by_length(w)
        cuts = sorted({lo, *starts}) + [hi]
        return [(a, b) for a, b in zip(cuts, cuts[1:]) if a < b]

    def _by_length(self, w: _Window) -> list[Span]:
        return pack_sentences(w.doc.text, w.span[0], w.span[1], w.doc.language, w.units, self.fallback_size)
