"""Requests to an OpenAI-compatible server, shared by ``llm=openai`` and ``embedder=openai``: at
most ``max_concurrency`` in flight, each retried where a retry can help (429, 408, 5xx, no
connection, a timeout) with exponential backoff, under a per-request ``timeout`` and a total
``deadline`` per call (all its tries), and every failure one line (:class:`ServiceError`) naming
the server, what it answered and what to do, with the API key masked.

Why the retry loop is ours (tenacity's) and not the ``openai`` client's (built with
``max_retries=0``): the client's loop has no total deadline, so a server that accepts and never
answers costs ``(max_retries + 1) * timeout`` a request; tenacity's ``stop_before_delay`` gives
up before a wait would pass the deadline, and each try's timeout is cut to what is left of it.
The backoff is the client's own (0.5 s doubling up to 8 s, jittered; a ``Retry-After`` obeyed).
httpx's timeout counts only silence between reads, so each try also runs on a thread that is given
up once its timeout has passed: a server trickling its answer a byte at a time costs the timeout.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from tenacity import (RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_before_delay,
                      wait_exponential_jitter)

from harness.secrets import mask_text
from harness.types import ConfigError, ServiceError

FIRST_WAIT, MAX_WAIT = 0.5, 8.0   # seconds: the openai client's backoff (tests shorten it)
RETRY_STATUS = {408, 429}         # and every 5xx: what a later try can get past


@dataclass(frozen=True)
class Server:
    """Where requests go and how long they may take. ``who`` names the component in errors
    (``llm=openai``), ``key`` the config node its settings are under (``llm``), ``error`` the
    :class:`ServiceError` its failures raise."""

    who: str
    key: str
    base_url: str
    served_model: str
    api_key: str
    max_retries: int = 5
    timeout: float = 60.0
    deadline: float = 300.0
    max_concurrency: int = 8
    hint: str = ""
    error: type[ServiceError] = ServiceError

    def __post_init__(self):
        if urllib.parse.urlsplit(str(self.base_url)).scheme not in ("http", "https") or "://" not in self.base_url:
            raise ConfigError(f"{self.key}.base_url={self.base_url}: not an http(s) URL "
                              f"(e.g. http://127.0.0.1:8000/v1)")
        for name, low in (("max_retries", 0), ("max_concurrency", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{self.key}.{name} must be an integer >= {low}, got {value!r}")
        for name in ("timeout", "deadline"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{self.key}.{name} must be > 0 seconds, got {getattr(self, name)!r}")


class BadAnswer(Exception):
    """A 200 whose body is no answer (not JSON, not a completion, no choices, far longer than
    asked): not retried. ``advice``: what to check, when not that the URL is an OpenAI API."""

    def __init__(self, what: str, advice: str | None = None):
        super().__init__(what)
        self.advice = advice


class Overran(Exception):
    """A try still receiving its answer when its timeout had passed: retried, as a timeout."""


GRACE = 1.0  # seconds past a try's timeout before it is given up: httpx's own timeout fires first


def within(fn: Callable[[Any, float], Any], item: Any, seconds: float) -> Any:
    """``fn(item, seconds)``, given up after ``seconds`` (+ :data:`GRACE`) of wall time. The
    thread given up is a daemon: it ends when the server stops sending, or with the process."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(item, seconds)
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    worker = threading.Thread(target=run, name="server-request", daemon=True)
    worker.start()
    worker.join(seconds + GRACE)
    if worker.is_alive():
        raise Overran(f"still answering after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def retryable(e: BaseException) -> bool:
    """429, 408, 5xx, no connection and timeouts (``APITimeoutError`` is an ``APIConnectionError``):
    a later try can succeed. 400, 401, 403, 404, 422 and bad bodies would fail the same way again."""
    from openai import APIConnectionError, APIStatusError

    if isinstance(e, APIStatusError):
        return e.status_code in RETRY_STATUS or e.status_code >= 500
    return isinstance(e, (APIConnectionError, Overran))


def retry_after(e: BaseException | None) -> float | None:
    """The seconds a 429/503 answer asks the client to wait (``Retry-After``), if it says."""
    response = getattr(e, "response", None)
    try:
        return max(0.0, float(response.headers.get("retry-after")))
    except (AttributeError, TypeError, ValueError):  # no response, no header, or an HTTP date
        return None


def backoff(state: RetryCallState) -> float:
    asked = retry_after(state.outcome.exception() if state.outcome else None)
    if asked is not None:
        return asked  # past the deadline, stop_before_delay gives up at once
    return wait_exponential_jitter(initial=FIRST_WAIT, max=MAX_WAIT, jitter=FIRST_WAIT)(state)


def call(server: Server, fn: Callable[[Any, float], Any], item: Any) -> Any:
    """``fn(item, timeout)`` tried up to ``max_retries + 1`` times within ``deadline`` seconds;
    a failure is a :class:`ServiceError` line."""
    start = time.monotonic()
    retrying = Retrying(stop=stop_after_attempt(server.max_retries + 1) | stop_before_delay(server.deadline),
                        wait=backoff, retry=retry_if_exception(retryable), reraise=True)
    try:
        for attempt in retrying:
            with attempt:
                left = server.deadline - (time.monotonic() - start)
                result = within(fn, item, max(min(server.timeout, left), 0.01))
        return result
    except ServiceError:
        raise
    except Exception as e:
        error = failure(server, e, retrying.statistics.get("attempt_number", 1), time.monotonic() - start)
        if error is None:
            raise  # not the server's doing: a bug of ours keeps its traceback
        raise error from None  # not chained: a server's answer may quote the key


def map_on_server(server: Server, fn: Callable[[Any, float], Any], items: list) -> list:
    """``fn`` over ``items`` with at most ``max_concurrency`` requests in flight. The first
    failure ends the map: requests not yet sent are dropped rather than each waiting out the
    deadline on a server known to fail."""
    if not items:
        return []
    failed = threading.Event()

    def one(item: Any) -> Any:
        if failed.is_set():  # a worker may take the next item before the pool is shut down
            return None
        try:
            return call(server, fn, item)
        except BaseException:
            failed.set()
            raise

    pool = ThreadPoolExecutor(min(server.max_concurrency, len(items)))
    try:
        futures = [pool.submit(one, item) for item in items]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        error = next((f.exception() for f in futures if f in done and f.exception()), None)
        if error is not None:
            raise error
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def probe(base_url: str, api_key: str, timeout: float) -> tuple[str | None, list[str] | None]:
    """``GET base_url/models``: (why no OpenAI-compatible server answers, None), or (None, the
    model names it lists; None when its answer lists none: any HTTP answer, an authentication
    error included, shows a server is there)."""
    import urllib.error
    import urllib.request

    parts = urllib.parse.urlsplit(base_url)  # credentials in the address (http://TOKEN@host) are no host name
    url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    request = urllib.request.Request(f"{url.rstrip('/')}/models", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            raw = r.read(1 << 20)
    except urllib.error.HTTPError:
        return None, None  # a server answered
    except (urllib.error.URLError, OSError, ValueError) as e:
        return str(getattr(e, "reason", e)), None
    try:
        body = json.loads(raw)
    except ValueError:  # no JSON list of models: the requests will say what is wrong
        return None, None
    data = body.get("data") if isinstance(body, dict) else None
    names = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)] if isinstance(data, list) else []
    return None, names or None


def choices(resp: Any) -> list:
    """The choices of a completion; a body that is no completion is a :class:`BadAnswer`."""
    found = getattr(resp, "choices", None)
    if isinstance(found, list) and found:
        return found
    if isinstance(found, list):
        raise BadAnswer("a completion with no choices (`choices: []`)")
    raise BadAnswer(f"a body that is no OpenAI answer: {one_line(resp if isinstance(resp, str) else repr(resp))}")


def one_line(text: Any, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def server_said(e: Any) -> str:
    """A status error's own message (OpenAI's ``error.message``, FastAPI's ``detail``) or its body."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        body = body.get("message") or body.get("detail") or json.dumps(body)
    return one_line(body or getattr(e, "message", "") or "no message")


ADVICE = {401: "the key was refused: check {key}.api_key or OPENAI_API_KEY",
          403: "the key may not use this model: check {key}.api_key or OPENAI_API_KEY",
          404: "check {key}.served_model (the names the server serves: GET {url}/models) and that "
               "{key}.base_url ends in /v1",
          429: "rate limited still after {tries}: lower {key}.max_concurrency or raise {key}.deadline",
          408: "the server timed out still after {tries}: raise {key}.timeout or lower {key}.max_concurrency"}


def failure(server: Server, e: Exception, tries: int, seconds: float) -> ServiceError | None:
    """The one line ``e`` ends the run with; None for what is no server failure."""
    from openai import APIConnectionError, APIStatusError, APITimeoutError

    s, k = server, server.key
    tried = f"{tries} {'try' if tries == 1 else 'tries'} in {seconds:.0f} s"
    if isinstance(e, (APITimeoutError, Overran)):
        line = (f"{s.who}: {s.base_url} gave no answer within {k}.timeout={s.timeout:g} s ({tried}, "
                f"{k}.deadline={s.deadline:g} s): is the server stuck or overloaded? A slow one needs a "
                f"larger {k}.timeout")
    elif isinstance(e, APIConnectionError):
        cause = one_line(e.__cause__ or e, 100)
        line = f"{s.who}: no answer from {s.base_url} ({cause}; {tried}): is the server running?{s.hint}"
    elif isinstance(e, APIStatusError):
        status = e.status_code
        advice = ADVICE.get(status) or ("a server error still after {tries}: see the server's log" if status >= 500
                                        else "the server refused the request: see its message")
        line = (f"{s.who}: {s.base_url} answered {status} for model {s.served_model!r}: {server_said(e)}; "
                + advice.format(key=k, url=s.base_url, tries=tried))
    elif isinstance(e, (BadAnswer, json.JSONDecodeError)):
        what = e if isinstance(e, BadAnswer) else f"a body that is not JSON ({e})"
        advice = getattr(e, "advice", None) or f"is {k}.base_url an OpenAI-compatible API (ending in /v1)?"
        line = f"{s.who}: {s.base_url} answered model {s.served_model!r} with {what}; {advice}"
    else:
        return None
    return s.error(mask_text(line, {s.api_key} - {"EMPTY"}))
