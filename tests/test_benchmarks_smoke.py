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
