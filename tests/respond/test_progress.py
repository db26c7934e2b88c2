"""The responder's progress: a bar that moves batch by batch with token rates, while each answer
stays cached on its own (the batching is in no key). With the bundled model: a real answer run
through the command line shows the rate."""

import subprocess
import sys

import pytest

from harness.cache import Cache
from harness.respond.responder import LLMResponder, rate
from harness.types import Context, Query
from tests.conftest import TINY, ScriptedLLM

TEMPLATES = {"default": {"prompt": "{context}\nQ: {input}", "max_tokens": 4}}


def counting_llm(batch_size: int, cache: Cache):
    llm = ScriptedLLM(reply=lambda p: f"answer to {p.split('Q: ')[-1]}")
    llm.batch_size, llm.cache, calls = batch_size, cache, []
    backend = llm._generate

    def generate(prompts, sampling):  # counts tokens as a real backend does
        calls.append(len(prompts))
        llm.stats.prompt_tokens += sum(len(p.split()) for p in prompts)
        out = backend(prompts, sampling)
        llm.stats.generated_tokens += sum(len(t.split()) for t in out)
        return out

    llm._generate = generate
    return llm, calls


def questions(n: int):
    return ([Query(str(i), f"question {i}?") for i in range(n)],
            [Context(str(i), (), f"context of {i} " * 5, 15) for i in range(n)])


def test_answers_come_batch_by_batch_with_a_rate(tmp_path, capsys):
    qs, ctx = questions(7)
    llm, calls = counting_llm(3, Cache(tmp_path / "a"))
    answers = LLMResponder(llm, TEMPLATES).respond(qs, ctx, "ohrbench")
    assert calls == [3, 3, 1]  # the model is asked batch by batch, not once for the whole stage
    assert [a.text for a in answers] == [f"answer to question {i}?" for i in range(7)]
    err = capsys.readouterr().err
    assert "respond: 100%" in err and "7/7 [" in err and "prompt " in err and "answer " in err and "tok/s" in err


def test_batching_leaves_the_cache_as_one_call_would(tmp_path):
    qs, ctx = questions(7)
    one, _ = counting_llm(64, Cache(tmp_path / "one"))
    small, _ = counting_llm(2, Cache(tmp_path / "small"))
    a = LLMResponder(one, TEMPLATES).respond(qs, ctx, "ohrbench")
    b = LLMResponder(small, TEMPLATES).respond(qs, ctx, "ohrbench")
    assert [x.text for x in a] == [x.text for x in b] and [x.n_prompt_tokens for x in a] == [x.n_prompt_tokens for x in b]
    names = {d: sorted(p.name for p in (tmp_path / d / "llm").rglob("*") if p.is_file()) for d in ("one", "small")}
    assert names["one"] == names["small"] and len(names["one"]) == 7
    again, calls = counting_llm(2, Cache(tmp_path / "one"))  # a rerun on the first cache asks nothing
    assert [x.text for x in LLMResponder(again, TEMPLATES).respond(qs, ctx, "ohrbench")] == [x.text for x in a]
    assert calls == []


def test_rate_text():
    assert rate(3000, 20, 2.0) == "prompt 1500 tok/s, answer 10.0 tok/s"
    assert rate(0, 0, 0.0) == ""


@pytest.mark.slow
def test_bundled_model_answer_run_shows_the_rate(tmp_path):
    """Three questions answered by the bundled model at a small context, from the command line."""
    p = subprocess.run([sys.executable, "-m", "harness", *TINY, "responder=llm", "dataset.limit_queries=3",
                        "llm.batch_size=1", "responder.max_tokens=8", "responder.max_context_tokens=256",
                        f"cache.dir={tmp_path / 'cache'}", "tracking=none"],
                       cwd=tmp_path, text=True, capture_output=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "respond: 100%" in p.stderr and "3/3" in p.stderr and "answer " in p.stderr and "tok/s" in p.stderr
    assert "generate (1 prompt)" in p.stderr  # within a batch: its decoding steps, in tokens
