"""The benchmarks' --smoke modes run end to end and print their side-by-side figures (no timing is asserted:
benchmarks/ measures speed, tests do not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(*args: str, timeout: float) -> str:
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.timeout(600)
def test_eval_throughput_smoke_prints_both_parts_beside_their_peers():
    out = _run("benchmarks/eval_throughput.py", "--smoke", timeout=500)
    assert "vs transformers" in out and "ours / transformers generate:" in out
    for row in ("numeric answers", "LaTeX answers", "the mix", "verdict = label"):
        assert row in out
    assert "verify_answer  math-verify" in out and "never slower than math-verify" in out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tracking_outage_smoke_survives_the_outage_and_prints_the_figures():
    out = _run("benchmarks/tracking_outage.py", "--smoke", timeout=800)
    for row in ("sweep wall time (s)", "driver peak RSS (MB)", "steps held at recovery", "flush: back -> journal empty"):
        assert row in out
    assert "every step of every trial in the store exactly once: yes" in out


@pytest.mark.timeout(300)
def test_cli_startup_smoke_prints_every_command_beside_its_peers():
    out = _run("benchmarks/cli_startup.py", "--smoke", timeout=240)
    rows = {line.split("  ")[0]: line.split() for line in out.splitlines()[2:] if line.strip()}
    assert {"optuna --help (peer)", "mlflow --help (peer)", "sweep --help", "sweep status NAME (no store)",
            "sweep ui NAME (no store)", "sweep run missing.yaml", "sweep run bad_param.yaml",
            "sweep run SHIPPED --dry-run", "sweep ls-objectives"} <= set(rows)
    # exit codes: the help and listings answer, the bad names are errors (2), as a user would see them
    assert rows["sweep --help"][-1] == "0" and rows["sweep ls-objectives"][-1] == "0"
    assert rows["sweep status NAME (no store)"][-1] == "2" and rows["sweep run missing.yaml"][-1] == "2"
    assert rows["sweep run bad_param.yaml"][-1] == "2" and rows["sweep run SHIPPED --dry-run"][-1] == "0"
    assert not (REPO / ".cli_startup").exists()
