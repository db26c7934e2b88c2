"""Uncertainty over queries: bootstrap confidence intervals for a mean, the population standard
deviation the papers print beside a mean, and paired tests between two runs scored on the same
queries (so a report can say whether a gain is real).

All are scipy's implementations (``scipy.stats.bootstrap``, ``scipy.stats.permutation_test``,
``scipy.stats.ttest_1samp``), seeded so that a rerun reports the same interval. NaN scores
(queries a metric cannot score) are left out, as in the run's means; a paired test keeps only
queries both runs scored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LEVEL = 0.95
N_RESAMPLES = 1000


def bootstrap_ci(values: Sequence[float], level: float = LEVEL, n_resamples: int = N_RESAMPLES,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; NaN when fewer than two scored values, and
    the value itself when all are equal (no spread to resample)."""
    x = _finite(values)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    from scipy import stats  # a second to import: only where an interval is computed

    res = stats.bootstrap((x,), np.mean, confidence_level=level, n_resamples=n_resamples,
                          method="percentile", random_state=np.random.default_rng(seed), vectorized=True)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def t_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Student's t interval of the mean (``scipy.stats.ttest_1samp``); as :func:`bootstrap_ci` for
    fewer than two values or no spread. Wider than the percentile bootstrap at a dozen values, where
    the bootstrap's interval is too narrow (it resamples the sample's own spread, with no
    small-sample correction): the interval a claim of "no difference that matters" must rest on."""
    x = _finite(values)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    from scipy import stats

    ci = stats.ttest_1samp(x, 0.0).confidence_interval(level)
    return float(ci.low), float(ci.high)


def population_std(values: Sequence[float]) -> float:
    """Standard deviation of the scored values (ddof=0, numpy's default, as HiChunk's
    ``np.std``); NaN when none is scored."""
    x = _finite(values)
    return float(np.std(x)) if len(x) else float("nan")


def paired_test(a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, seed: int = 0,
                level: float = LEVEL, interval: str = "bootstrap") -> dict[str, float]:
    """Mean of ``b - a`` over the queries both scored, its interval (``interval``: ``bootstrap``,
    :func:`bootstrap_ci`, or ``t``, :func:`t_interval`), and the two-sided p-value of a paired
    sign-flip permutation test (no difference between the runs)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired scores must have the same length, got {len(a)} and {len(b)}")
    both = ~(np.isnan(a) | np.isnan(b))
    d = b[both] - a[both]
    out = {"n": float(len(d)), "mean_a": _mean(a[both]), "mean_b": _mean(b[both]), "mean_diff": _mean(d)}
    out["ci_low"], out["ci_high"] = (t_interval(d, level) if interval == "t" else
                                     bootstrap_ci(d, level, min(n_resamples, 5000), seed))
    if len(d) < 2 or np.all(d == 0):
        out["p_value"] = 1.0 if len(d) else float("nan")
        return out
    from scipy import stats

    res = stats.permutation_test((a[both], b[both]), lambda x, y, axis: np.mean(y - x, axis=axis),
                                 permutation_type="samples", n_resamples=n_resamples, vectorized=True,
                                 alternative="two-sided", random_state=np.random.default_rng(seed))
    out["p_value"] = float(res.pvalue)
    return out


def _finite(values: Sequence[float]) -> np.ndarray:
    x = np.asarray([v for v in values if v is not None], dtype=float)
    return x[~np.isnan(x)]


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else float("nan")
