"""rliable-style aggregates (dashboards/stats/aggregates.py): point values against rliable's own metrics, intervals
over whole runs, and their coverage on simulated studies (dashboards/stats/score_simulation.py)."""

from __future__ import annotations

import numpy as np
import pytest
from rliable import metrics as rly
from scipy import stats

from dashboards.stats.aggregates import MIN_IQM_SCORES, aggregate, improvement, iqm, mean_interval, performance_profile


@pytest.mark.parametrize("shape", [(3, 3), (5, 4), (10, 3), (7, 1)])
def test_point_estimates_equal_rliables(shape):
    rng = np.random.default_rng(sum(shape))
    x, y = rng.random(shape), rng.random(shape)
    a = aggregate(x)
    assert a.mean == pytest.approx(rly.aggregate_mean(x), abs=1e-12)
    assert iqm(x) == pytest.approx(rly.aggregate_iqm(x), abs=1e-12)
    assert (a.iqm is None) == (x.size < MIN_IQM_SCORES)  # too few scores for a robust IQM: none shown
    if a.iqm is not None:
        assert a.iqm == iqm(x) and a.iqm_ci[0] < a.iqm < a.iqm_ci[1]
    assert improvement(x, y).value == pytest.approx(rly.probability_of_improvement(x, y), abs=1e-12)


def test_probability_of_improvement_counts_ties_half_as_rliable_does():
    x = np.array([[0.5, 0.2], [0.5, 0.4], [0.1, 0.4]])
    y = np.array([[0.5, 0.4], [0.3, 0.4], [0.1, 0.1]])
    assert improvement(x, y).value == pytest.approx(rly.probability_of_improvement(x, y), abs=1e-12)
    assert improvement(x, x).value == pytest.approx(0.5)


def test_the_mean_interval_is_a_t_interval_over_whole_runs():
    x = np.array([[0.5, 0.3, 0.1], [0.6, 0.4, 0.1], [0.4, 0.2, 0.0]])  # a run's scores move together
    runs = x.mean(axis=1)
    half = stats.t.ppf(0.975, 2) * runs.std(ddof=1) / np.sqrt(3)
    assert aggregate(x).mean_ci == pytest.approx((runs.mean() - half, runs.mean() + half), abs=1e-12)
    assert mean_interval(x) == aggregate(x).mean_ci
    # resampling each benchmark's runs on its own (the stratified bootstrap) would mix the good run's easy
    # score with the bad run's hard one; whole runs keep the spread of the runs' means: wider here
    stratified_se = np.sqrt(sum(x[:, t].var(ddof=0) / 3 for t in range(3)) / 9)
    assert half > 2 * stats.norm.ppf(0.975) * stratified_se


def test_probability_of_improvement_with_three_seeds_cannot_exclude_a_coin_flip_but_ten_can():
    x, y = np.full((3, 3), 0.6), np.full((3, 3), 0.4)
    p = improvement(x, y)
    assert p.value == 1.0 and p.ci[1] == 1.0 and p.ci[0] < 0.5  # 3 vs 3 runs: 1 split in 20 under the null
    rng = np.random.default_rng(0)
    strong = improvement(0.6 + 0.01 * rng.random((10, 3)), 0.4 + 0.01 * rng.random((10, 3)))
    assert strong.value == 1.0 and strong.ci[0] > 0.5
    assert 0.0 <= p.ci[0] <= p.ci[1] <= 1.0


def test_performance_profile_is_the_share_of_scores_above_each_threshold():
    x = np.array([[0.1, 0.5], [0.3, 0.7]])
    taus, share, low, high = performance_profile(x, np.array([0.0, 0.2, 0.6, 0.8]))
    assert share == pytest.approx([1.0, 0.75, 0.25, 0.0])  # run 0: 2/2, 1/2, 0, 0; run 1: 2/2, 2/2, 1/2, 0
    assert np.all(low <= share) and np.all(share <= high) and low.min() >= 0 and high.max() <= 1


@pytest.mark.slow
def test_aggregate_intervals_cover_on_simulated_studies_where_the_stratified_bootstrap_did_not():
    """A run's seed effect shared by its benchmarks, 3 seeds: the stratified bootstrap's interval of the
    mean covered 0.54 of the time; the whole-run t-interval covers ~0.95."""
    from dashboards.stats.score_simulation import null_rates
    from dashboards.stats.study_model import SCENARIOS

    r = null_rates(SCENARIOS["shared-seed"], tables=60, seed=3)
    covered, below, above = r.coverage["aggregate mean"]
    assert covered >= 0.88 and max(below, above) <= 0.08
    assert r.coverage["P(X>Y)"][0] >= 0.88
