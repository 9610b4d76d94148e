"""Calibration of the compute-curve fits by simulation: recovery of A and B, interval coverage, extrapolation.

    python benchmarks/compute_fit_calibration.py                 # 400 studies per case (~10 min on 2 cores)
    python benchmarks/compute_fit_calibration.py --reps 40 --figure /tmp/cal.png    # a quick look
    python benchmarks/compute_fit_calibration.py --smoke         # seconds: every case, 3 studies

Curves are simulated with known A, B, C_mid and the default study's noise (dashboards/stats/curve_simulation.py:
3 seeds, 11 evaluations, its measured seed and point spreads), fitted as `sweep report` fits them
(dashboards/stats/compute_curves.py fit_study, defaults: fit from 10% of compute, R0 at the base's score), and
judged against the truth. Per case it prints: the share of fits that are identified, A's bias and RMSE
(points x100), B's median ratio to the truth, the coverage of the 95% intervals of A, B and C_mid among
identified fits (target 0.93-0.97; its Monte-Carlo error at 400 studies is about ±0.02), the extrapolation
check's miss rate (the fit on the first half predicting the last point: a calibrated check misses ~5%) and
its mean absolute error, and for two methods of equal curves, one with 3x the other's seed spread, how often
A's comparison says "different" (target 0.05). ``--figure`` draws the coverage per case with the target
band (docs/compute-curves.md shows it).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboards.stats.compute_curves import CurvesConfig, fit_study  # noqa: E402
from dashboards.stats.compute_fit import OK  # noqa: E402
from dashboards.stats.curve_simulation import DEFAULT_CURVE, DEFAULT_STUDY, simulate  # noqa: E402

CASES = {  # name: (shape, (A, B, C_mid))
    "default study (3 seeds, 11 evals)": (DEFAULT_STUDY, DEFAULT_CURVE),
    "default, 5 seeds": (DEFAULT_STUDY.with_(seeds=5), DEFAULT_CURVE),
    "bent late (C_mid 60, B 1.5)": (DEFAULT_STUDY, (0.42, 1.5, 60.0)),
    "twice the noise": (DEFAULT_STUDY.with_(point_sd=0.028, seed_sd=0.02), DEFAULT_CURVE),
    "not bent (C_mid 400)": (DEFAULT_STUDY, (0.5, 1.2, 400.0)),
}


def one_case(shape, truth, reps: int, rng) -> dict:
    A, B, C_mid = truth
    ok, a_err, b_ratio, cover, missed, ext_err = 0, [], [], {"A": 0, "B": 0, "C_mid": 0}, 0, []
    ext_n = 0
    for _ in range(reps):
        study = fit_study(simulate({"m": truth}, shape, rng=rng))
        m = study.methods[0]
        if m.fit.status == OK:
            ok += 1
            a_err.append(m.fit.A - A)
            b_ratio.append(m.fit.B / B)
            for name, value in (("A", A), ("B", B), ("C_mid", C_mid)):
                lo, hi = m.fit.intervals[name]
                cover[name] += lo <= value <= hi
        e = m.extrapolation
        if e is not None and e.missed is not None:
            ext_n += 1
            missed += e.missed
            ext_err.append(abs(e.error))
    out = {"identified": ok / reps, "fits": ok}
    if ok:
        out.update({"A bias": 100 * float(np.mean(a_err)), "A rmse": 100 * math.sqrt(float(np.mean(np.square(a_err)))),
                    "B ratio (median)": float(np.median(b_ratio)), **{f"cover {k}": v / ok for k, v in cover.items()}})
    if ext_n:
        out.update({"extrapolated": ext_n, "extrapolation missed": missed / ext_n,
                    "extrapolation |error|": 100 * float(np.mean(ext_err))})
    return out


def false_difference(reps: int, rng) -> dict:
    """Two methods of the same curve, one with 3x the seed spread: how often is A's difference significant?"""
    shape = DEFAULT_STUDY
    said, tested = 0, 0
    for _ in range(reps):
        frame = simulate({"base": DEFAULT_CURVE, "wide": DEFAULT_CURVE}, shape, rng=rng,
                         seed_sd={"wide": 3 * shape.seed_sd})
        study = fit_study(frame, CurvesConfig(), baselines=["base"])
        c = next((c for c in study.comparisons if c.parameter == "A"), None)
        if c is not None:
            tested += 1
            said += c.significant
    return {"tested": tested, "said different": said / tested if tested else math.nan}


def draw(results: dict, path: Path) -> None:
    from dashboards.figures.static import import_matplotlib

    import_matplotlib(path.parent / ".matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = [n for n, r in results.items() if "cover A" in r]
    fig = Figure(figsize=(7.5, 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    width = 0.25
    for i, key in enumerate(("cover A", "cover B", "cover C_mid")):
        ax.bar(np.arange(len(names)) + (i - 1) * width, [results[n][key] for n in names], width, label=key[6:])
    ax.axhspan(0.93, 0.97, color="0.8", alpha=0.6, label="target 0.93-0.97")
    ax.set_ylim(0.5, 1.0)
    ax.set_xticks(np.arange(len(names)), [n.replace(" (", "\n(") for n in names], fontsize=7)
    ax.set_ylabel("coverage of the 95% interval")
    ax.set_title("Compute-curve fits: interval coverage among identified fits (simulated)", fontsize=9)
    ax.legend(fontsize=7, ncols=4, loc="lower left")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, metadata={"Software": None})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=400, help="Simulated studies per case.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=None, help="Write the coverage figure (PNG) here.")
    parser.add_argument("--smoke", action="store_true", help="3 studies per case: runs end to end in seconds.")
    args = parser.parse_args(argv)
    reps = 3 if args.smoke else args.reps
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    results = {}
    for name, (shape, truth) in CASES.items():
        results[name] = one_case(shape, truth, reps, rng)
        r = results[name]
        print(f"{name}: truth A {truth[0]}, B {truth[1]}, C_mid {truth[2]}; {reps} studies", flush=True)
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()), flush=True)
    fd = false_difference(reps, rng)
    print(f"equal curves, one method with 3x the seed spread: A compared in {fd['tested']} of {reps} studies, "
          f"said different in {fd['said different']:.3f} (nominal 0.05)")
    print(f"{time.perf_counter() - start:.0f} s")
    if args.figure:
        draw(results, args.figure)
        print(f"wrote {args.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
