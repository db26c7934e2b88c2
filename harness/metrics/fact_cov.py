"""Fact-Cov (HiChunk §3 step 4 and §5.1, after Xiang et al. 2025): the share of the gold
answer's facts that the response covers, judged by the LLM in 5 repetitions.

Protocol (HiChunk's ``cov_mertic.py``; prompts carried over verbatim, code written anew):

1. Facts: the query's gold facts when the dataset ships them (HiCBench does; HiChunk passes
   ``reference_facts=res['facts']`` and skips extraction), else extracted once from the first
   gold answer (HiChunk: ``answers[0]``) with :data:`EXTRACTION_PROMPT`. No facts -> NaN.
2. Coverage: :data:`COVERAGE_PROMPT` with the question, the response and the facts (a JSON
   list); the model returns ``{"classifications": [{"statement", "attributed": 0|1}, ...]}``.
   A repetition counts the attributed items among the valid items it returned (HiChunk:
   ``sum(a)`` of ``len(a)``; ``denominator: facts`` counts them among the facts instead,
   items matched by position, missing ones not covered).
3. ``repetitions`` samples (HiChunk: ``n=5`` at temperature 0.6, top_p 0.95; top_k 20 is not
   an option of :class:`Sampling`), seed ``seed + rep``. The query's score
   (``aggregation``): ``pooled``, one ratio of the flags of every repetition pooled (HiChunk's
   ``compute_coverage_score`` flattens the 5 completions' flags before ``sum(a) / len(a)``),
   or ``mean_of_ratios``, the mean of the repetitions' ratios.

Keys per query (``name`` = ``fact_cov``): ``fact_cov`` (the coverage), ``fact_cov_facts``
(number of facts), ``fact_cov_covered`` (facts x coverage: HiChunk's dataset score is the
fact-weighted ``sum(covered) / sum(facts)``, :func:`fact_weighted_coverage`),
``fact_cov_reps`` (repetitions that parsed) and ``fact_cov_parse_failures`` (model outputs
that did not parse, retried ones included).

Parsing and fallback rules (a metric never crashes on model output):

- Text up to the last ``</think>`` is dropped (reasoning models), then the first JSON value
  holding the expected key is used (:func:`json_values`: every ``{``/``[`` is tried with a JSON
  decoder, then the span from the first ``{`` to the last ``}`` as a Python literal, which
  accepts single quotes and trailing commas). A bare JSON list is accepted as the facts list
  or the classifications list.
- Facts: non-blank strings. ``attributed``: 0/1, true/false, or the strings "0"/"1"/"yes"/
  "no"/"true"/"false" (HiChunk keeps only 0 and 1); items without it are dropped.
- An output without the key, or (coverage) without a single valid item, is a parse failure:
  counted, and asked again with a new seed up to ``retries`` times when sampling
  (temperature > 0; HiChunk retries until it parses). A repetition that never parses is left
  out; extraction that never parses, or no repetition that parses, gives NaN.

Empty reference (``empty_reference``): HiChunk scores a query whose first gold answer is blank
1.0 before looking at any fact (``compute_coverage_score``), with no facts, so it weighs nothing
in the fact-weighted score; ``null`` makes it NaN unless gold facts are there (then scored).

Rules of ChunkBench's own: a blank response covers nothing (0, no model call); the facts are
inserted as JSON with non-ASCII characters kept (HiChunk escapes them).

Batching: :meth:`FactCov.score_all` sends each step's prompts for all queries in one
``llm.chat`` call (extraction, then one call per repetition); the pipeline calls it once
with every query (see :mod:`harness.metrics.base`). ``__call__`` scores one query.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Callable, Sequence
from typing import Any

from harness.llm.base import LLM, Sampling
from harness.llm.replies import ask_parsed, json_values, strip_reasoning
from harness.metrics.answers import NAN, nan_scores
from harness.metrics.base import QueryEval, QueryMetric
from harness.types import ConfigError

# HiChunk cov_mertic.py FACT_EXTRACTION_PROMPT, verbatim (str.format template).
EXTRACTION_PROMPT = """
### Task
Extract distinct factual statements from the reference answer that could be independently verified.
Respond ONLY with a JSON object containing a "facts" list of strings.

### Example
Input:
  Question: "What causes seasons?"
  Reference: "Seasonal changes result from Earth's axial tilt. This tilt causes different hemispheres to receive varying sunlight."

Output:
{{
  "facts": [
    "Seasonal changes result from Earth's axial tilt",
    "The axial tilt causes different hemispheres to receive varying sunlight"
  ]
}}

### Actual Input
Question: "{question}"
Reference Answer: "{reference}"

### Your Response:
"""

# HiChunk cov_mertic.py FACT_COVERAGE_PROMPT, verbatim (str.format template).
COVERAGE_PROMPT = """
### Task
For each factual statement from the reference, determine if it's covered in the response.
Respond ONLY with a JSON object containing a "classifications" list. Each item should have:
- "statement": the exact fact from reference
- "attributed": 1 if covered, 0 if not

### Example
Response: "Seasons are caused by Earth's tilted axis"
Reference Facts: [
  "Seasonal changes result from Earth's axial tilt",
  "The axial tilt causes different hemispheres to receive varying sunlight"
]

Output:
{{
  "classifications": [
    {{"statement": "Seasonal changes result from Earth's axial tilt", "attributed": 1}},
    {{"statement": "The axial tilt causes different hemispheres to receive varying sunlight", "attributed": 0}}
  ]
}}

### Actual Input
Question: "{question}"
Response: "{response}"
Reference Facts: {facts}

### Your Response:
"""

_TRUTHY = {"1": 1, "yes": 1, "true": 1, "0": 0, "no": 0, "false": 0}


# --- parsing (pure) -------------------------------------------------------------------------

def _keyed_list(text: str, key: str, accept: Callable[[list], bool]) -> list | None:
    """The first ``{key: [...]}`` value in the output (or a bare list ``accept`` takes)."""
    values = json_values(strip_reasoning(text))
    for v in values:
        if isinstance(v, dict) and isinstance(v.get(key), list):
            return v[key]
    for v in values:
        if isinstance(v, list) and accept(v):
            return v
    return None


def parse_facts(text: str) -> list[str] | None:
    """The facts list of an extraction output (non-blank strings, stripped); None when the
    output holds no facts list."""
    facts = _keyed_list(text, "facts", lambda v: all(isinstance(x, str) for x in v))
    if facts is None:
        return None
    return [str(f).strip() for f in facts if f is not None and not isinstance(f, (dict, list)) and str(f).strip()]


def _flag(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        return _TRUTHY.get(value.strip().lower())
    return None


def parse_coverage(text: str) -> list[int] | None:
    """The ``attributed`` flags (0/1) of a coverage output's valid items, in order; None when
    the output holds no classifications list or no valid item."""
    items = _keyed_list(text, "classifications", lambda v: any(isinstance(x, dict) for x in v))
    if items is None:
        return None
    flags = [f for f in (_flag(x.get("attributed")) for x in items if isinstance(x, dict)) if f is not None]
    return flags or None


AGGREGATIONS = ("pooled", "mean_of_ratios")


def repetition_counts(flags: Sequence[int], n_facts: int, denominator: str = "returned") -> tuple[int, int]:
    """One repetition's (covered, out of): among the returned items (HiChunk) or the facts."""
    if denominator == "facts":
        return sum(flags[:n_facts]), n_facts
    return sum(flags), len(flags)


def coverage(counts: Sequence[tuple[int, int]], aggregation: str = "pooled") -> float:
    """A query's coverage from its repetitions' counts: one pooled ratio (HiChunk) or the mean
    of the ratios; NaN without a repetition."""
    if not counts:
        return NAN
    if aggregation == "pooled":
        return sum(c for c, _ in counts) / sum(n for _, n in counts)
    return sum(c / n for c, n in counts) / len(counts)


def fact_weighted_coverage(rows: Sequence[dict[str, float]], name: str = "fact_cov") -> float:
    """HiChunk's dataset score (``show_metrics``): covered facts over all facts, summed over the
    queries that have a score (NaN when none)."""
    scored = [r for r in rows if not math.isnan(r.get(name, NAN))]
    total = sum(r[f"{name}_facts"] for r in scored)
    return sum(r[f"{name}_covered"] for r in scored) / total if total else NAN


def check_template(template: Any, fields: set[str], param: str) -> str:
    """A ``str.format`` template with exactly ``fields``; ConfigError naming ``param`` otherwise."""
    if not isinstance(template, str):
        raise ConfigError(f"{param} must be a string template, got {type(template).__name__}")
    try:
        found = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        template.format(**{f: "" for f in fields})
    except (ValueError, KeyError, IndexError) as e:
        raise ConfigError(f"{param}: not a valid format template ({e}); write literal braces as {{{{ }}}}") from e
    if found != fields:
        raise ConfigError(f"{param} must use the fields {sorted(fields)}, found {sorted(found)}")
    return template


# --- the metric -------------------------------------------------------------------------------

class FactCov(QueryMetric):
    """Fact coverage of each answer (keys in the module doc).

    - ``llm``: the judging model (``llm: ${llm}``; the run's model unless set otherwise).
    - ``repetitions``: coverage samples averaged per query (HiChunk: 5); ``seed``: first seed.
    - ``temperature``, ``top_p``, ``max_tokens``: sampling of every call (HiChunk: 0.6, 0.95).
    - ``retries``: re-asks of an unparsable output when sampling.
    - ``use_gold_facts``: take the query's facts when the dataset has them.
    - ``denominator``: ``returned`` (HiChunk) or ``facts`` (see the module doc).
    - ``aggregation``: ``pooled`` (HiChunk) or ``mean_of_ratios`` over the repetitions.
    - ``empty_reference``: the score of a blank first gold answer (HiChunk: 1.0); None = NaN.
    - ``extraction_prompt`` (fields ``question``, ``reference``), ``coverage_prompt``
      (``question``, ``response``, ``facts``).
    """

    def __init__(self, llm: LLM | None, repetitions: int = 5, temperature: float = 0.6, top_p: float = 0.95,
                 max_tokens: int = 1024, seed: int = 0, retries: int = 2, use_gold_facts: bool = True,
                 denominator: str = "returned", aggregation: str = "pooled", empty_reference: float | None = 1.0,
                 extraction_prompt: str = EXTRACTION_PROMPT, coverage_prompt: str = COVERAGE_PROMPT,
                 name: str = "fact_cov"):
        if not isinstance(llm, LLM):
            raise ConfigError(f"metric {name} (FactCov) needs a language model: set llm=transformers, vllm or "
                              f"openai (llm: ${{llm}}), got {llm!r}")
        if not isinstance(repetitions, int) or repetitions < 1:
            raise ConfigError(f"repetitions must be an integer >= 1, got {repetitions!r}")
        if not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")
        if denominator not in ("returned", "facts"):
            raise ConfigError(f"denominator must be 'returned' or 'facts', got {denominator!r}")
        if aggregation not in AGGREGATIONS:
            raise ConfigError(f"aggregation must be one of {', '.join(AGGREGATIONS)}; got {aggregation!r}")
        if empty_reference is not None and (isinstance(empty_reference, bool) or
                                            not isinstance(empty_reference, (int, float)) or
                                            not 0 <= empty_reference <= 1):
            raise ConfigError(f"empty_reference must be a number in [0, 1] or null (NaN), got {empty_reference!r}")
        Sampling(temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=seed)  # validates
        self.llm, self.repetitions, self.retries, self.seed = llm, repetitions, retries, seed
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self.use_gold_facts, self.denominator, self.name = use_gold_facts, denominator, name
        self.aggregation = aggregation
        self.empty_reference = None if empty_reference is None else float(empty_reference)
        self.extraction_prompt = check_template(extraction_prompt, {"question", "reference"}, "extraction_prompt")
        self.coverage_prompt = check_template(coverage_prompt, {"question", "response", "facts"}, "coverage_prompt")

    def keys(self) -> set[str]:
        return {self.name, *(f"{self.name}_{k}" for k in ("facts", "covered", "reps", "parse_failures"))}

    def aggregate_keys(self) -> set[str]:
        return {f"{self.name}_fact_weighted"}

    def _sampling(self, seed: int) -> Sampling:
        return Sampling(temperature=self.temperature, max_tokens=self.max_tokens, top_p=self.top_p, seed=seed)

    def __call__(self, item: QueryEval) -> dict[str, float]:
        return self.score_all([item])[0]

    def aggregate(self, rows: Sequence[dict[str, float]]) -> dict[str, float]:
        """HiChunk's dataset score, covered facts over all facts, as ``<name>_fact_weighted``."""
        return {f"{self.name}_fact_weighted": fact_weighted_coverage(rows, self.name)}

    def score_all(self, items: Sequence[QueryEval]) -> list[dict[str, float]]:
        n = len(items)
        facts: list[list[str] | None] = [None] * n
        failures = [0] * n
        active = [i for i, it in enumerate(items) if it.answer is not None]

        # Step 1: gold facts, or extraction from the first gold answer (one batched call); a blank
        # first answer is scored before either, as HiChunk does, unless empty_reference is None.
        extract, empty = [], set()
        for i in active:
            q = items[i].query
            reference = q.answers[0] if q.answers else ""
            if self.empty_reference is not None and not reference.strip():
                empty.add(i)
            elif self.use_gold_facts and q.facts:
                facts[i] = [f for f in q.facts if f.strip()]
            elif reference.strip():
                extract.append(i)
        if extract:
            prompts = [self.extraction_prompt.format(question=items[i].query.question,
                                                     reference=items[i].query.answers[0]) for i in extract]
            found, fails = ask_parsed(self.llm, prompts, parse_facts,
                                      lambda a: self._sampling(self.seed + a), self.retries, "fact_cov extract")
            for i, f, k in zip(extract, found, fails):
                facts[i], failures[i] = f, failures[i] + k

        # Step 2: coverage, one batched call per repetition, each with its own seed.
        judged = [i for i in active if facts[i] and items[i].answer.text.strip()]
        counts: dict[int, list[tuple[int, int]]] = {i: [] for i in judged}
        if judged:
            prompts = [self.coverage_prompt.format(question=items[i].query.question, response=items[i].answer.text,
                                                   facts=json.dumps(facts[i], ensure_ascii=False)) for i in judged]
            for rep in range(self.repetitions):
                sampling = lambda a, rep=rep: self._sampling(self.seed + rep + a * self.repetitions)  # noqa: E731
                flags, fails = ask_parsed(self.llm, prompts, parse_coverage, sampling, self.retries,
                                          f"fact_cov rep {rep + 1}/{self.repetitions}")
                for i, fl, k in zip(judged, flags, fails):
                    failures[i] += k
                    if fl is not None:
                        counts[i].append(repetition_counts(fl, len(facts[i]), self.denominator))

        out = []
        for i, it in enumerate(items):
            if it.answer is None:
                out.append(nan_scores(self.keys()))
                continue
            if i in empty:  # no facts: weighs nothing in the fact-weighted score
                out.append({self.name: self.empty_reference, f"{self.name}_facts": 0.0, f"{self.name}_covered": 0.0,
                            f"{self.name}_reps": 0.0, f"{self.name}_parse_failures": 0.0})
                continue
            n_facts = len(facts[i]) if facts[i] is not None else NAN
            if not facts[i]:
                cov, reps = NAN, 0
            elif i not in counts:  # blank response: nothing covered
                cov, reps = 0.0, 0
            else:
                reps = len(counts[i])
                cov = coverage(counts[i], self.aggregation)
            out.append({self.name: cov, f"{self.name}_facts": float(n_facts),
                        f"{self.name}_covered": cov * n_facts if facts[i] else NAN,
                        f"{self.name}_reps": float(reps), f"{self.name}_parse_failures": float(failures[i])})
        return out
