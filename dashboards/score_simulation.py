"""Simulated studies with a known truth: is the paired test calibrated, and does it find what it should?

    python -m dashboards.score_simulation             # 400 null tables + 400 with a true difference
    python -m dashboards.score_simulation --tables 200 --seeds 5

    from dashboards.score_simulation import Shape, simulate, calibration
    runs = simulate(Shape(), np.random.default_rng(0))    # {method: [(seeds, problems) per benchmark]}

The generating model (docs/statistics.md "Calibration"): each benchmark has problems with a shared
difficulty (logit-normal around the benchmark's accuracy, the same for every method, as real
benchmarks are), every run (a method's seed) shifts its logits by a run effect, every method has a
small problem-by-method interaction, and a run answers each problem k times (Bernoulli). Under the
null every method draws from the same model; `effect` (accuracy points x100 on one benchmark of one
method, or on every benchmark) adds a true difference. The shape defaults to the default study's:
7 methods, 3 benchmarks of 64 problems, 3 seeds, 4 samples per problem.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from dashboards.paired_stats import Scores, compare, detectable_difference, seed_spread
from dashboards.significance import welch_p


@dataclass
class Shape:
    """A simulated study's size and variance components (defaults: the default study's)."""

    methods: int = 7
    problems: int = 64
    seeds: int = 3
    samples: int = 4
    accuracy: tuple[float, ...] = (0.55, 0.44, 0.065)
    """Accuracy at each benchmark's centre logit (its length is the number of benchmarks); the default
    study's trained methods (easy, medium, hard)."""
    difficulty_sd: float = 1.5
    """Spread of the problems' logits around the benchmark's level (shared by all methods)."""
    run_sd: float = 0.2
    """Spread of a run's logit shift (its seed): 0.2 gives the seed spread the default study showed
    (pooled run variance of AVG 2.7e-4 measured, 3.3e-4 simulated; docs/statistics.md)."""
    interaction_sd: float = 0.2
    """Spread of a method's problem-specific logit shift (the same in each of its runs)."""


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


def simulate(shape: Shape, rng: np.random.Generator, effect: float = 0.0, effect_on: int = 1) -> list[list[np.ndarray]]:
    """[method][benchmark] -> (seeds, problems) fractions correct. Method `effect_on` gets `effect`
    added to its logits on every benchmark (a logit shift; see `effect_in_points`)."""
    out = [[None] * len(shape.accuracy) for _ in range(shape.methods)]
    for b, acc in enumerate(shape.accuracy):
        difficulty = _logit(acc) + shape.difficulty_sd * rng.standard_normal(shape.problems)
        for m in range(shape.methods):
            inter = shape.interaction_sd * rng.standard_normal(shape.problems)
            runs = shape.run_sd * rng.standard_normal((shape.seeds, 1))
            shift = effect if m == effect_on else 0.0
            prob = 1 / (1 + np.exp(-(difficulty + inter + runs + shift)))
            out[m][b] = rng.binomial(shape.samples, prob) / shape.samples
    return out


def _scores(runs: list[np.ndarray], column: int | None) -> Scores:
    """One method's Scores of one benchmark column, or of AVG (column None: every benchmark a stratum)."""
    parts = runs if column is None else [runs[column]]
    x = np.concatenate(parts, axis=1)
    strata = np.concatenate([np.full(p.shape[1], i) for i, p in enumerate(parts)])
    return Scores(x, strata)


def _welch_rejects(a: Scores, b: Scores, alpha: float) -> bool:
    """Welch's t-test over the seeds' cell values (the earlier test) rejects at `alpha`."""
    p = welch_p(list(a.x @ a.weights), list(b.x @ b.weights))
    return p is not None and p < alpha


def rejection_rates(shape: Shape, tables: int, effect: float = 0.0, alpha: float = 0.05, seed: int = 0) -> dict:
    """Share of (method, column) cells rejected against a fixed baseline (method 0) by the paired test
    and by Welch's t-test over seeds; with effect != 0 only method 1's cells (the true difference)."""
    rng = np.random.default_rng(seed)
    paired, welch, n, detectable = 0, 0, 0, []
    columns = list(range(len(shape.accuracy))) + [None]
    for _ in range(tables):
        runs = simulate(shape, rng, effect)
        others = [1] if effect else range(1, shape.methods)
        for col in columns:
            every = [_scores(r, col) for r in runs]
            spread = seed_spread(*every)  # pooled over the table's methods, as the report does
            for m in others:
                a, b = every[m], every[0]
                c = compare(a, b, spread=spread, alpha=alpha, n_boot=400, seed=int(rng.integers(1 << 31)))
                paired += c.p < alpha
                welch += _welch_rejects(a, b, alpha)
                n += 1
                if col is None:
                    detectable.append(detectable_difference(c, alpha=alpha))
    return {"cells": n, "paired": paired / n, "welch": welch / n, "detectable_avg": float(np.median(detectable))}


def effect_in_points(shape: Shape, logit_shift: float, rng: np.random.Generator, draws: int = 200) -> float:
    """The expected AVG accuracy difference (fraction) a logit shift makes under `shape`."""
    diffs = []
    for _ in range(draws):
        deltas = []
        for acc in shape.accuracy:
            z = _logit(acc) + shape.difficulty_sd * rng.standard_normal(shape.problems)
            deltas.append(np.mean(1 / (1 + np.exp(-(z + logit_shift))) - 1 / (1 + np.exp(-z))))
        diffs.append(np.mean(deltas))
    return float(np.mean(diffs))


def shift_for(shape: Shape, points: float, rng: np.random.Generator) -> float:
    """The logit shift whose expected AVG difference is `points` (a fraction), by bisection."""
    lo, hi = 0.0, 3.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if effect_in_points(shape, mid, rng, 40) < points:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _avg_cells(shape: Shape, shift: float, tables: int, alpha: float, rng: np.random.Generator) -> dict:
    """AVG cells of method 1 against method 0 with a true logit `shift`: rejection rates and the median
    detectable difference the power analysis reports."""
    paired = welch = 0
    detectable = []
    for _ in range(tables):
        runs = simulate(shape, rng, shift)
        every = [_scores(r, None) for r in runs]
        a, b = every[1], every[0]
        c = compare(a, b, spread=seed_spread(*every), alpha=alpha, n_boot=400, seed=int(rng.integers(1 << 31)))
        paired += c.p < alpha
        detectable.append(detectable_difference(c, alpha=alpha))
        welch += _welch_rejects(a, b, alpha)
    return {"paired": paired / tables, "welch": welch / tables, "detectable": float(np.median(detectable))}


def calibration(shape: Shape, tables: int, alpha: float = 0.05, seed: int = 0, power_tables: int | None = None) -> dict:
    """Null rejection rates over every cell, then the power at the detectable AVG difference: the size the
    power analysis reports on studies that have that difference (one fixed-point step from the size it
    reports on null studies: a difference raises the variance a little), and the rejection rate there,
    each over `power_tables` studies (default 2 x tables: one cell each, so the rate is known to +-2%)."""
    null = rejection_rates(shape, tables, 0.0, alpha, seed)
    power_tables = power_tables or 2 * tables
    first = shift_for(shape, null["detectable_avg"], np.random.default_rng(seed + 1))
    size = _avg_cells(shape, first, power_tables, alpha, np.random.default_rng(seed + 2))["detectable"]
    found = _avg_cells(shape, shift_for(shape, size, np.random.default_rng(seed + 3)), power_tables, alpha,
                       np.random.default_rng(seed + 4))
    return {"null_paired": null["paired"], "null_welch": null["welch"], "null_cells": null["cells"],
            "detectable_avg": size, "power_paired": found["paired"], "power_welch": found["welch"], "tables": tables,
            "power_tables": power_tables}


def table_rates(shape: Shape, tables: int, baselines: int = 4, alpha: float = 0.05, seed: int = 0) -> dict:
    """As a report tests a table with no true difference: the strongest of the first `baselines` methods
    (best AVG) against every other method's cells, seed spread pooled per column, Holm over the block.
    Returns the per-cell rate before correction (the strongest baseline is picked on the same data, which
    biases it) and the family-wise rate after Holm (any cell of the table marked)."""
    from dashboards.paired_stats import holm

    rng = np.random.default_rng(seed)
    cells = rejected = families = 0
    columns = list(range(len(shape.accuracy))) + [None]
    for _ in range(tables):
        runs = simulate(shape, rng)
        scores = {col: [_scores(r, col) for r in runs] for col in columns}
        strongest = max(range(baselines), key=lambda m: scores[None][m].mean)
        pvalues = []
        for col in columns:
            spread = seed_spread(*scores[col])
            for m in range(shape.methods):
                if m != strongest:
                    pvalues.append(compare(scores[col][m], scores[col][strongest], spread=spread, alpha=alpha,
                                           n_boot=400, seed=int(rng.integers(1 << 31))).p)
        cells += len(pvalues)
        rejected += sum(p < alpha for p in pvalues)
        families += any(p < alpha for p in holm(pvalues))
    return {"per_cell": rejected / cells, "family_wise": families / tables}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--smoke", action="store_true", help="20 tables: seconds")
    args = ap.parse_args(argv)
    shape = Shape(seeds=args.seeds)
    r = calibration(shape, 20 if args.smoke else args.tables, args.alpha)
    print(f"shape: {shape.methods} methods, {len(shape.accuracy)} benchmarks x {shape.problems} problems, "
          f"{shape.seeds} seeds, {shape.samples} samples; {r['tables']} tables per case, alpha {args.alpha:g}")
    print(f"no true difference ({r['null_cells']} cells): paired rejects {r['null_paired']:.3f}, "
          f"Welch rejects {r['null_welch']:.3f}  (calibrated: within [{args.alpha / 2:g}, {2 * args.alpha:g}])")
    print(f"true AVG difference {100 * r['detectable_avg']:.2f} points (the power analysis' 80% size; "
          f"{r['power_tables']} studies): "
          f"paired finds {r['power_paired']:.3f}, Welch finds {r['power_welch']:.3f}")
    t = table_rates(shape, 20 if args.smoke else args.tables, alpha=args.alpha)
    print(f"whole tables, no true difference, against the strongest of 4 baselines (picked on the same data): "
          f"{t['per_cell']:.3f} of cells below p < {args.alpha:g} before correction; "
          f"{t['family_wise']:.3f} of tables mark a cell after Holm")


if __name__ == "__main__":
    main()
