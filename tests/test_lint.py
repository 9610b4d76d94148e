"""The linter configured in pyproject.toml ([tool.ruff]) passes over the whole repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ruff_check_passes():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_sees_a_violation(tmp_path):
    bad = REPO / ".cache" / "lint_sample"
    bad.mkdir(parents=True, exist_ok=True)
    (bad / "sample.py").write_text("import os\n")
    try:
        done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F",
                               str(bad / "sample.py")], cwd=REPO, capture_output=True, text=True, timeout=120)
    finally:
        (bad / "sample.py").unlink()
    assert done.returncode == 1 and "F401" in done.stdout
