"""The responder: a retrieved context and a question in, an answer out.

How it starts: ``responder=llm`` with any ``llm=`` backend (``llm=transformers`` on CPU).
The prompt is picked per query: the query's task when a template is named after it (the
LongBench subsets, whose prompts and answer lengths are LongBench's own), else the dataset
(HiChunk's prompts for HiCBench, Qasper, OHR-Bench and GutenQA; MC-indexing's Figure 10 for
NQ and WikiWeb2M), else ``default``. Templates live in ``configs/responder/llm.yaml`` with
``{context}`` and ``{input}`` slots, as LongBench writes them. The context is cut to
``max_context_tokens`` with the responder's own tokenizer before it goes into the prompt;
the prompt goes through the model's chat template; decoding is greedy by default. A reasoning
model's ``<think>`` part is dropped from the answer (:func:`~harness.llm.replies.strip_reasoning`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from harness.llm.base import LLM, Sampling
from harness.llm.replies import strip_reasoning
from harness.types import Answer, ConfigError, Context, Query


@dataclass(frozen=True)
class Template:
    prompt: str
    max_tokens: int
    # (open, close): the answer is what the reply holds after its last ``open``, up to ``close``
    # (CRUD-RAG's QuestAnswer: "<response>...</response>"); None: the whole reply
    answer_between: tuple[str, str] | None = None

    def extract(self, reply: str) -> str:
        if self.answer_between is None:
            return reply
        start, end = self.answer_between
        return reply.split(start)[-1].split(end)[0]


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
                between = t.get("answer_between")
                if between is not None and (len(between) != 2 or not all(isinstance(b, str) and b for b in between)):
                    raise ValueError(f"answer_between must be two non-empty strings, got {list(between)!r}")
                tpl = Template(str(t["prompt"]), int(t["max_tokens"]), None if between is None else tuple(between))
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
        # Per template (answer lengths differ between templates), one batch of llm.batch_size questions
        # at a time, so that the bar moves batch by batch (a CPU batch at a 4096-token context takes
        # minutes); each answer is cached on its own, so the batching is in no cache key.
        with tqdm(total=len(queries), desc="respond", unit="question", disable=len(queries) < 2) as bar:
            seconds, prompt_tokens, tokens = 0.0, 0, 0
            for name in dict.fromkeys(names):
                idx = [i for i, n in enumerate(names) if n == name]
                sampling = Sampling(temperature=self.temperature,
                                    max_tokens=self.max_tokens or self.templates[name].max_tokens)
                for b in range(0, len(idx), self.llm.batch_size):
                    batch = idx[b:b + self.llm.batch_size]
                    before, read, t0 = self.llm.stats.generated_tokens, self.llm.stats.prompt_tokens, time.perf_counter()
                    texts, counted = self.answer(batch, prompts, sampling)
                    elapsed = time.perf_counter() - t0
                    for i, text, full in zip(batch, texts, counted):
                        reply = self.templates[name].extract(strip_reasoning(text))
                        answers[i] = Answer(queries[i].qid, reply.strip(), self.llm.count_tokens(full),
                                            elapsed / len(batch))
                    if generated := self.llm.stats.generated_tokens - before:  # 0: every answer from the cache
                        seconds, tokens = seconds + elapsed, tokens + generated
                        prompt_tokens += self.llm.stats.prompt_tokens - read
                        bar.set_postfix_str(rate(prompt_tokens, tokens, seconds), refresh=False)
                    bar.update(len(batch))
        return answers

    def answer(self, batch: list[int], prompts: list[str], sampling: Sampling) -> tuple[list[str], list[str]]:
        """The model's answers to ``prompts[i]`` for i in ``batch``, and the text whose tokens are
        the prompt's length (the chat template applied)."""
        if self.use_chat:
            texts = self.llm.chat([[{"role": "user", "content": prompts[i]}] for i in batch], sampling, desc="batch")
            return texts, [self.llm.apply_chat_template([{"role": "user", "content": prompts[i]}]) for i in batch]
        return self.llm.generate([prompts[i] for i in batch], sampling, desc="batch"), [prompts[i] for i in batch]


def rate(prompt_tokens: int, generated: int, seconds: float) -> str:
    """Prompt and generated tokens per second of model time (answers read from the cache count
    for nothing); on a CPU the prompts (the context) take most of it."""
    if seconds <= 0:
        return ""
    return f"prompt {prompt_tokens / seconds:.0f} tok/s, answer {generated / seconds:.1f} tok/s"
