"""Aggregates over a study's benchmarks x seeds, as rliable reports them, with intervals that cover.

    from dashboards.stats.aggregates import aggregate, improvement, performance_profile
    a = aggregate(scores)            # scores: (runs, benchmarks) of one method; a run is one seed
    a.mean, a.mean_ci, a.iqm, a.iqm_ci   # iqm None when there are too few scores for it to be robust
    p = improvement(x, y)            # P(X > Y): x, y (runs, benchmarks) of two methods
    p.value, p.ci
    taus, share, low, high = performance_profile(scores)   # share of scores above each threshold

A method's score matrix has one row per run (seed) and one column per benchmark (a "task", fixed:
the estimand is the method's expected score on these benchmarks over runs, rliable's). One trained
run is scored on every benchmark, so its scores move together: every interval here treats a whole
run (a row) as the unit, never resampling a benchmark's runs on their own.

- The mean (over all entries = the mean of the runs' means): a t-interval over the runs' means with
  runs - 1 degrees of freedom (exact under normality; with 3 runs its critical value is 4.30).
- The IQM (interquartile mean, the middle 50% of all entries, scipy's trim_mean at 25%, as rliable's
  aggregate_iqm): its standard error by the jackknife over runs and the same t. Shown only with at
  least MIN_IQM_SCORES entries: with 3 runs x 3 benchmarks it would keep 5 numbers, mostly one
  benchmark's.
- P(X > Y): per benchmark the Mann-Whitney share of (run of X, run of Y) pairs where X scores higher
  (ties half), averaged over benchmarks (rliable's probability of improvement). Its variance is the
  two-sample U-statistic's (DeLong): each run's share of wins over the other method's runs, averaged
  over benchmarks, varies across runs; the interval is a score (Wilson) interval at the effective
  sample size value (1 - value) / variance, inside [0, 1], with Welch-Satterthwaite degrees of
  freedom; when every run's share is the same (complete separation) the effective size is the pairs'
  m n / (m + n - 1).
- The performance profile (rliable's score distribution): the share of a method's scores above each
  threshold, each run's share averaged, with a t band over runs.

No resampling: the numbers do not depend on a seed. rliable itself is not used (its bootstrap module
does not import under this project's pandas); tests/dashboards/test_aggregates.py checks the point
values against rliable.metrics and the intervals' coverage by simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_IQM_SCORES = 20
"""Fewer entries (runs x benchmarks) than this: no IQM (a trimmed mean of a handful of numbers is not robust)."""


@dataclass
class Aggregate:
    mean: float
    mean_ci: tuple[float, float]
    iqm: float | None
    iqm_ci: tuple[float, float] | None
    runs: int
    tasks: int


@dataclass
class Improvement:
    value: float
    ci: tuple[float, float]


def _t(df: float, alpha: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(1 - alpha / 2, df))


def _trimmed_means(rows: np.ndarray) -> np.ndarray:
    """Each row's mean without its lowest and highest quarter: int(n / 4) values cut from each end, as
    scipy.stats.trim_mean(proportiontocut=0.25) and rliable's aggregate_iqm cut them."""
    k = int(np.floor(0.25 * rows.shape[1]))
    return np.sort(rows, axis=1)[:, k:rows.shape[1] - k].mean(axis=1)


def iqm(scores: np.ndarray) -> float:
    """Interquartile mean of all entries (rliable.metrics.aggregate_iqm)."""
    return float(_trimmed_means(np.asarray(scores, dtype=float).reshape(1, -1))[0])


def mean_interval(scores: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """(1 - alpha) t-interval of the mean over the runs' means (rows)."""
    runs = np.asarray(scores, dtype=float).mean(axis=1)
    if len(runs) < 2:
        return float(runs.mean()), float(runs.mean())
    half = _t(len(runs) - 1, alpha) * float(runs.std(ddof=1)) / np.sqrt(len(runs))
    return float(runs.mean() - half), float(runs.mean() + half)


def _jackknife_iqm(x: np.ndarray, alpha: float) -> tuple[float, float]:
    n = x.shape[0]
    estimate = iqm(x)
    if n < 2:
        return estimate, estimate
    leave_one_out = np.array([iqm(np.delete(x, i, axis=0)) for i in range(n)])
    se = float(np.sqrt((n - 1) / n * ((leave_one_out - leave_one_out.mean()) ** 2).sum()))
    half = _t(n - 1, alpha) * se
    return estimate - half, estimate + half


def aggregate(scores: np.ndarray, *, alpha: float = 0.05) -> Aggregate:
    """Mean and IQM of a (runs, tasks) matrix with (1 - alpha) intervals over whole runs."""
    x = np.asarray(scores, dtype=float)
    robust = x.size >= MIN_IQM_SCORES
    return Aggregate(float(x.mean()), mean_interval(x, alpha), iqm(x) if robust else None,
                     _jackknife_iqm(x, alpha) if robust else None, x.shape[0], x.shape[1])


def _wins(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(rx, ry) share of benchmarks where run i of X beats run j of Y (ties half)."""
    gt = (x[:, None, :] > y[None, :, :]).mean(axis=-1)
    eq = (x[:, None, :] == y[None, :, :]).mean(axis=-1)
    return gt + 0.5 * eq


def improvement(x: np.ndarray, y: np.ndarray, *, alpha: float = 0.05) -> Improvement:
    """Probability that a run of X beats a run of Y on a benchmark, averaged over benchmarks, with a
    (1 - alpha) interval over whole runs (see the module docstring)."""
    from dashboards.stats.paired_stats import satterthwaite, wilson

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    wins = _wins(x, y)
    value = float(wins.mean())
    m, n = wins.shape
    if m < 2 or n < 2:
        return Improvement(value, (0.0, 1.0))
    parts = [(float(wins.mean(axis=1).var(ddof=1)) / m, m - 1), (float(wins.mean(axis=0).var(ddof=1)) / n, n - 1)]
    variance = sum(v for v, _ in parts)
    df = satterthwaite(parts) if variance > 0 else float(m + n - 2)
    return Improvement(value, wilson(value, float(np.sqrt(variance)), min(df, m + n - 2), alpha,
                                     n_when_certain=m * n / (m + n - 1)))


def performance_profile(scores: np.ndarray, taus: np.ndarray | None = None, *, alpha: float = 0.05):
    """(taus, share, low, high): the share of a (runs, tasks) matrix's scores above each threshold (each
    run's share, averaged over runs) and its (1 - alpha) t band over runs, clipped to [0, 1]."""
    x = np.asarray(scores, dtype=float)
    if taus is None:
        taus = np.linspace(0.0, max(1.0, float(x.max())), 101)
    per_run = (x[:, :, None] > taus[None, None, :]).mean(axis=1)  # (runs, taus)
    share = per_run.mean(axis=0)
    if x.shape[0] < 2:
        return taus, share, share.copy(), share.copy()
    half = _t(x.shape[0] - 1, alpha) * per_run.std(axis=0, ddof=1) / np.sqrt(x.shape[0])
    return taus, share, np.clip(share - half, 0, 1), np.clip(share + half, 0, 1)
