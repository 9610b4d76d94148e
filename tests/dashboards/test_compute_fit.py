"""dashboards/stats/compute_fit.py and compute_curves.py: ScaleRL's sigmoid, its fit and intervals, the not-identified
and not-converged cases, comparisons with Holm, the extrapolation check, a collapse, and a reduced calibration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dashboards.stats.compute_curves import CurvesConfig, fit_study
from dashboards.stats.compute_fit import NOT_CONVERGED, NOT_IDENTIFIED, OK, _jacobian, fit_curve, sigmoid
from dashboards.stats.curve_simulation import DEFAULT_STUDY, simulate

X = np.arange(0, 201, 20.0)


def test_sigmoid_golden_values():
    """R(0) = R0; R(C_mid) = halfway; R -> A; (C_mid / C)^B by hand at one point."""
    A, B, C_mid, R0 = 0.6, 2.0, 50.0, 0.2
    assert sigmoid(0.0, A, B, C_mid, R0) == pytest.approx(R0)
    assert sigmoid(50.0, A, B, C_mid, R0) == pytest.approx(0.4)
    assert sigmoid(1e9, A, B, C_mid, R0) == pytest.approx(A)
    assert sigmoid(100.0, A, B, C_mid, R0) == pytest.approx(0.2 + 0.4 / (1 + 0.25))  # (50/100)^2 = 0.25


def test_jacobian_matches_finite_differences():
    theta = np.array([0.45, math.log(1.3), math.log(40.0), 0.17])
    c = np.array([0.0, 5.0, 40.0, 180.0])

    def model(t):
        return sigmoid(c, t[0], math.exp(t[1]), math.exp(t[2]), t[3])

    numeric = np.stack([(model(theta + h) - model(theta - h)) / 2e-6 for h in np.eye(4) * 1e-6], axis=1)
    np.testing.assert_allclose(_jacobian(c, theta, False, 0.0), numeric, atol=1e-6)


@pytest.mark.parametrize("r0", [0.15, None])
def test_a_noiseless_curve_is_recovered(r0):
    truth = (0.42, 1.4, 35.0)
    y = sigmoid(X, *truth, 0.15)
    fit = fit_curve([(X, y), (X, y + 0.0)], r0=r0)
    assert fit.status == OK, fit.reason
    assert (fit.A, fit.B, fit.C_mid) == pytest.approx(truth, rel=1e-5)
    assert fit.params["R0"] == pytest.approx(0.15, abs=1e-6)


def test_intervals_widen_with_the_seeds_spread():
    """The seed is the cluster: a persistent seed deviation widens A's interval (median over 8 studies each; a
    single 3-seed interval's width is itself very noisy, 2 degrees of freedom)."""
    rng = np.random.default_rng(3)
    widths = {}
    for sd in (0.002, 0.03):
        w = []
        for _ in range(8):
            frame = simulate({"m": (0.42, 1.4, 35.0)}, DEFAULT_STUDY.with_(seed_sd=sd, point_sd=0.004), rng=rng)
            fit = fit_curve([(g["x"].to_numpy(), g["value"].to_numpy()) for _, g in frame.groupby("seed")], r0=0.153)
            if fit.status == OK:
                assert fit.df == 2  # three seeds: t at 2 degrees of freedom
                w.append(fit.A_ci[1] - fit.A_ci[0])
        assert len(w) >= 6
        widths[sd] = float(np.median(w))
    assert widths[0.03] > 3 * widths[0.002], widths


def test_too_few_points_do_not_converge_and_say_why():
    fit = fit_curve([(np.array([0.0, 10.0, 20.0]), np.array([0.1, 0.2, 0.25]))], r0=0.1)
    assert fit.status == NOT_CONVERGED and fit.A is None and "at least 4 points" in fit.reason


def test_a_curve_that_has_not_bent_is_not_identified():
    """A straight rise over the whole range: any ceiling above fits; the fit says so instead of a number."""
    y = 0.1 + 0.001 * X
    fit = fit_curve([(X, y + 0.002 * s) for s in range(3)], r0=0.1)
    assert fit.status == NOT_IDENTIFIED and fit.A is None and fit.A_ci is None
    assert "not" in fit.reason and ("bent" in fit.reason or "pin" in fit.reason or "bound" in fit.reason)


def _frame(methods: dict, rng, **shape) -> pd.DataFrame:
    return simulate(methods, DEFAULT_STUDY.with_(**shape), rng=rng, model="m")


def test_a_clear_difference_in_A_is_significant_after_holm_and_equal_curves_are_not():
    rng = np.random.default_rng(5)
    frame = _frame({"GRPO": (0.40, 1.4, 35.0), "SAME": (0.40, 1.4, 35.0), "BETTER": (0.55, 1.4, 35.0)}, rng,
                   seed_sd=0.004, point_sd=0.006)
    study = fit_study(frame, CurvesConfig(), baselines=["GRPO"])
    assert study.baselines == {"m": "GRPO"}
    a = {c.method: c for c in study.comparisons if c.parameter == "A"}
    assert set(a) == {"SAME", "BETTER"}
    assert a["BETTER"].significant and a["BETTER"].interval[0] > 0.1 and a["BETTER"].estimate == pytest.approx(0.15, abs=0.02)
    assert not a["SAME"].significant and a["SAME"].interval[0] < 0 < a["SAME"].interval[1]
    assert min(a["SAME"].p, a["BETTER"].p) * 2 == pytest.approx(min(a["SAME"].p_holm, a["BETTER"].p_holm))  # Holm's first step
    b = {c.method: c for c in study.comparisons if c.parameter == "B"}
    assert b["BETTER"].interval[0] < 1 < b["BETTER"].interval[1]  # the same B: a ratio near 1


def test_the_extrapolation_check_holds_on_a_sigmoid_and_misses_a_collapse():
    rng = np.random.default_rng(11)
    frame = _frame({"RISE": (0.45, 1.5, 40.0)}, rng, point_sd=0.008)
    collapse = frame[frame["method"] == "RISE"].copy()
    collapse["method"] = "COLLAPSE"
    late = collapse["x"] >= 140
    collapse.loc[late, "value"] -= 0.004 * (collapse.loc[late, "x"] - 120)  # falls after its peak
    study = fit_study(pd.concat([frame, collapse]), CurvesConfig(extrapolate=0.5))
    rise, fall = study.methods
    assert rise.extrapolation.fit.status == OK and rise.extrapolation.missed is False
    assert abs(rise.extrapolation.error) < 0.03 and rise.note == ""
    assert fall.extrapolation.missed is True and fall.extrapolation.error < -0.1
    assert "collapse" in fall.note and "peaked at x = 120" in fall.note


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_reduced_calibration_recovers_A_and_covers_it():
    """60 studies with a large seed spread against a small evaluation noise: A unbiased, its 95% interval covers
    (56 of 60 here; an interval that treated every point as independent, ignoring the seed as the cluster,
    covers 49 of these 60, and a coverage under 0.88 fails)."""
    rng = np.random.default_rng(2026)
    truth = (0.42, 1.5, 40.0)
    hits, errors, identified = 0, [], 0
    for _ in range(60):
        m = fit_study(_frame({"m": truth}, rng, seed_sd=0.05, point_sd=0.004)).methods[0]
        if m.fit.status == OK:
            identified += 1
            errors.append(m.fit.A - truth[0])
            hits += m.fit.A_ci[0] <= truth[0] <= m.fit.A_ci[1]
    assert identified >= 50
    assert abs(np.mean(errors)) < 0.01
    assert 0.88 <= hits / identified <= 1.0, hits / identified


@pytest.mark.slow
def test_the_calibration_benchmark_smoke_prints_every_case_and_draws(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    figure = tmp_path / "cal.png"
    out = subprocess.run([sys.executable, str(repo / "benchmarks" / "compute_fit_calibration.py"), "--smoke",
                          "--figure", str(figure)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for case in ("default study (3 seeds, 11 evals)", "not bent (C_mid 400)", "one method with 3x the seed spread"):
        assert case in out.stdout, out.stdout
    assert "identified" in out.stdout and figure.read_bytes()[:4] == b"\x89PNG"


def test_seed_fits_up_to_the_cap_one_seed_reuses_the_pooled_fit_and_more_seeds_say_why():
    from dashboards.tables.compute import seeds_csv
    import csv
    import io

    frame = simulate({"GRPO": (0.35, 0.8, 11.0)}, DEFAULT_STUDY.with_(seeds=4), rng=np.random.default_rng(3))
    one = frame[frame["seed"] == frame["seed"].min()]
    capped = fit_study(frame, CurvesConfig(seed_fits=3)).methods[0]
    assert capped.seed_fits == {} and "4 seeds, more than report.compute_curves.seed_fits (3)" in capped.seed_fits_skipped
    rows = list(csv.DictReader(io.StringIO(seeds_csv(fit_study(frame, CurvesConfig(seed_fits=3))))))
    assert [(r["method"], r["seed"], r["fit"]) for r in rows] == [("GRPO", "", "not fitted")]
    full = fit_study(frame, CurvesConfig(seed_fits=4)).methods[0]
    assert len(full.seed_fits) == 4 and not full.seed_fits_skipped
    alone = fit_study(one, CurvesConfig(seed_fits=0)).methods[0]
    assert list(alone.seed_fits.values()) == [alone.fit]  # one seed: its fit is the pooled fit, not fitted twice
    with pytest.raises(ValueError, match="report.compute_curves.seed_fits: must be a whole number"):
        CurvesConfig(seed_fits=-1).validate()


def test_the_optimizer_with_the_analytic_jacobian_reaches_the_finite_difference_optimum():
    from scipy.optimize import least_squares

    frame = simulate({"GRPO": (0.35, 0.8, 11.0)}, DEFAULT_STUDY.with_(seeds=3), rng=np.random.default_rng(5))
    curves = [(g["x"].to_numpy(float), g["value"].to_numpy(float)) for _, g in frame.groupby("seed")]
    fit = fit_curve(curves, r0=None)
    x = np.concatenate([c[0] for c in curves])
    y = np.concatenate([c[1] for c in curves])
    theta = np.array([fit.params["A"], math.log(fit.params["B"]), math.log(fit.params["C_mid"]), fit.params["R0"]])
    numeric = least_squares(lambda t: sigmoid(x, t[0], math.exp(t[1]), math.exp(t[2]), t[3]) - y, theta,
                            method="trf", x_scale="jac")  # from the fit's optimum, with numerical derivatives
    assert fit.status == OK
    np.testing.assert_allclose(numeric.x, theta, rtol=1e-4, atol=1e-6)
