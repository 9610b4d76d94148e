"""The two-level bootstrap of a paired comparison: the check of dashboards/stats/paired_stats.py's closed form.

    from bootstrap_reference import bootstrap_se      # in a test of tests/dashboards/
    se = bootstrap_se(a, b, spread_a, spread_b, n_boot=4000, seed=0)

Problems are resampled (within each benchmark) jointly for both methods, so the shared difficulty cancels;
each method's seeds are resampled on its runs' levels only, rescaled to its run variance (the noise's share
is already in the problem level). Both levels are widened by sqrt(n/(n-1)) so that resampling n of them
shows their unbiased variance. Its standard error estimates the same quantity as the closed form.
"""

from __future__ import annotations

import numpy as np

from dashboards.stats.paired_scores import Scores, align
from dashboards.stats.seed_spread import SeedSpread


def _widened(values: np.ndarray, strata: np.ndarray) -> np.ndarray:
    out = values.astype(float).copy()
    for stratum in np.unique(strata):
        idx = strata == stratum
        n = int(idx.sum())
        if n > 1:
            out[idx] = out[idx].mean() + (out[idx] - out[idx].mean()) * np.sqrt(n / (n - 1))
    return out


def _problem_draws(strata: np.ndarray, w: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.zeros((n, len(strata)))
    for stratum in np.unique(strata):
        idx = np.flatnonzero(strata == stratum)
        picks = rng.integers(0, len(idx), size=(n, len(idx)))
        counts = np.zeros((n, len(idx)))
        np.add.at(counts, (np.arange(n)[:, None], picks), 1.0)
        out[:, idx] = counts * w[idx]
    return out


def _seed_draws(x: np.ndarray, w: np.ndarray, spread: SeedSpread, rng: np.random.Generator, n: int) -> np.ndarray:
    s = x.shape[0]
    rows = x @ w
    if s < 2 or rows.std(ddof=1) == 0:
        return np.zeros(n)
    levels = (rows - rows.mean()) / rows.std(ddof=1) * np.sqrt(spread.run_var * s / (s - 1))
    return levels[rng.integers(0, s, size=(n, s))].mean(axis=1)


def bootstrap_se(a: Scores, b: Scores, spread_a: SeedSpread, spread_b: SeedSpread, *, n_boot: int = 4000,
                 seed: int = 0) -> float:
    a, b = align(a, b)
    w = a.weights
    rng = np.random.default_rng(seed)
    per_problem = a.x.mean(axis=0) - b.x.mean(axis=0)
    draws = _problem_draws(a.strata, w, rng, n_boot) @ _widened(per_problem, a.strata)
    draws = draws + _seed_draws(a.x, w, spread_a, rng, n_boot) - _seed_draws(b.x, w, spread_b, rng, n_boot)
    return float(draws.std(ddof=1))
