"""End-of-sweep report: tables + curves from the sweep's MLflow runs, logged to the parent run.

Called by ``sweep run`` after the last trial; ``sweep report NAME`` does the same on demand.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dashboards.report import ReportConfig, report_from_mlflow
from sweeps.runner import SweepResult
from sweeps.spec import SweepSpec


def write_sweep_report(spec: SweepSpec, result: SweepResult, run_dir: Path, console: Console) -> dict[str, Path]:
    out_dir = run_dir.resolve() / spec.name / "report"
    paths = report_from_mlflow(spec.name, tracking_uri=result.tracking_uri, out_dir=out_dir,
                               config=ReportConfig.from_dict(spec.report), parent_run_id=result.parent_run_id)
    if "md" in paths:
        console.print(paths["md"].read_text(), markup=False, highlight=False)
    if "html" in paths:
        console.print(f"report: {paths['html']}")
    return paths
