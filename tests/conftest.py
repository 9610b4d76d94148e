"""Test-wide environment: nothing written outside the repository, no network lookups."""

import os
import shutil

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Temporary test dirs inside the repository (absolute: some tests chdir), unless --basetemp is given:
    one per pytest process (pytest empties its basetemp when it starts, so two runs must not share
    one); those of processes that are gone are removed."""
    if not config.option.basetemp:
        root = REPO / ".cache" / "pytest"
        root.mkdir(parents=True, exist_ok=True)
        for old in root.glob("p*"):
            if old.name[1:].isdigit() and not _alive(int(old.name[1:])):
                shutil.rmtree(old, ignore_errors=True)
        config.option.basetemp = str(root / f"p{os.getpid()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
