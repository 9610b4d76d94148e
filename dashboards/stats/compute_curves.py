"""A study's compute curves: per method the pooled fit and each seed's, comparisons, the extrapolation check.

    from dashboards.stats.compute_curves import CurvesConfig, fit_study
    study = fit_study(frame, CurvesConfig(fit_from=0.1, extrapolate=0.5), r0={"Qwen3": 0.153}, baselines=["GRPO"])
    study.methods          # [MethodCurves]: model, method, fit (seeds pooled), seed_fits, extrapolation, note
    study.comparisons      # [Comparison]: A's difference and B's ratio to the strongest baseline, Holm-adjusted

``frame`` is long: model, method, seed, x (the compute spent: steps, tokens, seconds), value (the pass rate
in [0, 1]); one curve per (model, method, seed). The fit of each is dashboards/stats/compute_fit.py (ScaleRL's
sigmoid, the seed as the cluster of its intervals).

- **The strongest baseline** of a model: among ``baselines`` (every method when none are named), the one
  whose pooled fit has the highest ceiling A. Each other method with an ``ok`` fit is compared with it:
  A's difference and B's ratio (on the log scale), each with its interval (Welch-Satterthwaite degrees of
  freedom from the two fits') and a two-sided p-value; Holm's correction runs over a model's comparisons of
  one parameter (the family is "which methods differ from the baseline in A", and the same for B).
- **The extrapolation check**: the fit on the first ``extrapolate`` share of each curve's compute predicts
  the curves' mean at their last point; the error (measured - predicted) has an interval from the fit's
  covariance and the seeds' spread of the last value; "missed" when that interval excludes 0.
- **A collapse** (a decline after a peak: the sigmoid rises monotonically and cannot describe it) is named in
  the method's note when the seeds' last quarter of evaluations lies below the pooled fit by more than their
  spread allows (one-sided t at S - 1): the fit then overshoots the end, whatever its status.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dashboards.stats.compute_fit import OK, Fit, fit_curve, t_critical
from dashboards.model.report import CurvesConfig  # noqa: F401  (the settings; re-exported)

CURVE_COLUMNS = ("model", "method", "seed", "x", "value")


@dataclass
class Extrapolation:
    fit: Fit
    """The fit on the first share of compute."""
    predicted: float = math.nan
    measured: float = math.nan
    error: float = math.nan
    """measured - predicted."""
    interval: tuple[float, float] = (math.nan, math.nan)

    @property
    def missed(self) -> bool | None:
        """True when the error's interval excludes 0 (the prediction missed its own interval)."""
        if self.fit.status != OK or not math.isfinite(self.interval[0]):
            return None
        return not (self.interval[0] <= 0 <= self.interval[1])


@dataclass
class MethodCurves:
    model: str
    method: str
    fit: Fit
    seed_fits: dict = field(default_factory=dict)
    """{seed: Fit} of each seed's curve alone (none when the method has more seeds than CurvesConfig.seed_fits)."""
    extrapolation: Extrapolation | None = None
    note: str = ""
    n_seeds: int = 0
    seed_fits_skipped: str = ""
    """Why there are no seed fits, in words (empty when there are)."""


@dataclass
class Comparison:
    model: str
    method: str
    baseline: str
    parameter: str
    """"A" (a difference) or "B" (a ratio)."""
    estimate: float
    interval: tuple[float, float]
    p: float
    p_holm: float = math.nan
    alpha: float = 0.05
    """The level the Holm-adjusted p-value is judged at (CurvesConfig.alpha)."""

    @property
    def significant(self) -> bool:
        return self.p_holm < self.alpha


@dataclass
class StudyCurves:
    config: CurvesConfig
    methods: list[MethodCurves]
    comparisons: list[Comparison]
    baselines: dict = field(default_factory=dict)
    """{model: the strongest baseline's method name}."""


def _curves(group: pd.DataFrame) -> list[tuple[object, np.ndarray, np.ndarray]]:
    """(seed, x, value) of each seed's curve, in compute order."""
    out = []
    for seed, g in group.groupby("seed", sort=True):
        g = g.sort_values("x")
        out.append((seed, g["x"].to_numpy(float), g["value"].to_numpy(float)))
    return out


def _r0(curves, config: CurvesConfig, given: float | None) -> float | None:
    """R0 fixed at the given base score, else the curves' mean at compute 0; None (fitted) under r0: fit or
    when no curve has a point at compute 0."""
    if config.r0 == "fit":
        return None
    if given is not None:
        return given
    starts = [y[x == 0] for _, x, y in curves if np.any(x == 0)]
    return float(np.mean(np.concatenate(starts))) if starts else None


def decline_note(curves, fit: Fit, alpha: float) -> str:
    """Names a collapse: the curves end below the fitted sigmoid. Each seed's mean residual over its last
    quarter of evaluations (at least 2), one-sided t-test below 0 at S - 1 degrees of freedom; the note says
    where the mean curve peaked and by how much it fell (curves aligned by evaluation index)."""
    if fit.status not in (OK, "not identified") or not fit.params or len(curves) < 2:
        return ""
    n = min(len(y) for _, _, y in curves)
    late = max(2, n // 4)
    if n < late + 3:
        return ""
    gaps = np.array([float(np.mean(y[n - late:n] - fit.predict(x[n - late:n]))) for _, x, y in curves])
    se = float(gaps.std(ddof=1) / math.sqrt(len(gaps)))
    if gaps.mean() >= 0 or (se > 0 and -gaps.mean() / se <= t_critical(len(gaps) - 1, 2 * alpha)):
        return ""
    ys, xs = np.array([y[:n] for _, _, y in curves]), np.array([x[:n] for _, x, _ in curves])
    mean = ys.mean(axis=0)
    peak = int(np.argmax(mean))
    return (f"ends below its fit by {-gaps.mean():.3f} (its mean curve peaked at x = {xs[:, peak].mean():.4g} and fell "
            f"by {mean[peak] - mean[-1]:.3f}): the sigmoid rises monotonically and does not describe a collapse; "
            f"A is the fit's compromise over it")


def extrapolation_check(curves, r0: float | None, config: CurvesConfig) -> Extrapolation:
    x_max = max(float(x.max()) for _, x, _ in curves)
    early = [(x[x <= config.extrapolate * x_max], y[x <= config.extrapolate * x_max]) for _, x, y in curves]
    fit = fit_curve(early, r0=r0, fit_from=config.fit_from * config.extrapolate, alpha=config.alpha)
    out = Extrapolation(fit)
    if fit.status != OK:
        return out
    last_x = np.array([x[-1] for _, x, _ in curves])
    last_y = np.array([y[-1] for _, _, y in curves])
    out.predicted = float(fit.predict(last_x).mean())
    out.measured = float(last_y.mean())
    out.error = out.measured - out.predicted
    v_fit = float(np.mean(fit.predict_se(last_x)) ** 2)
    s = len(last_y)
    v_seed = float(last_y.var(ddof=1) / s) if s >= 2 else 0.0
    df = _welch_df([(v_fit, fit.df), (v_seed, s - 1)])
    t = t_critical(df, config.alpha)
    half = t * math.sqrt(v_fit + v_seed)
    out.interval = (out.error - half, out.error + half)
    return out


def _welch_df(parts: list[tuple[float, float]]) -> float:
    total = sum(v for v, _ in parts)
    denom = sum(v * v / d for v, d in parts if v > 0 and d > 0 and math.isfinite(d))
    return total * total / denom if denom > 0 else math.inf


def fit_method(model: str, method: str, group: pd.DataFrame, config: CurvesConfig, r0: float | None = None) -> MethodCurves:
    curves = _curves(group)
    r0 = _r0(curves, config, r0)
    pooled = fit_curve([(x, y) for _, x, y in curves], r0=r0, fit_from=config.fit_from, alpha=config.alpha)
    seeds, skipped = {}, ""
    if len(curves) == 1:
        seeds = {curves[0][0]: pooled}  # one seed: its own fit is the pooled fit (the same points)
    elif len(curves) <= config.seed_fits:
        seeds = {seed: fit_curve([(x, y)], r0=r0, fit_from=config.fit_from, alpha=config.alpha) for seed, x, y in curves}
    else:
        skipped = f"{len(curves)} seeds, more than report.compute_curves.seed_fits ({config.seed_fits}): no seed's own fit"
    return MethodCurves(model, method, pooled, seeds, extrapolation_check(curves, r0, config),
                        decline_note(curves, pooled, config.alpha), n_seeds=len(curves), seed_fits_skipped=skipped)


def compare(m: MethodCurves, b: MethodCurves, parameter: str, alpha: float) -> Comparison | None:
    """A's difference or B's ratio (log scale) between two methods' pooled fits (independent seeds)."""
    key = {"A": "A", "B": "log_B"}[parameter]
    if m.fit.status != OK or b.fit.status != OK or key not in m.fit.se or key not in b.fit.se:
        return None
    est = m.fit.params["A"] - b.fit.params["A"] if parameter == "A" else math.log(m.fit.params["B"] / b.fit.params["B"])
    vm, vb = m.fit.se[key] ** 2, b.fit.se[key] ** 2
    df = _welch_df([(vm, m.fit.df), (vb, b.fit.df)])
    se = math.sqrt(vm + vb)
    from scipy import stats

    p = float(2 * stats.t.sf(abs(est) / se, df)) if se > 0 else (0.0 if est != 0 else 1.0)
    t = t_critical(df, alpha)
    lo, hi = est - t * se, est + t * se
    if parameter == "B":
        est, lo, hi = math.exp(est), math.exp(lo), math.exp(hi)
    return Comparison(m.model, m.method, b.method, parameter, est, (lo, hi), p, alpha=alpha)


def fit_study(frame: pd.DataFrame, config: CurvesConfig = CurvesConfig(), *, r0: dict | None = None,
              baselines: list[str] | None = None, progress=None) -> StudyCurves:
    """Every (model, method)'s curves fitted, compared with the model's strongest baseline, Holm-adjusted.
    ``r0``: {model: the base's score} (else each curve's value at compute 0); ``progress``: called per method."""
    from dashboards.stats.paired_stats import holm

    missing = [c for c in CURVE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"curves frame: missing columns {missing}; expected {list(CURVE_COLUMNS)}")
    methods = []
    for (model, method), group in frame.groupby(["model", "method"], sort=False):
        methods.append(fit_method(str(model), str(method), group, config, (r0 or {}).get(model)))
        if progress:
            progress(f"fitted {model} / {method}")
    comparisons, strongest = [], {}
    for model in dict.fromkeys(m.model for m in methods):
        mine = [m for m in methods if m.model == model]
        pool = [m for m in mine if m.fit.status == OK and (not baselines or m.method in baselines)]
        if not pool:
            continue
        base = max(pool, key=lambda m: m.fit.params["A"])
        strongest[model] = base.method
        for parameter in ("A", "B"):
            family = [c for m in mine if m is not base for c in [compare(m, base, parameter, config.alpha)] if c]
            for c, adjusted in zip(family, holm([c.p for c in family])):
                c.p_holm = adjusted
            comparisons.extend(family)
    return StudyCurves(config, methods, comparisons, strongest)
