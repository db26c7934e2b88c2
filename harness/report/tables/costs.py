"""What a table's runs cost to compute: the work its own runs did, and the work they read from
the cache that another table's runs did.

A run records each stage's seconds and whether it computed the stage or read it from the cache
(its ``stage/<name>`` tags), not the cache key. The work a stage does is identified from the
record alone by the config it reads: the run's params under the stage's groups and those of every
stage it comes after (the slices its cache key is made of, less the code fingerprint). A cached
stage reused the seconds of a run in the record that computed the same work; a cached stage no
recorded run computed came from a cache this record does not describe (counted, not timed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from harness.metrics.keys import STAGE_SECONDS
from harness.pipeline.stages import STAGES

Work = tuple[str, str]   # (stage, digest of the config it read); a judge's pairing: (judge, run id)


@cache
def stage_groups() -> dict[str, tuple[str, ...]]:
    """Per stage, the config groups its output depends on: its own and its upstream stages'."""
    out: dict[str, tuple[str, ...]] = {}
    for s in STAGES:  # declared in order: a stage comes after everything it reads
        out[s.name] = tuple(dict.fromkeys([*s.reads, *(g for a in s.after for g in out[a])]))
    return out


def works(run) -> dict[Work, tuple[bool, float]]:
    """The work of each stage the run recorded: whether it computed it, and in how many seconds."""
    params, tags, metrics = run.data.params, run.data.tags, run.data.metrics
    out = {}
    for key, seconds in metrics.items():
        if not key.startswith(STAGE_SECONDS):
            continue
        stage = key[len(STAGE_SECONDS):]
        groups = stage_groups().get(stage)
        if groups is None:  # a stage of no pipeline (the pairwise judge): its own run's work
            out[(stage, run.info.run_id)] = (True, seconds)
            continue
        read = sorted((k, v) for k, v in params.items() if k.split(".", 1)[0] in groups)
        digest = hashlib.sha256(json.dumps(read).encode()).hexdigest()[:16]
        out[(stage, digest)] = (tags.get(f"stage/{stage}") == "computed", seconds)
    return out


def computed(runs: Iterable) -> dict[Work, float]:
    """The work the runs computed, each at the longest time a run took to compute it."""
    out: dict[Work, float] = {}
    for r in runs:
        for work, (did, seconds) in works(r).items():
            if did:
                out[work] = max(out.get(work, 0.0), seconds)
    return out


@dataclass(frozen=True)
class Cost:
    computed: float = 0.0   # seconds of the work the table's own runs computed
    reused: float = 0.0     # seconds of the work they read from the cache, as another run computed it
    unknown: int = 0        # stages read from a cache no recorded run computed

    def text(self) -> str:
        if not (self.computed or self.reused or self.unknown):
            return "none"
        out = f"{self.computed:,.0f} s + {self.reused:,.0f} s reused"
        return out + (f", {self.unknown} stage{'s' * (self.unknown > 1)} untimed" if self.unknown else "")


def table_cost(runs: Iterable, everyone: dict[Work, float]) -> Cost:
    """``runs``: every recorded run of the table's grid points; ``everyone``: :func:`computed`
    over every run of the record (the other tables' included)."""
    own: dict[Work, float] = {}
    needed: set[Work] = set()
    for r in runs:
        for work, (did, seconds) in works(r).items():
            needed.add(work)
            if did:
                own[work] = max(own.get(work, 0.0), seconds)
    others = needed - set(own)
    return Cost(sum(own.values()), sum(everyone[w] for w in others if w in everyone),
                sum(w not in everyone for w in others))
