"""The paired per-problem statistics (dashboards/paired_stats.py) and their calibration on simulated studies."""

from __future__ import annotations

import numpy as np
import pytest

from dashboards.paired_stats import Scores, compare, detectable_difference, holm, interval, seed_spread, seeds_needed
from dashboards.score_simulation import Shape, calibration, simulate


def _study(rng, shift=0.0, seeds=3, problems=64, run_sd=0.0, samples=4):
    """Two methods on shared problems (logit difficulty spread 1.5); method a's logits shifted by `shift`."""
    difficulty = rng.normal(0, 1.5, problems)
    out = []
    for s in (shift, 0.0):
        runs = rng.normal(0, run_sd, (seeds, 1))
        prob = 1 / (1 + np.exp(-(difficulty + s + runs)))
        out.append(Scores(rng.binomial(samples, prob) / samples, np.zeros(problems, dtype=int)))
    return out


def test_holm_matches_statsmodels_step_down_adjustment():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.001, 0.5]
    ours = holm(p)
    theirs = multipletests(p, method="holm")[1]
    assert ours == pytest.approx(list(theirs), abs=1e-12)
    assert holm([]) == []


def test_difference_is_the_cell_difference_and_shared_difficulty_cancels():
    rng = np.random.default_rng(0)
    a, b = _study(rng, shift=0.5)
    c = compare(a, b)
    assert c.diff == pytest.approx(a.mean - b.mean, abs=1e-12)
    assert c.ci_low < c.diff < c.ci_high
    # the same data treated as unpaired (each method's problems resampled on their own) is far wider:
    # shared difficulty is most of the variance of a benchmark mean
    lo_a, hi_a = interval(a)
    lo_b, hi_b = interval(b)
    unpaired_half = np.hypot((hi_a - lo_a) / 2, (hi_b - lo_b) / 2)
    assert (c.ci_high - c.ci_low) / 2 < 0.6 * unpaired_half


def test_a_real_difference_is_found_and_an_absent_one_is_not():
    rng = np.random.default_rng(1)
    a, b = _study(rng, shift=1.0)
    assert compare(a, b).p < 1e-4
    same = Scores(b.x.copy(), b.strata)
    assert compare(same, b).p == pytest.approx(1.0)
    assert compare(same, b).diff == 0.0


def test_seed_spread_pools_and_removes_the_noise_share():
    rng = np.random.default_rng(2)
    quiet = [_study(rng, run_sd=0.0)[0] for _ in range(6)]
    loud = [_study(rng, run_sd=0.6)[0] for _ in range(6)]
    assert seed_spread(*quiet).run_var < 0.2 * seed_spread(*loud).run_var
    assert seed_spread(*loud).df == 6 * 2
    one_seed = Scores(quiet[0].x[:1], quiet[0].strata)
    assert seed_spread(one_seed).df == 0 and seed_spread(one_seed).run_var == 0.0


def test_the_bootstrap_is_byte_reproducible_and_seeded():
    rng = np.random.default_rng(3)
    a, b = _study(rng, shift=0.2, run_sd=0.3)
    assert compare(a, b) == compare(a, b)
    assert compare(a, b, seed=1).se != compare(a, b, seed=2).se


def test_problems_are_aligned_by_id():
    rng = np.random.default_rng(4)
    a, b = _study(rng, shift=0.3, problems=10)
    ids = [f"p{i}" for i in range(10)]
    a = Scores(a.x, a.strata, ids)
    order = list(range(10))[::-1]
    b_shuffled = Scores(b.x[:, order], b.strata[order], [ids[i] for i in order])
    assert compare(a, b_shuffled).diff == pytest.approx(compare(a, Scores(b.x, b.strata, ids)).diff, abs=1e-12)


def test_power_analysis_shrinks_with_seeds_and_sizes_a_named_difference():
    rng = np.random.default_rng(5)
    a, b = _study(rng, run_sd=0.4, seeds=3)
    c = compare(a, b)
    d3, d10 = detectable_difference(c, 3), detectable_difference(c, 10)
    assert d10 < d3
    n = seeds_needed(c, d10)
    assert n is not None and n <= 10
    assert detectable_difference(c, n) <= d10 + 1e-12
    assert seeds_needed(c, 1e-6) is None  # the problems' own variance: more problems, not more seeds


def test_stratified_cells_weigh_each_benchmark_the_same():
    x = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    s = Scores(x, np.array([0, 0, 0, 1]))
    assert s.mean == pytest.approx(0.5)  # benchmark 0 all right, benchmark 1 all wrong: AVG 0.5, not 0.75


def test_calibration_on_simulated_studies_shaped_like_the_default_study(capsys):
    """200 tables of 7 methods x 3 benchmarks of 64 problems x 3 seeds, shared difficulty: with no true
    difference the paired test rejects within [alpha/2, 2 alpha]; with the difference its power analysis
    calls detectable at 80% it rejects at least 75% of the time. Welch's rates on the same studies beside."""
    shape = Shape()
    assert (shape.methods, len(shape.accuracy), shape.problems, shape.seeds) == (7, 3, 64, 3)
    r = calibration(shape, tables=200, alpha=0.05)
    with capsys.disabled():
        print(f"\ncalibration (200 null tables, 400 with the difference): null paired {r['null_paired']:.3f}, Welch {r['null_welch']:.3f}; "
              f"at {100 * r['detectable_avg']:.2f} points: paired {r['power_paired']:.3f}, Welch {r['power_welch']:.3f}")
    assert 0.025 <= r["null_paired"] <= 0.10
    assert r["power_paired"] >= 0.75
    assert r["power_paired"] > r["power_welch"]


def test_simulated_difficulty_is_shared_across_methods():
    runs = simulate(Shape(methods=2, seeds=2, interaction_sd=0.0, run_sd=0.0, samples=64), np.random.default_rng(6))
    a, b = runs[0][0].mean(axis=0), runs[1][0].mean(axis=0)
    assert np.corrcoef(a, b)[0, 1] > 0.9  # the same problems are hard for both
