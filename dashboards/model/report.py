"""The sweep spec's `report:` section (ReportConfig), in a module of its own that imports neither pandas
nor plotly: `sweep run` and `sweep status` validate a spec with it before anything heavy is imported.

    from dashboards.model.report import ReportConfig
    cfg = ReportConfig.from_dict({"table": {"select_by": "val/avg/acc", "at": "final"}, "band": "std"})

dashboards/report/writer.py, which draws the report, re-exports it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from contract.metrics import (CLIP_FRACTION, CLIP_FRACTIONS, COMPUTE_AXES, ENTROPY, EVAL, GATE_WEIGHT, RESPONSE_LENGTH_MEAN,
                              SELECT, VAL, VAL_AVG)
from contract.suggest import did_you_mean
from dashboards.model.table import TableConfig

BANDS = ("minmax", "std", "seeds", "none")
"""Spread over seeds drawn around a method's mean curve (dashboards/figures/training_curves.py draws them)."""
FORMATS = ("html", "md", "latex", "csv", "png", "pdf", "svg")
DEFAULT_CURVES = [ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG]  # DHPO Fig. 1's row
DEFAULT_EMA_ALPHA = 0.1


def _did_you_mean(key: str, known: list[str], where: str) -> ValueError:
    return ValueError(f"{where}: unknown key {key!r}{did_you_mean(key, known)} (known: {', '.join(known)})")


def _section(value, cls: type, where: str):
    """A sub-section's mapping as ``cls`` (unknown keys refused with a suggestion); anything else as given,
    for the owner's validate() to name."""
    value = value or {}
    if not isinstance(value, dict):
        return value
    known = [f.name for f in dataclasses.fields(cls)]
    for k in value:
        if k not in known:
            raise _did_you_mean(k, known, where)
    return cls(**value)


@dataclass(frozen=True)
class CurvesConfig:
    """The spec's ``report.compute_curves``: ScaleRL's compute curves fitted per method (dashboards/stats/compute_curves.py,
    docs/compute-curves.md); `sweep fit`'s options are the same settings."""

    enabled: bool = True
    """Fit and write report/curves.md, .tex, .csv and figures/compute_curves.png, .pdf."""
    x: str = "step"
    """The compute axis: step, tokens (generated), trained_tokens, seconds (wall) or gpu_seconds (contract/metrics.py
    COMPUTE_AXES)."""
    metric: str = VAL_AVG
    """The pass rate fitted (an evaluation key: val/avg/acc, val/<benchmark>/acc)."""
    fit_from: float = 0.1
    """Leave out points below this share of the largest compute (the early, noisy part)."""
    extrapolate: float = 0.5
    """The extrapolation check fits on this share of the compute and predicts the last point."""
    r0: str = "base"
    """"base": R0 fixed at the curve's value at compute 0 (the base policy's score); "fit": fitted."""
    alpha: float = 0.05
    """1 - the intervals' level; the comparisons' level after Holm's correction."""
    seed_fits: int = 20
    """Fit each seed's curve alone (report/curves_seeds.csv) for a method of at most this many seeds; a method
    with more gets one row saying so (a fit costs the report tens of ms a seed). 0: no seed's own fit."""

    def validate(self, where: str = "report.compute_curves") -> "CurvesConfig":
        if not isinstance(self.enabled, bool):
            raise ValueError(f"{where}.enabled: must be true or false, got {self.enabled!r}")
        if self.x not in COMPUTE_AXES:
            raise ValueError(f"{where}.x: must be one of {list(COMPUTE_AXES)}, got {self.x!r}")
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"{where}.metric: must be a metric key (e.g. {VAL_AVG}), got {self.metric!r}")
        for name, low_open in (("fit_from", False), ("extrapolate", True)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 1 if low_open else 0 <= v < 1):
                raise ValueError(f"{where}.{name}: must be a share of the compute in {'(0, 1)' if low_open else '[0, 1)'}, "
                                 f"got {v!r}")
        if self.r0 not in ("base", "fit"):
            raise ValueError(f"{where}.r0: must be 'base' (the curve's value at compute 0) or 'fit', got {self.r0!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha < 0.5:
            raise ValueError(f"{where}.alpha: must be in (0, 0.5), got {self.alpha!r}")
        if isinstance(self.seed_fits, bool) or not isinstance(self.seed_fits, int) or self.seed_fits < 0:
            raise ValueError(f"{where}.seed_fits: must be a whole number of seeds >= 0, got {self.seed_fits!r}")
        return self


@dataclass
class ReportConfig:
    """The sweep spec's `report:` section."""

    table: TableConfig = field(default_factory=TableConfig)
    """The comparison table (see dashboards.tables.build.TableConfig)."""
    curves: list[str] = field(default_factory=lambda: list(DEFAULT_CURVES))
    """Metric keys drawn vs step in the 'Training dynamics' grid, 3 per row: the first row is the paper's Fig. 1."""
    ema_alpha: float = DEFAULT_EMA_ALPHA
    """EMA smoothing weight of the newest point in (0, 1] for per-step training metrics (evaluation
    keys val/*, eval/* are never smoothed); 1 = none, 0.02 = SSPO's (long runs). Default 0.1
    (TensorBoard "smoothing 0.9"): a ~10-step time constant cuts per-step sampling noise about 4x
    (white noise std x sqrt(a/(2-a)) = 0.23) while lagging ~9 steps, under half the default
    evaluation interval (20) and ~5% of a 200-step run, the share 0.02 gives a ~1000-step run."""
    band: str = "minmax"
    """Spread over seeds: minmax, std, seeds (thin per-seed lines) or none."""
    by: str = "method"
    """One line per 'method' or per 'config'."""
    benchmark_grid: bool = True
    """Add the per-benchmark accuracy panels (DHPO Fig. 4)."""
    clipfrac: bool = True
    """Add the clip-fraction panels."""
    formats: list[str] = field(default_factory=lambda: ["html", "md", "latex", "csv", "png", "pdf"])
    """Files to write: html, md, latex, csv, png, pdf, svg (figures/<name>.<fmt>, matplotlib)."""
    title: str | None = None
    """Report title; default 'Sweep <name>'."""
    compute_curves: CurvesConfig = field(default_factory=CurvesConfig)
    """The compute-curve fits (report/curves.*): see CurvesConfig."""

    def validate(self) -> ReportConfig:
        if not isinstance(self.table, TableConfig):
            raise ValueError(f"ReportConfig.table: must be a TableConfig, got {type(self.table).__name__}")
        self.table.validate()
        if not isinstance(self.curves, list) or not all(isinstance(k, str) for k in self.curves):
            raise ValueError(f"ReportConfig.curves: must be a list of metric keys, got {self.curves!r}")
        if isinstance(self.ema_alpha, bool) or not isinstance(self.ema_alpha, (int, float)) \
                or not 0 < self.ema_alpha <= 1:
            raise ValueError(f"ReportConfig.ema_alpha: must be in (0, 1] (1 = no smoothing), got {self.ema_alpha!r}")
        if self.band not in BANDS:
            raise ValueError(f"ReportConfig.band: must be one of {BANDS}, got {self.band!r}")
        if self.by not in ("method", "config"):
            raise ValueError(f"ReportConfig.by: must be 'method' or 'config', got {self.by!r}")
        if not isinstance(self.formats, list) or any(f not in FORMATS for f in self.formats):
            raise ValueError(f"ReportConfig.formats: must be a list drawn from {FORMATS}, got {self.formats!r}")
        if not isinstance(self.compute_curves, CurvesConfig):
            raise ValueError(f"ReportConfig.compute_curves: must be a CurvesConfig, got {type(self.compute_curves).__name__}")
        self.compute_curves.validate()
        for name in ("benchmark_grid", "clipfrac"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ReportConfig.{name}: must be true or false, got {getattr(self, name)!r}")
        return self

    @classmethod
    def from_dict(cls, d: dict | None) -> ReportConfig:
        """Build from the spec's mapping; unknown keys raise ValueError with a suggestion."""
        d = dict(d or {})
        known = [f.name for f in dataclasses.fields(cls)]
        for k in d:
            if k not in known:
                raise _did_you_mean(k, known, "report")
        table = _section(d.pop("table", None), TableConfig, "report.table")
        curves = _section(d.pop("compute_curves", None), CurvesConfig, "report.compute_curves")
        return cls(table=table, compute_curves=curves, **d).validate()


MECHANISMS = {"clip_fraction": CLIP_FRACTION, "gate_weight": GATE_WEIGHT}
"""Per-step metrics that say whether a configuration's clip range or temperature acts at all (the grid section)."""
EVALUATION_PREFIXES = (VAL, SELECT, EVAL)
"""Keys logged at evaluations: a report reads all of them, whatever its settings."""


def history_keys(cfg: ReportConfig, logged: set[str]) -> list[str]:
    """The logged keys whose histories ``cfg``'s report uses: the evaluation keys (tables, selection, base
    row, grid), the curves, the clip fractions, the select-by key, the grid's mechanism keys and the compute
    curves' metric and axis. The per-step training keys it does not draw are left unread (2,000 trials x 200
    steps: ~4 M rows fewer); the driver's read copy holds these keys' histories."""
    wanted = {*cfg.curves, *(CLIP_FRACTIONS if cfg.clipfrac else ()), cfg.table.select_by, *MECHANISMS.values(),
              cfg.compute_curves.metric, COMPUTE_AXES[cfg.compute_curves.x]}
    head, _, tail = cfg.table.metric.partition("{benchmark}")  # the table's metric, any benchmark
    return sorted(k for k in logged if k.startswith(EVALUATION_PREFIXES) or k in wanted
                  or (k.startswith(head) and k.endswith(tail) and len(k) > len(head) + len(tail)))
