"""End-of-sweep report: tables + curves from the sweep's MLflow runs, logged to the parent run.

Called by ``sweep run`` after the last trial; ``sweep report NAME`` does the same on demand.
"""

from __future__ import annotations

import copy
from pathlib import Path

from rich.console import Console

from dashboards.report import ReportConfig, report_from_mlflow
from sweeps.runner import SweepResult
from sweeps.spec import SweepSpec


def write_sweep_report(spec: SweepSpec, result: SweepResult, run_dir: Path, console: Console) -> dict[str, Path]:
    out_dir = run_dir.resolve() / spec.name / "report"
    report = copy.deepcopy(spec.report)
    table = report.setdefault("table", {})
    # Unless the spec says otherwise: benchmarks in config order (the eval: section's for eval/ metrics),
    # methods in spec order.
    evaluated = str(table.get("metric", "")).startswith("eval/") and spec.eval is not None
    table.setdefault("benchmarks", list(spec.eval.benchmarks if evaluated else spec.trials[0].config.data.benchmarks))
    if table.get("rows", "method") == "method":
        table.setdefault("methods", list(dict.fromkeys(t.method for t in spec.trials)))
    paths = report_from_mlflow(spec.name, tracking_uri=result.tracking_uri, out_dir=out_dir,
                               config=ReportConfig.from_dict(report), parent_run_id=result.parent_run_id)
    if "md" in paths:
        console.print(paths["md"].read_text(), markup=False, highlight=False)
    if "html" in paths:
        console.print(f"report: {paths['html']}")
    return paths
