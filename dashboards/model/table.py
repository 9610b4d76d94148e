"""The data of a paper table: what it shows (TableConfig) and what it holds (Cell, Row).

    from dashboards.model.table import AVG, DELTA, Cell, Row, TableConfig
    cfg = TableConfig(base="Base", baselines=["GRPO"], delta_avg=True).validate()

The ground floor of the table modules: dashboards/tables/build.py builds a Table from results,
dashboards/tables/render.py draws it, dashboards/stats/significance.py marks its cells; all three import this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contract.metrics import VAL_AVG, VAL_TEMPLATE

AVG, DELTA = "AVG", "Delta Avg"
SIGNIFICANCE = ("auto", "paired", "welch", "off")
SEED_SPREADS = ("own", "moderated", "pooled")
SELECT_ON = ("auto", "select", "reported")
CELLS = ("mean", "mean ± ci", "mean ± std")


@dataclass
class TableConfig:
    """What a comparison table shows. Field docstrings are the one-line reference."""

    metric: str = VAL_TEMPLATE
    """Metric key template; `{benchmark}` is replaced by each benchmark name."""
    benchmarks: list[str] | None = None
    """Benchmark columns, in display order; None = every benchmark found, sorted ('avg' excluded)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Display names for benchmarks/methods/models, e.g. {"math500": "MATH500"}."""
    at: str = "final"
    """Which step of a trial counts: 'final' (last logged) or 'best' (best `select_by` step)."""
    select_by: str | None = VAL_AVG
    """Metric that picks the best step/config: a metric key, a benchmark name, or 'AVG'."""
    mode: str = "max"
    """Direction of `select_by`: 'max' or 'min'."""
    select_on: str = "auto"
    """Where `select_by` is read to pick a step/config: 'select' (the selection split, select/... keys:
    other problems of the same benchmarks, data.select_size), 'reported' (the reported benchmarks
    themselves, the papers' way: the winner's score is biased upward) or 'auto' (select where logged)."""
    rows: str = "method"
    """'method': one row per method (best config); 'config': one row per config (ablations)."""
    methods: list[str] | None = None
    """Row order and filter (method or config names); None = order of first appearance."""
    scale: float = 100.0
    """Multiply values before display (100 turns [0,1] accuracies into percentages)."""
    decimals: int = 1
    """Digits after the decimal point; ranking is judged at this precision."""
    std: bool = False
    """Show 'mean ± std' over seeds (the same as cells: 'mean ± std')."""
    cells: str = "mean"
    """What a cell shows: 'mean', 'mean ± ci' (the half-width of its 95% interval: problems and seeds
    resampled where per-problem verdicts exist, else a t-interval over seeds) or 'mean ± std' (over seeds)."""
    seeds: bool = False
    """Add a column 'n' with the number of seeds behind each row."""
    base: str | None = None
    """Base-model row: its label (sweeps: step-0 values) or the method name in a results file."""
    baselines: list[str] = field(default_factory=list)
    """Baseline methods; the one with the best AVG is set in italics."""
    avg: bool = True
    """Show the AVG column."""
    delta_avg: bool = False
    """Show 'Delta Avg' = mean improvement over the base row across benchmarks (needs `base`)."""
    lower_is_better: list[str] = field(default_factory=list)
    """Columns (benchmarks, 'AVG', 'Delta Avg') where a lower value ranks first."""
    significance: str = "auto"
    """Mark (†) cells that differ from the strongest baseline: 'paired' (per-problem paired t-test in closed
    form, problems and seeds as random draws, Holm's correction over the block), 'auto' (paired where per-problem verdicts were recorded, else
    Welch's t-test over seeds when both rows have >= 3 seeds), 'welch' (>= 2 seeds, no correction) or
    'off' (dashboards/stats/significance.py, docs/statistics.md)."""
    alpha: float = 0.05
    """Significance level of that test."""
    seed_spread: str = "own"
    """The seed spread the paired test and the intervals judge each method with: 'own' (each method's own
    runs: keeps the level when methods differ in stability), 'moderated' (shrunk toward the block's,
    limma's empirical Bayes) or 'pooled' (the block's, assuming every method's seeds vary alike: most
    power, anti-conservative for a less stable method); docs/statistics.md has the calibration."""
    power: float | None = None
    """A difference (in shown units, e.g. 2.0 points) to size seeds for: the footnote says how many seeds
    per method the paired test needs to find it with 80% power. None: only the detectable difference."""

    @property
    def cell_text(self) -> str:
        """What a cell shows: `cells`, or 'mean ± std' under the older `std: true`."""
        return "mean ± std" if self.std and self.cells == "mean" else self.cells

    def validate(self) -> TableConfig:
        """Raise ValueError naming the offending field; return self."""
        def bad(name, msg):
            raise ValueError(f"TableConfig.{name}: {msg}")
        if not isinstance(self.metric, str) or "{benchmark}" not in self.metric:
            bad("metric", f"must be a string containing '{{benchmark}}', got {self.metric!r}")
        for name in ("benchmarks", "methods", "baselines", "lower_is_better"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, str) or not all(isinstance(x, str) for x in v)):
                bad(name, f"must be a list of strings, got {v!r}")
        if self.benchmarks is not None and not self.benchmarks:
            bad("benchmarks", "must not be empty (use None for all)")
        if not isinstance(self.labels, dict):
            bad("labels", f"must be a mapping, got {self.labels!r}")
        for name, allowed in (("at", ("final", "best")), ("mode", ("max", "min")), ("rows", ("method", "config")),
                              ("select_on", SELECT_ON)):
            if getattr(self, name) not in allowed:
                bad(name, f"must be one of {allowed}, got {getattr(self, name)!r}")
        if self.select_by is not None and (not isinstance(self.select_by, str) or not self.select_by):
            bad("select_by", f"must be a metric name such as val/avg/acc, got {self.select_by!r}")
        if self.at == "best" and not self.select_by:
            bad("select_by", "is required when at='best'")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)) or self.scale <= 0:
            bad("scale", f"must be a positive number, got {self.scale!r}")
        if isinstance(self.decimals, bool) or not isinstance(self.decimals, int) or not 0 <= self.decimals <= 8:
            bad("decimals", f"must be an integer in 0..8, got {self.decimals!r}")
        for name in ("std", "seeds", "avg", "delta_avg"):
            if not isinstance(getattr(self, name), bool):
                bad(name, f"must be true or false, got {getattr(self, name)!r}")
        if self.delta_avg and not self.base:
            bad("delta_avg", "needs a base row: set `base`")
        if self.base is not None and (not isinstance(self.base, str) or not self.base):
            bad("base", f"must be a non-empty string, got {self.base!r}")
        if self.significance not in SIGNIFICANCE:
            bad("significance", f"must be one of {SIGNIFICANCE}, got {self.significance!r}")
        if self.seed_spread not in SEED_SPREADS:
            bad("seed_spread", f"must be one of {SEED_SPREADS}, got {self.seed_spread!r}")
        if isinstance(self.cells, str):  # 'mean +- ci' typed in ASCII, any spacing
            self.cells = " ".join(self.cells.replace("+-", "±").replace("±", " ± ").split())
        if self.cells not in CELLS:
            bad("cells", f"must be one of {CELLS}, got {self.cells!r}")
        if self.power is not None and (isinstance(self.power, bool) or not isinstance(self.power, (int, float))
                                       or self.power <= 0):
            bad("power", f"must be a positive difference in the table's units (e.g. 2.0), got {self.power!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha < 1:
            bad("alpha", f"must be a number in (0, 1), got {self.alpha!r}")
        return self


@dataclass
class Cell:
    mean: float | None = None
    std: float | None = None
    n: int = 0
    marks: set[str] = field(default_factory=set)  # subset of {"best", "second", "baseline", "significant"}
    values: list[float] = field(default_factory=list)  # the per-seed values behind the mean
    scores: object | None = None  # dashboards.stats.paired_stats.Scores: per seed, per problem (None: no verdicts)
    ci: tuple[float, float] | None = None  # 95% interval of the mean
    test: dict | None = None  # against the strongest baseline: diff, diff_low, diff_high, p, p_holm
    seed_sd: float | None = None  # the sd of a run's value over seeds, sampling noise removed (per-problem scores)

@dataclass
class Row:
    model: str
    label: str
    is_base: bool = False
    config: str | None = None
    n: int = 0
    cells: dict[str, Cell] = field(default_factory=dict)
