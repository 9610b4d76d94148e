"""Paired per-problem statistics of one table cell: intervals, a paired test, Holm, power.

    from dashboards.paired_stats import Scores, compare, interval, holm, detectable_difference
    a = Scores(x, strata)          # x: (seeds, problems) fraction of samples correct; strata: benchmark per problem
    c = compare(a, b)              # a - b on the problems both saw: diff, ci_low, ci_high, p, se, df
    lo, hi = interval(a)           # 95% interval of a's own mean
    holm([0.01, 0.04, 0.2])        # Holm-adjusted p-values, in the given order
    detectable_difference(c, seeds=3)   # smallest true difference found with 80% power

The model (docs/statistics.md): a run (one seed of one method) scores problem p as
``X[s, p] = mu + a_p + r_s + e_sp``: ``a_p`` the problem's difficulty (shared by every method: the
benchmarks are the same), ``r_s`` the run's own level (its seed), ``e_sp`` the sampling noise of
that run on that problem. A cell's value is the mean over seeds and problems (AVG: each benchmark
weighs the same, problems weighted 1/size within it).

The interval and the test are a two-level bootstrap: problems are resampled (within each benchmark)
jointly for both methods, so the shared difficulty cancels in the difference; seeds are resampled
within each method, on the runs' levels only (their spread with the per-problem noise removed,
which the problem level already carries). Both levels are widened by sqrt(n/(n-1)) so that
resampling n of them shows their unbiased variance (three seeds would otherwise show 2/3 of it). The
bootstrap's standard error meets a t critical value whose degrees of freedom (Welch-Satterthwaite
over the two levels) shrink when the seed spread is mostly noise taken away, or when the per-problem
differences are heavy-tailed (kurtosis): this keeps the p-values calibrated down to the small levels
Holm's correction uses (docs/statistics.md "Calibration"). A table passes a seed spread pooled over
its block's methods (`seed_spread`). A fixed bootstrap seed (``BOOT_SEED``) makes every number
reproducible to the byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOT_SAMPLES = 2000
BOOT_SEED = 20241104  # any fixed value: a report is byte-reproducible
POWER = 0.8


@dataclass
class Scores:
    """One method's per-run, per-problem scores of one cell."""

    x: np.ndarray
    """(seeds, problems): the fraction of each problem's samples judged correct in each run."""
    strata: np.ndarray
    """(problems,) integer benchmark index of each problem (one stratum for a benchmark column)."""
    problems: list[str] | None = None
    """(problems,) stable problem ids, to align two methods (None: already aligned)."""

    @property
    def weights(self) -> np.ndarray:
        """Per-problem weight: each stratum weighs the same, problems equally within it."""
        _, inverse, counts = np.unique(self.strata, return_inverse=True, return_counts=True)
        return 1.0 / (counts[inverse] * len(counts))

    @property
    def mean(self) -> float:
        return float(self.x.mean(axis=0) @ self.weights)


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
    spread: SeedSpread
    """The seed spread the comparison used (pooled over its table block, or over the two methods)."""
    weight_sq: float
    """Sum of the squared problem weights (1 / problems for equal weights)."""


def align(a: Scores, b: Scores) -> tuple[Scores, Scores]:
    """a and b restricted to the problems both have, in a's order (ids must be given to differ)."""
    if a.problems is None or b.problems is None or list(a.problems) == list(b.problems):
        if a.x.shape[1] != b.x.shape[1]:
            raise ValueError(f"scores of {a.x.shape[1]} and {b.x.shape[1]} problems without ids to align them")
        return a, b
    where = {p: i for i, p in enumerate(b.problems)}
    ia = [i for i, p in enumerate(a.problems) if p in where]
    ib = [where[a.problems[i]] for i in ia]
    if not ia:
        raise ValueError("the two methods share no problem id")
    keep = [a.problems[i] for i in ia]
    return (Scores(a.x[:, ia], a.strata[ia], keep), Scores(b.x[:, ib], b.strata[ib], keep))


@dataclass(frozen=True)
class SeedSpread:
    """How much a run's (a seed's) mean varies, from a two-way ANOVA without replication (runs x
    problems) of one method's scores, or pooled over the methods of a table block."""

    level_var: float
    """Variance of a run's weighted mean: the seed's own variance plus the noise's share."""
    noise: float
    """Per-problem, per-run sampling-noise variance (the residual mean square)."""
    df: int
    """Degrees of freedom of level_var: seeds - 1, summed over pooled methods."""
    weight_sq: float
    """Sum of the squared problem weights."""

    @property
    def run_var(self) -> float:
        """The seed's own variance: level_var without the noise's share (never below 0)."""
        return max(self.level_var - self.noise * self.weight_sq, 0.0)

    @property
    def run_df(self) -> float:
        """Degrees of freedom of run_var: level_var's, shrunk by (run_var / level_var)^2 because the noise's
        share is taken away (Var(run_var) ~ Var(level_var) = 2 level_var^2 / df)."""
        if self.level_var <= 0:
            return float(self.df)
        return self.df * (self.run_var / self.level_var) ** 2


def seed_spread(*methods: Scores) -> SeedSpread:
    """The seed spread of one method, or pooled over several (weighted by their degrees of freedom):
    the methods of one study share a training set-up, so their seeds vary alike (docs/statistics.md)."""
    level = noise = 0.0
    df = noise_df = 0
    weight_sq = float(methods[0].weights @ methods[0].weights)
    for m in methods:
        s, n = m.x.shape
        if s < 2:
            continue
        w = m.weights
        rows = m.x @ w
        resid = m.x - m.x.mean(axis=0, keepdims=True) - (rows - rows.mean())[:, None]
        level += float(rows.var(ddof=1)) * (s - 1)
        noise += float((resid ** 2 @ w).sum()) * n  # sum of squares, problems weighted to count n
        df += s - 1
        noise_df += (s - 1) * max(n - 1, 1)
    if not df:
        return SeedSpread(0.0, 0.0, 0, weight_sq)
    return SeedSpread(level / df, noise / noise_df, df, weight_sq)


def _levels(x: np.ndarray, w: np.ndarray, spread: SeedSpread) -> tuple[np.ndarray, float]:
    """(centred run levels to resample, variance left over): the method's own run levels rescaled to
    the spread's run variance times S/(S-1), so resampling S of them reproduces it on average; a
    method whose runs all score the same leaves the variance to be added as a number."""
    s = x.shape[0]
    if s < 2:
        return np.zeros(s), 0.0
    rows = x @ w
    sd = float(rows.std(ddof=1))
    if sd == 0.0:
        return np.zeros(s), spread.run_var / s
    return (rows - rows.mean()) / sd * np.sqrt(spread.run_var * s / (s - 1)), 0.0


def _problem_draws(strata: np.ndarray, w: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, problems) weights of n stratified resamples of the problems."""
    out = np.zeros((n, len(strata)))
    for stratum in np.unique(strata):
        idx = np.flatnonzero(strata == stratum)
        picks = rng.integers(0, len(idx), size=(n, len(idx)))
        counts = np.zeros((n, len(idx)))
        np.add.at(counts, (np.arange(n)[:, None], picks), 1.0)
        out[:, idx] = counts * w[idx]
    return out


def _widened(values: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Values spread about their stratum's mean by sqrt(n/(n-1)): resampling n of them then has the
    unbiased variance of the mean, not (n-1)/n of it. Stratum means (and so the estimate) are unchanged."""
    out = values.astype(float).copy()
    for stratum in np.unique(strata):
        idx = strata == stratum
        n = int(idx.sum())
        if n > 1:
            out[idx] = out[idx].mean() + (out[idx] - out[idx].mean()) * np.sqrt(n / (n - 1))
    return out


def _seed_draws(levels: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    s = len(levels)
    if s < 2:
        return np.zeros(n)
    return levels[rng.integers(0, s, size=(n, s))].mean(axis=1)


def _problem_df(values: np.ndarray, strata: np.ndarray) -> float:
    """Degrees of freedom of the problem-level variance estimate: n - strata for normal values, fewer when
    the per-problem values are heavy-tailed (a hard benchmark: mostly 0, a few +-1). From the kurtosis k of
    the values centred within each benchmark, Var(s^2)/s^4 ~ 2/(n-1) + (k-3)/n, so df = 2 / that."""
    centred = values.astype(float).copy()
    for stratum in np.unique(strata):
        idx = strata == stratum
        centred[idx] -= centred[idx].mean()
    n, most = len(values), len(values) - len(np.unique(strata))
    var = float(np.mean(centred ** 2))
    if most < 1 or var == 0:
        return float(max(most, 1))
    kurtosis = float(np.mean(centred ** 4)) / var ** 2
    relative = 2 / most + max(kurtosis - 3, 0.0) / n
    return float(min(max(2 / relative, 1.0), most))


def _satterthwaite(parts: list[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of variance estimates [(variance, its df)]."""
    total = sum(v for v, _ in parts)
    denom = sum(v * v / d for v, d in parts if d > 0 and v > 0)
    return float(total * total / denom) if denom > 0 else float("inf")


def _t_interval(est: float, se: float, df: float, alpha: float) -> tuple[float, float, float]:
    from scipy import stats

    if se <= 0:
        return est, est, (1.0 if est == 0 else 0.0)
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    p = float(2 * stats.t.sf(abs(est) / se, df))
    return est - crit * se, est + crit * se, p


def compare(a: Scores, b: Scores, *, spread: SeedSpread | None = None, alpha: float = 0.05,
            n_boot: int = BOOT_SAMPLES, seed: int = BOOT_SEED) -> Comparison:
    """The paired comparison a - b (see the module docstring). `spread`: the seed spread to use for
    both (a table passes the one pooled over its block), default pooled over a and b."""
    a, b = align(a, b)
    w = a.weights
    spread = spread or seed_spread(a, b)
    rng = np.random.default_rng(seed)
    per_problem = a.x.mean(axis=0) - b.x.mean(axis=0)
    diff = float(per_problem @ w)
    lev_a, left_a = _levels(a.x, w, spread)
    lev_b, left_b = _levels(b.x, w, spread)
    draws = _problem_draws(a.strata, w, rng, n_boot) @ _widened(per_problem, a.strata) - diff
    draws = draws + _seed_draws(lev_a, rng, n_boot) - _seed_draws(lev_b, rng, n_boot)
    se = float(np.sqrt(draws.var(ddof=1) + left_a + left_b))
    sa, sb, n = a.x.shape[0], b.x.shape[0], len(w)
    v_seed = spread.run_var * (1 / sa + 1 / sb) if min(sa, sb) > 1 else 0.0
    v_problem = max(se * se - v_seed, 0.0)
    df = _satterthwaite([(v_problem, _problem_df(per_problem, a.strata)), (v_seed, spread.run_df)])
    lo, hi, p = _t_interval(diff, se, df, alpha)
    noise = spread.noise * (1 / sa + 1 / sb) if min(sa, sb) > 1 else 0.0
    fixed = max(v_problem - noise * float(w @ w), 0.0)
    return Comparison(diff, lo, hi, p, se, df, (sa, sb), n, fixed, spread, float(w @ w))


def interval(a: Scores, *, spread: SeedSpread | None = None, alpha: float = 0.05, n_boot: int = BOOT_SAMPLES,
             seed: int = BOOT_SEED) -> tuple[float, float]:
    """95% (1 - alpha) interval of a method's own mean: problems and seeds resampled as in `compare`."""
    w = a.weights
    spread = spread or seed_spread(a)
    rng = np.random.default_rng(seed)
    per_problem = a.x.mean(axis=0)
    mean = float(per_problem @ w)
    levels, left = _levels(a.x, w, spread)
    draws = _problem_draws(a.strata, w, rng, n_boot) @ _widened(per_problem, a.strata) - mean + _seed_draws(levels, rng, n_boot)
    se = float(np.sqrt(draws.var(ddof=1) + left))
    s = a.x.shape[0]
    v_seed = spread.run_var / s if s > 1 else 0.0
    df = _satterthwaite([(max(se * se - v_seed, 0.0), _problem_df(per_problem, a.strata)), (v_seed, spread.run_df)])
    lo, hi, _ = _t_interval(mean, se, df, alpha)
    return lo, hi


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
    v_seed = 2 * c.spread.run_var / seeds
    v_problem = c.problem_var + 2 * c.spread.noise * c.weight_sq / seeds
    return float(np.sqrt(v_problem + v_seed)), _satterthwaite([(v_problem, c.problems - 1), (v_seed, c.spread.run_df)])


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
