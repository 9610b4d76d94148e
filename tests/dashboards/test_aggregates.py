"""rliable-style aggregates (dashboards/aggregates.py) against rliable's own metrics on the same score matrices."""

from __future__ import annotations

import numpy as np
import pytest
from rliable import metrics as rly

from dashboards.aggregates import aggregate, improvement, iqm


@pytest.mark.parametrize("shape", [(3, 3), (5, 4), (10, 3), (7, 1)])
def test_point_estimates_equal_rliables(shape):
    rng = np.random.default_rng(sum(shape))
    x, y = rng.random(shape), rng.random(shape)
    a = aggregate(x)
    assert a.mean == pytest.approx(rly.aggregate_mean(x), abs=1e-12)
    assert a.iqm == pytest.approx(rly.aggregate_iqm(x), abs=1e-12) and iqm(x) == a.iqm
    assert improvement(x, y).value == pytest.approx(rly.probability_of_improvement(x, y), abs=1e-12)


def test_probability_of_improvement_counts_ties_half_as_rliable_does():
    x = np.array([[0.5, 0.2], [0.5, 0.4], [0.1, 0.4]])
    y = np.array([[0.5, 0.4], [0.3, 0.4], [0.1, 0.1]])
    assert improvement(x, y).value == pytest.approx(rly.probability_of_improvement(x, y), abs=1e-12)
    assert improvement(x, x).value == pytest.approx(0.5)


def _reference_stratified(x, func, reps, rng):
    """rliable's StratifiedBootstrap, written out: within each task (column) the runs are resampled."""
    runs, tasks = x.shape
    out = []
    for _ in range(reps):
        cols = [x[rng.integers(0, runs, runs), t] for t in range(tasks)]
        out.append(func(np.stack(cols, axis=1)))
    return np.percentile(out, [2.5, 97.5])


def test_stratified_intervals_agree_with_the_reference_bootstrap():
    rng = np.random.default_rng(11)
    x = rng.normal(0.4, 0.08, (5, 3)) + np.array([0.0, 0.2, -0.2])
    a = aggregate(x, n_boot=4000)
    ref_mean = _reference_stratified(x, rly.aggregate_mean, 4000, np.random.default_rng(1))
    ref_iqm = _reference_stratified(x, rly.aggregate_iqm, 4000, np.random.default_rng(2))
    assert a.mean_ci == pytest.approx(tuple(ref_mean), abs=0.006)
    assert a.iqm_ci == pytest.approx(tuple(ref_iqm), abs=0.008)
    assert a.mean_ci[0] < a.mean < a.mean_ci[1]


def test_a_method_that_always_wins_has_probability_one_and_reproducible_intervals():
    x, y = np.full((3, 3), 0.6), np.full((3, 3), 0.4)
    p = improvement(x, y)
    assert p.value == 1.0 and p.ci == (1.0, 1.0)
    z = np.random.default_rng(0).random((3, 3))
    assert aggregate(z) == aggregate(z)  # a fixed bootstrap seed: the same report twice
