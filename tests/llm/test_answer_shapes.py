"""Answers of the wrong shape from an OpenAI-compatible server (issue 51, item 2). Before: no text
(``message`` without ``content``, ``content: null``, only ``tool_calls``, ``""`` cut at max_tokens)
was an empty answer recorded and cached; a completions-shaped body a traceback; a 10 MB answer to
``max_tokens=8`` stored whole; a lone surrogate made the run unrecordable; a server listing another
model was used under the configured name. Now each is one line, or a counted, warned answer that is
never cached (a rerun asks again)."""

import json
import sqlite3
from contextlib import closing

import pytest

from harness.llm.base import LLMError, Sampling, Unanswered
from harness.llm.openai_llm import OpenAILLM
from tests.http_fake import JSONHandler, LocalServer
from tests.llm.test_server_faults import KEY, completion, one_error_line, run_cli, serve

HI = [[{"role": "user", "content": "hi"}]]
TOOL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def chat_body(message: dict, finish: str = "stop") -> dict:
    return completion("bundled", [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}])


NO_ANSWER = {
    "message without content": (chat_body({}), "", "no content"),
    "content null": (chat_body({"content": None}), "", "no content"),
    "only tool_calls": (chat_body({"content": None, "tool_calls": [TOOL]}, "tool_calls"), "", "only tool calls"),
    "empty, cut at max_tokens": (chat_body({"content": ""}, "length"), "", "cut at max_tokens before any text"),
    "lone surrogate": (chat_body({"content": "Par\ud800is"}), "Par\ufffdis", "text that is not valid Unicode"),
}


def llm_at(url: str, tmp_path):
    from harness.cache import Cache

    return OpenAILLM(model="bundled", base_url=url, api_key=KEY, max_retries=0, timeout=30,
                     cache=Cache(str(tmp_path / "cache")))


@pytest.mark.parametrize("case", list(NO_ANSWER))
def test_no_usable_answer_is_counted_warned_and_never_cached(tmp_path, capsys, case):
    body, text, reason = NO_ANSWER[case]
    s = serve(lambda n, key: (200, body, {}))
    try:
        llm = llm_at(s.url, tmp_path)
        first = llm.chat(HI, Sampling(max_tokens=8))
        again = llm.chat(HI, Sampling(max_tokens=8))
    finally:
        s.close()
    assert first == again == [text] and isinstance(first[0], Unanswered) and first[0].reason == reason
    assert s.posts == 2 and llm.stats.unanswered == 2  # not cached: the second call asked again
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("chunkbench: warning:")]
    assert warnings == [f"chunkbench: warning: llm=openai: {s.url} (model 'bundled') gave no usable answer to 1 of 1 "
                        f"chat calls ({reason}: 1); each is used as the text it gave (empty if none) and not cached, "
                        f"so a rerun asks again"] * 2


def test_a_real_answer_is_still_cached(tmp_path):
    s = serve(lambda n, key: (200, chat_body({"content": "Paris"}), {}))
    try:
        llm = llm_at(s.url, tmp_path)
        assert llm.chat(HI) == llm.chat(HI) == ["Paris"]
    finally:
        s.close()
    assert s.posts == 1 and llm.stats.unanswered == 0


@pytest.mark.parametrize("body, said", [
    ({"id": "x", "object": "text_completion", "created": 0, "model": "bundled",
      "choices": [{"index": 0, "text": "Paris", "finish_reason": "stop"}]},
     r"answered model 'bundled' with a choice with no `message` \(`choices\[0\]\.text`: a /completions answer "
     r"to a chat request\?\); is llm\.base_url an OpenAI-compatible API \(ending in /v1\)\?$"),
    (chat_body({"content": "x" * 10_000_000}),
     r"answered model 'bundled' with 10,000,000 characters to max_tokens=8; the server does not honour "
     r"max_tokens \(more than 64 characters a token\): fix its settings or its version$"),
], ids=["completions-shaped", "10 MB to max_tokens=8"])
def test_an_answer_of_another_shape_or_size_is_one_line(tmp_path, body, said):
    s = serve(lambda n, key: (200, body, {}))
    try:
        with pytest.raises(LLMError, match=rf"^llm=openai: {s.url} " + said) as e:
            llm_at(s.url, tmp_path).chat(HI, Sampling(max_tokens=8))
    finally:
        s.close()
    assert s.posts == 1 and "\n" not in str(e.value)
    assert not list((tmp_path / "cache").rglob("*.json*"))  # nothing stored


# --- through the command line -------------------------------------------------------------------

def test_a_run_given_no_answer_warns_records_and_asks_again_on_a_rerun(tmp_path):
    s = serve(lambda n, key: (200, chat_body({"content": None}), {}))
    try:
        first = run_cli(tmp_path, s.url)
        posts = s.posts
        again = run_cli(tmp_path, s.url)
    finally:
        s.close()
    for p in (first, again):
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-3000:]
        assert (f"chunkbench: warning: llm=openai: {s.url} (model 'bundled') gave no usable answer to 1 of 1 chat "
                f"calls (no content: 1)") in p.stderr
        assert "[respond] not stored: a model gave no usable answer (warned above); a rerun computes it again" in p.stdout
        assert "[evaluate] not stored" in p.stdout
    assert posts == 1 and s.posts == 2  # the rerun asked the model again: neither the call nor a stage was cached


def test_a_lone_surrogate_in_an_answer_is_recorded(tmp_path):
    s = serve(lambda n, key: (200, chat_body({"content": "Par\ud800is"}), {}))
    db = tmp_path / "runs.db"
    try:
        p = run_cli(tmp_path, s.url, f"tracking.uri=sqlite:///{db}", "tracking.enabled=true")
    finally:
        s.close()
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert "(text that is not valid Unicode: 1)" in p.stderr
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("FINISHED",)]
        assert con.execute("SELECT value FROM metrics WHERE key = 'llm_unanswered'").fetchall() == [(1.0,)]


def test_a_10_mb_answer_ends_the_run_in_one_line(tmp_path):
    s = serve(lambda n, key: (200, chat_body({"content": "x" * 10_000_000}), {}))
    try:
        line = one_error_line(run_cli(tmp_path, s.url, "responder.max_tokens=8"))
    finally:
        s.close()
    assert line == (f"chunkbench: error: llm=openai: {s.url} answered model 'bundled' with 10,000,000 characters to "
                    f"max_tokens=8; the server does not honour max_tokens (more than 64 characters a token): fix its "
                    f"settings or its version")


def test_a_server_that_serves_another_model_is_one_line_before_any_work(tmp_path):
    class Other(JSONHandler):
        def do_GET(self):
            self._send(200, {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model"}]})

        def do_POST(self):
            self._send(200, chat_body({"content": "Paris"}))

    s = LocalServer(Other)
    try:
        line = one_error_line(run_cli(tmp_path, s.url))
    finally:
        s.close()
    assert line == (f"chunkbench: error: responder.llm.served_model=bundled: the server at {s.url} serves "
                    f"'Qwen/Qwen3-8B', not it; set responder.llm.served_model to the name it serves (llm.model "
                    f"names the weights)")
    assert not (tmp_path / "cache").exists()
