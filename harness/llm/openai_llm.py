"""The ``openai`` backend: any OpenAI-compatible server (``vllm serve``, llama.cpp's server,
a hosted API).

How it starts: run a server, e.g. ``vllm serve <model> --port 8000`` (on CPU, from the
``make setup-vllm`` environment: ``.venv-vllm/bin/vllm serve <folder>``), then
``llm=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=<served name>``. The key comes
from ``llm.api_key`` or the ``OPENAI_API_KEY`` environment variable. Requests run in a
bounded thread pool; the ``openai`` client retries 429/5xx and connection errors with
exponential backoff (``max_retries``) under a per-request ``timeout``.

Token counting, truncation and log-probability scoring use the model's tokenizer locally
(``llm.tokenizer``, default ``llm.model``): scoring sends token ids as the prompt with
``echo`` so that the server scores exactly the tokens the other backends score. Servers
without prompt log-probabilities (most hosted APIs) raise a clear error for scoring.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any

from harness.cache import Cache
from harness.llm.base import LLM, LLMError, Message, Sampling
from harness.llm.bundled import BUNDLED_ID, llm_path
from harness.secrets import mask_text
from harness.types import ConfigError


def map_on_server(fn, items: list, concurrency: int, error: type[Exception], who: str, base_url: str,
                  served_model: str, max_retries: int, api_key: str | None, hint: str = "") -> list:
    """``fn`` over ``items`` with at most ``concurrency`` requests in flight to an OpenAI-compatible
    server (the client retries); a server that never answers, or answers an error, is one ``error``
    line naming it (the LLM and the embeddings backend share this)."""
    from openai import APIConnectionError, APIStatusError, APITimeoutError

    try:
        with ThreadPoolExecutor(max(1, min(concurrency, len(items)))) as pool:
            return list(pool.map(fn, items))
    except (APIConnectionError, APITimeoutError) as e:
        raise error(f"{who}: no answer from {base_url} after {max_retries} retries ({type(e).__name__}). "
                    f"Is the server running?{hint}") from e
    except APIStatusError as e:  # a server may echo the key it was sent (401): masked, and not chained
        raise error(mask_text(f"{who}: {base_url} answered {e.status_code} for model {served_model!r}: "
                              f"{e.message}", {api_key})) from None


class OpenAILLM(LLM):
    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", api_key: str | None = None,
                 served_model: str | None = None, tokenizer: str | None = None, dtype: str | None = None,
                 quantization: str | None = None, max_concurrency: int = 8, max_retries: int = 5,
                 timeout: float = 600.0, batch_size: int = 256, cache: Cache | None = None,
                 thinking: bool | None = None):
        if max_concurrency < 1:
            raise ConfigError(f"llm.max_concurrency must be >= 1, got {max_concurrency}")
        if timeout <= 0:
            raise ConfigError(f"llm.timeout must be > 0, got {timeout}")
        super().__init__(BUNDLED_ID if model == "bundled" else model, batch_size, cache, dtype=dtype,
                         quantization=quantization, thinking=thinking)
        self.base_url, self.max_concurrency = base_url, max_concurrency
        # Local servers take any key. Not in `identity`: rotating a key keeps the cache.
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.max_retries, self.timeout = max_retries, timeout
        self.model_name, self.served_model = model, served_model or model
        self.tokenizer_name = tokenizer or model

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

        return OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=self.max_retries, timeout=self.timeout)

    @cached_property
    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        try:
            return AutoTokenizer.from_pretrained(llm_path(self.tokenizer_name))
        except OSError as e:
            raise ConfigError(f"llm.tokenizer: cannot load the tokenizer {self.tokenizer_name!r} "
                              f"(set llm.tokenizer to a local folder or Hub id): {e}") from e

    def _map(self, fn, items: list) -> list:
        return map_on_server(fn, items, self.max_concurrency, LLMError, "llm=openai", self.base_url,
                             self.served_model, self.max_retries, self.api_key, " e.g. `vllm serve <model>`")

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

    def _count_usage(self, resp) -> None:
        if resp.usage is not None:
            self.stats.prompt_tokens += resp.usage.prompt_tokens or 0
            self.stats.generated_tokens += resp.usage.completion_tokens or 0

    def _generate(self, prompts: list[str], sampling: Sampling) -> list[str]:
        def one(prompt: str) -> str:
            resp = self.client.completions.create(prompt=prompt, **self._sampling(sampling))
            self._count_usage(resp)
            return resp.choices[0].text

        return self._map(one, prompts)

    def _chat(self, conversations: list[list[Message]], sampling: Sampling) -> list[str]:
        def one(messages: list[Message]) -> str:
            resp = self.client.chat.completions.create(messages=messages, **self._sampling(sampling, chat=True))
            self._count_usage(resp)
            return resp.choices[0].message.content or ""

        return self._map(one, conversations)

    def _logprobs(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        def one(seq: tuple[list[int], int]) -> list[float]:
            ids, start = seq
            resp = self.client.completions.create(model=self.served_model, prompt=ids, max_tokens=1, echo=True,
                                                  logprobs=0, temperature=0.0)
            lp = resp.choices[0].logprobs
            scores = lp.token_logprobs if lp is not None else None
            if not scores or len(scores) < len(ids) or any(x is None for x in scores[start:len(ids)]):
                raise LLMError(f"llm=openai: {self.base_url} gave no prompt log-probabilities (echo + logprobs); "
                               "scoring needs a server that does, e.g. vLLM's")
            self.stats.scored_tokens += len(ids) - start
            return [float(x) for x in scores[start:len(ids)]]

        return self._map(one, self.scoring_sequences(prompts, continuations))

    def _token_logprobs(self, texts: list[str]) -> list[list[float]]:
        return self._logprobs([""] * len(texts), texts)
