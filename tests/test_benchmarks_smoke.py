"""The benchmarks' --smoke modes run end to end and print their side-by-side figures (no timing is asserted:
benchmarks/ measures speed, tests do not).

Each smoke is the smallest size that still takes every path its test checks; the sizes are the scripts' own
(their --help and docstrings), and the counts expected here are derived from them. Every test starts processes
that train, start Ray or a server, or run for more than a few seconds: all are slow (`-m "not slow"` skips them)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lane("verl")  # its slow tests' lane (tests/conftest.py)

REPO = Path(__file__).resolve().parent.parent


def _bench(name: str):
    """benchmarks/NAME.py as a module: the smoke sizes the test expects are the script's own constants."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str, timeout: float) -> str:
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_server_reads_smoke_reads_a_server_both_ways_and_the_sqlite_file_to_the_same_table(tmp_path):
    if os.geteuid() != 0 or not (shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))):
        pytest.skip("PostgreSQL's initdb or root (to run it as the postgres user) missing; scripts/setup.sh installs it")
    from dashboards.collect.synthetic_store import METHODS

    trials = len(METHODS) * len(_bench("server_reads").SMOKE["seeds"])
    out = _run("benchmarks/server_reads.py", "--smoke", "--out", str(tmp_path / "reads"), timeout=800)
    assert "copied in" in out and f"runs {trials + 1}," in out  # the synthetic sweep: a parent and its trials
    assert "read copy written (sweep report --rebuild on the sqlite file)" in out
    rows = [line for line in out.splitlines() if line.startswith(("| `sweep status`", "| `sweep report`"))]
    assert len(rows) == 2 and all(row.count(" MB") == 3 for row in rows)  # the server read both ways, the sqlite file
    assert "the report's table.md the same from all 3 reads: yes" in out
    assert not (tmp_path / "reads").exists()


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_objectives_smoke_prints_ours_beside_verl_and_the_compiled_loss(tmp_path):
    """The CPU side of `benchmarks/objectives.py --device cuda`: the same cases, steps, table and JSON."""
    rows_file = tmp_path / "rows.json"
    out = _run("benchmarks/objectives.py", "--device", "cpu", "--smoke", "--only", "grpo,gspo,dhpo entropy branch",
               "--compile", "grpo", "--json", str(rows_file), timeout=280)
    assert "Objective forward+backward, B x T = 4 x 256, fp32, CPU" in out and "comp ms" in out
    rows = {r["case"]: r for r in json.loads(rows_file.read_text())["rows"]}
    assert set(rows) == {"grpo", "gspo", "dhpo entropy branch"}
    assert rows["grpo"]["verl"] == "vanilla" and rows["grpo"]["t_ratio"] > 0 and rows["grpo"]["compiled_ms"] > 0
    assert rows["dhpo entropy branch"]["verl_ms"] is None and rows["gspo"]["compiled_ms"] is None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sweep_scale_smoke_runs_both_drivers_and_every_step_reaches_the_store(tmp_path):
    scale = _bench("sweep_scale")
    n, steps = scale.SMOKE["trials"], scale.SMOKE["steps"]
    assert n > scale.SMOKE["slots"]  # a trial waits for a slot
    evaluations = steps // scale.base_config(steps, 0.0)["trainer"]["eval_every"] + 1  # at steps 0..steps
    figures_file = tmp_path / "scale.json"
    out = _run("benchmarks/sweep_scale.py", "--smoke", "--out", str(tmp_path / "runs"), "--json", str(figures_file),
               timeout=560)
    assert "| N | wall s raw / sweep | ratio |" in out and f"\n| {n} | " in out
    figures = json.loads(figures_file.read_text())["sqlite/grid"][str(n)]
    # n trials x (steps x (11 metrics + 3 compute sums, no GPU's) + trial/step at steps 0..steps
    # + the evaluations x 4 val keys): each once
    assert figures["sweep"]["rows"] == n * (steps * 14 + steps + 1 + evaluations * 4)
    assert figures["sweep"]["runs_listed"] == n + 1 and figures["raw"]["runs_listed"] == n  # + the sweep's parent run
    assert figures["raw"]["rows"] > n * steps * 11  # Tune's own fields besides the trial's
    assert figures["sweep"]["status_s"] > 0 and figures["sweep"]["report_s"] > 0
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.timeout(1200)  # ~3-5 min alone; twice that beside a loaded machine's other jobs
def test_chaos_smoke_survives_every_fault_with_every_step_once_and_the_same_report(tmp_path):
    """benchmarks/chaos.py --smoke: synthetic trials (its SMOKE size) on a 2-node `ray start` cluster and `mlflow
    server` on PostgreSQL, through crashes, a killed worker, a lost node, two killed drivers and a server outage."""
    if os.geteuid() != 0 or not (shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))):
        pytest.skip("PostgreSQL's initdb or root (to run it as the postgres user) missing; scripts/setup.sh installs it")
    chaos = _bench("chaos")
    trials, steps = chaos.SMOKE["trials"], chaos.SMOKE["steps"]
    workdir = REPO / ".rt" / f"chaos-{os.getpid()}"  # short: Ray's temp dir and its Unix sockets go under it
    figures_file = tmp_path / "chaos.json"
    try:
        out = _run("benchmarks/chaos.py", "--smoke", "--workdir", str(workdir), "--json", str(figures_file),
                   timeout=1100)
        assert not workdir.exists()  # removed once every check passed
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert "all checks passed: yes" in out, out[-3000:]
    figures = json.loads(figures_file.read_text())
    assert all(figures["checks"].values()), figures["checks"]
    kinds = ("trial crash", "worker SIGKILL", "node lost + back", "driver SIGKILL", "tracking outage")
    assert all(figures["injected"][kind] > 0 for kind in kinds), figures["injected"]
    assert figures["survived"] == figures["injected"] and figures["injected"]["driver SIGKILL"] == 2
    assert figures["injected"]["trial crash"] == figures["planned_crashes"]
    assert figures["trials"] == trials and figures["steps"] == steps
    # trials x (steps x (11 metrics + 3 compute sums) + trial/step at steps 0..steps + an evaluation at step 0 and
    # every EVERY steps x 4 val keys), each once
    assert figures["rows"]["rows"] == trials * (steps * 14 + steps + 1 + (steps // chaos.EVERY + 1) * 4)
    assert figures["rows"]["duplicates"] == figures["rows"]["missing"] == figures["rows"]["extra"] == 0
    assert set(figures["report_files"]) >= {"table.md", "table.csv"} and figures["report_differing"] == []


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_numerics_smoke_prints_each_mode_beside_native_and_the_same_bytes_twice():
    workdir = REPO / ".rt" / f"numerics-{os.getpid()}"
    try:
        out = _run("benchmarks/numerics.py", "--smoke", "--workdir", str(workdir), timeout=500)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = {line.split()[0]: line for line in out.splitlines() if " aten " in line}
    assert set(rows) == {"native", "reproducible", "no-vector"}
    assert "MKL COMPATIBLE, oneDNN off" in rows["reproducible"] and "MKL off, oneDNN on" in rows["native"]
    assert "two reproducible processes, the same base bytes: yes" in out
    assert "reproducible vs native base bytes: differ" in out
