"""Simulated studies with a known truth, in the cases real RL studies produce.

    from dashboards.stats.study_model import SCENARIOS, simulate
    study = simulate(SCENARIOS["unstable-3x"], np.random.default_rng(0))   # a Study: scores and truths

The generating model (docs/statistics.md "Calibration"): each benchmark has problems with a shared
difficulty (logit-normal around the benchmark's accuracy, the same for every method, as real
benchmarks are), every method has a small problem-by-method interaction, every run (a method's seed)
shifts its logits by a run effect, drawn once per run and shared by its benchmarks (``shared_seed``
1) or afresh per benchmark (0), and a run answers each problem k times (Bernoulli). Method 1 is the
tested one: ``unstable_sd`` gives its runs their own spread. Under the null every method has the
same population accuracy on every benchmark (a method whose runs vary more has its centre moved so
that its mean over problems and runs stays the same: on the logit scale more spread would otherwise
move the mean). The measurements: dashboards/stats/score_simulation.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GAUSS_HERMITE = np.polynomial.hermite_e.hermegauss(40)


@dataclass(frozen=True)
class Shape:
    """A simulated study's size and variance components (defaults: the default study's)."""

    methods: int = 7
    problems: tuple[int, ...] = (64, 64, 64)
    """Problems per benchmark (its length is the number of benchmarks)."""
    seeds: int = 3
    samples: int = 4
    accuracy: tuple[float, ...] = (0.55, 0.44, 0.065)
    """Accuracy at each benchmark's centre logit; the default study's trained methods (easy, medium, hard)."""
    difficulty_sd: float = 1.5
    """Spread of the problems' logits around the benchmark's level (shared by all methods)."""
    run_sd: float = 0.2
    """Spread of a run's logit shift (its seed): 0.2 gives the seed spread the default study showed."""
    unstable_sd: float | None = None
    """Method 1's own run spread (None: run_sd, every method alike)."""
    shared_seed: float = 0.0
    """Share of a run's logit-shift variance shared by its benchmarks (1: one shift for the whole run)."""
    interaction_sd: float = 0.2
    """Spread of a method's problem-specific logit shift (the same in each of its runs)."""
    baseline_seeds: int | None = None
    """Method 0's (the baseline's) seeds when they differ from the others' (None: ``seeds``)."""

    def seeds_of(self, method: int) -> int:
        return self.baseline_seeds if method == 0 and self.baseline_seeds is not None else self.seeds

    def run_sd_of(self, method: int) -> float:
        return self.unstable_sd if method == 1 and self.unstable_sd is not None else self.run_sd


SCENARIOS: dict[str, Shape] = {
    "equal": Shape(),
    "shared-seed": Shape(shared_seed=1.0),
    "unstable-2x": Shape(unstable_sd=0.4, shared_seed=1.0),
    "unstable-3x": Shape(unstable_sd=0.6, shared_seed=1.0),
    "floor": Shape(accuracy=(0.55, 0.44, 0.05), problems=(64, 64, 30)),
    "sizes": Shape(problems=(30, 64, 500)),
    "unequal-3x": Shape(unstable_sd=0.6, shared_seed=1.0, baseline_seeds=5),
}
"""The calibration's cases: spreads alike (the earlier test's own model); a run's seed effect shared by
its benchmarks; the tested method's seeds varying 2x and 3x as much (shared); a hard benchmark at ~5%
with 30 problems; benchmarks of 30 / 64 / 500 problems; a 5-seed baseline against 3-seed methods, the tested
one 3x less stable."""


@dataclass
class Study:
    """One simulated table: scores[method][benchmark] (seeds, problems) fractions correct, and the truths."""

    scores: list[list[np.ndarray]]
    population: np.ndarray
    """(methods, benchmarks) expected accuracy over problems drawn from the benchmark, runs and samples."""
    conditional: np.ndarray
    """(methods, benchmarks) expected accuracy over runs and samples on these problems (rliable's estimand)."""
    run_logits: list[np.ndarray] = field(default_factory=list)
    """Per benchmark (methods, problems): each method's logit of each problem before the run effect."""


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


def _expected(centre, sd) -> np.ndarray:
    """E[sigmoid(centre + sd Z)], Z standard normal (Gauss-Hermite quadrature), elementwise."""
    nodes, weights = GAUSS_HERMITE
    z = np.asarray(centre, dtype=float)[..., None] + np.asarray(sd, dtype=float)[..., None] * nodes
    return (_sigmoid(z) * weights).sum(axis=-1) / weights.sum()


def _centre_for(target: float, sd: float) -> float:
    """The centre logit whose E[sigmoid(c + sd Z)] is `target` (bisection)."""
    lo, hi = -20.0, 20.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _expected(mid, sd) < target else (lo, mid)
    return (lo + hi) / 2


def simulate(shape: Shape, rng: np.random.Generator, effect: float = 0.0) -> Study:
    """One study. Method 1 gets `effect` added to its logits on every benchmark (a true difference)."""
    n_bench = len(shape.accuracy)
    shared = [rng.standard_normal((shape.seeds_of(m), 1)) for m in range(shape.methods)]
    scores = [[None] * n_bench for _ in range(shape.methods)]
    population = np.zeros((shape.methods, n_bench))
    conditional = np.zeros((shape.methods, n_bench))
    logits = []
    for b, (acc, n) in enumerate(zip(shape.accuracy, shape.problems)):
        difficulty = shape.difficulty_sd * rng.standard_normal(n)
        base_sd = np.sqrt(shape.difficulty_sd ** 2 + shape.interaction_sd ** 2 + shape.run_sd ** 2)
        target = float(_expected(_logit(acc), base_sd))
        bench_logits = np.zeros((shape.methods, n))
        for m in range(shape.methods):
            sd = shape.run_sd_of(m)
            total_sd = np.sqrt(shape.difficulty_sd ** 2 + shape.interaction_sd ** 2 + sd ** 2)
            centre = _logit(acc) if sd == shape.run_sd else _centre_for(target, total_sd)
            centre += effect if m == 1 else 0.0
            bench_logits[m] = centre + difficulty + shape.interaction_sd * rng.standard_normal(n)
            own = rng.standard_normal((shape.seeds_of(m), 1))
            runs = sd * (np.sqrt(shape.shared_seed) * shared[m] + np.sqrt(1 - shape.shared_seed) * own)
            scores[m][b] = rng.binomial(shape.samples, _sigmoid(bench_logits[m] + runs)) / shape.samples
            population[m, b] = float(_expected(centre, total_sd))
            conditional[m, b] = float(_expected(bench_logits[m], np.full(n, sd)).mean())
        logits.append(bench_logits)
    return Study(scores, population, conditional, logits)
