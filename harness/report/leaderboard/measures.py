"""What the leaderboard measures, read from the record: each contender's primary metric per dataset
(with its bootstrap 95% interval), its rank there and its mean rank over the datasets, the paired
comparisons of every two contenders on every dataset, and what chunking cost.

The comparisons are the challenge's (:mod:`harness.report.challenge.significance`): a two-sided
paired sign-flip permutation test on the same questions and Student's t interval of the difference,
Holm-corrected over all the pairs of one dataset, read as win, tie (the interval inside ± the
margin), inconclusive or loss. Across datasets they add up to a win/tie/loss matrix.

Cost, per contender, averaged over the datasets it ran on: chunking seconds per MB of document
text (the chunk stage's recorded seconds, timed when the chunks were computed, so a cached rerun
reports the same), texts the chunker embedded and chunks per document, and the mean and largest
chunk size in embedder tokens (the run's ``chunk_size_mean``/``chunk_size_max`` in the context's
unit: the suite counts tokens of the embedder).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations

from harness.chunking.contract import BROKE_CONTRACT
from harness.report.challenge.significance import MARGIN, Comparison, correct, test, unit_scores
from harness.report.leaderboard.suite import PRIMARY, Suite
from harness.report.tables.cells import Rendered

VERDICTS = ("win", "tie", "loss", "inconclusive")
FACTOR = 100.0   # every primary metric is a share: shown in points
OFFSETS = "its text is not at its offsets"   # an adapter's span check (harness/chunking/adapters.py)


@dataclass(frozen=True)
class Score:
    value: float | None           # in points (x100)
    low: float | None = None
    high: float | None = None
    note: str = ""                # why there is no value
    saturated: str = ""


@dataclass
class Standing:
    """One contender's row of the leaderboard."""

    key: str
    scores: dict[str, Score]                  # dataset key -> its primary metric
    ranks: dict[str, float] = field(default_factory=dict)   # dataset key -> rank (ties share the mean rank)
    cost: dict[str, float] = field(default_factory=dict)
    refused: str = ""                         # why it is not ranked: its first failed point
    wins: int = 0
    ties: int = 0
    losses: int = 0
    inconclusive: int = 0
    pareto: bool = False

    @property
    def mean_rank(self) -> float | None:
        return statistics.fmean(self.ranks.values()) if self.ranks and not self.refused else None

    @property
    def mean_score(self) -> float | None:
        values = [s.value for s in self.scores.values() if s.value is not None]
        return statistics.fmean(values) if values and not self.refused else None


@dataclass
class Board:
    suite: Suite
    standings: list[Standing]                  # ranked: by mean rank over the datasets, refused last
    comparisons: dict[str, list[Comparison]]   # dataset key -> its pairs, Holm-corrected together
    matrix: dict[tuple[str, str], dict[str, int]]   # (row, column) -> verdicts of row against column, counted
    mb: dict[str, float]                       # dataset key -> MB of document text
    margin: float = MARGIN


def scores(suite: Suite, rendered: Rendered) -> dict[str, dict[str, Score]]:
    """contender -> dataset -> its primary metric's cell, as the table shows it."""
    out: dict[str, dict[str, Score]] = {}
    for c in suite.contenders:
        out[c.key] = {}
        for d in suite.datasets:
            cell = rendered.cells[(c.key, f"{d.key}/{PRIMARY}")]
            out[c.key][d.key] = Score(cell.ours, cell.low, cell.high, cell.note, cell.saturated)
    return out


def refusal(suite: Suite, rendered: Rendered, key: str) -> str:
    """Why a contender is refused: its first failed point's reason (a broken span contract above
    all), or ''."""
    notes = []
    for d in suite.datasets:
        run = rendered.runs.get(f"{key}|{d.key}")
        if run is not None and run.info.status != "FINISHED":
            notes.append(f"{d.key}: {run.data.tags.get('error', 'failed').splitlines()[0]}")
    broke = [n for n in notes if BROKE_CONTRACT in n or OFFSETS in n]
    return (broke or notes or [""])[0]


def ranks(values: dict[str, float]) -> dict[str, float]:
    """Rank 1 = the highest value; tied values share the mean of their ranks."""
    order = sorted(values, key=lambda k: -values[k])
    out, i = {}, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and math.isclose(values[order[j + 1]], values[order[i]], rel_tol=1e-12, abs_tol=1e-12):
            j += 1
        for k in order[i:j + 1]:
            out[k] = (i + j) / 2 + 1
        i = j + 1
    return out


def costs(rendered: Rendered, key: str, datasets: list[str], mb: dict[str, float]) -> dict[str, float]:
    """The contender's chunking cost, each measure averaged over its finished runs."""
    per: dict[str, list[float]] = {}
    for d in datasets:
        run = rendered.runs.get(f"{key}|{d}")
        if run is None or run.info.status != "FINISHED":
            continue
        m = run.data.metrics
        n_docs = max(m.get("n_docs", 1.0), 1.0)
        found = {"chunks_per_doc": m.get("chunks_per_doc"), "chunk_tokens_mean": m.get("chunk_size_mean"),
                 "chunk_tokens_max": m.get("chunk_size_max"),
                 "embed_texts_per_doc": None if "chunker_cost_embed_texts" not in m else m["chunker_cost_embed_texts"] / n_docs}
        if "chunk_seconds_per_doc" in m and mb.get(d):
            found["seconds_per_mb"] = m["chunk_seconds_per_doc"] * n_docs / mb[d]
        for k, v in found.items():
            if v is not None:
                per.setdefault(k, []).append(v)
    out = {k: statistics.fmean(v) for k, v in per.items()}
    if "chunk_tokens_max" in per:
        out["chunk_tokens_max"] = max(per["chunk_tokens_max"])
    return out


def compare(suite: Suite, rendered: Rendered, uri: str, valid: set[str], margin: float = MARGIN,
            log: Callable[[str], None] = lambda _: None) -> dict[str, list[Comparison]]:
    """Per dataset: every pair of ``valid`` contenders with a value, tested on the questions both
    scored (``b`` is the challenger of ``a``: ``diff`` = b - a), Holm-corrected over the dataset."""
    out: dict[str, list[Comparison]] = {}
    for d in suite.datasets:
        metric = d.primary
        have = [c.key for c in suite.contenders if c.key in valid
                and rendered.cells[(c.key, f"{d.key}/{PRIMARY}")].ours is not None]
        units = {k: unit_scores(uri, rendered.runs[f"{k}|{d.key}"], metric) for k in have}
        found = []
        for a, b in combinations(have, 2):
            ca, cb = rendered.cells[(a, f"{d.key}/{PRIMARY}")], rendered.cells[(b, f"{d.key}/{PRIMARY}")]
            # ``family`` holds the challenger's key: the pair is (baseline a, challenger b)
            c = Comparison(d.key, b, metric, a, a, a, ca.ours, None, cb.ours, False)
            found.append(test(c, [units[a]], [units[b]], [""], [""], FACTOR, margin))
        correct(found)
        out[d.key] = found
        log(f"[leaderboard] {d.key}: {len(found)} paired comparisons of {len(have)} contenders")
    return out


def matrix(comparisons: dict[str, list[Comparison]]) -> dict[tuple[str, str], dict[str, int]]:
    """(x, y) -> on how many datasets x won, tied, lost against y, or could not tell (inconclusive)."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    flip = {"win": "loss", "loss": "win"}
    for found in comparisons.values():
        for c in found:
            v = c.verdict   # the challenger's: b's against a
            if v == "untested":
                continue
            a, b = c.baseline, c.family
            out.setdefault((b, a), dict.fromkeys(VERDICTS, 0))[v] += 1
            out.setdefault((a, b), dict.fromkeys(VERDICTS, 0))[flip.get(v, v)] += 1
    return out


def board(suite: Suite, rendered: Rendered, uri: str, mb: dict[str, float], margin: float = MARGIN,
          log: Callable[[str], None] = lambda _: None) -> Board:
    """The whole leaderboard from a rendered suite table."""
    from harness.report.tables.pareto import Point, with_front

    found = scores(suite, rendered)
    standings = [Standing(c.key, found[c.key], refused=refusal(suite, rendered, c.key)) for c in suite.contenders]
    valid = {s.key for s in standings if not s.refused}
    for d in suite.datasets:
        valued = {s.key: s.scores[d.key].value for s in standings if s.key in valid and s.scores[d.key].value is not None}
        for k, r in ranks(valued).items():
            next(s for s in standings if s.key == k).ranks[d.key] = r
    keys = [d.key for d in suite.datasets]
    for s in standings:
        s.cost = costs(rendered, s.key, keys, mb)
    comparisons = compare(suite, rendered, uri, valid, margin, log)
    tally = matrix(comparisons)
    for s in standings:
        for (x, _), counts in tally.items():
            if x == s.key:
                s.wins += counts["win"]
                s.ties += counts["tie"]
                s.losses += counts["loss"]
                s.inconclusive += counts["inconclusive"]
    pts = [Point("", s.key, s.mean_score, s.cost["seconds_per_mb"], 0.0, 0.0, 0.0, ())
           for s in standings if s.mean_score is not None and "seconds_per_mb" in s.cost
           and len(s.ranks) == len(suite.datasets)]
    front = {p.chunker for p in with_front(pts) if p.pareto}
    for s in standings:
        s.pareto = s.key in front
    standings.sort(key=lambda s: (bool(s.refused), len(suite.datasets) - len(s.ranks),
                                  s.mean_rank if s.mean_rank is not None else math.inf, s.key))
    return Board(suite, standings, comparisons, tally, mb, margin)
