"""Aggregates over a study's benchmarks x seeds, as rliable reports them (Agarwal et al., NeurIPS 2021).

    from dashboards.aggregates import aggregate, improvement
    a = aggregate(scores)            # scores: (seeds, benchmarks) of one method
    a.mean, a.mean_ci, a.iqm, a.iqm_ci
    p = improvement(x, y)            # P(X > Y): x, y (seeds, benchmarks) of two methods
    p.value, p.ci

A method's score matrix has one row per run (seed) and one column per benchmark (a "task"). The mean
is over all entries; the IQM (interquartile mean) is the mean of the middle 50% of all entries
(scipy's trim_mean at 25%), robust to a run that failed or a benchmark that saturates. Intervals are
95% percentile intervals of a stratified bootstrap: within each benchmark the runs are resampled
with replacement (rliable's StratifiedBootstrap). The probability of improvement P(X > Y) is, per
benchmark, the Mann-Whitney share of (run of X, run of Y) pairs where X scores higher (ties count
half), averaged over benchmarks; its interval resamples X's and Y's runs independently within each
benchmark. A fixed bootstrap seed keeps the numbers reproducible. rliable itself is not used (its
bootstrap module does not import under this project's pandas); tests/dashboards/test_aggregates.py
checks these numbers against rliable.metrics on the same matrices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOT_SAMPLES = 2000
BOOT_SEED = 20211206  # NeurIPS 2021: any fixed value


@dataclass
class Aggregate:
    mean: float
    mean_ci: tuple[float, float]
    iqm: float
    iqm_ci: tuple[float, float]
    runs: int
    tasks: int


@dataclass
class Improvement:
    value: float
    ci: tuple[float, float]


def _trimmed_means(rows: np.ndarray) -> np.ndarray:
    """Each row's mean without its lowest and highest quarter: int(n / 4) values cut from each end, as
    scipy.stats.trim_mean(proportiontocut=0.25) and rliable's aggregate_iqm cut them."""
    k = int(np.floor(0.25 * rows.shape[1]))
    return np.sort(rows, axis=1)[:, k:rows.shape[1] - k].mean(axis=1)


def iqm(scores: np.ndarray) -> float:
    """Interquartile mean of all entries (rliable.metrics.aggregate_iqm)."""
    return float(_trimmed_means(np.asarray(scores, dtype=float).reshape(1, -1))[0])


def _stratified(scores: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, runs, tasks): n resamples of the runs, independently within each task."""
    runs, tasks = scores.shape
    idx = rng.integers(0, runs, size=(n, runs, tasks))
    return np.take_along_axis(np.broadcast_to(scores, (n, runs, tasks)), idx, axis=1)


def _percentile(draws: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    lo, hi = np.percentile(draws, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def aggregate(scores: np.ndarray, *, n_boot: int = BOOT_SAMPLES, seed: int = BOOT_SEED) -> Aggregate:
    """Mean and IQM of a (runs, tasks) matrix with stratified-bootstrap 95% intervals."""
    x = np.asarray(scores, dtype=float)
    draws = _stratified(x, np.random.default_rng(seed), n_boot).reshape(n_boot, -1)
    return Aggregate(float(x.mean()), _percentile(draws.mean(axis=1)), iqm(x), _percentile(_trimmed_means(draws)),
                     x.shape[0], x.shape[1])


def _improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) per leading batch index: x (..., rx, tasks), y (..., ry, tasks)."""
    gt = (x[..., :, None, :] > y[..., None, :, :]).mean(axis=(-3, -2))
    eq = (x[..., :, None, :] == y[..., None, :, :]).mean(axis=(-3, -2))
    return (gt + 0.5 * eq).mean(axis=-1)


def improvement(x: np.ndarray, y: np.ndarray, *, n_boot: int = BOOT_SAMPLES, seed: int = BOOT_SEED) -> Improvement:
    """Probability that a run of X beats a run of Y on a benchmark, averaged over benchmarks, with a 95%
    interval from resampling each method's runs within each benchmark."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    draws = _improvement(_stratified(x, rng, n_boot), _stratified(y, rng, n_boot))
    return Improvement(float(_improvement(x, y)), _percentile(draws))
