"""How fast the `sweep` command answers, side by side with the optuna and mlflow command lines.

    python benchmarks/cli_startup.py            # 7 runs of each command, medians
    python benchmarks/cli_startup.py --smoke    # 1 run of each (~10 s on 2 cores)

Times whole processes (interpreter start, imports, the answer) from this virtualenv's entry points:
`sweep --help`, `sweep run --help`, `sweep ls-objectives`, `sweep status NAME` and `sweep ui NAME`
on a run dir without a store (both answer "no store" with exit 2), `sweep run missing.yaml` (a bad
spec name), `sweep run bad_param.yaml` (a spec with an unknown objective parameter, written into the
scratch dir: exit 2 after parsing it), `sweep run dhpo_vs_baselines.yaml --dry-run` (a shipped spec
validated and listed) and the peers `optuna --help` and `mlflow --help`. Prints each command's median
and its ratio to `optuna --help`. Nothing is written outside ./.cli_startup/ (removed at the end).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(cmd: list[str], cwd: Path, runs: int) -> tuple[float, int]:
    """Median wall seconds of `runs` runs, and the exit code of the last."""
    times, code = [], 0
    env = {**os.environ, "MLFLOW_TRACKING_URI": "", "COLUMNS": "100"}
    env.pop("MLFLOW_TRACKING_URI")
    for _ in range(runs):
        t0 = time.perf_counter()
        code = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - t0)
    return statistics.median(times), code


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="1 run per command (~10 s)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    runs = 1 if args.smoke else args.runs
    work = Path.cwd() / ".cli_startup"
    work.mkdir(exist_ok=True)
    (work / "bad_param.yaml").write_text("name: bad\nvariants:\n  - {algorithm: grpo, eps_lo: 0.2}\n")
    sweep = str(BIN / "sweep")
    commands = {
        "optuna --help (peer)": [str(BIN / "optuna"), "--help"],
        "mlflow --help (peer)": [str(BIN / "mlflow"), "--help"],
        "sweep --help": [sweep, "--help"],
        "sweep run --help": [sweep, "run", "--help"],
        "sweep run missing.yaml": [sweep, "run", "missing.yaml"],
        "sweep run bad_param.yaml": [sweep, "run", "bad_param.yaml"],
        "sweep run SHIPPED --dry-run": [sweep, "run", "dhpo_vs_baselines.yaml", "--dry-run"],
        "sweep status NAME (no store)": [sweep, "status", "nothing_here"],
        "sweep ui NAME (no store)": [sweep, "ui", "nothing_here"],
        "sweep ls-objectives": [sweep, "ls-objectives"],
    }
    try:
        results = {name: timed(cmd, work, runs) for name, cmd in commands.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    peer = results["optuna --help (peer)"][0]
    print(f"CLI start-up, median of {runs} runs (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print(f"{'command':32s} {'seconds':>8s} {'x optuna':>9s} {'exit':>5s}")
    for name, (seconds, code) in results.items():
        print(f"{name:32s} {seconds:8.2f} {seconds / peer:9.2f} {code:5d}")


if __name__ == "__main__":
    main()
