"""One compute-performance curve fit: ScaleRL's sigmoid of pass rate against training compute, with intervals.

    from dashboards.stats.compute_fit import fit_curve
    fit = fit_curve([(x_seed0, y_seed0), (x_seed1, y_seed1), ...], r0=0.15, fit_from=0.1)
    fit.status            # "ok" | "not identified" | "not converged"
    fit.A, fit.A_ci       # the asymptote (ceiling) and its 95% interval; None unless status == "ok"
    fit.B, fit.B_ci       # the efficiency (the exponent)
    fit.C_mid, fit.C_mid_ci   # the compute at half the gain
    fit.predict(x), fit.predict_interval(x)

The model is ScaleRL's (Khatri et al. 2025, "The Art of Scaling Reinforcement Learning Compute for LLMs",
arXiv 2510.13786, Eq. 1): R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B), pass rate R in [0, 1] against the
compute C spent (steps, tokens, seconds). R0 is the curve's start (the base policy's score) when given,
else fitted. Points with C below ``fit_from`` x the largest C are left out of the fit (ScaleRL fits after
the early, noisy part); C = 0 is never a fitted point (R(0) = R0 by the model).

Estimation: least squares over every point of every curve (the seeds of one method pooled: each seed is one
curve on its own compute grid), parameters A in [0, 1], log B, log C_mid (and R0 in [0, 1] when fitted),
from several starting points (the best kept). Intervals (the delta method around the fit):
- several curves (seeds): the cluster-robust (sandwich) covariance with the seed as the cluster, so a
  seed's persistent deviation counts once, not once per point; scaled by S / (S - 1) and read with
  Student's t at S - 1 degrees of freedom (the few-cluster correction of Cameron & Miller 2015);
- one curve: the residual covariance, t at n - p degrees of freedom (evaluation noise only: a single
  seed says nothing about how another seed would run).
B and C_mid are positive and skewed: their intervals are taken on the log scale and mapped back. A's
interval is cut to [0, 1]. The calibration of these intervals (coverage, recovery, extrapolation) is in
docs/compute-curves.md, from benchmarks/compute_fit_calibration.py.

A fit is not identified when the data cannot pin the ceiling: the fitted half-gain compute C_mid lies beyond
the largest compute measured (the curve has not bent yet), a parameter sits on its bound, the parameters are
not separable (a singular Jacobian), the interval of A or B runs past the parameter's range (A outside
[0, 1], B outside [0.05, 20]: the data allow any value there), or C_mid's interval reaches past the largest
compute measured (the bend, and with it the ceiling, may lie beyond the data: a fit that calls such a
curve identified puts A too low, benchmarks/compute_fit_calibration.py's "not bent" case). Then the fit
says so instead of giving numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

OK, NOT_IDENTIFIED, NOT_CONVERGED = "ok", "not identified", "not converged"
STATUSES = (OK, NOT_IDENTIFIED, NOT_CONVERGED)
LOG_B_BOUNDS = (math.log(0.05), math.log(20.0))
"""B outside [0.05, 20]: a step function or a flat line, not a curve this model describes."""
REFINED = 4
"""Starting points refined by the optimizer: the best of a grid of 27 by their initial cost."""
BOUND_TOL = 1e-4
"""A parameter within this of its bound is on the bound."""


def sigmoid(c, A: float, B: float, C_mid: float, R0: float):
    """R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B); R(0) = R0 (ScaleRL Eq. 1)."""
    c = np.asarray(c, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        ratio = np.where(c > 0, (C_mid / np.where(c > 0, c, 1.0)) ** B, np.inf)
    return R0 + (A - R0) / (1.0 + ratio)


@dataclass
class Fit:
    """A fitted curve (or why there is none) and its parameters' intervals."""

    status: str
    reason: str = ""
    """Why not ok, in words (empty when ok)."""
    n_curves: int = 0
    n_points: int = 0
    params: dict = field(default_factory=dict)
    """Point estimates: A, B, C_mid, R0 (also when not identified: the fit the optimizer reached)."""
    intervals: dict = field(default_factory=dict)
    """(low, high) per parameter at the level ``1 - alpha``; empty unless status == ok."""
    se: dict = field(default_factory=dict)
    """Standard errors on the fitting scale: A, log_B, log_C_mid (and R0)."""
    df: float = math.nan
    """Degrees of freedom of the intervals' t."""
    r0_fixed: bool = True
    x_max: float = math.nan
    cov: np.ndarray | None = None
    """Covariance of the fitting-scale parameters (A, log B, log C_mid[, R0])."""
    alpha: float = 0.05

    def _get(self, name: str):
        return self.params.get(name) if self.status == OK else None

    @property
    def A(self) -> float | None:
        return self._get("A")

    @property
    def B(self) -> float | None:
        return self._get("B")

    @property
    def C_mid(self) -> float | None:
        return self._get("C_mid")

    @property
    def R0(self) -> float | None:
        return self._get("R0")

    @property
    def A_ci(self):
        return self.intervals.get("A")

    @property
    def B_ci(self):
        return self.intervals.get("B")

    @property
    def C_mid_ci(self):
        return self.intervals.get("C_mid")

    def predict(self, c) -> np.ndarray:
        p = self.params
        return sigmoid(c, p["A"], p["B"], p["C_mid"], p["R0"])

    def predict_se(self, c) -> np.ndarray:
        """Standard error of the fitted mean curve at ``c`` (delta method with the fit's covariance)."""
        if self.cov is None:
            return np.full(np.shape(c), np.nan)
        jac = _jacobian(np.atleast_1d(np.asarray(c, float)), self._theta(), self.r0_fixed, self.params["R0"])
        return np.sqrt(np.einsum("ij,jk,ik->i", jac, self.cov, jac))

    def predict_interval(self, c) -> tuple[np.ndarray, np.ndarray]:
        """The fitted mean curve's interval at ``c`` (level 1 - alpha), inside [0, 1]."""
        mean, se = self.predict(np.atleast_1d(c)), self.predict_se(c)
        t = t_critical(self.df, self.alpha)
        return np.clip(mean - t * se, 0, 1), np.clip(mean + t * se, 0, 1)

    def _theta(self) -> np.ndarray:
        p = self.params
        theta = [p["A"], math.log(p["B"]), math.log(p["C_mid"])]
        return np.array(theta if self.r0_fixed else [*theta, p["R0"]])


def t_critical(df: float, alpha: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(1 - alpha / 2, df)) if df > 0 and math.isfinite(df) else float(stats.norm.ppf(1 - alpha / 2))


def _unpack(theta: np.ndarray, r0_fixed: bool, r0: float) -> tuple[float, float, float, float]:
    return theta[0], math.exp(theta[1]), math.exp(theta[2]), (r0 if r0_fixed else theta[3])


def _jacobian(c: np.ndarray, theta: np.ndarray, r0_fixed: bool, r0: float) -> np.ndarray:
    """d R / d (A, log B, log C_mid[, R0]) at each c; at c = 0, R = R0."""
    A, B, C_mid, R0 = _unpack(theta, r0_fixed, r0)
    u = np.log(C_mid / np.where(c > 0, c, 1.0))   # (C_mid / C)^B = exp(B u)
    s = np.where(c > 0, 1.0 / (1.0 + np.exp(np.clip(B * u, -700, 700))), 0.0)  # the share of the gain reached
    ds = -s * (1 - s)                               # d s / d (B u)
    cols = [s, (A - R0) * ds * B * u, (A - R0) * ds * B]
    if not r0_fixed:
        cols.append(1.0 - s)
    return np.stack(cols, axis=1)


def _starts(x_max: float, y: np.ndarray, r0: float) -> list[np.ndarray]:
    top = float(np.clip(max(y.max(), r0) + 0.02, 0.01, 0.99))
    return [np.array([a, math.log(b), math.log(m * x_max)])
            for a in (top, float(np.clip(top + 0.15, 0, 0.99)), float(np.clip(y.min() - 0.02, 0.01, 0.99)))
            for b in (0.7, 1.5, 3.0) for m in (0.1, 0.4, 1.0)]


def fit_curve(curves: list[tuple], *, r0: float | None = None, fit_from: float = 0.0, alpha: float = 0.05) -> Fit:
    """Fit the sigmoid to ``curves`` (each (x, y): one seed's compute and pass rate, y in [0, 1]) pooled.
    ``r0``: the curve's start, fixed (e.g. the base's score); None fits it (then a point at C = 0 counts)."""
    from scipy.optimize import least_squares

    xs, ys, ids = [], [], []
    x_all_max = max((float(np.max(x)) for x, _ in curves if len(x)), default=0.0)
    r0_fixed = r0 is not None
    for i, (x, y) in enumerate(curves):
        x, y = np.asarray(x, float), np.asarray(y, float)
        keep = np.isfinite(x) & np.isfinite(y) & (x >= fit_from * x_all_max)
        keep &= (x > 0) if r0_fixed else ((x > 0) | (x == 0))  # a fitted R0 is anchored by the C = 0 points
        xs.append(x[keep]), ys.append(y[keep]), ids.append(np.full(int(keep.sum()), i))
    x, y, seed = np.concatenate(xs), np.concatenate(ys), np.concatenate(ids)
    n_curves = len(np.unique(seed))
    p = 3 if r0_fixed else 4
    base = Fit(NOT_CONVERGED, n_curves=n_curves, n_points=int(x.size), r0_fixed=r0_fixed, x_max=x_all_max, alpha=alpha)
    if x.size < p + 1 or len(np.unique(x)) < p:
        base.reason = f"{x.size} points at {len(np.unique(x))} compute values: at least {p + 1} points at {p} values"
        return base
    r0_guess = r0 if r0_fixed else float(y[x == x.min()].mean())
    positive = x[x > 0]
    lower = [0.0, LOG_B_BOUNDS[0], math.log(positive.min()) - math.log(1e3)]
    upper = [1.0, LOG_B_BOUNDS[1], math.log(x_all_max) + math.log(1e3)]
    if not r0_fixed:
        lower.append(0.0), upper.append(1.0)

    def residuals(theta):
        return _model(x, theta, r0_fixed, r0) - y

    def residuals_jacobian(theta):
        return _jacobian(x, theta, r0_fixed, r0 if r0_fixed else 0.0)

    starts = [np.clip(t if r0_fixed else np.append(t, r0_guess), np.array(lower) + 1e-6, np.array(upper) - 1e-6)
              for t in _starts(x_all_max, y, r0_guess)]
    starts.sort(key=lambda t: float(np.sum(residuals(t) ** 2)))  # refine the REFINED best of a coarse grid
    best = None
    for theta0 in starts[:REFINED]:
        try:
            out = least_squares(residuals, theta0, jac=residuals_jacobian, bounds=(lower, upper), method="trf",
                                x_scale="jac", max_nfev=2000)
        except (ValueError, FloatingPointError):
            continue
        if out.status > 0 and np.all(np.isfinite(out.x)) and (best is None or out.cost < best.cost):
            best = out
    if best is None:
        base.reason = "the optimizer did not converge from any starting point"
        return base
    theta = best.x
    A, B, C_mid, R0 = _unpack(theta, r0_fixed, r0 if r0_fixed else 0.0)
    fit = Fit(NOT_IDENTIFIED, n_curves=n_curves, n_points=int(x.size), r0_fixed=r0_fixed, x_max=x_all_max,
              params={"A": A, "B": B, "C_mid": C_mid, "R0": R0}, alpha=alpha)
    on_bound = [name for name, v, lo, hi in zip(("A", "B", "C_mid", "R0"), theta, lower, upper)
                if min(v - lo, hi - v) < BOUND_TOL * max(1.0, hi - lo)]
    if C_mid > x_all_max:
        fit.reason = (f"the curve has not bent yet: its half-gain compute C_mid = {C_mid:.3g} lies beyond the largest "
                      f"measured {x_all_max:.3g}, so the ceiling A is an extrapolation")
        return fit
    if on_bound:
        fit.reason = f"{', '.join(on_bound)} at the bound of its range: the data do not pin it"
        return fit
    jac = _jacobian(x, theta, r0_fixed, r0 if r0_fixed else 0.0)
    res = residuals(theta)
    cov, df = _covariance(jac, res, seed, n_curves)
    if cov is None:
        fit.reason = "the parameters are not separable on these points (a singular Jacobian)"
        return fit
    fit.cov, fit.df = cov, df
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    names = ["A", "log_B", "log_C_mid"] + ([] if r0_fixed else ["R0"])
    fit.se = dict(zip(names, map(float, se)))
    t = t_critical(df, alpha)
    wide = [f"{name} {shown(lo):.3g}..{shown(hi):.3g}" for name, lo, hi, (low, high), shown in (
        ("A", A - t * se[0], A + t * se[0], (0.0, 1.0), float),
        ("B", theta[1] - t * se[1], theta[1] + t * se[1], LOG_B_BOUNDS, _exp))  # B on the log scale
        if lo < low or hi > high]
    c_mid_high = theta[2] + t * se[2]
    if c_mid_high > math.log(x_all_max):
        wide.append(f"C_mid up to {_exp(c_mid_high):.3g}, beyond the largest measured {x_all_max:.3g}: the bend may "
                    "lie past the data")
    if wide:
        fit.reason = (f"the data do not pin it ({n_curves} curve(s), {x.size} points): the interval of "
                      f"{'; '.join(wide)}")
        return fit
    fit.intervals = {"A": (max(0.0, A - t * se[0]), min(1.0, A + t * se[0])),
                     "B": (math.exp(theta[1] - t * se[1]), math.exp(theta[1] + t * se[1])),
                     "C_mid": (_exp(theta[2] - t * se[2]), _exp(theta[2] + t * se[2]))}
    if not r0_fixed:
        fit.intervals["R0"] = (max(0.0, R0 - t * se[3]), min(1.0, R0 + t * se[3]))
    fit.status = OK
    return fit


def _exp(v: float) -> float:
    return math.exp(min(v, 700.0))


def _model(x: np.ndarray, theta: np.ndarray, r0_fixed: bool, r0: float | None) -> np.ndarray:
    A, B, C_mid, R0 = _unpack(theta, r0_fixed, r0 if r0_fixed else 0.0)
    return sigmoid(x, A, B, C_mid, R0)


def _covariance(jac: np.ndarray, res: np.ndarray, cluster: np.ndarray, n_curves: int):
    """(covariance of the parameters, the t's degrees of freedom): clustered by curve when there are several,
    else from the residuals. None when the Jacobian is singular."""
    hess = jac.T @ jac
    if not np.all(np.isfinite(hess)) or np.linalg.cond(hess) > 1e12:
        return None, math.nan
    bread = np.linalg.inv(hess)
    p = jac.shape[1]
    if n_curves >= 2:
        groups = [jac[cluster == g].T @ res[cluster == g] for g in np.unique(cluster)]
        meat = sum(np.outer(s, s) for s in groups) * n_curves / (n_curves - 1)
        return bread @ meat @ bread, float(n_curves - 1)
    dof = res.size - p
    if dof <= 0:
        return None, math.nan
    return bread * float(res @ res) / dof, float(dof)
