"""The ``openai`` backend: any OpenAI-compatible server (``vllm serve``, llama.cpp's server,
a hosted API).

How it starts: run a server, e.g. ``vllm serve <model> --port 8000`` (on CPU, from the
``make setup-vllm`` environment: ``.venv-vllm/bin/vllm serve <folder>``), then
``llm=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=<served name>``. The key comes
from ``llm.api_key`` or the ``OPENAI_API_KEY`` environment variable. Requests run in a
bounded thread pool (:mod:`harness.llm.server`): 429, 5xx, connection errors and timeouts are
retried with exponential backoff (``max_retries``), each try under ``timeout`` seconds and all
of a call's tries under ``deadline``; a failure ends the run in one line naming the server.

Token counting, truncation and log-probability scoring use the model's tokenizer locally
(``llm.tokenizer``, default ``llm.model``): scoring sends token ids as the prompt with
``echo`` so that the server scores exactly the tokens the other backends score. Servers
without prompt log-probabilities (most hosted APIs) raise a clear error for scoring.
"""

from __future__ import annotations

import os
import re
from functools import cached_property
from typing import Any

from harness.cache import Cache
from harness.llm.base import LLM, LLMError, Message, Sampling, Unanswered
from harness.llm.bundled import BUNDLED_ID, llm_path
from harness.llm.server import BadAnswer, Server, choices, map_on_server
from harness.revision import split_name
from harness.secrets import known_secrets, mask_text
from harness.types import ConfigError


# No tokenizer decodes one token to more characters than this: an answer longer than max_tokens of
# them is a server that ignores max_tokens (a 10 MB reply to max_tokens=8), refused, not stored.
MAX_CHARS_PER_TOKEN = 64
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON may escape one; UTF-8 (the cache, MLflow) cannot hold it


def reply_text(choice: Any, sampling: Sampling, chat: bool) -> str:
    """The text of a chat (``message.content``) or completion (``text``) choice. A body of the
    other endpoint's shape, text that is no string, or one far longer than ``max_tokens`` allows
    is a :class:`BadAnswer`; no text (null, absent, only tool calls, "" cut at max_tokens) or text
    with lone surrogates is an :class:`Unanswered`."""
    field = "message" if chat else "text"
    if chat:
        message = getattr(choice, "message", None)
        if message is None:
            other = " (`choices[0].text`: a /completions answer to a chat request?)" if getattr(choice, "text", None) else ""
            raise BadAnswer(f"a choice with no `message`{other}")
        text = getattr(message, "content", None)
        if text is None:
            return Unanswered("", "only tool calls" if getattr(message, "tool_calls", None) else "no content")
    else:
        text = getattr(choice, "text", None)
        if text is None:
            raise BadAnswer("a choice with no `text` (a chat answer to a /completions request?)")
    if not isinstance(text, str):
        raise BadAnswer(f"a `{field}` that is no text ({type(text).__name__})")
    if len(text) > MAX_CHARS_PER_TOKEN * sampling.max_tokens:
        raise BadAnswer(f"{len(text):,} characters to max_tokens={sampling.max_tokens}",
                        "the server does not honour max_tokens (more than "
                        f"{MAX_CHARS_PER_TOKEN} characters a token): fix its settings or its version")
    if text == "" and getattr(choice, "finish_reason", None) == "length":
        return Unanswered("", "cut at max_tokens before any text")
    if _SURROGATE.search(text):
        return Unanswered(_SURROGATE.sub("\ufffd", text), "text that is not valid Unicode")
    return text


class OpenAILLM(LLM):
    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", api_key: str | None = None,
                 served_model: str | None = None, tokenizer: str | None = None, dtype: str | None = None,
                 quantization: str | None = None, max_concurrency: int = 8, max_retries: int = 5,
                 timeout: float = 60.0, deadline: float = 300.0, batch_size: int = 256,
                 cache: Cache | None = None, thinking: bool | None = None, revision: str | None = None):
        # revision: the commit the server's weights are (declared, as dtype is: the cache key), and
        # the local tokenizer's when it is the model's; another tokenizer is pinned as <id>@<revision>
        super().__init__(BUNDLED_ID if model == "bundled" else model, batch_size, cache, dtype=dtype,
                         quantization=quantization, thinking=thinking, revision=revision)
        self.base_url, self.max_concurrency = base_url, max_concurrency
        # Local servers take any key. Not in `identity`: rotating a key keeps the cache.
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.max_retries, self.timeout, self.deadline = max_retries, timeout, deadline
        self.model_name, self.served_model = model, served_model or model
        self.tokenizer_name = tokenizer or model
        self.tokenizer_id, self.tokenizer_revision = (split_name(tokenizer, "llm.tokenizer") if tokenizer
                                                      else (model, self.revision))
        _ = self.server  # a bad setting is refused now, not at the first request

    @property
    def server(self) -> Server:
        """Built on each use: the settings as they are now (a test may lower max_retries)."""
        return Server("llm=openai", "llm", self.base_url, self.served_model, self.api_key, self.max_retries,
                      self.timeout, self.deadline, self.max_concurrency, " e.g. `vllm serve <model>`", LLMError)

    @property
    def who(self) -> str:
        return f"llm=openai: {mask_text(self.base_url, {self.api_key} - {'EMPTY'})} (model {self.served_model!r})"

    @property
    def identity(self) -> dict[str, str | None]:
        """The server's weights and precision as declared (``llm.dtype``/``llm.quantization``:
        the client cannot see them), and a local tokenizer other than the model's: scoring
        sends the token ids it makes."""
        own = super().identity
        return own if self.tokenizer_name == self.model_name else {**own, "tokenizer": self.tokenizer_name}

    @cached_property
    def client(self):
        from openai import OpenAI

        # retries and timeouts are map_on_server's (with a deadline); the client tries once
        return OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=self.timeout)

    @cached_property
    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        try:
            pinned = {"revision": self.tokenizer_revision} if self.tokenizer_revision else {}
            return AutoTokenizer.from_pretrained(llm_path(self.tokenizer_id), **pinned)
        except OSError as e:
            raise ConfigError(f"llm.tokenizer: cannot load the tokenizer {self.tokenizer_name!r} "
                              f"(set llm.tokenizer to a local folder or Hub id): {e}") from e

    def _map(self, fn, items: list) -> list:
        return map_on_server(self.server, fn, items)

    def _sampling(self, s: Sampling, chat: bool = False) -> dict[str, Any]:
        out = dict(model=self.served_model, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                   stop=list(s.stop) or None, seed=s.seed)
        # Not in the OpenAI API, so in the body only when set: vLLM's and llama.cpp's servers read them.
        extra: dict[str, Any] = {}
        if s.repetition_penalty != 1.0:
            extra["repetition_penalty"] = s.repetition_penalty
        if chat and self.chat_template_kwargs:
            extra["chat_template_kwargs"] = self.chat_template_kwargs
        if extra:
            out["extra_body"] = extra
        return out

    def _masked(self, text: str) -> str:
        """``text`` without the key or any secret this process knows of: a server may echo them,
        and the answer is cached and recorded."""
        masked = mask_text(text, ({self.api_key} - {"EMPTY"}) | known_secrets())
        if masked == text:
            return text
        return Unanswered(masked, text.reason) if isinstance(text, Unanswered) else masked

    def _count_usage(self, resp) -> None:
        if resp.usage is not None:
            self.stats.prompt_tokens += resp.usage.prompt_tokens or 0
            self.stats.generated_tokens += resp.usage.completion_tokens or 0

    def _generate(self, prompts: list[str], sampling: Sampling) -> list[str]:
        def one(prompt: str, timeout: float) -> str:
            resp = self.client.completions.create(prompt=prompt, timeout=timeout, **self._sampling(sampling))
            found = choices(resp)
            self._count_usage(resp)
            return self._masked(reply_text(found[0], sampling, chat=False))

        return self._map(one, prompts)

    def _chat(self, conversations: list[list[Message]], sampling: Sampling) -> list[str]:
        def one(messages: list[Message], timeout: float) -> str:
            resp = self.client.chat.completions.create(messages=messages, timeout=timeout,
                                                       **self._sampling(sampling, chat=True))
            found = choices(resp)
            self._count_usage(resp)
            return self._masked(reply_text(found[0], sampling, chat=True))

        return self._map(one, conversations)

    def _logprobs(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        def one(seq: tuple[list[int], int], timeout: float) -> list[float]:
            ids, start = seq
            resp = self.client.completions.create(model=self.served_model, prompt=ids, max_tokens=1, echo=True,
                                                  logprobs=0, temperature=0.0, timeout=timeout)
            lp = choices(resp)[0].logprobs
            scores = lp.token_logprobs if lp is not None else None
            if not scores or len(scores) < len(ids) or any(x is None for x in scores[start:len(ids)]):
                raise LLMError(f"llm=openai: {self.base_url} gave no prompt log-probabilities (echo + logprobs); "
                               "scoring needs a server that does, e.g. vLLM's")
            self.stats.scored_tokens += len(ids) - start
            return [float(x) for x in scores[start:len(ids)]]

        return self._map(one, self.scoring_sequences(prompts, continuations))

    def _token_logprobs(self, texts: list[str]) -> list[list[float]]:
        return self._logprobs([""] * len(texts), texts)
