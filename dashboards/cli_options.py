"""The options every command that reads a sweep's store shares, declared once (typer).

    from dashboards.cli_options import RunDir, TrackingUri
    def status(name: str, run_dir: RunDir = Path("runs"), tracking_uri: TrackingUri = None): ...

Every command finds the store by the same rule (tracking_store/uri.py resolve_uri).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

RunDir = Annotated[Path, typer.Option("--run-dir", help="Run directory: MLflow store, Ray temp dir, results, reports.")]
TrackingUri = Annotated[Optional[str], typer.Option(
    "--tracking-uri", help="MLflow URI (a server's http://HOST:PORT or a database); default "
    "$MLFLOW_TRACKING_URI, else the run dir's mlflow.db (sqlite).")]
