"""scripts/warm_bytecode.py writes the byte code caches of the modules it imports even where
PYTHONDONTWRITEBYTECODE is set (set-up runs it then): checked with the caches sent to a fresh
PYTHONPYCACHEPREFIX, for one light module and what it imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a subprocess each (under a second)

REPO = Path(__file__).resolve().parent.parent


def _warm(prefix: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}
    return subprocess.run([sys.executable, str(REPO / "scripts" / "warm_bytecode.py"), *args], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_caches_are_written_despite_pythondontwritebytecode(tmp_path):
    done = _warm(tmp_path / "pyc", "contract.env", "no_such_module_here")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("bytecode written for ") and "not importable here: no_such_module_here" in done.stdout
    written = {p.name.split(".")[0] for p in (tmp_path / "pyc").rglob("*.pyc")}
    assert {"env", "__init__"} <= written, sorted(written)  # contract/env.py and its package


def test_a_flag_is_refused_with_the_usage(tmp_path):
    done = _warm(tmp_path / "pyc", "--all")
    assert done.returncode == 2 and "warm_bytecode.py" in done.stdout and not (tmp_path / "pyc").exists()
