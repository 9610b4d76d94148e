"""`sweep fit CURVES` (sweeps/commands/fit.py, dashboards/collect/curve_files.py): curves from anywhere fitted as
`sweep report` fits a sweep's; every bad input named before anything is fitted."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dashboards.stats.curve_simulation import simulate
from sweeps.cli import app

REPO = Path(__file__).resolve().parents[2]
SWEEP = [sys.executable, "-c", "from sweeps.cli import main; main()"]
CSV_HEAD = ["A", "A_low", "A_high", "B", "B_low", "B_high", "C_mid", "C_mid_low", "C_mid_high", "fit"]


def _curves(tmp_path: Path, name: str = "curves.csv", **edit) -> Path:
    frame = simulate({"GRPO": (0.40, 1.4, 35.0), "DHPO": (0.50, 1.4, 35.0)}, rng=np.random.default_rng(1), model="Qwen3")
    frame = frame.rename(columns={"x": "step"})
    for column, change in edit.items():
        frame = change(frame) if column == "frame" else frame.assign(**{column: change(frame[column])})
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _run(*args: str):
    return CliRunner().invoke(app, ["fit", *args])


@pytest.mark.slow
def test_sweep_fit_prints_the_table_and_writes_the_csv_and_figure(tmp_path):
    """The command as a user types it: a subprocess in the directory of the file."""
    path = _curves(tmp_path)
    out = subprocess.run([*SWEEP, "fit", path.name, "-f", "csv", "--baselines", "GRPO", "--figure", "fits.png"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout.split("wrote")[0])))
    assert [(r["model"], r["method"]) for r in rows] == [("Qwen3", "GRPO"), ("Qwen3", "DHPO")]
    assert set(CSV_HEAD) <= set(rows[0])
    dhpo = rows[1]
    assert dhpo["fit"] == "ok" and float(dhpo["A_low"]) <= 50 <= float(dhpo["A_high"])  # x100, the truth inside
    assert float(dhpo["dA"]) == pytest.approx(10, abs=4) and float(dhpo["dA_p_holm"]) < 0.05
    assert (tmp_path / "fits.png").read_bytes()[:4] == b"\x89PNG"
    md = _run(str(path), "--baselines", "GRPO")
    assert md.exit_code == 0 and "| Qwen3 | _GRPO_ | 3 |" in md.output and "ScaleRL" in md.output


def test_percentages_need_the_scale_and_then_match_fractions(tmp_path):
    percent = _curves(tmp_path, "percent.csv", value=lambda v: v * 100)
    refused = _run(str(percent))
    assert refused.exit_code == 2
    assert "outside [0, 1]: give --scale (e.g. --scale 100" in refused.output and "percent.csv" in refused.output
    scaled = _run(str(percent), "--scale", "100", "-f", "csv")
    plain = _run(str(_curves(tmp_path)), "-f", "csv")
    assert scaled.exit_code == plain.exit_code == 0
    for a, b in zip(*(list(csv.DictReader(io.StringIO(r.stdout))) for r in (scaled, plain)), strict=True):
        assert a["fit"] == b["fit"] and a.keys() == b.keys()
        for key in ("A", "A_low", "B_high", "C_mid", "dA", "last_predicted"):
            assert (a[key] == b[key] == "") or float(a[key]) == pytest.approx(float(b[key]), rel=1e-5), key


@pytest.mark.parametrize("edit,needle", [
    ({"frame": lambda f: f.drop(columns=["value"])}, "missing column(s) value; expected columns method, seed, value"),
    ({"frame": lambda f: f.drop(columns=["step"])}, "missing column(s) step or compute"),
    ({"frame": lambda f: f[(f["method"] != "DHPO") | (f["step"] <= 20)]}, "Qwen3 / DHPO: 3 point(s) at 1 value(s) of step > 0; a fit needs at least 4 points at 3 values"),
    ({"frame": lambda f: f[(f["method"] != "DHPO") | ((f["step"] == 20) & (f["seed"] == 0))]}, "Qwen3 / DHPO: 1 point(s)"),
    ({"value": lambda v: v.where(v.index != 5, 1.7)}, "column 'value' runs from"),
    ({"value": lambda v: v.astype(object).where(v.index != 3, "abc")}, "column 'value', row 4 (line 5): 'abc' is not a number"),
    ({"step": lambda s: s.where(s.index != 4, -20)}, "column 'step': -20 is negative"),
    ({"frame": lambda f: pd.concat([f, f.iloc[[7]]])}, "(model 'Qwen3', method 'GRPO', seed 0, step 140) is given twice"),
])
def test_bad_curves_files_are_named_before_any_fit(tmp_path, edit, needle):
    result = _run(str(_curves(tmp_path, **edit)))
    assert result.exit_code == 2 and needle in result.output, result.output
    assert "curves.csv" in result.output and "Traceback" not in result.output


def test_bad_options_and_paths(tmp_path):
    path = _curves(tmp_path)
    for args, needle in [(["--baselines", "PPO"], "--baselines PPO: not a method of curves.csv; its methods: DHPO, GRPO"),
                         (["--r0", "zero"], "--r0: expected base or fit"),
                         (["--extrapolate", "1.5"], "--extrapolate: expected a share"),
                         (["--figure", "fits.svg"], "--figure fits.svg: expected a .png or .pdf"),
                         (["--x", "compute"], "--x compute: the file has no column 'compute'"),
                         (["--benchmark", "aime24"], "--benchmark aime24: the file has no benchmark column")]:
        result = _run(str(path), *args)
        assert result.exit_code == 2 and needle in result.output, (args, result.output)
    missing = _run(str(tmp_path / "absent.csv"))
    assert missing.exit_code == 2 and "curves file not found" in missing.output
    assert _run().exit_code == 2 and "CURVES: expected a curves file (or --smoke)" in _run().output


def test_benchmarks_are_averaged_per_point_or_one_is_chosen(tmp_path):
    base = _curves(tmp_path)
    frame = pd.read_csv(base)
    both = pd.concat([frame.assign(benchmark="easy", value=frame["value"] + 0.05),
                      frame.assign(benchmark="hard", value=frame["value"] - 0.05)])
    path = tmp_path / "bench.csv"
    both.to_csv(path, index=False)
    plain = _run(str(base), "-f", "csv")
    averaged = _run(str(path), "-f", "csv")
    assert averaged.exit_code == 0 and "mean over 2 benchmarks" in averaged.stderr
    assert averaged.stdout == plain.stdout  # easy + 0.05 and hard - 0.05: the mean is the file's curve
    easy = {r["method"]: r for r in csv.DictReader(io.StringIO(_run(str(path), "--benchmark", "easy", "-f", "csv").stdout))}
    rows = {r["method"]: r for r in csv.DictReader(io.StringIO(plain.stdout))}
    assert float(easy["GRPO"]["R0"]) == pytest.approx(float(rows["GRPO"]["R0"]) + 5, abs=1e-6)  # x100


@pytest.mark.slow
def test_smoke_fits_simulated_curves_end_to_end(tmp_path):
    out = subprocess.run([*SWEEP, "fit", "--smoke"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "| simulated | GRPO | 3 |" in out.stdout and "Khatri et al. 2025" in out.stdout
    assert not [p for p in tmp_path.iterdir() if p.name != ".cache"]  # its simulated file is removed
