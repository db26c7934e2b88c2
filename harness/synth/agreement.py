"""How good is a synthetic set? The same chunkers ranked on a labelled dataset's own questions and
on synthetic questions written for its documents: Kendall's tau between the two rankings, with a
bootstrap interval, and each chunker's difference.

Each chunker's score is the mean of a per-question metric over a set. The interval resamples the
questions of each set (with replacement, the same draw for every chunker: the runs are paired by
question), recomputes every chunker's mean and the tau between the two orders, and takes the
percentiles. A tau near 1 says the synthetic questions order the chunkers as the published ones
do; its interval says how much of that the question sample decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau

from harness.types import ConfigError


@dataclass(frozen=True)
class Agreement:
    chunkers: tuple[str, ...]
    own: tuple[float, ...]         # each chunker's mean on the dataset's own questions
    synthetic: tuple[float, ...]   # ... and on the synthetic ones
    tau: float
    interval: tuple[float, float]  # the bootstrap percentile interval of tau
    n_own: int
    n_synthetic: int
    resamples: int

    def report(self, metric: str) -> str:
        lines = [f"Kendall's tau between the chunker rankings on {metric}: {self.tau:.3f} "
                 f"(95% bootstrap interval {self.interval[0]:.3f} to {self.interval[1]:.3f}; "
                 f"{self.n_own} own questions, {self.n_synthetic} synthetic, {self.resamples} resamples)",
                 f"{'chunker':<24} {'own':>8} {'synthetic':>10} {'difference':>11}"]
        for name, a, b in zip(self.chunkers, self.own, self.synthetic):
            lines.append(f"{name:<24} {a:>8.4f} {b:>10.4f} {b - a:>+11.4f}")
        return "\n".join(lines)


def agreement(chunkers: Sequence[str], own: np.ndarray, synthetic: np.ndarray,
              resamples: int = 1000, seed: int = 0, level: float = 0.95) -> Agreement:
    """``own`` and ``synthetic``: per-question scores, one row per chunker (questions in the same
    order in every row)."""
    if len(chunkers) < 2:
        raise ConfigError("agreement: a ranking needs at least two chunkers")
    if own.shape[1] == 0 or synthetic.shape[1] == 0:
        raise ConfigError(f"agreement: no questions to rank on ({own.shape[1]} own, {synthetic.shape[1]} synthetic)")
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(resamples):
        a = own[:, rng.integers(0, own.shape[1], own.shape[1])].mean(axis=1)
        b = synthetic[:, rng.integers(0, synthetic.shape[1], synthetic.shape[1])].mean(axis=1)
        taus.append(_tau(a, b))
    taus = np.array([t for t in taus if not np.isnan(t)])
    tail = (1 - level) / 2 * 100
    interval = ((float(np.percentile(taus, tail)), float(np.percentile(taus, 100 - tail)))
                if len(taus) else (float("nan"), float("nan")))
    means_own, means_syn = own.mean(axis=1), synthetic.mean(axis=1)
    return Agreement(tuple(chunkers), tuple(map(float, means_own)), tuple(map(float, means_syn)),
                     _tau(means_own, means_syn), interval, own.shape[1], synthetic.shape[1], resamples)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    # tau-b: ties (two chunkers with one mean) count as neither agreement nor disagreement;
    # NaN where one side ranks every chunker alike
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(kendalltau(a, b).statistic)
