"""The LLM layer: the call cache, sampling checks, the responder, the logits-guided chunkers,
the OpenAI-compatible client against a local HTTP server, and the bundled CPU model."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import ScriptedLLM
from tests.http_fake import JSONHandler, LocalServer
from harness.chunking.base import check_chunks
from harness.chunking.logits_guided import LGMGCChunker, LogitsGuidedChunker
from harness.llm.base import LLMError, Sampling
from harness.cache import Cache
from harness.respond.responder import LLMResponder
from harness.types import ConfigError, Context, Document, Query


# --- the LLM-call cache ---------------------------------------------------------------------

def test_cache_serves_repeats_without_calling_the_backend(tmp_path):
    llm = ScriptedLLM(reply=lambda p: p.upper())
    llm.cache = Cache(tmp_path)
    assert llm.generate(["a", "b", "a"]) == ["A", "B", "A"]
    assert llm.prompts == ["a", "b"]  # the duplicate in one batch is asked once
    assert llm.generate(["b", "c"]) == ["B", "C"]
    assert llm.prompts == ["a", "b", "c"]
    assert llm.cache.counts()["llm"] == {"hits": 1, "misses": 4}


def test_a_cache_hit_reports_the_compute_time_it_saves(tmp_path):
    import time

    llm = ScriptedLLM(reply=lambda p: time.sleep(0.02) or p.upper())
    llm.cache = Cache(tmp_path)
    llm.generate(["a"])
    assert llm.cache.reused_seconds == 0.0
    llm.generate(["a"])  # answered by the cache: its recorded compute time counts as reused
    assert llm.cache.reused_seconds >= 0.02


def test_cache_key_is_model_prompt_and_sampling_not_backend(tmp_path):
    cache = Cache(tmp_path)
    first = ScriptedLLM(reply=lambda p: "first", model="m")
    first.cache = cache
    first.generate(["q"])
    other_backend = ScriptedLLM(reply=lambda p: "second", model="m")
    other_backend.cache = cache
    assert other_backend.generate(["q"]) == ["first"]  # same model and prompt: shared entry
    assert other_backend.generate(["q"], Sampling(temperature=0.7, seed=1)) == ["second"]
    other_model = ScriptedLLM(reply=lambda p: "third", model="m2")
    other_model.cache = cache
    assert other_model.generate(["q"]) == ["third"]


def test_chat_and_logprobs_are_cached_apart(tmp_path):
    llm = ScriptedLLM(reply=lambda p: "r", score=lambda p, c: [-0.5, -1.5])
    llm.cache = Cache(tmp_path)
    assert llm.chat([[{"role": "user", "content": "q"}]]) == ["r"]
    assert llm.logprobs(["p"], ["c d"]) == [[-0.5, -1.5]]
    assert llm.perplexity(["x y"]) == [pytest.approx(math.exp(1.0))]
    assert llm.logprobs(["p"], ["c d"]) == [[-0.5, -1.5]]
    assert llm.cache.counts()["llm"]["hits"] == 1


def test_batches_are_split_by_batch_size():
    llm = ScriptedLLM(reply=lambda p: p)
    llm.batch_size = 2
    calls = []
    original = llm._generate
    llm._generate = lambda prompts, s: calls.append(len(prompts)) or original(prompts, s)
    assert llm.generate(list("abcde")) == list("abcde")
    assert calls == [2, 2, 1]


def test_logprobs_needs_one_continuation_per_prompt():
    with pytest.raises(ValueError, match="2 prompts but 1 continuations"):
        ScriptedLLM().logprobs(["a", "b"], ["c"])


def test_repetition_penalty_enters_the_key_only_when_set(tmp_path):
    """A neutral penalty keeps the keys of calls cached before the field existed."""
    from dataclasses import asdict

    assert Sampling().key() == {k: v for k, v in asdict(Sampling()).items() if k != "repetition_penalty"}
    assert Sampling(repetition_penalty=1.05).key()["repetition_penalty"] == 1.05
    llm = ScriptedLLM(reply=lambda p: "plain")
    llm.cache = Cache(tmp_path)
    assert llm.generate(["q"]) == ["plain"]
    llm.reply = lambda p: "penalised"
    assert llm.generate(["q"], Sampling(repetition_penalty=1.05)) == ["penalised"]  # another entry
    assert llm.generate(["q"], Sampling(repetition_penalty=1.0)) == ["plain"]


@pytest.mark.parametrize("kwargs, name", [({"max_tokens": 0}, "max_tokens"), ({"temperature": -1}, "temperature"),
                                          ({"top_p": 0}, "top_p"), ({"repetition_penalty": 0}, "repetition_penalty")])
def test_sampling_rejects_bad_parameters(kwargs, name):
    with pytest.raises(ConfigError, match=name):
        Sampling(**kwargs)


# --- the responder ---------------------------------------------------------------------------

TEMPLATES = {"default": {"prompt": "D {context} | {input}", "max_tokens": 5},
             "qasper": {"prompt": "Q {context} | {input}", "max_tokens": 7},
             "ohrbench": {"prompt": "O {context} | {input}", "max_tokens": 9}}


def test_responder_picks_task_then_dataset_then_default():
    r = LLMResponder(ScriptedLLM(), TEMPLATES)
    assert r.pick(Query("1", "?", task="qasper"), "longbench") == "qasper"
    assert r.pick(Query("1", "?", task="T0"), "ohrbench") == "ohrbench"
    assert r.pick(Query("1", "?", task="T0"), "hichunk/ohrbench") == "ohrbench"
    assert r.pick(Query("1", "?"), "crud") == "default"
    assert LLMResponder(ScriptedLLM(), TEMPLATES, template="qasper").pick(Query("1", "?"), "crud") == "qasper"


def test_responder_fills_cuts_and_records():
    seen = []
    llm = ScriptedLLM(reply=lambda p: seen.append(p) or "  the answer \n")
    r = LLMResponder(llm, TEMPLATES, max_context_tokens=3)
    qs = [Query("a", "what {x}?", task="qasper"), Query("b", "why?")]
    ctxs = [Context("a", (), "one two three four five", 5), Context("b", (), "{context} braces", 2)]
    answers = r.respond(qs, ctxs, "crud")
    assert [a.text for a in answers] == ["the answer", "the answer"]
    assert sorted(seen) == ["D {context} braces | why?", "Q one two three | what {x}?"]
    assert answers[0].n_prompt_tokens == len("Q one two three | what {x}?".split())
    assert all(a.seconds >= 0 for a in answers)


@pytest.mark.parametrize("templates, template, match", [
    ({"x": {"prompt": "{context} {input}", "max_tokens": 3}}, "auto", "needs a 'default'"),
    ({"default": {"prompt": "{context}", "max_tokens": 3}}, "auto", r"no \{input\} slot"),
    ({"default": {"prompt": "{context} {input}"}}, "auto", "max_tokens"),
    (TEMPLATES, "nope", "responder.template='nope'"),
])
def test_responder_rejects_bad_templates(templates, template, match):
    with pytest.raises(ConfigError, match=match):
        LLMResponder(ScriptedLLM(), templates, template=template)


def test_responder_without_a_model_says_how_to_get_one():
    with pytest.raises(ConfigError, match="llm=transformers"):
        LLMResponder(None, TEMPLATES)


# --- the logits-guided chunkers -----------------------------------------------------------

SENTENCES = [f"Sentence number {i} talks about topic {i // 3}." for i in range(12)]
DOC = Document("d", " ".join(SENTENCES))


def eos_after(numbers: set[int]):
    """A model that wants to stop exactly after the sentences numbered in ``numbers``."""
    return lambda prompt, cont: [0.0 if any(prompt.endswith(SENTENCES[i]) for i in numbers) else -9.0]


def test_logits_guided_cuts_at_the_most_likely_end_and_carries_the_rest():
    # Windows of 14 words hold 2 sentences (7 words each). The model prefers to stop after
    # sentences 1, 4, 6, 9; a window without one of them ties and ends at its first sentence;
    # the last two sentences fit in one window and end the document.
    llm = ScriptedLLM(score=eos_after({1, 4, 6, 9}))
    ch = LogitsGuidedChunker(llm, theta=14, chat=False, eos="</s>", window="capped")
    chunks = ch.chunk([DOC])[0]
    check_chunks(DOC, chunks, covering=True)
    groups = [[0, 1], [2], [3, 4], [5, 6], [7], [8, 9], [10, 11]]
    assert [c.text for c in chunks] == [" ".join(SENTENCES[i] for i in g) for g in groups]
    assert ch.doc_counts["d"]["windows"] == 6


def test_logits_guided_argmax_picks_the_first_of_equal_scores():
    llm = ScriptedLLM(score=lambda p, c: [-1.0])
    chunks = LogitsGuidedChunker(llm, theta=21, chat=False, eos="</s>").chunk([DOC])[0]
    assert [len(c.text.split()) for c in chunks][:3] == [7, 7, 7]  # a tie: the earliest end


def test_logits_guided_scores_every_window_of_a_batch_in_one_call():
    calls = []
    llm = ScriptedLLM(score=lambda p, c: [-1.0])
    original = llm._prefix_logprobs
    llm._prefix_logprobs = lambda items: calls.append(len(items)) or original(items)
    docs = [DOC, Document("e", DOC.text.replace("topic", "subject"))]
    LogitsGuidedChunker(llm, theta=21, chat=False, eos="</s>").chunk(docs)
    assert calls and calls[0] == 2


def test_lgmgc_puts_children_under_logits_guided_parents():
    llm = ScriptedLLM(score=lambda p, c: [-1.0])
    chunks = LGMGCChunker(llm, theta=28, divisors=[2, 4], chat=False, eos="</s>").chunk([DOC])[0]
    check_chunks(DOC, chunks)
    parents = [c for c in chunks if c.level == 1]
    assert " ".join(p.text for p in parents) == DOC.text
    assert {c.level for c in chunks} == {1, 2, 3}
    assert all(c.parent_id in {p.chunk_id for p in parents} for c in chunks if c.level > 1)


def test_llm_chunkers_need_a_model():
    with pytest.raises(ConfigError, match="chunker.llm must build a language model"):
        LogitsGuidedChunker(None)


def test_logits_guided_configs_compose(make_cfg):
    from harness.pipeline.components import build_components

    for name, cls in [("logits_guided", LogitsGuidedChunker), ("lgmgc", LGMGCChunker)]:
        comps = build_components(make_cfg(f"chunker={name}"))
        assert type(comps.chunker) is cls and comps.chunker.llm.identity["model"].startswith("HuggingFaceTB/SmolLM2")
    with pytest.raises(ConfigError, match="chunker"):
        build_components(make_cfg("chunker=lgmgc", "llm=none"))


# --- the OpenAI-compatible client, against a local server ----------------------------------

class _Server:
    """A tiny OpenAI-compatible server on 127.0.0.1: fails the first ``fail`` requests with
    503, then answers chat and completions (with echo log-probabilities) from fixed rules."""

    def __init__(self, fail: int = 0):
        self.fail, self.requests = fail, []
        outer = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((self.path, body))
                if outer.fail > 0:
                    outer.fail -= 1
                    return self._send(503, {"error": {"message": "busy"}})
                usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
                if self.path.endswith("/chat/completions"):
                    msg = {"role": "assistant", "content": "echo: " + body["messages"][-1]["content"]}
                    return self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                            "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                                            "usage": usage})
                prompt = body["prompt"]
                if body.get("echo"):  # token-id prompt: log-probability -0.1 * position, None first
                    lp = {"tokens": [str(t) for t in prompt], "token_logprobs": [None] + [-0.1 * i for i in range(1, len(prompt))],
                          "top_logprobs": None, "text_offset": list(range(len(prompt)))}
                    choice = {"index": 0, "text": "", "logprobs": lp, "finish_reason": "length"}
                else:
                    choice = {"index": 0, "text": prompt[::-1], "logprobs": None, "finish_reason": "stop"}
                return self._send(200, {"id": "x", "object": "text_completion", "created": 0, "model": body["model"],
                                        "choices": [choice], "usage": usage})

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()


class _WordTokenizer:
    """Whitespace 'tokenizer' in the Hugging Face call shape, for the client's scoring path."""

    def __call__(self, text, add_special_tokens=True, **kw):
        return {"input_ids": ([0] if add_special_tokens else []) + [len(w) for w in text.split()]}


@pytest.fixture
def server():
    s = _Server(fail=2)
    yield s
    s.close()


def make_client(url, **kw):
    from harness.llm.openai_llm import OpenAILLM

    llm = OpenAILLM(model="m", base_url=url, max_retries=3, timeout=10, **kw)
    llm.__dict__["tokenizer"] = _WordTokenizer()
    return llm


def test_openai_client_retries_server_errors_then_answers(server, monkeypatch):
    monkeypatch.setattr("harness.llm.server.FIRST_WAIT", 0.01)  # retries at once
    llm = make_client(server.url)
    assert llm.chat([[{"role": "user", "content": "hi"}]]) == ["echo: hi"]
    assert len(server.requests) == 3  # two 503s retried
    assert llm.generate(["abc", "xy"], Sampling(max_tokens=4, stop=("\n",))) == ["cba", "yx"]
    body = server.requests[-1][1]
    assert body["max_tokens"] == 4 and body["stop"] == ["\n"] and body["temperature"] == 0.0
    assert llm.stats.prompt_tokens == 9 and llm.stats.generated_tokens == 6
    assert "repetition_penalty" not in body  # not an OpenAI parameter: sent only when set
    llm.generate(["abc"], Sampling(max_tokens=4, repetition_penalty=1.05))
    assert server.requests[-1][1]["repetition_penalty"] == 1.05  # vLLM's server reads it from the body


def test_openai_client_scores_token_ids_with_echo(server, monkeypatch):
    monkeypatch.setattr("harness.llm.server.FIRST_WAIT", 0.01)  # retries at once
    llm = make_client(server.url)
    # prompt "aa bbb" -> [BOS, 2, 3], continuation "c dddd" -> [1, 4]: positions 3 and 4 are scored
    assert llm.logprobs(["aa bbb"], ["c dddd"]) == [[pytest.approx(-0.3), pytest.approx(-0.4)]]
    path, body = server.requests[-1]
    assert path.endswith("/completions") and body["prompt"] == [0, 2, 3, 1, 4] and body["echo"] is True


def test_openai_client_names_the_server_when_it_is_down():
    s = _Server()
    url = s.url
    s.close()
    llm = make_client(url, max_concurrency=1)
    llm.max_retries = 0
    with pytest.raises(LLMError, match=r"no answer from http://127\.0\.0\.1:\d+/v1 .* is the server running"):
        llm.chat([[{"role": "user", "content": "hi"}]])


# --- the bundled CPU model through transformers -------------------------------------------

@pytest.fixture(scope="module")
def smollm():
    from harness.llm.transformers_llm import TransformersLLM

    return TransformersLLM()


@pytest.fixture(scope="module")
def smollm32():
    """The bundled model in float32: equalities between two ways of computing one number hold
    there to 1e-3 (bfloat16 logits are rounded to 1/8 at magnitude 16)."""
    from harness.llm.transformers_llm import TransformersLLM

    return TransformersLLM(dtype="float32", device="cpu")


@pytest.mark.slow
def test_bundled_model_generates_and_scores(smollm):
    out = smollm.chat([[{"role": "user", "content": "What is the capital of France? Answer in one word."}]],
                      Sampling(max_tokens=8))
    assert "Paris" in out[0]
    assert smollm.generate(["One, two, three,"], Sampling(max_tokens=12, stop=(" six",)))[0] == " four, five,"
    loop = "red red red red red red red red"
    plain, penalised = (smollm.generate([loop], Sampling(max_tokens=8, repetition_penalty=r))[0] for r in (1.0, 2.0))
    assert plain.split().count("red") > penalised.split().count("red")  # the penalty reaches generate()
    eos = smollm.tokenizer.eos_token
    complete, cut = smollm.logprobs(["The cat sat on the mat.", "The cat sat on the"], [eos, eos])
    assert len(complete) == len(cut) == 1 and complete[0] > cut[0] + 5  # ending after a full sentence is likelier
    text = "Retrieval-augmented generation conditions an answer on retrieved passages."
    (lps,) = smollm.token_logprobs([text])
    assert len(lps) == smollm.count_tokens(text) - 1 and all(lp <= 0 for lp in lps)  # no BOS: first token unscored
    assert smollm.count_tokens(smollm.truncate(text, 5)) == 5 and text.startswith(smollm.truncate(text, 5))


@pytest.mark.slow
def test_one_pass_prefix_scores_equal_one_sequence_per_cut(smollm32):
    from harness.llm.base import LLM

    head = smollm32.apply_chat_template([{"role": "user", "content": "Write a passage of text."}])
    text = "The fund grew in 2019. Revenue rose by 12 percent. The outlook, however, remains uncertain."
    cuts = [22, 50, len(text)]
    item = [head, text, cuts, smollm32.tokenizer.eos_token]
    one_pass = smollm32._prefix_logprobs([item])[0]
    per_cut = LLM._prefix_logprobs(smollm32, [item])[0]
    assert one_pass == pytest.approx(per_cut, abs=1e-3)
    assert smollm32._prefix_logprobs([[head, text, [], smollm32.tokenizer.eos_token]]) == [[]]  # no cut, no score


@pytest.mark.slow
def test_scores_in_one_call_are_each_sequences_own_forward_pass(smollm):
    """Sequences of unequal lengths scored together get the bits of each one's own full pass
    (a padded batch gave other bits: up to 0.2 nats a token in bfloat16)."""
    import torch

    ids = smollm.tokenizer(" ".join(["The fund grew in 2019 while revenue rose by twelve percent."] * 12))["input_ids"]
    seqs = [(ids[:40], 1), (ids[:97], 60), (ids[5:23], 17)]
    together = smollm._score(seqs)
    for (row, start), got in zip(seqs, together):
        with torch.inference_mode():
            logits = smollm._model(input_ids=torch.tensor([row])).logits.float()[0]
        want = torch.log_softmax(logits[:-1], dim=-1).gather(-1, torch.tensor(row[1:])[:, None])[:, 0]
        assert got == want[start - 1:].tolist()


@pytest.mark.slow
def test_a_batch_of_unequal_prompts_generates_what_each_prompt_generates_alone(smollm32):
    """On a CPU each prompt of a batch is read on its own (harness.llm.prefill), the replies
    decoded together; in float32 (no bfloat16 rounding ties) the tokens are each prompt's own."""
    from harness.llm import prefill

    llm = smollm32
    prompts = ["The capital of France is", "List three colours of the rainbow, separated by commas:",
               "Once upon a time, in a small village by the sea, there lived"]
    ids = [llm._ids(p) for p in prompts]
    assert prefill.batch_cache(llm._model, ids) is not None  # the one-by-one reading is taken
    sampling = Sampling(max_tokens=12)
    assert llm._generate(prompts, sampling) == [llm._generate([p], sampling)[0] for p in prompts]


# --- end to end: an answer run on tiny real data with the bundled model -------------------

@pytest.mark.slow
def test_answer_run_end_to_end_and_cached_rerun(make_cfg, tmp_path):
    from harness.pipeline.runner import Pipeline

    overrides = ["responder=llm", "metrics=answer", "metrics.meteor=null", "metrics.bertscore=null",
                 "dataset.limit_queries=2", "context=topk", "context.k=1",
                 "responder.max_tokens=8", "responder.max_context_tokens=128"]
    cfg = make_cfg(*overrides, cache=tmp_path / "c")
    r = Pipeline(cfg, log=lambda *_: None).run()
    assert r.stages["respond"] == "computed" and len(r.per_query) == 2
    for row in r.per_query:
        assert isinstance(row["answer"], str) and row["answer_prompt_tokens"] > 0
        assert 0.0 <= row["rouge_l_google"] <= 1.0 and row["gold_answers"]
    assert r.cache_counts["llm"]["misses"] == 2
    assert 0.0 <= r.metrics["sacrebleu_corpus"] <= 1.0  # a run-level aggregate, not a mean
    # A new evaluation of the same answers (another metric set) asks the model nothing.
    again = Pipeline(make_cfg(*overrides[:2], *overrides[4:], cache=tmp_path / "c"), log=lambda *_: None).run()
    assert again.stages["respond"] == "cached" and again.stages["evaluate"] == "computed"
    assert "llm" not in again.cache_counts or again.cache_counts["llm"]["misses"] == 0


def test_building_a_backend_converts_nothing(tmp_path, monkeypatch):
    from harness.llm.transformers_llm import TransformersLLM

    monkeypatch.setenv("CHUNKBENCH_MODELS", str(tmp_path))
    llm = TransformersLLM()  # a fully cached run never needs the weights
    assert llm.identity["model"] == "HuggingFaceTB/SmolLM2-135M-Instruct@Q4_1" and not any(tmp_path.iterdir())
    with pytest.raises(ConfigError, match="no model folder"):
        TransformersLLM(model="/nonexistent/model")


def test_bfloat16_on_a_cpu_without_it_says_to_use_float32(monkeypatch, caplog):
    from harness.llm import transformers_llm

    monkeypatch.setattr(transformers_llm, "_cpu_has_bf16", lambda: False)
    with caplog.at_level("WARNING"):
        transformers_llm.warn_if_emulated("float32", "cpu")
        transformers_llm.warn_if_emulated("bfloat16", "cuda")
        assert not caplog.records
        transformers_llm.warn_if_emulated("bfloat16", "cpu")
    assert "slower than llm.dtype=float32" in caplog.text
