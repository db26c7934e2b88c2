"""Shared fixtures. The CPU defaults run offline: libraries must not reach for the Hub."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist each worker gets its share of the cores: torch's default of one thread per
# core in every worker oversubscribes them (spinning OpenMP threads made `-n 2` slower than serial).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
FIXTURES = REPO / "tests" / "fixtures"
SAMPLES = REPO / "harness" / "data" / "samples"
# Four one-page OHR-Bench documents (20 questions): real data, seconds to run.
TINY = ["dataset.domains=[news,textbook]"]
# TINY retrieved with BM25: for tests of what surrounds a run (processes, cache, record, signals,
# errors, secrets), where importing and running the embedding model (about 10 CPU seconds a
# process here) tests nothing.
TINY_LEXICAL = [*TINY, "retriever=bm25"]


@pytest.fixture
def make_cfg(tmp_path):
    """Compose the run config as `python -m harness <overrides>` would, with a private cache
    and no tracking; on the default dataset, only its TINY part unless another is chosen."""

    def _make(*overrides: str, cache: Path | None = None):
        other_dataset = any(o.startswith("dataset=") for o in overrides)
        base = [f"cache.dir={cache or tmp_path / 'cache'}", "tracking=none", *([] if other_dataset else TINY)]
        with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
            return compose("config", overrides=[*base, *overrides])

    return _make


def query_eval(query, context=None, answer=None, chunks_by_doc=None, ranked=(), documents=None, expand="none"):
    """A QueryEval for metric unit tests: only what a test names is filled in. ``ranked`` is the
    retriever's ranking; the context records it resolved with ``expand``, as the assemble
    stage does."""
    from dataclasses import replace

    from harness.hierarchy import rank
    from harness.metrics.base import QueryEval
    from harness.types import Context, Retrieved

    chunks_by_doc = chunks_by_doc or {}
    by_id = {c.chunk_id: c for cs in chunks_by_doc.values() for c in cs}
    retrieved = Retrieved(query.qid, tuple(ranked))
    context = context or Context(query.qid, (), "", 0)
    if context.ranking is None:
        context = replace(context, ranking=rank(retrieved, by_id, expand))
    return QueryEval(query=query, retrieved=retrieved, context=context, answer=answer,
                     chunks_by_doc=chunks_by_doc, chunks_by_id=by_id, documents=documents or {})


class ScriptedLLM:
    """A language model for unit tests: ``reply(prompt) -> str`` answers generate and chat
    (chat sees the last user message), ``score(prompt, continuation) -> list[float]`` answers
    logprobs. Tokens are whitespace words. Calls go through the real LLM base class, so
    caching and batching are exercised; ``prompts`` records what the model was asked."""

    def __new__(cls, reply=None, score=None, model="scripted"):
        from harness.llm.base import LLM

        class _Scripted(LLM):
            tokenizer = None

            def _generate(self, prompts, sampling):
                self.prompts.extend(prompts)
                return [self.reply(p) for p in prompts]

            def _chat(self, conversations, sampling):
                return self._generate([c[-1]["content"] for c in conversations], sampling)

            def _logprobs(self, prompts, continuations):
                return [self.score(p, c) for p, c in zip(prompts, continuations)]

            def _token_logprobs(self, texts):
                return self._logprobs([""] * len(texts), texts)

            def count_tokens(self, text):
                return len(text.split())

            def truncate(self, text, max_tokens):
                return " ".join(text.split()[:max_tokens])

            def apply_chat_template(self, messages, add_generation_prompt=True):
                return "\n".join(m["content"] for m in messages)

        llm = _Scripted(model)
        llm.prompts = []
        llm.reply = reply or (lambda p: "")
        llm.score = score or (lambda p, c: [-1.0] * len(c.split()))
        return llm
