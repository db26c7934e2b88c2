"""Reading structured answers out of model output, and re-asking when they do not parse.

Shared by every component that asks a model for JSON (Fact-Cov, the pairwise judge).
:func:`strip_reasoning` is what every parser and metric reads a reply through.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from harness.llm.base import LLM, Sampling

T = TypeVar("T")


def strip_reasoning(text: str) -> str:
    """A reply without a reasoning model's thoughts: the text after the last ``</think>`` (all of
    it when there is none); "" when what is left opens a ``<think>`` that never closes (reasoning
    cut at max_tokens: no answer, rather than the reasoning read as one)."""
    after = text.rsplit("</think>", 1)[-1]
    return "" if after.lstrip().startswith("<think>") else after


def json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array found in ``text``, in order; when none decodes,
    the span from the first ``{`` to the last ``}`` read as a Python literal (if it is one)."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while True:
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            break
        i = min(starts)
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        out.append(value)
        i = end
    if not out and "{" in text:
        try:
            value = ast.literal_eval(text[text.find("{"):text.rfind("}") + 1])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return []
        if isinstance(value, (dict, list)):
            out.append(value)
    return out


def ask_parsed(llm: LLM, prompts: Sequence[str], parse: Callable[[str], T | None],
               sampling: Callable[[int], Sampling], retries: int, desc: str) -> tuple[list[T | None], list[int]]:
    """Chat each prompt (one batched call), parse the replies, and re-ask those that do not
    parse with ``sampling(attempt)`` (a new seed) up to ``retries`` times when sampling.
    Returns the parsed values (None where every attempt failed) and failures per prompt."""
    parsed: list[T | None] = [None] * len(prompts)
    failures = [0] * len(prompts)
    todo = list(range(len(prompts)))
    attempts = 1 + (retries if sampling(0).temperature > 0 else 0)
    for attempt in range(attempts):
        if not todo:
            break
        replies = llm.chat([[{"role": "user", "content": prompts[i]}] for i in todo], sampling(attempt), desc=desc)
        for i, reply in zip(todo, replies):
            parsed[i] = parse(reply)
            failures[i] += parsed[i] is None
        todo = [i for i in todo if parsed[i] is None]
    return parsed, failures
