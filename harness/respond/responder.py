"""The responder: a retrieved context and a question in, an answer out.

How it starts: ``responder=llm`` with any ``llm=`` backend (``llm=transformers`` on CPU).
The prompt is picked per query: the query's task when a template is named after it (the
LongBench subsets, whose prompts and answer lengths are LongBench's own), else the dataset
(HiChunk's prompts for HiCBench, Qasper, OHR-Bench and GutenQA; MC-indexing's Figure 10 for
NQ and WikiWeb2M), else ``default``. Templates live in ``configs/responder/llm.yaml`` with
``{context}`` and ``{input}`` slots, as LongBench writes them. The context is cut to
``max_context_tokens`` with the responder's own tokenizer before it goes into the prompt;
the prompt goes through the model's chat template; decoding is greedy by default.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.llm.base import LLM, Sampling
from harness.types import Answer, ConfigError, Context, Query


@dataclass(frozen=True)
class Template:
    prompt: str
    max_tokens: int


class LLMResponder:
    def __init__(self, llm: LLM, templates: Mapping[str, Mapping], template: str = "auto",
                 max_context_tokens: int | None = 4096, max_tokens: int | None = None, temperature: float = 0.0,
                 chat: bool = True):
        if not isinstance(llm, LLM):
            raise ConfigError(f"responder.llm must build a language model (llm: ${{llm}}, with llm=transformers "
                              f"or another backend); got {llm!r}")
        self.llm = llm
        self.templates: dict[str, Template] = {}
        for name, t in templates.items():
            try:
                tpl = Template(str(t["prompt"]), int(t["max_tokens"]))
            except (KeyError, TypeError, ValueError) as e:
                raise ConfigError(f"responder.templates.{name}: needs 'prompt' and an integer 'max_tokens' ({e})")
            for slot in ("{context}", "{input}"):
                if slot not in tpl.prompt:
                    raise ConfigError(f"responder.templates.{name}.prompt has no {slot} slot")
            self.templates[name] = tpl
        if "default" not in self.templates:
            raise ConfigError("responder.templates needs a 'default' template")
        if template != "auto" and template not in self.templates:
            raise ConfigError(f"responder.template={template!r} is not one of: auto, {', '.join(self.templates)}")
        if max_context_tokens is not None and max_context_tokens <= 0:
            raise ConfigError(f"responder.max_context_tokens must be > 0 or null, got {max_context_tokens}")
        self.template, self.max_context_tokens = template, max_context_tokens
        self.max_tokens, self.temperature, self.use_chat = max_tokens, temperature, chat

    def pick(self, query: Query, dataset: str) -> str:
        """The template name for one query: fixed, or task, then dataset, then 'default'."""
        if self.template != "auto":
            return self.template
        for name in (query.task, dataset, dataset.rsplit("/", 1)[-1]):
            if name and name in self.templates:
                return name
        return "default"

    def prompt(self, query: Query, context: Context, template: str) -> str:
        text = context.text
        if self.max_context_tokens is not None:
            text = self.llm.truncate(text, self.max_context_tokens)
        # str.replace, not str.format: contexts and questions contain braces.
        return self.templates[template].prompt.replace("{context}", text).replace("{input}", query.question)

    def respond(self, queries: Sequence[Query], contexts: Sequence[Context], dataset: str) -> list[Answer]:
        names = [self.pick(q, dataset) for q in queries]
        prompts = [self.prompt(q, c, n) for q, c, n in zip(queries, contexts, names)]
        answers: list[Answer | None] = [None] * len(queries)
        # One batched call per template (answer lengths differ between templates).
        for name in dict.fromkeys(names):
            idx = [i for i, n in enumerate(names) if n == name]
            sampling = Sampling(temperature=self.temperature, max_tokens=self.max_tokens or self.templates[name].max_tokens)
            t0 = time.perf_counter()
            if self.use_chat:
                texts = self.llm.chat([[{"role": "user", "content": prompts[i]}] for i in idx], sampling, desc="respond")
                counted = [self.llm.apply_chat_template([{"role": "user", "content": prompts[i]}]) for i in idx]
            else:
                texts = self.llm.generate([prompts[i] for i in idx], sampling, desc="respond")
                counted = [prompts[i] for i in idx]
            per_query = (time.perf_counter() - t0) / len(idx)
            for i, text, full in zip(idx, texts, counted):
                answers[i] = Answer(queries[i].qid, text.strip(), self.llm.count_tokens(full), per_query)
        return answers
