"""End-of-sweep report: tables + curves from the sweep's MLflow runs, logged to the parent run.

Called by ``sweep run`` after the last trial; ``sweep report NAME`` makes the same report later from
the `report:` section recorded with the sweep (``spec.report``: the spec's section with its defaults).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from contract.run_layout import RunLayout
from dashboards.report.writer import ReportConfig, report_from_mlflow
from dashboards.tables.terminal import print_table
from sweeps.driver.runner import SweepResult
from sweeps.specs.load import SweepSpec


def write_sweep_report(spec: SweepSpec, result: SweepResult, run_dir: Path, console: Console) -> dict[str, Path]:
    out_dir = RunLayout(run_dir.resolve()).sweep(spec.name).report
    paths = report_from_mlflow(spec.name, tracking_uri=result.tracking_uri, out_dir=out_dir,
                               config=ReportConfig.from_dict(spec.report), parent_run_id=result.parent_run_id)
    if "csv" in paths or "md" in paths:
        print_table(console, paths)
    if "html" in paths:
        console.print(f"report: {paths['html']}", markup=False, highlight=False, soft_wrap=True)
    return paths
