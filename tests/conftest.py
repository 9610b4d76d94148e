"""Test-wide environment: nothing written outside the repository, no network lookups."""

import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Temporary test dirs inside the repository (absolute: some tests chdir), unless --basetemp is given."""
    if not config.option.basetemp:
        (REPO / ".cache").mkdir(exist_ok=True)  # pytest creates only the last level (fresh clones have none)
        config.option.basetemp = str(REPO / ".cache" / "pytest")
