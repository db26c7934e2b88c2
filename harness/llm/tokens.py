"""Sizes and budgets in a language model's tokens: ``tokenizer: reader`` and ``llm:<model>``.

HiChunk counts the context budget with the reader's (the responder LLM's) tokenizer
(``retrieval_algo.py``, ``tree_chunk_retrieval``: ``len(tokenizer.encode(context))``, the
tokenizer ``pred.py`` loads for the answering model). ``reader`` names the run's llm; the
runner resolves it from the config to ``llm:<llm.tokenizer or llm.model>`` before the stage
keys are computed, so a cached chunking or context never outlives a change of model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.llm.bundled import llm_path
from harness.revision import split_name
from harness.text import Tokenizer
from harness.types import ConfigError

READER = "reader"
PREFIX = "llm:"


def tokenizer_for(unit: str, name: str) -> Tokenizer:
    """The :class:`harness.text.Tokenizer` for a chunker's or context's ``unit``/``tokenizer``,
    ``llm:<model>`` included ('llm:bundled' is SmolLM2's, converted on first use)."""
    if unit == "tokens" and isinstance(name, str) and name.startswith(PREFIX):
        model, revision = split_name(name[len(PREFIX):], "tokenizer")
        if not model:
            raise ConfigError("tokenizer='llm:' names no model (write llm:<llm.model>, e.g. llm:bundled)")
        try:
            path = llm_path(model)
        except Exception as e:  # the bundled model missing or failing to convert
            raise ConfigError(f"tokenizer={name!r}: {e}") from e
        return Tokenizer(unit, name, path=path, revision=revision)
    return Tokenizer(unit, name)


def reader_name(llm: Mapping[str, Any] | None) -> str:
    """What ``tokenizer: reader`` stands for under the run's ``llm`` config: the tokenizer
    the model counts with (``llm.tokenizer`` where the backend has one, else ``llm.model`` at
    ``llm.revision``: ``llm:<model>@<revision>`` when pinned, so the stage keys name the commit)."""
    model = llm and (llm.get("tokenizer") or llm.get("model"))
    if not model:
        raise ConfigError("tokenizer=reader counts in the run's llm tokens, but this llm config names no model "
                          "(llm=none?): choose an llm, or another tokenizer")
    revision = None if llm.get("tokenizer") else llm.get("revision")
    return PREFIX + str(model) + (f"@{revision}" if revision else "")
