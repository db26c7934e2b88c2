"""Evidence recall of the assembled context, two definitions.

Both look strings up in the context after LongBench/SQuAD normalisation (lower-case,
punctuation and English articles removed, whitespace collapsed; :func:`normalize_answer`)
and give a query the found strings' share of the characters, each string weighted by its
length.

``evidence_recall`` (:class:`EvidenceRecall`) is HiChunk's ERec as its ``eval.py`` computes
it (``__main__``, calling ``metrics.cal_evidence_recall``; github.com/TencentYoutuResearch/
HiChunk), the name of its tables. What is looked up depends on the data set, which eval.py
picks by file name (``unit``):

- ``evidence``: each evidence string in the data set's own words (a fuzzily aligned snippet
  as the data set wrote it, not the text it aligned to), "# " stripped from its start and
  ". " rewritten to "." in the evidence only; weight: the string as given. eval.py:
  OHRBench_sub, GutenQA, HiCBench.
- ``sentences``: each evidence string cut into sentences by NLTK's English Punkt model
  (``nltk.sent_tokenize``), each sentence "# "-stripped, weighted by its own length, no
  rewrite: partial credit for a paragraph. eval.py: qasper_all (dataset=qasper).
- ``answers``: the gold answers. eval.py: every other file (LongBench's subsets).
- ``auto``: eval.py's choice for the run's data set, as its loader declares it (:func:`auto_unit`).

The rewrite presumes HiChunk's chunk text, whose NLTK sentences are concatenated with nothing
between them (``pipeline/indexing/splitter.py``, ``split_long_sentence``: ``current_chunk +=
s``), so "A. B" in a document is "A.B" in its contexts. ChunkBench's contexts keep the document
text; ``context: joined_sentences`` (default) joins the context's sentences the same way before
the look-up, ``as_is`` looks up in the context as assembled (then every evidence string that
runs over a sentence end is missed). Either way "Mr. Smith" in the evidence ("Mr.Smith") is
missed, as in HiChunk's pipeline, where Punkt keeps the abbreviation's space.

A query with nothing to look up scores 0 on the data sets eval.py scores (it divides by
``total + 1e-20`` and averages over every query) and n/a on the user's own (``dataset=local``:
left out of the mean, counted): ``no_evidence: auto`` asks the loader (:func:`auto_no_evidence`);
``zero`` and ``nan`` choose for every data set.

``evidence_span_recall`` (:class:`EvidenceSpanRecall`) is ChunkBench's reading of the paper:
the aligned spans' document text and the unaligned snippets, each whole, "# " stripped,
normalised alike on both sides (no rewrite); strings that normalise to nothing are left out,
and a query without evidence is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.metrics.base import QueryEval, QueryMetric
from harness.text import normalize_answer, punkt, require_punkt
from harness.types import ConfigError

UNITS = ("auto", "evidence", "sentences", "answers")
CONTEXTS = ("joined_sentences", "as_is")
NO_EVIDENCE = ("auto", "zero", "nan")


def auto_no_evidence(dataset: str | None) -> str:
    """What the loader ``dataset`` (its ``_target_``) gives a query without evidence: "zero", eval.py's
    rule, kept for the published data sets, unless the loader declares ``no_evidence = "nan"`` (data no
    paper scored: ``dataset=local``)."""
    if not dataset:
        return "zero"
    from hydra.utils import get_class

    return getattr(get_class(dataset), "no_evidence", "zero")


def auto_unit(dataset: str | None, subset: str | None = None) -> str:
    """eval.py's unit for a data set given by its loader (``_target_``; a loader declares it,
    ``DatasetLoader.evidence_unit``) and, for HiChunk's own files, the subset (file name)."""
    if not dataset:
        return "evidence"
    from hydra.utils import get_class

    declared = getattr(get_class(dataset), "evidence_unit", None)
    return declared(subset) if declared else "evidence"


def sent_tokenize(text: str) -> list[str]:
    return punkt().tokenize(text)


def lookups(unit: str, evidence: Sequence[str], answers: Sequence[str]) -> list[tuple[str, int]]:
    """(string to find, weight) pairs of one query, as eval.py builds them for ``unit``."""
    if unit == "evidence":
        return [(e.lstrip("# ").replace(". ", "."), len(e)) for e in evidence]
    if unit == "sentences":
        return [(s.lstrip("# "), len(s)) for e in evidence for s in sent_tokenize(e)]
    return [(a, len(a)) for a in answers]


def weighted_recall(pairs: Sequence[tuple[str, int]], context: str) -> float:
    """Found share of the weights; a string that normalises to nothing is found (eval.py:
    ``"" in context``). NaN when the weights sum to 0."""
    total = sum(w for _, w in pairs)
    if not total:
        return math.nan
    ctx = normalize_answer(context)
    return sum(w for s, w in pairs if normalize_answer(s) in ctx) / total


class EvidenceRecall(QueryMetric):
    """HiChunk's ERec (module doc). ``unit``: auto | evidence | sentences | answers; ``dataset``
    (the loader's ``_target_``) and ``subset`` are read by ``auto``; ``context``: joined_sentences
    | as_is; ``no_evidence``: auto | zero | nan."""

    def __init__(self, unit: str = "auto", dataset: str | None = None, subset: str | None = None,
                 context: str = "joined_sentences", no_evidence: str = "auto"):
        if isinstance(no_evidence, float) and math.isnan(no_evidence):
            no_evidence = "nan"  # Hydra reads an unquoted no_evidence=nan as the float
        for name, value, valid in (("unit", unit, UNITS), ("context", context, CONTEXTS),
                                   ("no_evidence", no_evidence, NO_EVIDENCE)):
            if value not in valid:
                raise ConfigError(f"{name} must be one of {', '.join(valid)}; got {value!r}")
        self.unit = auto_unit(dataset, subset) if unit == "auto" else unit
        self.context = context
        self.no_evidence = auto_no_evidence(dataset) if no_evidence == "auto" else no_evidence
        if self.unit == "sentences" or context == "joined_sentences":
            require_punkt()  # a missing model fails before the run, not after it

    def keys(self) -> set[str]:
        return {"evidence_recall"}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        pairs = lookups(self.unit, item.query.evidence_as_given(item.documents), item.query.answers)
        text = item.context.text
        score = weighted_recall(pairs, "".join(sent_tokenize(text)) if self.context == "joined_sentences" else text)
        if math.isnan(score) and self.no_evidence == "zero":
            score = 0.0
        return {"evidence_recall": score}


def evidence_span_recall(evidence: Sequence[str], context: str) -> float:
    """Length-weighted share of ``evidence`` strings contained in ``context``, ChunkBench's way
    (module doc); NaN when no evidence is left."""
    return weighted_recall([(n, len(e)) for e in evidence if (n := normalize_answer(e.lstrip("# ")))], context)


class EvidenceSpanRecall(QueryMetric):
    def keys(self) -> set[str]:
        return {"evidence_span_recall"}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        return {"evidence_span_recall": evidence_span_recall(item.evidence_texts, item.context.text)}
