"""One language-model interface for every stage that needs a model, with the LLM-call cache.

A backend (``vllm``, ``openai``, ``transformers``) implements four batched hooks; the public
methods put the LLM-call cache in front of them:

- ``generate(prompts, sampling)``: raw completions of raw prompts.
- ``chat(conversations, sampling)``: the model's chat template applied, then generation.
- ``logprobs(prompts, continuations)``: per-token natural-log probabilities of each
  continuation given its prompt (token-level scoring: LGMGC's p([EOS] | prefix), ranking).
  The prompt and the continuation are tokenised separately and concatenated, so a
  continuation's tokens are the same whatever the prompt (and ``"<|im_end|>"`` is the
  end-of-turn token, not its characters).
- ``token_logprobs(texts)``: per-token log-probabilities of a text on its own (perplexity;
  the first token is scored after the model's BOS token when it has one, else left out).

Cache key = (operation, identity, prompt or messages, sampling parameters), the identity being
the weights (``model``) and the precision they run in (``dtype``, ``quantization``): what
changes outputs. The backend, device, batch size and ``max_model_len`` are not in it, so the
same model at the same precision served by vLLM or loaded by transformers shares entries,
and a rerun or a sweep never pays twice for a prompt. ``llm.thinking`` (the chat template's
``enable_thinking``) enters the key of chat calls only when set. Greedy decoding is the
default; a sampled call is cached under its seed, so repetitions must use distinct seeds.
Entries are written per item as soon as a batch returns (a killed run keeps its work).
"""

from __future__ import annotations

import math
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.progress import tqdm

from harness.cache import Cache, make_key
from harness.llm.bundled import BUNDLED_ID
from harness.revision import check_local, check_revision
from harness.types import ConfigError, ServiceError

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


class LLMError(ServiceError):
    """A backend failed (server down, model missing, a request that keeps failing): one line."""


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters; the defaults are greedy decoding."""

    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int = 0
    repetition_penalty: float = 1.0  # > 1 discourages repeats (vLLM / transformers semantics); 1 = off

    def __post_init__(self):
        if self.max_tokens <= 0:
            raise ConfigError(f"sampling max_tokens must be > 0, got {self.max_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"sampling temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"sampling top_p must be in (0, 1], got {self.top_p}")
        if self.repetition_penalty <= 0:
            raise ConfigError(f"sampling repetition_penalty must be > 0, got {self.repetition_penalty}")
        object.__setattr__(self, "stop", tuple(self.stop))

    def key(self) -> dict:
        """The parameters as they enter the LLM-call cache key; a field added after the cache had
        entries is left out at its neutral value, so those entries stay valid."""
        params = asdict(self)
        if params["repetition_penalty"] == 1.0:
            del params["repetition_penalty"]
        return params

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


class Unanswered(str):
    """What a backend returns for a call the model gave no usable answer to (no content, only tool
    calls, cut at max_tokens before any text, text that is not valid Unicode): the text it could
    read ("" if none), used as that answer, counted (:attr:`LLMStats.unanswered`), warned of, and
    never cached, so a rerun asks again."""

    reason: str

    def __new__(cls, text: str, reason: str) -> "Unanswered":
        obj = super().__new__(cls, text)
        obj.reason = reason
        return obj


_UNANSWERED = [0]  # every Unanswered this process got, all models: the runner stores no stage that saw one


def unanswered_calls() -> int:
    """How many model calls of this process got no usable answer so far (:class:`Unanswered`)."""
    return _UNANSWERED[0]


@dataclass
class LLMStats:
    """What a run reports about its model calls (cache hits are counted by the cache)."""

    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    scored_tokens: int = 0
    unanswered: int = 0  # calls that got an Unanswered: used as given, not cached


DTYPE_ALIASES = {"half": "float16", "float": "float32"}  # vLLM's spellings, one key per precision


class LLM(ABC):
    """Base of every backend. ``model`` names the weights; ``dtype`` and ``quantization`` the
    precision they compute in (None: the backend's default, not stated); together the cache
    identity. ``batch_size`` bounds how many prompts go to the backend per call. ``thinking``
    is given to the chat template as ``enable_thinking`` (None: the template's default)."""

    def __init__(self, model: str, batch_size: int = 64, cache: Cache | None = None, *,
                 dtype: str | None = None, quantization: str | None = None, thinking: bool | None = None,
                 revision: str | None = None):
        if batch_size <= 0:
            raise ConfigError(f"llm.batch_size must be > 0, got {batch_size}")
        if thinking is not None and not isinstance(thinking, bool):
            raise ConfigError(f"llm.thinking must be null, true or false, got {thinking!r}")
        self.model = model
        self.revision = check_revision(revision, "llm.revision")
        check_local("bundled" if model == BUNDLED_ID else model, self.revision, "llm.revision")
        self.dtype = DTYPE_ALIASES.get(dtype, dtype) if dtype else None
        self.quantization = quantization or None
        self.batch_size = batch_size
        self.thinking = thinking
        self.cache = cache  # the run's cache (`cache: ${cache}`): one entry per call; None = no caching
        self.stats = LLMStats()

    @property
    def identity(self) -> dict[str, str | None]:
        """What besides the prompt determines an output: the weights and their precision. A pinned
        commit is other weights (and chat template) than the default branch's; written only when
        set, so unpinned entries keep their keys."""
        own = {"model": self.model, "dtype": self.dtype, "quantization": self.quantization}
        return {**own, "revision": self.revision} if self.revision else own

    @property
    def who(self) -> str:
        """The model as a warning names it."""
        return self.model

    @property
    def chat_template_kwargs(self) -> dict[str, bool]:
        """What the chat template gets besides the messages (every backend passes these)."""
        return {} if self.thinking is None else {"enable_thinking": self.thinking}

    # --- public, cached ------------------------------------------------------------

    def generate(self, prompts: Sequence[str], sampling: Sampling | None = None, desc: str = "generate") -> list[str]:
        sampling = sampling or Sampling()
        return self._cached("generate", list(prompts), sampling.key(),
                            lambda batch: self._generate(batch, sampling), desc)

    def chat(self, conversations: Sequence[Sequence[Message]], sampling: Sampling | None = None,
             desc: str = "chat") -> list[str]:
        sampling = sampling or Sampling()
        convs = [[dict(m) for m in c] for c in conversations]
        # The template's arguments change the replies; none set leaves the keys of older entries as they were.
        params = {**sampling.key(), **self.chat_template_kwargs}
        return self._cached("chat", convs, params, lambda batch: self._chat(batch, sampling), desc)

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str], desc: str = "score") -> list[list[float]]:
        if len(prompts) != len(continuations):
            raise ValueError(f"logprobs: {len(prompts)} prompts but {len(continuations)} continuations")
        pairs = [[p, c] for p, c in zip(prompts, continuations)]
        return self._cached("logprobs", pairs, None,
                            lambda batch: self._logprobs([p for p, _ in batch], [c for _, c in batch]), desc)

    def token_logprobs(self, texts: Sequence[str], desc: str = "score") -> list[list[float]]:
        return self._cached("token_logprobs", list(texts), None, self._token_logprobs, desc)

    def prefix_logprobs(self, items: Sequence[tuple[str, str, Sequence[int], str]], desc: str = "score") -> list[list[float]]:
        """For each ``(prompt, text, cuts, token)``: log p(token | prompt + text[:c]) for every
        cut ``c`` (LGMGC's p([EOS] | rho, s_1..s_k) at each sentence end of a window)."""
        norm = [[p, t, [int(c) for c in cuts], tok] for p, t, cuts, tok in items]
        return self._cached("prefix_logprobs", norm, None, self._prefix_logprobs, desc)

    def perplexity(self, texts: Sequence[str]) -> list[float]:
        """exp of the mean negative log-probability per token (NaN for a text with no scored token)."""
        return [perplexity(lp) for lp in self.token_logprobs(texts)]

    # --- backend hooks ---------------------------------------------------------------

    @abstractmethod
    def _generate(self, prompts: list[str], sampling: Sampling) -> list[str]: ...

    @abstractmethod
    def _chat(self, conversations: list[list[Message]], sampling: Sampling) -> list[str]: ...

    @abstractmethod
    def _logprobs(self, prompts: list[str], continuations: list[str]) -> list[list[float]]: ...

    @abstractmethod
    def _token_logprobs(self, texts: list[str]) -> list[list[float]]: ...

    def _prefix_logprobs(self, items: list[list]) -> list[list[float]]:
        """One scored sequence per cut; backends that can read every cut off one forward pass
        override this."""
        flat = [(p + t[:c], tok) for p, t, cuts, tok in items for c in cuts]
        scores = iter(self._logprobs([f[0] for f in flat], [f[1] for f in flat]))
        return [[sum(next(scores)) for _ in cuts] for _, _, cuts, _ in items]

    # --- tokens (every backend holds the model's Hugging Face tokenizer) ---------------------

    @property
    @abstractmethod
    def tokenizer(self) -> Any: ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's tokenizer (the responder's budget unit)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that is at most ``max_tokens`` tokens."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if len(enc["input_ids"]) <= max_tokens:
            return text
        return text[:enc["offset_mapping"][max_tokens - 1][1]] if max_tokens > 0 else ""

    def apply_chat_template(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                  add_generation_prompt=add_generation_prompt,
                                                  **self.chat_template_kwargs)

    def scoring_sequences(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[tuple[list[int], int]]:
        """``(token ids, index of the first scored token)`` per pair: the prompt tokenised as
        the model would (with BOS if the tokenizer adds one), the continuation on its own.
        With nothing to condition on, the continuation's first token is not scored."""
        out = []
        for p, c in zip(prompts, continuations):
            head = self.tokenizer(p)["input_ids"]
            tail = self.tokenizer(c, add_special_tokens=False)["input_ids"]
            if not head:
                head, tail = tail[:1], tail[1:]
            out.append((head + tail, len(head)))
        return out

    # --- the cache -------------------------------------------------------------------

    def _cached(self, op: str, items: list[Any], params: dict | None, compute: Callable[[list[Any]], list[Any]],
                desc: str) -> list[Any]:
        keys = [make_key("llm", op, self.identity, item, params) for item in items]
        out: list[Any] = [None] * len(items)
        if self.cache is not None:
            for i, k in enumerate(keys):
                out[i] = self.cache.get_timed("llm", k)
        first: dict[str, int] = {}
        todo = [i for i, v in enumerate(out) if v is None and first.setdefault(keys[i], i) == i]
        unanswered: dict[str, int] = {}
        with tqdm(total=len(todo), desc=desc, unit="call", disable=len(todo) < 2, leave=False) as bar:
            for b in range(0, len(todo), self.batch_size):
                idx = todo[b:b + self.batch_size]
                t0 = time.perf_counter()
                results = compute([items[i] for i in idx])
                seconds = (time.perf_counter() - t0) / max(len(idx), 1)
                if len(results) != len(idx):
                    raise LLMError(f"{type(self).__name__}.{op}: backend returned {len(results)} results "
                                   f"for {len(idx)} inputs")
                self.stats.calls += len(idx)
                for i, v in zip(idx, results):
                    out[i] = v
                    if isinstance(v, Unanswered):
                        unanswered[v.reason] = unanswered.get(v.reason, 0) + 1
                    elif self.cache is not None:
                        self.cache.put_timed("llm", keys[i], v, seconds)
                bar.update(len(idx))
        if unanswered:
            self.stats.unanswered += sum(unanswered.values())
            _UNANSWERED[0] += sum(unanswered.values())
            print(f"chunkbench: warning: {self.who} gave no usable answer to {sum(unanswered.values())} of "
                  f"{len(todo)} {op} calls ({', '.join(f'{r}: {n}' for r, n in unanswered.items())}); each is "
                  f"used as the text it gave (empty if none) and not cached, so a rerun asks again", file=sys.stderr)
        for i, v in enumerate(out):
            if v is None:
                out[i] = out[first[keys[i]]]
        return out


def perplexity(logprobs: Sequence[float]) -> float:
    return math.exp(-sum(logprobs) / len(logprobs)) if logprobs else float("nan")


def no_llm() -> None:
    """What ``llm=none`` builds: components that take ``llm: ${llm}`` then get None."""
    return None
