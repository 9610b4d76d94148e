"""Calibration of the report's statistics on simulated studies (dashboards/stats/study_model.py).

    python -m dashboards.stats.score_simulation                    # every scenario, 1,000 null tables each
    python -m dashboards.stats.score_simulation --scenarios unstable-3x,floor --tables 300
    python -m dashboards.stats.score_simulation --spread pooled    # every method judged with the pooled spread
    python -m dashboards.stats.score_simulation --smoke            # seconds

    from dashboards.stats.score_simulation import null_rates, run_scenarios, format_report
    r = null_rates(SCENARIOS["unstable-3x"], tables=1000)
    r.rejection["tested"]["AVG"]       # share of the tested method's AVG cells with p < alpha
    r.family_wise                      # share of tables with a cell marked after Holm
    r.coverage["cell"]                 # (covered, missed below, missed above) of the cells' 95% intervals
    r.by_spread["both 0"]              # (share of the tested cells, their rejection rate): both spreads cut at 0

Each null table is tested as a report tests it: per column, every method judged with the seed spread
of `mode` (dashboards/stats/seed_spread.py: its own, the default; moderated; pooled), every method against
method 0 (a fixed baseline), Holm over the table's cells. Coverage counts an interval as missed below when the truth lies under it
and above when over it. The truths: a cell's and a difference's are the population accuracy (problems
drawn from the benchmark, runs, samples); the aggregates' are rliable's (runs and samples on these
problems): the mean over benchmarks, and P(X > Y) of method 1 against method 0 from 400 simulated runs
of each. Power: method 1's AVG cells with a true logit shift, under each mode on the same tables.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace

import numpy as np

from dashboards.stats.aggregates import improvement, mean_interval
from dashboards.stats.paired_scores import Scores
from dashboards.stats.paired_stats import compare, holm, interval
from dashboards.stats.study_model import SCENARIOS, Shape, Study, _sigmoid, simulate
from dashboards.stats.seed_spread import SPREAD_MODES, SeedSpread, block_spreads

TRUTH_RUNS = 400


@dataclass
class Rates:
    tables: int
    rejection: dict = field(default_factory=dict)
    """{"tested" | "others": {column: share of cells with p < alpha}}."""
    family_wise: float = 0.0
    coverage: dict = field(default_factory=dict)
    """{"cell" | "difference" | "aggregate mean" | "P(X>Y)": (covered, missed below, missed above)}."""
    power: dict = field(default_factory=dict)
    """{mode: share of AVG cells found (SPREAD_MODES), "points": the true AVG difference x100}."""
    by_spread: dict = field(default_factory=dict)
    """The tested method's cells by how the two seed spreads were estimated ("positive": the tested
    method's above 0; "tested 0": its own cut at 0; "both 0": the baseline's too):
    {case: (share of the cells, share of them with p < alpha)}."""


SPREAD_CASES = ("positive", "tested 0", "both 0")


def spread_case(tested: SeedSpread, baseline: SeedSpread) -> str:
    """Which of SPREAD_CASES a comparison of ``tested`` against ``baseline`` is."""
    if not tested.cut_at_zero:
        return "positive"
    return "both 0" if baseline.cut_at_zero else "tested 0"


def _column_scores(study: Study, column: int | None) -> list[Scores]:
    """Each method's Scores of one benchmark column, or of AVG (column None: every benchmark a stratum)."""
    out = []
    for runs in study.scores:
        parts = runs if column is None else [runs[column]]
        out.append(Scores(np.concatenate(parts, axis=1), np.concatenate([np.full(p.shape[1], i) for i, p in enumerate(parts)])))
    return out


def _truth(values: np.ndarray, column: int | None) -> np.ndarray:
    return values.mean(axis=1) if column is None else values[:, column]


class _Tally:
    def __init__(self):
        self.counts = {}

    def add(self, key: str, truth: float, lo: float, hi: float) -> None:
        c = self.counts.setdefault(key, [0, 0, 0])
        c[0] += 1
        c[1] += truth < lo
        c[2] += truth > hi

    def shares(self) -> dict:
        return {k: (1 - (b + a) / n, b / n, a / n) for k, (n, b, a) in self.counts.items()}


def _p_truth(study: Study, shape: Shape, rng: np.random.Generator) -> float:
    """P(a run of method 1 beats a run of method 0 on a benchmark), averaged over benchmarks."""
    shares = []
    for logits in study.run_logits:
        runs = []
        for m in (1, 0):
            shift = shape.run_sd_of(m) * rng.standard_normal((TRUTH_RUNS, 1))
            runs.append(rng.binomial(shape.samples, _sigmoid(logits[m] + shift)).mean(axis=1) / shape.samples)
        x, y = np.sort(runs[0]), np.sort(runs[1])
        below = np.searchsorted(y, x, side="left")
        ties = np.searchsorted(y, x, side="right") - below
        shares.append(float((below + 0.5 * ties).sum()) / (len(x) * len(y)))
    return float(np.mean(shares))


def null_rates(shape: Shape, tables: int, alpha: float = 0.05, seed: int = 0, power_shift: float | None = None,
               progress: bool = False, mode: str = "own") -> Rates:
    """Rejection, family-wise and coverage rates over `tables` null tables (and power, given a logit shift)."""
    rng = np.random.default_rng(seed)
    columns = list(range(len(shape.accuracy))) + [None]
    names = [f"bench{c}" if c is not None else "AVG" for c in columns]
    rejected = {"tested": dict.fromkeys(names, 0), "others": dict.fromkeys(names, 0)}
    by_spread = {case: [0, 0] for case in SPREAD_CASES}  # cells, rejected
    families, tally = 0, _Tally()
    for t in range(tables):
        study = simulate(shape, rng)
        pvalues = []
        for col, name in zip(columns, names):
            every = _column_scores(study, col)
            spreads = block_spreads(every, mode)
            truth = _truth(study.population, col)
            for m in range(shape.methods):
                lo, hi = interval(every[m], spread=spreads[m], alpha=alpha)
                tally.add("cell", truth[m], lo, hi)
                tally.add(f"cell {name}", truth[m], lo, hi)
                if m == 0:
                    continue
                c = compare(every[m], every[0], spread_a=spreads[m], spread_b=spreads[0], alpha=alpha)
                pvalues.append(c.p)
                rejected["tested" if m == 1 else "others"][name] += c.p < alpha
                if m == 1:
                    case = by_spread[spread_case(spreads[1], spreads[0])]
                    case[0] += 1
                    case[1] += c.p < alpha
                tally.add("difference", truth[m] - truth[0], c.ci_low, c.ci_high)
        families += any(p < alpha for p in holm(pvalues))
        runs = [np.stack([r.mean(axis=1) for r in method], axis=1) for method in study.scores]  # (seeds, benchmarks)
        cond = study.conditional.mean(axis=1)
        lo, hi = mean_interval(runs[1], alpha=alpha)
        tally.add("aggregate mean", cond[1], lo, hi)
        p = improvement(runs[1], runs[0], alpha=alpha)
        tally.add("P(X>Y)", _p_truth(study, shape, rng), *p.ci)
        if progress and (t + 1) % max(tables // 10, 1) == 0:
            print(f"  {t + 1}/{tables} tables", file=sys.stderr, flush=True)
    others = max(shape.methods - 2, 1)
    out = Rates(tables)
    out.rejection = {"tested": {k: v / tables for k, v in rejected["tested"].items()},
                     "others": {k: v / (tables * others) for k, v in rejected["others"].items()}}
    out.family_wise = families / tables
    cells = sum(n for n, _ in by_spread.values())
    out.by_spread = {case: (n / cells, r / n if n else float("nan")) for case, (n, r) in by_spread.items()}
    out.coverage = tally.shares()
    if power_shift is not None:
        out.power = power(shape, power_shift, tables, alpha, seed + 1)
    return out


def power(shape: Shape, shift: float, tables: int, alpha: float = 0.05, seed: int = 1) -> dict:
    """Share of method 1's AVG cells found against method 0 with a true logit `shift`, by each way of
    judging the seed spread (dashboards/stats/seed_spread.py SPREAD_MODES), on the same tables."""
    rng = np.random.default_rng(seed)
    found = dict.fromkeys(SPREAD_MODES, 0)
    points = []
    for _ in range(tables):
        study = simulate(shape, rng, effect=shift)
        every = _column_scores(study, None)
        for mode in SPREAD_MODES:
            spreads = block_spreads(every, mode)
            found[mode] += compare(every[1], every[0], spread_a=spreads[1], spread_b=spreads[0], alpha=alpha).p < alpha
        points.append(study.population[1].mean() - study.population[0].mean())
    return {k: v / tables for k, v in found.items()} | {"points": 100 * float(np.mean(points))}


POWER_SHIFT = 0.37
"""The logit shift of the power arm: about 5.4 AVG points in the default study's shape, the difference
the default study's power analysis reports as detectable with 80% power."""


def run_scenarios(shapes: dict[str, Shape], tables: int, alpha: float = 0.05, progress: bool = False,
                  mode: str = "own") -> dict:
    """{scenario: (shape, Rates)}; the power arm where every method's seeds vary alike."""
    out = {}
    for name, shape in shapes.items():
        if progress:
            print(f"{name}: {tables} null tables ({mode} seed spreads)", file=sys.stderr, flush=True)
        shift = POWER_SHIFT if shape.unstable_sd is None else None
        out[name] = (shape, null_rates(shape, tables, alpha, power_shift=shift, progress=progress, mode=mode))
    return out


def _range(values) -> str:
    values = list(values)
    return f"{min(values):.3f}-{max(values):.3f}" if len(values) > 1 else f"{values[0]:.3f}"


def format_report(results: dict, alpha: float) -> str:
    """A markdown table of every scenario's rates (the one in docs/statistics.md)."""
    lines = [f"| scenario | tested method, null rejection at p < {alpha:g} (per column) | other methods | "
             "family-wise after Holm | cell intervals: covered (below, above) | differences | aggregate mean | "
             f"P(X > Y) | power at ~5 AVG points ({' / '.join(SPREAD_MODES)}) | tested method by its seed spread: "
             f"{' / '.join(SPREAD_CASES)}, rejection (share of cells) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, (shape, r) in results.items():
        cov = {k: f"{c:.3f} ({lo:.3f}, {hi:.3f})" for k, (c, lo, hi) in r.coverage.items()}
        power_text = (" / ".join(f"{r.power[m]:.3f}" for m in SPREAD_MODES) + f" ({r.power['points']:.1f} points)"
                      if r.power else "")
        lines.append(f"| {name} ({r.tables}) | {_range(r.rejection['tested'].values())} | "
                     f"{_range(r.rejection['others'].values())} | {r.family_wise:.3f} | {cov['cell']} | "
                     f"{cov['difference']} | {cov['aggregate mean']} | {cov['P(X>Y)']} | {power_text} | "
                     + " / ".join(f"{rate:.3f} ({share:.2f})" for share, rate in r.by_spread.values()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m dashboards.stats.score_simulation",
                                 description="Calibration of the report's statistics on simulated studies: per "
                                             "scenario the null rejection rates, family-wise rate, coverage of the "
                                             "intervals and power (a Markdown table on stdout).")
    ap.add_argument("--tables", type=int, default=1000, help="null tables per scenario (default 1000)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per method (default: the scenario's, 3)")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--spread", default="own", choices=["own", "moderated", "pooled"],
                    help="the seed spread each method is judged with (report.table.seed_spread)")
    ap.add_argument("--smoke", action="store_true", help="20 tables per scenario: seconds")
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"--scenarios: unknown {unknown}; expected some of {', '.join(SCENARIOS)}")
    shapes = {n: SCENARIOS[n] if args.seeds is None else replace(SCENARIOS[n], seeds=args.seeds) for n in names}
    results = run_scenarios(shapes, 20 if args.smoke else args.tables, alpha=args.alpha, progress=True,
                            mode=args.spread)
    print(format_report(results, args.alpha))


if __name__ == "__main__":
    main()
