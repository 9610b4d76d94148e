"""How much a method's runs (its seeds) vary, each method's own and moderated toward its block's.

    from dashboards.stats.seed_spread import BlockSpread, out_of_line, seed_spread
    own = seed_spread(scores)                     # one method's SeedSpread (a two-way ANOVA, runs x problems)
    block = BlockSpread.of([s1, s2, s3, ...])     # the methods of one table column
    block.moderated(own)                          # own spread shrunk toward the block's, as far as the data allow
    moderated_spreads([m1, m2, ...])              # every method of a block at once
    out_of_line(own, seed_spread(*others))        # F-test: do own's runs vary more than the others' (pooled)?

A run's weighted mean over problems varies by the seed's own variance plus the sampling noise's share
(``level_var = run_var + noise * sum(w^2)``). Each method has its own ``level_var`` with seeds - 1
degrees of freedom: with three seeds, 2. Pooling every method's (the earlier default) buys degrees of
freedom but judges a method less stable than the others with their spread; using each method's own
keeps the level but costs power. The moderated spread is the empirical-Bayes compromise of limma
(Smyth 2004, "Linear models and empirical Bayes methods for assessing differential expression"):
the dispersion of the block's methods' log variances gives the prior's degrees of freedom ``prior_df``
(limma's moment estimate), its centre ``prior_var`` is the block's pooled variance (unbiased when the
methods vary alike, where limma's log-scale centre runs low), and each method's moderated variance is
``(prior_df * prior_var + df * level_var) / (prior_df + df)`` with ``prior_df + df`` degrees of freedom.
When the methods vary alike, ``prior_df`` is large (the pooled spread, with its degrees of freedom);
when one is out of line, the spread of the log variances is larger than chance, ``prior_df`` small, and
each method keeps mostly its own. docs/statistics.md has the calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dashboards.stats.paired_scores import Scores

MIN_PRIOR_METHODS = 3
"""Fewer methods with a positive spread give no prior: each method keeps its own spread."""
ZERO_SPREAD_QUANTILE = 0.10
"""Where a method's seed spread is estimated at 0, its level variance's one-sided 90% upper bound is used
(the chi-square quantile q of its degrees of freedom). docs/statistics.md has the calibration: 0.25 left the
cells where both spreads were 0 at 0.11-0.12 false positives, 0.10 brings them to 0.01-0.07, for 0.06 of power
at 5 AVG points."""


@dataclass(frozen=True)
class SeedSpread:
    """One method's run-level variance, its own or moderated (then part of it is the block's prior)."""

    level_var: float
    """Variance of a run's weighted mean: the seed's own variance plus the noise's share."""
    noise: float
    """Per-problem, per-run sampling-noise variance (the residual mean square)."""
    df: float
    """Degrees of freedom of the method's own part of level_var: seeds - 1 (summed when pooled)."""
    weight_sq: float
    """Sum of the squared problem weights."""
    prior_part: float = 0.0
    """The share of level_var that is the block's prior (prior_df / (prior_df + df) x prior_var)."""
    prior_df: float = 0.0
    """Degrees of freedom of the prior (shared by every method of the block)."""
    noise_df: float = float("inf")
    """Degrees of freedom of noise: (seeds - 1)(problems - 1)."""
    one_model: bool = False
    """The runs are one model's evaluations under different seeds (the base policy's): the seed's own variance
    is known to be 0, so an estimate of 0 stands (``run_var`` puts no upper bound in its place)."""

    @property
    def cut_at_zero(self) -> bool:
        """Whether the runs varied no more than the sampling noise alone would make them (the estimate of
        the seed's own variance is 0 or below): with three seeds, in about a third of a table's cells."""
        return self.df > 0 and self.level_var - self.noise * self.weight_sq <= 0

    @property
    def run_var(self) -> float:
        """The seed's own variance: level_var without the noise's share. Where that estimate is cut at 0
        (``cut_at_zero``), the spread the runs cannot rule out instead: level_var's upper bound at
        ``ZERO_SPREAD_QUANTILE`` (``level_var * df / chi2.ppf(q, df)``) less the noise's share, never below 0.
        Three runs that happen to agree do not show that seeds never matter, and a test resting on a spread
        of 0 marks about three times as many null cells as its level."""
        estimate = self.level_var - self.noise * self.weight_sq
        if not self.cut_at_zero or self.one_model:
            return max(estimate, 0.0)
        from scipy import stats

        bound = self.level_var * self.df / float(stats.chi2.ppf(ZERO_SPREAD_QUANTILE, self.df))
        return max(bound - self.noise * self.weight_sq, 0.0)

    def parts(self, seeds: int) -> list[tuple[float, float]]:
        """The mean squares behind run_var / seeds, as [(signed variance, df)]: the prior's part, the method's
        own part, and minus the noise's share. Their sum is run_var / seeds before it is cut at 0;
        Welch-Satterthwaite over them (a linear combination of mean squares, Satterthwaite 1946) gives its
        degrees of freedom. Where run_var is cut at 0 the parts still carry the uncertainty of that
        estimate: three runs that happen to agree do not prove the seeds never matter."""
        if seeds < 2 or self.level_var <= 0:
            return []
        own = self.level_var - self.prior_part
        return [(self.prior_part / seeds, self.prior_df), (own / seeds, self.df),
                (-self.noise * self.weight_sq / seeds, self.noise_df)]

    @property
    def run_df(self) -> float:
        """Degrees of freedom of run_var (Welch-Satterthwaite over its mean squares)."""
        parts = self.parts(2)
        if not parts or self.run_var <= 0:
            return float(self.df + self.prior_df)
        return float((self.run_var / 2) ** 2 / sum(v * v / d for v, d in parts if d > 0 and v != 0))


def seed_spread(*methods: Scores) -> SeedSpread:
    """The seed spread of one method, or pooled over several (weighted by their degrees of freedom)."""
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
    return SeedSpread(level / df, noise / noise_df, df, weight_sq, noise_df=float(noise_df))


def _trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (Newton's method on 1 / trigamma, as limma's trigammaInverse)."""
    from scipy.special import polygamma

    if y > 1e7:
        return 1.0 / np.sqrt(y)
    if y < 1e-6:
        return 1.0 / y
    x = 0.5 + 1.0 / y
    for _ in range(50):
        tri = float(polygamma(1, x))
        step = tri * (1 - tri / y) / float(polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


@dataclass(frozen=True)
class BlockSpread:
    """The prior of one table column's methods: the pooled level variance, and degrees of freedom from the
    dispersion of their log level variances."""

    prior_var: float
    prior_df: float
    """inf: the methods vary alike (their spreads' dispersion is chance's): the pooled spread."""
    pooled: SeedSpread
    methods: int

    @classmethod
    def of(cls, spreads: list[SeedSpread]) -> BlockSpread:
        """limma's moment estimates (Smyth 2004, section 6.2) from the methods' own spreads."""
        from scipy.special import digamma, polygamma

        pooled_df = sum(s.df for s in spreads)
        pooled = SeedSpread(sum(s.level_var * s.df for s in spreads) / pooled_df if pooled_df else 0.0,
                            sum(s.noise * s.df for s in spreads) / pooled_df if pooled_df else 0.0,
                            pooled_df, spreads[0].weight_sq if spreads else 0.0)
        usable = [s for s in spreads if s.df > 0 and s.level_var > 0]
        if len(usable) < MIN_PRIOR_METHODS:
            return cls(pooled.level_var, 0.0, pooled, len(usable))
        d = np.array([s.df for s in usable], dtype=float)
        z = np.log([s.level_var for s in usable])
        e = z - digamma(d / 2) + np.log(d / 2)
        excess = float(e.var(ddof=1) - np.mean(polygamma(1, d / 2)))
        prior_df = float("inf") if excess <= 0 else 2 * _trigamma_inverse(excess)
        return cls(pooled.level_var, prior_df, pooled, len(usable))

    def moderated(self, own: SeedSpread) -> SeedSpread:
        """`own` shrunk toward the block's spread: part of it the prior's (its degrees of freedom never
        beyond the pooled spread's, all the block's seeds), the rest its own."""
        if own.df <= 0 or self.prior_df <= 0:
            return own
        if np.isinf(self.prior_df):  # the methods vary alike: the pooled spread, all of it the block's
            return replace(own, level_var=self.pooled.level_var, df=0.0, prior_part=self.pooled.level_var,
                           prior_df=float(self.pooled.df))
        prior_part = self.prior_df * self.prior_var / (self.prior_df + own.df)
        level = prior_part + own.df * own.level_var / (self.prior_df + own.df)
        return replace(own, level_var=float(level), prior_part=float(prior_part),
                       prior_df=float(min(self.prior_df, self.pooled.df)))


def out_of_line(own: SeedSpread, others: SeedSpread) -> float | None:
    """One-sided p-value of the F-test that `own`'s runs vary more than `others'` (pooled): is this method
    less stable across seeds than the rest of its block? None without the degrees of freedom to tell."""
    from scipy import stats

    if own.df <= 0 or others.df <= 0 or others.level_var <= 0:
        return None
    return float(stats.f.sf(own.level_var / others.level_var, own.df, others.df))


def moderated_spreads(methods: list[Scores]) -> list[SeedSpread]:
    """Each method's own seed spread moderated toward the block's (the methods of one table column)."""
    own = [seed_spread(m) for m in methods]
    block = BlockSpread.of(own)
    return [block.moderated(s) for s in own]


SPREAD_MODES = ("own", "moderated", "pooled")


def pooled_spread(methods: list[Scores]) -> SeedSpread:
    """The block's pooled spread as every method's (the earlier test's assumption: seeds vary alike)."""
    p = seed_spread(*methods)
    return replace(p, df=0.0, prior_part=p.level_var, prior_df=float(p.df))


def block_spreads(methods: list[Scores], mode: str = "own") -> list[SeedSpread]:
    """The seed spread each method of a block is judged with: its own (the default: calibrated when the
    methods differ in stability), moderated toward the block's (limma), or the block's pooled one."""
    if mode == "own":
        return [seed_spread(m) for m in methods]
    if mode == "moderated":
        return moderated_spreads(methods)
    if mode == "pooled":
        return [pooled_spread(methods)] * len(methods)
    raise ValueError(f"seed spread mode {mode!r}: expected one of {', '.join(SPREAD_MODES)}")
