"""The paired per-problem statistics (dashboards/stats/paired_stats.py, dashboards/stats/seed_spread.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from bootstrap_reference import bootstrap_se

from dashboards.stats.paired_scores import Scores
from dashboards.stats.paired_stats import compare, detectable_difference, holm, interval, seeds_needed
from dashboards.stats.study_model import Shape, simulate
from dashboards.stats.seed_spread import BlockSpread, block_spreads, out_of_line, seed_spread


def _study(rng, shift=0.0, seeds=3, problems=64, run_sd=(0.0, 0.0), samples=4, accuracy=0.5):
    """Two methods on shared problems (logit difficulty spread 1.5); method a's logits shifted by `shift`."""
    difficulty = np.log(accuracy / (1 - accuracy)) + rng.normal(0, 1.5, problems)
    out = []
    for s, sd in zip((shift, 0.0), run_sd):
        runs = rng.normal(0, sd, (seeds, 1))
        prob = 1 / (1 + np.exp(-(difficulty + s + runs)))
        out.append(Scores(rng.binomial(samples, prob) / samples, np.zeros(problems, dtype=int)))
    return out


@pytest.mark.slow
def test_holm_matches_statsmodels_step_down_adjustment():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.001, 0.5]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-12)
    assert holm([]) == []


def test_difference_is_the_cell_difference_and_shared_difficulty_cancels():
    rng = np.random.default_rng(0)
    a, b = _study(rng, shift=0.5)
    c = compare(a, b)
    assert c.diff == pytest.approx(a.mean - b.mean, abs=1e-12)
    assert c.ci_low < c.diff < c.ci_high
    unpaired = np.sqrt(a.x.mean(axis=0).var(ddof=1) / 64 + b.x.mean(axis=0).var(ddof=1) / 64)
    assert c.se < 0.6 * unpaired  # shared difficulty is most of a benchmark's variance


def test_closed_form_standard_error_is_the_formula_and_agrees_with_the_two_level_bootstrap():
    rng = np.random.default_rng(7)
    a, b = _study(rng, shift=0.2, run_sd=(0.3, 0.6), problems=128)
    sa, sb = seed_spread(a), seed_spread(b)
    c = compare(a, b)
    d = a.x.mean(axis=0) - b.x.mean(axis=0)
    by_hand = d.var(ddof=1) / len(d) + sa.run_var / 3 + sb.run_var / 3
    assert c.se ** 2 == pytest.approx(by_hand, rel=1e-12)
    boot = np.mean([bootstrap_se(a, b, sa, sb, n_boot=4000, seed=s) for s in range(3)])
    assert c.se == pytest.approx(boot, rel=0.06)
    assert compare(a, b) == compare(a, b)  # no resampling: the same numbers every time


def test_a_real_difference_is_found_and_an_absent_one_is_not():
    rng = np.random.default_rng(1)
    a, b = _study(rng, shift=1.0)
    assert compare(a, b).p < 1e-4
    same = Scores(b.x.copy(), b.strata)
    assert compare(same, b).p == pytest.approx(1.0)
    assert compare(same, b).diff == 0.0


def test_each_method_keeps_its_own_seed_spread():
    """A method whose seeds vary 3x as much widens only its own comparisons' standard errors."""
    rng = np.random.default_rng(8)
    a, b = _study(rng, run_sd=(0.6, 0.2), seeds=5, problems=200)
    spread_a, spread_b = seed_spread(a), seed_spread(b)
    assert spread_a.run_var > 4 * spread_b.run_var
    c = compare(a, b)
    assert c.spreads == (spread_a, spread_b)
    assert c.se ** 2 > spread_a.run_var / 5 + spread_b.run_var / 5


def test_seed_spread_removes_the_noise_share_and_pools():
    rng = np.random.default_rng(2)
    quiet = [_study(rng)[0] for _ in range(6)]
    loud = [_study(rng, run_sd=(0.6, 0.6))[0] for _ in range(6)]
    assert seed_spread(*quiet).run_var < 0.2 * seed_spread(*loud).run_var
    assert seed_spread(*loud).df == 6 * 2
    one_seed = Scores(quiet[0].x[:1], quiet[0].strata)
    assert seed_spread(one_seed).df == 0 and seed_spread(one_seed).run_var == 0.0


def test_moderation_pools_alike_spreads_and_keeps_an_outlier_mostly_its_own():
    rng = np.random.default_rng(9)
    alike = [_study(rng, run_sd=(0.3, 0.3), seeds=4)[0] for _ in range(7)]
    block = BlockSpread.of([seed_spread(m) for m in alike])
    moderated = block_spreads(alike, "moderated")
    assert np.isinf(block.prior_df) or block.prior_df > 10
    pooled = block_spreads(alike, "pooled")[0]
    assert all(m.level_var == pytest.approx(pooled.level_var, rel=0.3) for m in moderated)
    outlier = _study(rng, run_sd=(2.0, 2.0), seeds=4)[0]
    mixed = alike[:6] + [outlier]
    own, mod = seed_spread(outlier), block_spreads(mixed, "moderated")[-1]
    assert seed_spread(*alike[:6]).level_var < mod.level_var <= own.level_var
    assert out_of_line(own, seed_spread(*alike[:6])) < 0.01
    assert out_of_line(seed_spread(alike[0]), seed_spread(*alike[1:6])) > 0.01
    with pytest.raises(ValueError, match="seed spread mode 'mine'"):
        block_spreads(alike, "mine")


def test_cell_interval_stays_inside_0_1_and_is_asymmetric_at_the_floor():
    rng = np.random.default_rng(10)
    a, _ = _study(rng, accuracy=0.02, problems=30, run_sd=(0.2, 0.2))
    lo, hi = interval(a)
    assert 0.0 <= lo < a.mean < hi <= 1.0
    assert hi - a.mean > a.mean - lo  # a score interval leans away from the floor
    zero = Scores(np.zeros((3, 30)), np.zeros(30, dtype=int))
    lo, hi = interval(zero)
    assert lo == 0.0 and 0 < hi < 0.2


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
    a, b = _study(rng, run_sd=(0.4, 0.4), seeds=3)
    c = compare(a, b)
    d3, d10 = detectable_difference(c, 3), detectable_difference(c, 10)
    assert d10 < d3
    n = seeds_needed(c, d10)
    assert n is not None and n <= 10
    assert detectable_difference(c, n) <= d10 + 1e-12
    assert seeds_needed(c, 1e-6) is None  # the problems' own variance: more problems, not more seeds


def test_stratified_cells_weigh_each_benchmark_the_same():
    x = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    assert Scores(x, np.array([0, 0, 0, 1])).mean == pytest.approx(0.5)


def test_simulated_difficulty_is_shared_across_methods_and_the_null_keeps_population_means_equal():
    shape = Shape(methods=2, seeds=2, interaction_sd=0.0, run_sd=0.0, samples=64)
    study = simulate(shape, np.random.default_rng(6))
    a, b = study.scores[0][0].mean(axis=0), study.scores[1][0].mean(axis=0)
    assert np.corrcoef(a, b)[0, 1] > 0.9  # the same problems are hard for both
    unstable = simulate(Shape(unstable_sd=0.6, shared_seed=1.0), np.random.default_rng(7))
    assert unstable.population[1] == pytest.approx(unstable.population[0], abs=1e-6)


def test_a_spread_estimated_at_zero_is_replaced_by_the_upper_bound_the_runs_cannot_rule_out():
    """Three runs closer together than the sampling noise alone makes them: the seed's own variance is not
    taken as 0 but as level_var's 90% upper bound (chi-square, df = seeds - 1) less the noise's share."""
    from scipy import stats

    from dashboards.stats.seed_spread import ZERO_SPREAD_QUANTILE, SeedSpread

    tight = SeedSpread(level_var=0.002, noise=0.2, df=2, weight_sq=1 / 64)  # noise share 0.003125 > 0.002
    assert tight.cut_at_zero
    bound = 0.002 * 2 / stats.chi2.ppf(ZERO_SPREAD_QUANTILE, 2)  # 0.002 * 2 / 0.2107 = 0.01898
    assert tight.run_var == pytest.approx(bound - 0.2 / 64, rel=1e-12) and tight.run_var > 0.015
    loose = SeedSpread(level_var=0.01, noise=0.2, df=2, weight_sq=1 / 64)  # estimated above 0: unchanged
    assert not loose.cut_at_zero and loose.run_var == pytest.approx(0.01 - 0.2 / 64, rel=1e-12)
    assert replace(tight, one_model=True).run_var == 0.0  # the base policy's seeds: one model, its 0 stands
    flat = SeedSpread(level_var=0.0, noise=0.2, df=2, weight_sq=1 / 64)  # identical runs: the bound is 0 too
    assert flat.cut_at_zero and flat.run_var == 0.0
    one_seed = SeedSpread(level_var=0.0, noise=0.0, df=0, weight_sq=1 / 64)
    assert not one_seed.cut_at_zero and one_seed.run_var == 0.0
    # the test's standard error carries it: wider than with the spread taken at 0
    rng = np.random.default_rng(5)
    for _ in range(200):
        a, b = _study(rng)
        sa = seed_spread(a)
        if sa.cut_at_zero:
            break
    assert sa.cut_at_zero
    with_bound = compare(a, b)
    at_zero = compare(a, b, spread_a=replace(sa, df=0))  # the same mean squares, the seed's variance taken as 0
    assert with_bound.se ** 2 - at_zero.se ** 2 == pytest.approx(sa.run_var / 3, rel=1e-9)
    assert with_bound.p > at_zero.p
