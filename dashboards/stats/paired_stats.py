"""Paired per-problem statistics of one table cell: a closed-form test, intervals, Holm, power.

    from dashboards.stats.paired_stats import compare, interval, holm, detectable_difference
    c = compare(a, b)              # a - b (dashboards.stats.paired_scores.Scores) on the problems both saw
    c.diff, c.ci_low, c.ci_high, c.p, c.se, c.df
    lo, hi = interval(a)           # 95% interval of a's own mean, inside [0, 1]
    holm([0.01, 0.04, 0.2])        # Holm-adjusted p-values, in the given order
    detectable_difference(c, seeds=3)   # smallest true difference found with 80% power

The model (docs/statistics.md): method m's run s scores problem p as
``X[s, p] = mu_m + a_p + i_mp + r_ms + e_msp``: ``a_p`` the problem's difficulty (shared by every
method: the benchmarks are the same), ``i_mp`` the method's problem-specific effect, ``r_ms`` the
run's own level (its seed; variance ``run_var_m``, each method its own), ``e_msp`` the sampling noise.
A cell's value is the mean over seeds and problems (AVG: each benchmark weighs the same).

The standard error is the clustered, paired closed form (Miller 2024, "Adding Error Bars to Evals",
with two levels): per benchmark h with n_h problems and weight W_h, the per-problem differences of
the seed means ``d_p`` carry the problem level (interaction and noise; the shared difficulty cancels),
and the seeds add each method's run variance:

    SE^2 = sum_h W_h^2 var_h(d) / n_h  +  run_var_a / S_a  +  run_var_b / S_b

``run_var`` is a method's own seed spread moderated toward its block's (dashboards/stats/seed_spread.py),
the noise's share taken away (where that leaves nothing, the spread its runs cannot rule out: an upper bound). The p-value and interval are ``diff +- t(df) SE`` with df from
Welch-Satterthwaite over the benchmarks' problem levels (each shrunk by the kurtosis of its
differences: a hard benchmark is mostly 0 with a few +-1) and the two methods' seed levels. No
resampling: the numbers do not depend on a seed. The two-level bootstrap the test replaced is its
check in tests/dashboards/bootstrap_reference.py.

A cell's own interval is the score (Wilson) interval at the cell's effective sample size
``mean (1 - mean) / SE^2`` with the same t critical value: it stays inside [0, 1] and misses about
equally on both sides near 0% or 100%, where ``mean +- t SE`` would leave the range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboards.stats.paired_scores import Scores, align
from dashboards.stats.seed_spread import SeedSpread, seed_spread

POWER = 0.8


@dataclass
class Comparison:
    """A - B on the problems both methods saw."""

    diff: float
    ci_low: float
    ci_high: float
    p: float
    se: float
    df: float
    seeds: tuple[int, int]
    problems: int
    problem_var: float
    """Variance of the weighted mean of the per-problem differences that more seeds would not reduce."""
    spreads: tuple[SeedSpread, SeedSpread]
    """The seed spreads of A and B the comparison used (moderated toward their block's, or their own)."""
    weight_sq: float
    """Sum of the squared problem weights (1 / problems for equal weights)."""


def _stratum_df(values: np.ndarray) -> float:
    """Degrees of freedom of one benchmark's variance estimate: n - 1 for normal values, fewer when they
    are heavy-tailed. With kurtosis k, Var(s^2)/s^4 ~ 2/(n-1) + (k-3)/n, so df = 2 / that."""
    n = len(values)
    if n < 2:
        return 1.0
    centred = values - values.mean()
    var = float(np.mean(centred ** 2))
    if var == 0:
        return float(n - 1)
    kurtosis = float(np.mean(centred ** 4)) / var ** 2
    relative = 2 / (n - 1) + max(kurtosis - 3, 0.0) / n
    return float(min(max(2 / relative, 1.0), n - 1))


def problem_level(values: np.ndarray, strata: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """(variance, df) of the weighted mean of per-problem values drawn within benchmarks: per stratum
    W_h^2 s_h^2 / n_h, degrees of freedom by Welch-Satterthwaite over the strata."""
    parts = []
    for stratum in np.unique(strata):
        idx = strata == stratum
        n = int(idx.sum())
        if n < 2:
            continue
        total_weight = float(weights[idx].sum())
        parts.append((total_weight ** 2 * float(values[idx].var(ddof=1)) / n, _stratum_df(values[idx])))
    variance = sum(v for v, _ in parts)
    return variance, satterthwaite(parts) if variance > 0 else float(max(len(values) - 1, 1))


def satterthwaite(parts: list[tuple[float, float]], total: float | None = None) -> float:
    """Degrees of freedom of a sum of (signed) variance estimates [(variance, its df)]; `total`: the
    estimate itself when it is not their sum (a seed level cut at 0 keeps its parts' uncertainty)."""
    total = sum(v for v, _ in parts) if total is None else total
    denom = sum(v * v / d for v, d in parts if d > 0 and v != 0)
    return float(total * total / denom) if denom > 0 else float("inf")


def _critical(df: float, alpha: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(1 - alpha / 2, df))


def _t_interval(est: float, se: float, df: float, alpha: float) -> tuple[float, float, float]:
    from scipy import stats

    if se <= 0:
        return est, est, (1.0 if est == 0 else 0.0)
    crit = _critical(df, alpha)
    p = float(2 * stats.t.sf(abs(est) / se, df))
    return est - crit * se, est + crit * se, p


def seed_level(spreads: list[tuple[SeedSpread, int]]) -> tuple[float, list[tuple[float, float]]]:
    """(variance of the seed means of (spread, seeds) pairs, its mean-square parts [(signed variance, df)]):
    each method's own parts, and one part for the prior their moderated spreads share (the same estimate,
    counted once)."""
    variance, prior_var, prior_df, parts = 0.0, 0.0, 0.0, []
    for spread, seeds in spreads:
        mine = spread.parts(seeds)
        if not mine:
            continue
        variance += spread.run_var / seeds
        prior, *own = mine
        parts += own
        prior_var += prior[0]
        prior_df = max(prior_df, prior[1])
    return variance, ([(prior_var, prior_df), *parts] if prior_var else parts)


def _total(problem: tuple[float, float], spreads: list[tuple[SeedSpread, int]]) -> tuple[float, float]:
    """(SE, df): the problem level plus the seed level, df by Welch-Satterthwaite over every part."""
    seed_var, parts = seed_level(spreads)
    variance = problem[0] + seed_var
    return float(np.sqrt(variance)), satterthwaite([problem, *parts], total=variance)


def compare(a: Scores, b: Scores, *, spread_a: SeedSpread | None = None, spread_b: SeedSpread | None = None,
            alpha: float = 0.05) -> Comparison:
    """The paired comparison a - b (see the module docstring). `spread_a`, `spread_b`: the seed spreads to
    use (a table passes each method's own, moderated toward its block's); default each method's own."""
    a, b = align(a, b)
    w = a.weights
    spread_a = spread_a or seed_spread(a)
    spread_b = spread_b or seed_spread(b)
    per_problem = a.x.mean(axis=0) - b.x.mean(axis=0)
    diff = float(per_problem @ w)
    v_problem, df_problem = problem_level(per_problem, a.strata, w)
    sa, sb = a.x.shape[0], b.x.shape[0]
    se, df = _total((v_problem, df_problem), [(spread_a, sa), (spread_b, sb)])
    lo, hi, p = _t_interval(diff, se, df, alpha)
    wsq = float(w @ w)
    noise = (spread_a.noise / sa + spread_b.noise / sb) * wsq
    fixed = max(v_problem - noise, 0.0)
    return Comparison(diff, lo, hi, p, se, df, (sa, sb), len(w), fixed, (spread_a, spread_b), wsq)


def wilson(mean: float, se: float, df: float, alpha: float, n_when_certain: float) -> tuple[float, float]:
    """Score interval for a proportion at the effective sample size mean (1 - mean) / se^2 (a design-effect
    corrected Wilson interval), with a t critical value; `n_when_certain` stands in when se is 0."""
    crit = _critical(df, alpha) if np.isfinite(df) else _critical(1e9, alpha)
    m = min(max(mean, 0.0), 1.0)
    n = m * (1 - m) / se ** 2 if se > 0 and 0 < m < 1 else float(n_when_certain)
    if n <= 0:
        return m, m
    c2 = crit * crit
    centre = (m + c2 / (2 * n)) / (1 + c2 / n)
    half = crit / (1 + c2 / n) * np.sqrt(m * (1 - m) / n + c2 / (4 * n * n))
    low = 0.0 if m == 0 else max(centre - half, 0.0)
    high = 1.0 if m == 1 else min(centre + half, 1.0)
    return float(low), float(high)


def interval(a: Scores, *, spread: SeedSpread | None = None, alpha: float = 0.05) -> tuple[float, float]:
    """95% (1 - alpha) interval of a method's own mean: problems (within benchmarks) and seeds as random
    draws, as in `compare`; a score interval inside [0, 1] (a symmetric t-interval for values outside it)."""
    w = a.weights
    spread = spread or seed_spread(a)
    per_problem = a.x.mean(axis=0)
    mean = float(per_problem @ w)
    v_problem, df_problem = problem_level(per_problem, a.strata, w)
    se, df = _total((v_problem, df_problem), [(spread, a.x.shape[0])])
    if a.x.min() < 0 or a.x.max() > 1:
        lo, hi, _ = _t_interval(mean, se, df, alpha)
        return lo, hi
    return wilson(mean, se, df, alpha, n_when_certain=a.x.size)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error <= alpha), in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def _se_at(c: Comparison, seeds: int) -> tuple[float, float]:
    """(standard error, df) of the difference with `seeds` seeds per method on the same problems."""
    sa, sb = c.spreads
    v_problem = c.problem_var + (sa.noise + sb.noise) * c.weight_sq / seeds
    return _total((v_problem, c.problems - 1), [(sa, seeds), (sb, seeds)])


def detectable_difference(c: Comparison, seeds: int | None = None, *, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest true difference the paired test finds with probability `power` at level `alpha`
    with `seeds` seeds per method (default: the comparison's own), on the same problems."""
    from scipy import stats

    if seeds is None or (seeds, seeds) == c.seeds:
        se, df = c.se, c.df  # the test's own
    else:
        se, df = _se_at(c, seeds)
    if se == 0:
        return 0.0
    return float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se)


def seeds_needed(c: Comparison, difference: float, *, alpha: float = 0.05, power: float = POWER,
                 most: int = 1000) -> int | None:
    """The fewest seeds per method for which `difference` is detectable (None: not within `most`,
    the problems' own variance is the limit: more problems are needed, not more seeds)."""
    for s in range(2, most + 1):
        if detectable_difference(c, s, alpha=alpha, power=power) <= abs(difference):
            return s
    return None


__all__ = ["Comparison", "Scores", "SeedSpread", "align", "compare", "detectable_difference", "holm", "interval",
           "problem_level", "satterthwaite", "seed_level", "seed_spread", "seeds_needed", "wilson"]
