"""Chunk-point precision / recall / F1 by level (HiChunk, Sec. 5.4 and Table 3).

A chunk point is where a chunk starts, with the chunk's level. Gold points are the starts
of the document's sections (HiChunk: every "#" header line, level = number of "#").
At level L only points of level L are compared (``F1_L1``, ``F1_L2``); "all" ignores
levels (``F1_Lall``: "does not consider the level of the chunking point").

Predicted points are read from the chunks, in the representation of
:mod:`harness.chunking.structure_tree`:

- a chunking with structure nodes (``indexed=False``) predicts the nodes' starts and
  levels; its leaves are the fixed-size packing inside sections, which Table 3 leaves out
  ("HC means the result of HiChunk without fixed size chunking"). ``include_leaves=True``
  counts them too.
- a flat chunking predicts every text chunk's start; level 0 (no level) counts as
  level 1, as HiChunk scores its single-level baselines (SC, LC) at level 1 and "all".
  A non-contiguous chunk predicts the start of each of its parts.

Positions. HiChunk compares on lines (each sentence a line, headers their own line): a
predicted split is right when the line it starts with is a header line. Offsets here are
compared the same way with ``match=sentence`` (default): each offset is replaced by the
index of the unit it falls in, units being :func:`harness.text.sentence_spans` sentences
further cut at newlines (sentencex keeps a header line together with the next sentence);
an offset in the whitespace between units belongs to the next unit. So a point anywhere in
a header line hits that header, and points that land in the same unit count once.
``match=exact`` compares offsets after skipping leading whitespace.

Scores. HiChunk's Table 3 is micro-averaged (``chunk_result_analysis.py``: matched, predicted
and gold points summed over the data set, then P = matched / predicted, R = matched / gold, F1
their harmonic mean): those are the headline keys ``chunk_point_{precision,recall,f1}_<level>``,
run-level numbers (:meth:`ChunkPointF1.aggregate`). Per document the same ratios are
``chunk_point_{precision,recall,f1}_<level>_macro``, whose mean over documents is the macro
average; and the counts ``chunk_point_n_{match,pred,gold}_<level>`` the micro one sums. F1 is
0 when P or R is 0. A level without gold points is NaN (HiChunk's "-"), and so is every score
of a document without sections (its counts are left out of the sums).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence

from harness.metrics.base import DocumentMetric
from harness.text import sentence_spans
from harness.types import Chunk, ConfigError, Document

MATCH = ("sentence", "exact")
Point = tuple[int, int]  # (offset, level)


def gold_points(doc: Document) -> set[Point]:
    return {(s.start, s.level) for s in doc.sections}


def predicted_points(chunks: Sequence[Chunk], include_leaves: bool = False) -> set[Point]:
    """``(offset, level)`` of each chunk start, as the module docstring says."""
    nodes = [c for c in chunks if c.view == "text"]
    if not include_leaves and any(not c.indexed for c in nodes):
        nodes = [c for c in nodes if not c.indexed]
    return {(s, max(c.level, 1)) for c in nodes for s, _ in (c.parts or ((c.start, c.end),))}


def units(text: str, language: str = "en") -> list[tuple[int, int]]:
    """Sentences cut at newlines: HiChunk's lines."""
    out = []
    for s, e in sentence_spans(text, language):
        line_start = s
        for i in range(s, e + 1):
            if i == e or text[i] == "\n":
                piece = text[line_start:i]
                lo = line_start + len(piece) - len(piece.lstrip())
                hi = line_start + len(piece.rstrip())
                if lo < hi:
                    out.append((lo, hi))
                line_start = i + 1
    return out


def prf(matched: float, n_pred: float, n_gold: float) -> tuple[float, float, float]:
    if n_gold == 0:
        return math.nan, math.nan, math.nan
    p = matched / n_pred if n_pred else 0.0
    r = matched / n_gold
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def micro_scores(rows: Iterable[Mapping[str, float]], levels: Sequence[int] = (1, 2)) -> dict[str, float]:
    """HiChunk's data-set level (micro) P/R/F1 from per-document count rows (sums or means):
    ``chunk_point_{precision,recall,f1}_<level>``."""
    rows = list(rows)
    out = {}
    for tag in [f"l{lv}" for lv in levels] + ["all"]:
        m, p, g = (sum(r.get(f"chunk_point_n_{k}_{tag}", 0.0) for r in rows if _finite(r, tag))
                   for k in ("match", "pred", "gold"))
        out[f"chunk_point_precision_{tag}"], out[f"chunk_point_recall_{tag}"], out[f"chunk_point_f1_{tag}"] = \
            prf(m, p, g)
    return out


def _finite(row: Mapping[str, float], tag: str) -> bool:
    v = row.get(f"chunk_point_n_gold_{tag}", math.nan)
    return not math.isnan(v)


class ChunkPointF1(DocumentMetric):
    """Document metric: ``chunk_point_{precision,recall,f1}_{l1,l2,...,all}_macro`` and counts per
    document; the micro ``chunk_point_{precision,recall,f1}_{l1,l2,...,all}`` per run."""

    def __init__(self, levels: Sequence[int] = (1, 2), match: str = "sentence", include_leaves: bool = False):
        if isinstance(levels, (str, int)) or not levels or \
                not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in levels):
            raise ConfigError(f"levels must be a non-empty list of integers >= 1; got {levels!r}")
        if match not in MATCH:
            raise ConfigError(f"match must be one of {', '.join(MATCH)}; got {match!r}")
        self.levels, self.match = tuple(levels), match
        self.include_leaves = bool(include_leaves)

    def _tags(self) -> list[str]:
        return [f"l{lv}" for lv in self.levels] + ["all"]

    def keys(self) -> set[str]:
        return ({f"chunk_point_{m}_{t}_macro" for t in self._tags() for m in ("precision", "recall", "f1")}
                | {f"chunk_point_n_{k}_{t}" for t in self._tags() for k in ("match", "pred", "gold")})

    def aggregate_keys(self) -> set[str]:
        return {f"chunk_point_{m}_{t}" for t in self._tags() for m in ("precision", "recall", "f1")}

    def aggregate(self, rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
        """HiChunk's data-set level numbers (micro over documents): the headline keys."""
        return micro_scores(rows, self.levels)

    def __call__(self, doc: Document, chunks: Sequence[Chunk]) -> dict[str, float]:
        if not doc.sections:
            return dict.fromkeys(self.keys(), math.nan)
        key = self._position_key(doc)
        gold = {(key(o), lv) for o, lv in gold_points(doc)}
        pred = {(key(o), lv) for o, lv in predicted_points(chunks, self.include_leaves)}
        out = {}
        for lv, tag in [(lv, f"l{lv}") for lv in self.levels] + [(None, "all")]:
            g = {o for o, x in gold if lv is None or x == lv}
            p = {o for o, x in pred if lv is None or x == lv}
            m = len(g & p)
            out[f"chunk_point_precision_{tag}_macro"], out[f"chunk_point_recall_{tag}_macro"], \
                out[f"chunk_point_f1_{tag}_macro"] = prf(m, len(p), len(g))
            out.update({f"chunk_point_n_match_{tag}": float(m), f"chunk_point_n_pred_{tag}": float(len(p)),
                        f"chunk_point_n_gold_{tag}": float(len(g))})
        return out

    def _position_key(self, doc: Document):
        text = doc.text
        if self.match == "exact":
            def exact(o: int) -> int:
                while o < len(text) and text[o].isspace():
                    o += 1
                return o
            return exact
        ends = [e for _, e in units(text, doc.language)]
        return lambda o: bisect.bisect_right(ends, o)
