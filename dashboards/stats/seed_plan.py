"""How many seeds a study needs, priced from a pilot: the paired test's power for each comparison with the
strongest baseline, from what the pilot measured (`sweep plan`, sweeps/commands/plan.py).

    from dashboards.stats.seed_plan import Target, make_plan
    plan = make_plan(table, Target(detect={"AVG": 3.0}), costs={"GRPO": 1.5, ...}, unit="GPU-hours")
    plan = make_plan(table, Target(seeds=5))              # the difference detectable with 5 seeds per method
    plan = make_plan(table, Target(budget=200.0), costs=...)  # the seeds a budget buys, then as `seeds`
    plan.markdown(); plan.csv(); plan.curves(up_to=20)    # curves: detectable difference against seeds

``table`` is a built table with per-problem scores (dashboards/tables/build.py: a sweep's or a per-sample
file's). Per model block, every method is compared with the block's strongest baseline as the table's paired
test compares them (each method's own seed spread, dashboards/stats/cell_stats.py): the problems' variance
of the differences and each method's seed spread. The planning level is Holm's first step over the block's
comparisons (p < alpha / m, m = methods other than the strongest baseline x tested columns): what the first
rejection needs; later steps need less, so the seeds are enough for every step. Power 0.8 unless set. A method
with one seed in the pilot has no spread of its own: it takes the pooled spread of the block's other methods,
and the plan says so. Costs are per trial of each method (the pilot's mean); a plan's cost is its seeds x the
block's methods' costs (the baseline's included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dashboards.model.table import DELTA, Row
from dashboards.stats.cell_stats import block_seed_spreads
from dashboards.stats.paired_stats import POWER, compare, detectable_difference, seeds_needed
from dashboards.stats.seed_spread import pooled_spread
from dashboards.stats.significance import strongest_baseline

MOST_SEEDS = 1000
"""Beyond this many seeds per method a difference counts as out of reach (the problems' own variance is the
limit: more problems are needed, not more seeds)."""


@dataclass(frozen=True)
class Target:
    """What to plan for: exactly one of detect (column -> difference in the table's shown units), seeds or budget."""

    detect: dict[str, float] = field(default_factory=dict)
    seeds: int | None = None
    budget: float | None = None
    power: float = POWER

    def __post_init__(self):
        given = [name for name, v in (("--detect", self.detect), ("--seeds", self.seeds), ("--budget", self.budget)) if v]
        if len(given) != 1:
            raise ValueError(f"give exactly one of --detect, --seeds or --budget (got {', '.join(given) or 'none'})")
        if self.seeds is not None and self.seeds < 2:
            raise ValueError(f"--seeds: at least 2 seeds per method (a seed spread needs two), got {self.seeds}")
        if self.budget is not None and not (self.budget > 0 and math.isfinite(self.budget)):
            raise ValueError(f"--budget: a positive number, got {self.budget}")
        if not 0 < self.power < 1:
            raise ValueError(f"--power: between 0 and 1 (e.g. 0.8), got {self.power}")
        bad = {k: v for k, v in self.detect.items() if not (v > 0 and math.isfinite(v))}
        if bad:
            raise ValueError(f"--detect: differences must be positive numbers in the table's units, got {bad}")


@dataclass
class PlanRow:
    model: str
    method: str
    baseline: str
    column: str
    pilot_seeds: tuple[int, int]
    seed_sds: tuple[float, float]
    """Shown units: the method's and the baseline's seed sd as the test uses them."""
    borrowed: bool
    """The method's pilot had one seed: its spread is the block's pooled spread of the others."""
    detectable_now: float
    """Shown units, at the pilot's seeds (min of the two), at the planning level."""
    target: float | None
    """Shown units: the difference planned for (detect), or the one detectable at the planned seeds."""
    seeds: int | None
    """Seeds per method: needed for the target (None: out of reach), or the planned ones."""
    cost: float | None
    """What those seeds cost for this method and the baseline (seeds x their trial costs); None without costs."""


@dataclass
class Plan:
    rows: list[PlanRow]
    target: Target
    alpha: float
    unit: str
    block_cost: dict[str, float | None]
    """Per model: the cost of running every method of its block at the plan's largest seed count."""
    notes: list[str] = field(default_factory=list)
    curves_of: dict = field(default_factory=dict)
    """(model, method, column) -> the comparison and its planning level, for `curves`."""

    def frame(self):
        import pandas as pd

        return pd.DataFrame([{"model": r.model, "method": r.method, "baseline": r.baseline, "column": r.column,
                              "pilot_seeds": f"{r.pilot_seeds[0]} vs {r.pilot_seeds[1]}",
                              "seed_sd": r.seed_sds[0], "baseline_seed_sd": r.seed_sds[1],
                              "spread_borrowed": r.borrowed, "detectable_now": r.detectable_now,
                              "difference": r.target, "seeds_per_method": r.seeds, f"cost_{self.unit}": r.cost}
                             for r in self.rows])

    def csv(self) -> str:
        return self.frame().to_csv(index=False)

    def markdown(self, decimals: int = 1) -> str:
        what = "difference to find" if self.target.detect else "detectable with the plan"
        head = f"| model | method vs baseline | column | pilot seeds | seed sd (method / baseline) | detectable now | " \
               f"{what} | seeds per method | cost ({self.unit}) |"
        lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in self.rows:
            f = f".{decimals}f"
            sd = f"{r.seed_sds[0]:{f}}{'*' if r.borrowed else ''} / {r.seed_sds[1]:{f}}"
            target = "—" if r.target is None else f"{r.target:{f}}"
            seeds = "out of reach" if r.seeds is None else str(r.seeds)
            cost = "—" if r.cost is None else f"{r.cost:.3g}"
            lines.append(f"| {r.model} | {r.method} vs {r.baseline} | {r.column} | {r.pilot_seeds[0]} vs "
                         f"{r.pilot_seeds[1]} | {sd} | {r.detectable_now:{f}} | {target} | {seeds} | {cost} |")
        return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in self.notes) + "\n"

    def curves(self, up_to: int = 20) -> dict[tuple[str, str, str], list[tuple[int, float]]]:
        """(model, method, column) -> [(seeds per method, detectable difference in shown units)] for 2..up_to."""
        return {key: [(s, scale * detectable_difference(c, s, alpha=level, power=self.target.power))
                      for s in range(2, up_to + 1)]
                for key, (c, level, scale) in self.curves_of.items()}


def _comparisons(block: list[Row], columns: list[str], cfg, notes: list[str]):
    """[(row, column, Comparison, borrowed)] of the block against its strongest baseline, and that baseline."""
    strongest = strongest_baseline(block, cfg)
    if strongest is None:
        return [], None
    spreads = block_seed_spreads(block, columns, cfg)
    out = []
    for col in (c for c in columns if c != DELTA):
        theirs = strongest.cells[col].scores
        if theirs is None or theirs.x.shape[0] < 2:
            continue
        several = [r.cells[col].scores for r in block if not r.is_base and r.cells[col].scores is not None
                   and r.cells[col].scores.x.shape[0] >= 2]
        for row in block:
            mine = row.cells[col].scores
            if row.is_base or row is strongest or mine is None:
                continue
            borrowed = mine.x.shape[0] < 2
            spread = pooled_spread(several) if borrowed else spreads[col][id(row)]
            if borrowed:
                notes.append(f"{row.model}: {row.label} has one seed in the pilot: its seed spread is the pooled "
                             "spread of the block's other methods (*)")
            out.append((row, col, compare(mine, theirs, spread_a=spread, spread_b=spreads[col][id(strongest)],
                                          alpha=cfg.alpha), borrowed))
    return out, strongest


def make_plan(table, target: Target, costs: dict[str, float] | None = None, unit: str = "trials") -> Plan:
    """The plan of every model block of ``table`` (a dashboards.tables.render.Table; see the module docstring).
    ``costs``: method label -> cost of one trial in ``unit`` (default: every trial costs 1 'trials')."""
    cfg = table.config
    costs = costs or {}

    def trial_cost(label: str) -> float | None:  # unknown: None, unless every trial counts 1
        return costs.get(label, 1.0 if unit == "trials" else None)

    columns = [c for c in table.columns if c != DELTA]
    unknown = [c for c in target.detect if c not in columns]
    if unknown:
        raise ValueError(f"--detect: no column {', '.join(unknown)} in the pilot's table; its columns are "
                         f"{', '.join(columns)}")
    notes: list[str] = []
    rows: list[PlanRow] = []
    curves_of = {}
    block_cost: dict[str, float | None] = {}
    for model, block in _blocks(table.rows).items():
        found, strongest = _comparisons(block, table.columns, cfg, notes)
        if not found:
            continue
        m = len(found)
        level = cfg.alpha / m
        methods = [r for r in block if not r.is_base]
        per_seed = [trial_cost(r.label) for r in methods]
        seed_cost = None if any(c is None for c in per_seed) else float(sum(per_seed))
        planned = target.seeds
        if target.budget is not None:
            if seed_cost is None:
                raise ValueError("--budget: no cost per trial is known for "
                                 f"{', '.join(r.label for r, c in zip(methods, per_seed) if c is None)}")
            planned = int(target.budget // seed_cost)
            notes.append(f"{model}: a budget of {target.budget:g} {unit} buys {planned} seed(s) per method for the "
                         f"block's {len(methods)} methods ({seed_cost:.3g} {unit} a seed)")
            if planned < 2:
                raise ValueError(f"--budget {target.budget:g}: buys {planned} seed(s) per method for {model}'s "
                                 f"{len(methods)} methods at {seed_cost:.3g} {unit} a seed; a paired test needs 2")
        largest = 0
        scale = cfg.scale
        for row, col, c, borrowed in found:
            if target.detect and col not in target.detect:
                continue
            now = scale * detectable_difference(c, alpha=level, power=target.power)  # at the pilot's own seeds
            if target.detect:
                shown = target.detect[col]
                seeds = seeds_needed(c, shown / scale, alpha=level, power=target.power, most=MOST_SEEDS)
            else:
                seeds, shown = planned, scale * detectable_difference(c, planned, alpha=level, power=target.power)
            pair = [trial_cost(row.label), trial_cost(strongest.label)]
            cost = None if seeds is None or None in pair else seeds * float(sum(pair))
            largest = max(largest, seeds or 0)
            sa, sb = c.spreads
            rows.append(PlanRow(model, row.label, strongest.label, col, c.seeds,
                                (scale * math.sqrt(sa.run_var), scale * math.sqrt(sb.run_var)), borrowed, now, shown,
                                seeds, cost))
            curves_of[(model, row.label, col)] = (c, level, scale)
        block_cost[model] = None if seed_cost is None or not largest else largest * seed_cost
        unreachable = [r for r in rows if r.model == model and r.seeds is None]
        notes.append(f"{model}: paired test against the strongest baseline {strongest.label} at p < {cfg.alpha:g}/{m} "
                     f"(Holm's first step over the block's {m} comparisons), power {target.power:g}; each method's "
                     f"own seed spread from the pilot")
        if unreachable:
            notes.append(f"{model}: out of reach within {MOST_SEEDS} seeds for {len(unreachable)} comparison(s): "
                         "the problems' own variance is the limit (more problems are needed, not more seeds)")
        if block_cost[model] is not None:
            notes.append(f"{model}: every method of the block at {largest} seeds: {block_cost[model]:.3g} {unit}")
    if not rows:
        raise ValueError("nothing to plan: no comparison with a strongest baseline that has per-problem scores and "
                         "at least 2 seeds (name the baselines, e.g. --baselines GRPO)")
    return Plan(rows, target, cfg.alpha, unit, block_cost, list(dict.fromkeys(notes)), curves_of)


def _blocks(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.model, []).append(r)
    return out


def mean_costs(trials, history, unit_keys: dict[str, tuple[str, float]]) -> tuple[dict[str, float], str]:
    """Each method's mean cost of a trial from a pilot sweep: the first of ``unit_keys`` (unit -> (cumulative
    metric, divisor)) that every finished trial logged, its last value; else ('trials', 1 each)."""
    finished = trials[trials["status"] == "FINISHED"]
    for unit, (key, divisor) in unit_keys.items():
        h = history[(history["key"] == key) & history["run_id"].isin(finished["run_id"])]
        if h.empty or h["run_id"].nunique() < len(finished):
            continue
        last = h.sort_values("step").groupby("run_id")["value"].last() / divisor
        by_method = finished.set_index("run_id")["method"].reindex(last.index)
        return {str(k): float(v) for k, v in last.groupby(by_method.values).mean().items()}, unit
    return {}, "trials"
