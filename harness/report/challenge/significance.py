"""Is the challenger better than a baseline on the same questions? Paired tests over a table's cells.

A cell's value is a mean over units (questions, or documents for a chunking metric) of one run,
or, for a swept row, the mean over its sweep points (LGMGC's chunk sizes). The test pairs what the
two cells average: the same question's scores (for two rows swept over the same values, the same
question at the same value, as a mean over (question, size) pairs is what the cells show; else each
side's per-question mean over its runs). It is :func:`harness.statistics.paired_test`: a two-sided
sign-flip permutation test and Student's t interval of the mean difference. The p-values of one
table's comparisons are Holm-corrected together.

A verdict has four values. ``win``/``loss``: the corrected p-value is below 0.05. Otherwise the
interval decides what the data can say: ``tie`` when it lies within ± the equivalence margin
(differences smaller than the margin do not matter, and larger ones are excluded), ``inconclusive``
when it reaches past the margin (eleven questions cannot tell a 40-point loss from none). The margin
is in points, hundredths of the metric's own scale (a percentage point of a recall), converted to the
table's units. A number that is not a mean over units (a corpus BLEU, a micro-averaged F1) has no
per-unit scores: no test.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ALPHA = 0.05
MARGIN = 2.0   # points: the equivalence margin's default (docs/metrics.md, "Is a difference real?")
VERDICTS = ("win", "tie", "inconclusive", "loss", "untested")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted among the tests)."""
    finite = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    out = [float("nan")] * len(p_values)
    running = 0.0
    for rank, i in enumerate(sorted(finite, key=lambda i: p_values[i])):
        running = max(running, min(1.0, (len(finite) - rank) * p_values[i]))
        out[i] = running
    return out


@lru_cache(maxsize=4096)
def _rows(uri: str, run_id: str, name: str) -> tuple[dict, ...]:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow
    from mlflow.tracking import MlflowClient

    if name not in {f.path for f in MlflowClient(tracking_uri=uri).list_artifacts(run_id)}:
        return ()
    path = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name, tracking_uri=uri))
    return tuple(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


UNITS = (("per_query.jsonl", "qid", "question"), ("per_document.jsonl", "doc_id", "document"))


def unit_scores(uri: str, run, metric: str) -> tuple[dict[str, float], str] | None:
    """``metric`` per question (``per_query.jsonl``), else per document (``per_document.jsonl``),
    with the unit's name; None where the run's number is not a mean over either (it records no
    interval)."""
    if f"{metric}/ci95_low" not in run.data.metrics and f"{metric}/std" not in run.data.metrics:
        return None
    for name, key, unit in UNITS:
        rows = _rows(uri, run.info.run_id, name)
        if rows and any(metric in r for r in rows):
            return {str(r[key]): float(r[metric]) for r in rows if r.get(metric) is not None}, unit
    return None


@dataclass(frozen=True)
class Pairing:
    a: list[float]       # the baseline's scores
    b: list[float]       # the challenger's, pair by pair
    how: str             # "questions" | "(question, size) pairs" | ...


def pair(base: list[dict[str, float]], challenger: list[dict[str, float]], base_points: list[str],
         challenger_points: list[str], unit: str = "question") -> Pairing:
    """Pair two cells' scores: by (unit, sweep value) where both sweep the same values in the same
    order, else by unit over each side's mean."""
    if len(base) > 1 and base_points == challenger_points:
        keys = [(i, u) for i, scores in enumerate(base) for u in scores if u in challenger[i]]
        return Pairing([base[i][u] for i, u in keys], [challenger[i][u] for i, u in keys],
                       f"({unit}, sweep value) pairs")

    def means(side: list[dict[str, float]]) -> dict[str, float]:
        shared = set.intersection(*(set(s) for s in side)) if side else set()
        return {u: _mean([s[u] for s in side]) for u in shared}

    a, b = means(base), means(challenger)
    units = sorted(set(a) & set(b))
    how = f"{unit}s" + ("" if len(base) == len(challenger) == 1 else ", each side's mean over its sweep")
    return Pairing([a[u] for u in units], [b[u] for u in units], how)


def _mean(values: list[float]) -> float:
    """The mean of the scored values; NaN (left out of the test) where none is."""
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else float("nan")


@dataclass
class Comparison:
    table: str
    family: str
    column: str
    baseline: str            # the baseline row's key
    baseline_label: str
    baseline_chunker: str    # its chunker choice (the leaderboard's key)
    baseline_value: float | None
    paper_value: float | None
    challenger_value: float | None
    lower_is_better: bool
    n: int = 0
    diff: float = float("nan")      # challenger - baseline, in the table's units
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    p: float = float("nan")
    p_holm: float = float("nan")
    pairing: str = ""
    note: str = ""
    margin: float = float("nan")    # the equivalence margin in the table's units

    @property
    def detectable(self) -> float:
        """Half the interval's width: the smallest observed difference whose interval would have
        excluded 0, at this spread and number of questions."""
        return (self.ci_high - self.ci_low) / 2

    @property
    def better(self) -> float:
        """The difference in the direction of better (positive: the challenger is better)."""
        return -self.diff if self.lower_is_better else self.diff

    @property
    def verdict(self) -> str:
        if math.isnan(self.p_holm):
            return "untested"
        if self.p_holm < ALPHA and self.better != 0:
            return "win" if self.better > 0 else "loss"
        if -self.margin <= self.ci_low and self.ci_high <= self.margin:  # NaN: never a tie
            return "tie"
        return "inconclusive"

    @property
    def why(self) -> str:
        """The verdict's reason, in the table's units."""
        m = f"±{self.margin:.2f}"
        return {"win": f"p (Holm) < {ALPHA}", "loss": f"p (Holm) < {ALPHA}",
                "tie": f"the interval lies within {m}",
                "inconclusive": f"the interval reaches past {m}"}.get(self.verdict, "")

    @property
    def disagreement(self) -> str:
        """Where the interval of the difference (uncorrected) and the verdict differ."""
        if math.isnan(self.ci_low) or math.isnan(self.p_holm):
            return ""
        excludes_zero = self.ci_low > 0 or self.ci_high < 0
        if excludes_zero and self.verdict in ("tie", "inconclusive"):
            return "its 95% interval excludes 0, but the interval is not corrected for the table's comparisons"
        if not excludes_zero and self.verdict in ("win", "loss"):
            return "its 95% interval holds 0; the corrected test rejects, and the verdict is the test's"
        return ""


def test(c: Comparison, base: list, challenger: list, base_points: list[str], challenger_points: list[str],
         factor: float, margin: float = MARGIN) -> Comparison:
    """Fill in ``c``'s paired test from the two cells' runs' :func:`unit_scores` (one per run);
    ``margin`` in points (hundredths of the metric's scale), ``factor`` its scale in the table."""
    c.margin = margin / 100 * factor
    if None in base or None in challenger or not base or not challenger:
        c.note = "no per-question scores (the number is not a mean over questions or documents): no test"
        return c
    unit = base[0][1]
    p = pair([b for b, _ in base], [m for m, _ in challenger], base_points, challenger_points, unit)
    if len(p.a) < 2:
        c.note = f"{len(p.a)} shared {unit}(s): no test"
        c.n = len(p.a)
        return c
    from harness.statistics import paired_test  # numpy: loaded where a test runs, not by the CLI's --help

    r = paired_test(p.a, p.b, interval="t")
    c.n, c.pairing = int(r["n"]), p.how
    c.diff, c.ci_low, c.ci_high = r["mean_diff"] * factor, r["ci_low"] * factor, r["ci_high"] * factor
    c.p = r["p_value"]
    return c


def correct(comparisons: list[Comparison]) -> None:
    """Holm across one table's comparisons, in place."""
    for c, adjusted in zip(comparisons, holm([c.p for c in comparisons])):
        c.p_holm = adjusted


def rank(value: float, others: Sequence[float], lower_is_better: bool) -> int:
    """1 + the number of rows strictly better than ``value``."""
    better: Callable[[float], bool] = (lambda o: o < value) if lower_is_better else (lambda o: o > value)
    return 1 + sum(better(o) for o in others)
