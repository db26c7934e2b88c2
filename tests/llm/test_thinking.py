"""``llm.thinking``: every backend gives it to the chat template as ``enable_thinking``, it keys
chat calls only when set; and a reasoning model's ``<think>`` part never reaches a parser."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.cache import Cache, make_key
from harness.llm.base import Sampling
from harness.llm.replies import strip_reasoning
from harness.llm.transformers_llm import TransformersLLM
from harness.llm.vllm_llm import VLLM
from harness.respond.responder import LLMResponder
from harness.types import ConfigError, Context, Query
from tests.conftest import ScriptedLLM
from tests.llm.test_llm import _Server, make_client

CONV = [{"role": "user", "content": "q"}]


def thinking_llm(thinking, reply="r"):
    llm = ScriptedLLM(reply=lambda p: reply, model="m")
    llm.thinking = thinking
    return llm


@pytest.mark.parametrize("value", ["false", 0, 1, "off"])
def test_thinking_is_null_true_or_false(value):
    with pytest.raises(ConfigError, match="llm.thinking"):
        VLLM(thinking=value)


# --- the backends hand it to the chat template ---------------------------------------------------

def test_vllm_passes_chat_template_kwargs(monkeypatch):
    calls = []

    class Engine:
        def chat(self, conversations, params, use_tqdm, **kwargs):
            calls.append(kwargs)
            return [SimpleNamespace(prompt_token_ids=[1], outputs=[SimpleNamespace(text="a", token_ids=[2])])
                    for _ in conversations]

    monkeypatch.setattr(VLLM, "engine", property(lambda self: Engine()))
    monkeypatch.setattr(VLLM, "_params", lambda self, sampling, **extra: sampling)  # no vllm here
    assert VLLM(thinking=False).chat([CONV]) == ["a"]
    assert VLLM().chat([CONV]) == ["a"]
    assert calls == [{"chat_template_kwargs": {"enable_thinking": False}}, {"chat_template_kwargs": None}]


def test_openai_sends_chat_template_kwargs_in_the_body():
    server = _Server()
    try:
        make_client(server.url, thinking=False).chat([CONV])
        assert server.requests[-1][1]["chat_template_kwargs"] == {"enable_thinking": False}  # vLLM serve reads it
        make_client(server.url).chat([CONV])
        assert "chat_template_kwargs" not in server.requests[-1][1]
        make_client(server.url, thinking=True).generate(["p"])  # a raw prompt has no template
        assert "chat_template_kwargs" not in server.requests[-1][1]
    finally:
        server.close()


def test_transformers_passes_enable_thinking_to_the_template(monkeypatch):
    seen = []

    class Tokenizer:
        def apply_chat_template(self, messages, **kwargs):
            seen.append(kwargs)
            return "prompt"

    monkeypatch.setattr(TransformersLLM, "tokenizer", property(lambda self: Tokenizer()))
    monkeypatch.setattr(TransformersLLM, "_generate", lambda self, prompts, sampling, special=True: ["a"] * len(prompts))
    for thinking in (False, None):
        assert TransformersLLM(thinking=thinking).chat([CONV]) == ["a"]
    assert seen[0] == {"tokenize": False, "add_generation_prompt": True, "enable_thinking": False}
    assert "enable_thinking" not in seen[1]


def test_a_template_without_the_switch_ignores_it():
    from transformers import AutoTokenizer

    from harness.llm.bundled import llm_path

    tok = AutoTokenizer.from_pretrained(llm_path("bundled"))  # SmolLM2's template has no enable_thinking
    assert tok.apply_chat_template(CONV, tokenize=False, enable_thinking=False) == tok.apply_chat_template(CONV, tokenize=False)


# --- the LLM-call cache key ----------------------------------------------------------------------

# The key of chat(CONV) with model "m" and default sampling, as the code before llm.thinking stored it.
OLD_KEY = "b62ea8a646da3407658b4c44dca2225d25e97ab84999b001bf2c00e91dfe3630"


def test_thinking_keys_chat_calls_only_when_set(tmp_path):
    cache = Cache(tmp_path)
    default = thinking_llm(None, "default")
    default.cache = cache
    assert default.chat([CONV]) == ["default"]
    assert cache.stored("llm", OLD_KEY)  # unset: the entries cached before the setting stay valid
    assert cache.stored("llm", make_key("llm", "chat", default.identity, CONV, Sampling().key()))
    off, on = thinking_llm(False, "off"), thinking_llm(True, "on")
    off.cache = on.cache = cache
    assert off.chat([CONV]) == ["off"] and on.chat([CONV]) == ["on"]  # each its own entry
    assert default.chat([CONV]) == ["default"]
    assert off.generate(["p"]) == ["off"]
    assert default.generate(["p"]) == ["off"]  # a raw prompt goes through no template: one entry


# --- reasoning is stripped before anything reads a reply -----------------------------------------

@pytest.mark.parametrize("reply, answer", [
    ("<think>a\nb</think>\n\nParis", "\n\nParis"),               # closed: the text after it
    ("<think>a</think><think>b</think>Paris", "Paris"),          # the last one closes the reasoning
    ("<think>cut at max_tokens, Paris maybe", ""),               # never closed: no answer yet
    ("  \n<think>a</think>\n<think>cut", ""),                    # a second one never closed
    ("Paris", "Paris"), ("", ""),                                # none
    ("The tag <think> opens reasoning", "The tag <think> opens reasoning"),  # not at the start: text
])
def test_strip_reasoning(reply, answer):
    assert strip_reasoning(reply) == answer


def test_the_responder_answers_without_the_reasoning():
    templates = {"default": {"prompt": "{context} | {input}", "max_tokens": 5}}
    for reply, answer in (("<think>hmm, 1 or 2?</think>\n 2 ", "2"), ("<think>hmm, 1 or", "")):
        llm = ScriptedLLM(reply=lambda p, r=reply: r)
        [out] = LLMResponder(llm, templates).respond([Query("a", "which?")], [Context("a", (), "text", 1)], "crud")
        assert out.text == answer


def test_llm_chunkers_parse_after_the_reasoning():
    from harness.chunking.hichunk_format import parse_points
    from harness.chunking.lumber import parse_shift_id
    from harness.chunking.multi_view import parse_keywords
    from harness.chunking.qchunker_format import parse_judgement, parse_rewrite, parse_segmentation

    assert parse_shift_id("<think>Answer: ID 3</think>Answer: ID 4") == 4
    assert parse_shift_id("<think>Answer: ID 3 ...") is None
    assert parse_keywords('<think>["draft"]</think>["a", "b"]') == "a, b"
    assert parse_keywords('<think>["draft"], and') == ""
    assert parse_points("<think>\n1, 1, True", 5)[0] == []
    assert parse_judgement("<think>是") is None and parse_rewrite("<think>the year is missing") == ""
    # QChunker's outline is its own <think> block: the segmentation parser reads the raw reply
    seg = parse_segmentation("<think>\n1. Q?\n</think>\n<chunk>a[MASK]b</chunk>")
    assert seg.questions == ("Q?",) and seg.items == (("a", "b"),)
