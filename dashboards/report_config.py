"""The sweep spec's `report:` section (ReportConfig), in a module of its own that imports neither pandas
nor plotly: `sweep run` and `sweep status` validate a spec with it before anything heavy is imported.

    from dashboards.report_config import ReportConfig
    cfg = ReportConfig.from_dict({"table": {"select_by": "val/avg/acc", "at": "final"}, "band": "std"})

dashboards/report.py, which draws the report, re-exports it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from contract.metrics import ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG
from contract.suggest import did_you_mean
from dashboards.table_model import TableConfig

BANDS = ("minmax", "std", "seeds", "none")
"""Spread over seeds drawn around a method's mean curve (dashboards/curves.py draws them)."""
FORMATS = ("html", "md", "latex", "csv", "png", "pdf", "svg")
DEFAULT_CURVES = [ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG]  # DHPO Fig. 1's row
DEFAULT_EMA_ALPHA = 0.1


def _did_you_mean(key: str, known: list[str], where: str) -> ValueError:
    return ValueError(f"{where}: unknown key {key!r}{did_you_mean(key, known)} (known: {', '.join(known)})")


@dataclass
class ReportConfig:
    """The sweep spec's `report:` section."""

    table: TableConfig = field(default_factory=TableConfig)
    """The comparison table (see dashboards.tables.TableConfig)."""
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
        table = d.pop("table", None) or {}
        if isinstance(table, dict):
            tknown = [f.name for f in dataclasses.fields(TableConfig)]
            for k in table:
                if k not in tknown:
                    raise _did_you_mean(k, tknown, "report.table")
            table = TableConfig(**table)
        return cls(table=table, **d).validate()
