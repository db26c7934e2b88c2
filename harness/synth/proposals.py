"""Reading one generation reply: a question and its excerpts, or the reason it is rejected.

The reply is JSON ``{"oath": ..., "question": ..., "references": [...]}`` (the report's prompt; the
model's example writes it with single quotes, so a Python-literal object is read too). The
reasons, each counted in the manifest:

- ``not_json``: no object in the reply at all (prose);
- ``malformed_json``: an object was begun but does not parse;
- ``no_question`` / ``no_excerpts``: the object lacks a question, or a list of non-empty excerpts;
- ``too_many_excerpts``: more than ``max_excerpts`` (the prompt: "over 5 references");
- ``compound_question``: the word "and" in the question (the prompt's rule, which its oath
  enforces; a proper noun with a lower-case "and" is rejected too, the rule cannot tell).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.llm.replies import json_values, strip_reasoning

EXCERPT_KEYS = ("references", "excerpts")
REASONS = ("not_json", "malformed_json", "no_question", "no_excerpts", "too_many_excerpts", "compound_question")
_AND = re.compile(r"\band\b")


@dataclass(frozen=True)
class Proposal:
    question: str
    excerpts: tuple[str, ...]


def read_reply(reply: str, max_excerpts: int, reject_compound: bool) -> Proposal | str:
    """The reply's proposal, or the reason it is rejected (a key of the manifest's counts)."""
    text = strip_reasoning(reply)
    objects = [v for v in json_values(text) if isinstance(v, dict)]
    if not objects:
        return "malformed_json" if "{" in text else "not_json"
    found = next((o for o in objects if "question" in o), objects[0])
    question = found.get("question")
    if not isinstance(question, str) or not question.strip():
        return "no_question"
    raw = next((found[k] for k in EXCERPT_KEYS if k in found), None)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(e, str) and e.strip() for e in raw):
        return "no_excerpts"
    # whitespace around an excerpt is the model's framing, not the document's text
    excerpts = tuple(dict.fromkeys(e.strip() for e in raw))
    if len(excerpts) > max_excerpts:
        return "too_many_excerpts"
    if reject_compound and _AND.search(question):
        return "compound_question"
    return Proposal(" ".join(question.split()), excerpts)
