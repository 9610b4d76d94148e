"""`sweep table` / `sweep report` through typer's CliRunner through the sweep app, and the smoke mode."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from sweeps.cli import app as sweep_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def app() -> typer.Typer:
    return sweep_app  # the `sweep` command itself


@pytest.fixture
def results_csv(tmp_path) -> Path:
    rows = []
    for method, vals in {"Base": (0.50, 0.10), "GRPO": (0.60, 0.20), "GSPO": (0.62, 0.18), "DHPO-E": (0.65, 0.25)}.items():
        for seed in ((0,) if method == "Base" else (0, 1)):
            for bench, v in zip(("gsm8k", "aime25"), vals):
                rows.append(dict(model="Qwen3-1.7B", method=method, benchmark=bench, value=v + 0.01 * seed, seed=seed))
    p = tmp_path / "results.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    return p


def test_table_markdown_with_avg_base_and_delta(app, results_csv):
    r = CliRunner().invoke(app, ["table", str(results_csv), "--format", "md", "--base", "Base",
                                 "--baselines", "GRPO,GSPO", "--delta-avg", "--benchmarks", "gsm8k,aime25"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "| Method | gsm8k | aime25 | AVG | Delta Avg |"
    assert "| Base | 50.0 | 10.0 | 30.0 | — |" in lines
    # GRPO: (60.5, 20.5) AVG 40.5, Delta +10.5; GSPO AVG 40.5 too -> tied strongest baselines
    assert "| GRPO | _60.5_ | <u>_20.5_</u> | <u>_40.5_</u> | <u>_+10.5_</u> |" in lines
    assert "| DHPO-E | **65.5** | **25.5** | **45.5** | **+15.5** |" in lines


def test_table_latex_csv_html_and_out_file(app, results_csv, tmp_path):
    r = CliRunner().invoke(app, ["table", str(results_csv), "-f", "latex", "--decimals", "2", "--std"])
    assert r.exit_code == 0 and "\\begin{tabular}" in r.stdout and "\\textbf{65.50 $\\pm$ 0.71}" in r.output
    out = tmp_path / "t.csv"
    r = CliRunner().invoke(app, ["table", str(results_csv), "-f", "csv", "--out", str(out), "--seeds"])
    assert r.exit_code == 0 and "wrote" in r.output
    df = pd.read_csv(out)
    assert df.set_index("method").loc["GSPO", "AVG"] == 40.5 and df.set_index("method").loc["GSPO", "n"] == 2
    r = CliRunner().invoke(app, ["table", str(results_csv), "-f", "html", "--scale", "1", "--decimals", "3"])
    assert r.exit_code == 0 and "<b>0.655</b>" in r.output


def test_table_errors_are_clear(app, tmp_path, results_csv):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"method": ["A"], "value": [1]}).to_csv(bad, index=False)
    r = CliRunner().invoke(app, ["table", str(bad)])
    assert r.exit_code == 2 and "missing column(s) ['model', 'benchmark']" in r.output and str(bad) in r.output
    r = CliRunner().invoke(app, ["table", str(results_csv), "--delta-avg"])
    assert r.exit_code == 2 and "TableConfig.delta_avg" in r.output
    r = CliRunner().invoke(app, ["table", str(results_csv), "--format", "pdf"])
    assert r.exit_code == 2 and "'pdf' is not one of" in " ".join(r.output.split()).replace("│", "")


def test_help_texts_have_examples_and_list_the_choices(app):
    for cmd in ("table", "report"):
        r = CliRunner().invoke(app, [cmd, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
        assert r.exit_code == 0 and "Examples" in r.output and f"sweep {cmd}" in r.output
    def words(cmd: str) -> set[str]:  # a choice cut short by a narrow column would be another word
        text = CliRunner().invoke(app, [cmd, "--help"], env={"COLUMNS": "200", "TERM": "dumb"}).output
        return set(re.findall(r"[\w-]+", text))
    assert {"final", "best", "minmax", "std", "seeds", "none", "method", "config"} <= words("report")
    assert {"latex", "md", "html", "csv"} <= words("table")


@pytest.mark.slow
def test_report_command_on_a_store(app, known_store, tmp_path):
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["report", known_store.sweep, "--tracking-uri", known_store.uri, "--out", str(out),
                                 "--base", "Base", "--delta-avg", "--ema-alpha", "0.02", "--no-log",
                                 "--curves", "actor/entropy,val/avg/acc", "--formats", "html,md"])  # no figures
    assert r.exit_code == 0, r.output
    assert (out / "report.html").exists() and "| Base |" in (out / "table.md").read_text()
    # The store of a run directory: found from --run-dir alone, the report where `sweep run` writes it.
    r = CliRunner().invoke(app, ["report", known_store.sweep, "--run-dir", str(known_store.root), "--no-log",
                                 "--formats", "md"], env={"MLFLOW_TRACKING_URI": ""})
    assert r.exit_code == 0, r.output
    assert (Path(known_store.root) / "known" / "report" / "table.md").exists()
    # $MLFLOW_TRACKING_URI comes before the run directory (and --tracking-uri before both).
    r = CliRunner().invoke(app, ["report", known_store.sweep, "--run-dir", str(tmp_path / "empty"), "--no-log",
                                 "--formats", "md", "--out", str(tmp_path / "env")],
                           env={"MLFLOW_TRACKING_URI": known_store.uri})
    assert r.exit_code == 0 and (tmp_path / "env" / "table.md").exists(), r.output
    r = CliRunner().invoke(app, ["report", known_store.sweep, "--no-log", "--tracking-uri",
                                 f"sqlite:///{tmp_path / 'none.db'}"], env={"MLFLOW_TRACKING_URI": known_store.uri})
    # --tracking-uri wins; a store that does not exist is named and not created (a read command never creates one)
    assert r.exit_code == 2 and "no MLflow store at" in r.output and "none.db" in r.output
    assert not (tmp_path / "none.db").exists()
    r = CliRunner().invoke(app, ["report", "nope", "--tracking-uri", known_store.uri, "--out", str(out)])
    assert r.exit_code == 2 and "unknown sweep 'nope'" in r.output


@pytest.mark.slow
def test_a_warning_reaches_the_console_as_one_note_line_never_as_pythons_print(known_store, tmp_path):
    """A warning inside `sweep report` or `sweep table` (here: a --benchmarks column with no values) is one
    `note:` line on stderr, not Python's `file:line: UserWarning: ...` and its source line; run as a user runs
    them, outside pytest (which records warnings itself)."""
    (tmp_path / "ok.csv").write_text("model,method,benchmark,value\nm,A,gsm8k,0.5\nm,B,gsm8k,0.6\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(PYTHONPATH=str(REPO), MLFLOW_TRACKING_URI="")
    for args in (["report", known_store.sweep, "--tracking-uri", known_store.uri, "--out", str(tmp_path / "rep"),
                  "--no-log", "--formats", "md", "--benchmarks", "easy,bogus"],
                 ["table", str(tmp_path / "ok.csv"), "--benchmarks", "gsm8k,bogus"]):
        done = subprocess.run([sys.executable, "-m", "sweeps.cli", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "note: TableConfig.benchmarks: no values for ['bogus']; shown as '—'" in done.stderr.splitlines()
        assert not re.search(r"Warning\b|warnings\.warn|\.py:\d+", done.stderr), done.stderr


REPORT_FOLDER_UNSEEN = {  # documented files the known store's report cannot have, and where they are written
    "figures/dynamics.*": "one model's names: the known store has two (m-small, m-large)",
    "figures/benchmarks.*": "the same",
    "figures/clipfrac.*": "the same",
    "figures/grid_heatmap.*": "methods of one family sharing configurations: tests/dashboards/test_grid_stats.py",
    **dict.fromkeys(["curves.md", "curves.tex", "curves.csv", "curves_seeds.csv", "figures/compute_curves.*",
                     "figures/compute_curves_<model>.*"],
                    "a fit needs 4 evaluations a trial, the known store has 3: tests/dashboards/test_compute_report.py"),
}


def documented_report_files() -> dict[str, re.Pattern]:
    """The paths docs/reports.md's table of the report folder names (`file.ext`, `figures/name.*`, a hidden folder
    `.name/` for all it holds), each as the pattern of the files it stands for (`*`: a format, `<model>`: a model);
    a bare `figures/` names none."""
    text = (REPO / "docs" / "reports.md").read_text(encoding="utf-8")
    section = text[text.index("## The report folder"):]
    rows = [ln for ln in section[:section.index("\n\n", section.index("| file |"))].splitlines() if ln.startswith("| `")]
    names = [t for row in rows for t in re.findall(r"`([^`\s]+)`", row)
             if re.fullmatch(r"\.[a-z_]+/|[a-z_]+\.[a-z*]+|figures/[^/]+", t)]
    return {n: re.compile(re.escape(n).replace(r"\*", "[a-z]+").replace("<model>", "[^/]+") + (".*" if n.endswith("/") else ""))
            for n in names}


@pytest.mark.slow
def test_the_documented_report_folder_is_what_sweep_report_writes(known_store, tmp_path):
    """Every file `sweep report` writes (every format, as a user runs it: a process of its own) is in the docs'
    table of the report folder, and every file there is written (but those REPORT_FOLDER_UNSEEN says why not)."""
    documented = documented_report_files()
    assert {"table.md", "aggregates.md", "report.html", "figures/aggregates.*", "figures/profiles.*"} <= set(documented)
    out = tmp_path / "rep"
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"}
    env.update(PYTHONPATH=str(REPO), MLFLOW_TRACKING_URI="")
    done = subprocess.run([sys.executable, "-m", "sweeps.cli", "report", known_store.sweep, "--tracking-uri",
                           known_store.uri, "--out", str(out), "--no-log", "--formats", "html,md,latex,csv,png,pdf,svg"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    undocumented = [w for w in written if not any(d.fullmatch(w) for d in documented.values())]
    assert not undocumented, f"docs/reports.md's table of the report folder lacks {undocumented}"
    unwritten = [n for n, d in documented.items() if n not in REPORT_FOLDER_UNSEEN and not any(map(d.fullmatch, written))]
    assert not unwritten, f"docs/reports.md names {unwritten}, which sweep report did not write: {written}"


REPORT_WITHOUT_MLFLOW = """
import sys
from typer.testing import CliRunner
from sweeps.cli import app
result = CliRunner().invoke(app, sys.argv[1:])
print(result.output)
print(result.exit_code, "mlflow" in sys.modules)
"""


@pytest.mark.slow
def test_report_on_a_sqlite_store_logs_in_place_without_importing_mlflow(tmp_path):
    """On the sqlite default `sweep report` reads the tables and writes its files and the parent run's
    description itself (tracking_store/run_files.py): MLflow is never imported, and MLflow reads them back."""
    from mlflow import MlflowClient

    from dashboards_store import fill_known_store

    (tmp_path / "store").mkdir()
    store = fill_known_store(tmp_path / "store")
    env = {**os.environ, "PYTHONPATH": str(REPO), "MLFLOW_TRACKING_URI": ""}
    proc = subprocess.run([sys.executable, "-c", REPORT_WITHOUT_MLFLOW, "report", store.sweep, "--tracking-uri",
                           store.uri, "--out", str(tmp_path / "rep"), "--formats", "md,png"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.stdout.splitlines()[-1] == "0 False", proc.stdout[-3000:] + proc.stderr[-3000:]
    client = MlflowClient(store.uri)
    logged = {f.path for f in client.list_artifacts(store.parent_run_id, "report")}
    assert {"report/table.md", "report/aggregates.md", "report/figures"} <= logged, logged
    figures = {f.path for f in client.list_artifacts(store.parent_run_id, "report/figures")}
    assert "report/figures/aggregates.png" in figures, figures
    note = client.get_run(store.parent_run_id).data.tags["mlflow.note.content"]
    table = (tmp_path / "rep" / "table.md").read_text(encoding="utf-8")
    assert table.splitlines()[0] in note and table.splitlines()[2] in note


@pytest.mark.slow
def test_report_command_reads_spec_section(app, known_store, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: known\nseeds: [0, 1]\nreport:\n  table: {select_by: val/avg/acc, at: best}\n"
                    "  curves: [actor/entropy]\n  formats: [md]\n")
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["report", "--spec", str(spec), "--tracking-uri", known_store.uri,
                                 "--out", str(out), "--no-log"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["aggregates.md", "grid.md", "table.md"]  # md: table, aggregates, grid
    spec.write_text("name: known\nreport: {tabel: {}}\n")
    r = CliRunner().invoke(app, ["report", "--spec", str(spec), "--tracking-uri", known_store.uri, "--no-log"])
    assert r.exit_code == 2 and "did you mean 'table'" in r.output


@pytest.mark.slow
def test_smoke_mode_runs_in_a_temp_dir_inside_cwd(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "dashboards", "--smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "smoke ok" in proc.stdout and "| DHPO-E |" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # cleaned up


def test_table_detects_the_scale_both_ways_and_says_so(app, results_csv, tmp_path):
    fractions = CliRunner().invoke(app, ["table", str(results_csv), "-f", "csv"])
    assert fractions.exit_code == 0 and "shown x100" in fractions.stderr
    assert "65.5" in fractions.stdout  # DHPO-E gsm8k: mean of 0.65 and 0.66, as percent
    percent = tmp_path / "percent.csv"
    df = pd.read_csv(results_csv)
    df["value"] = df["value"] * 100  # a file already in percent
    df.to_csv(percent, index=False)
    shown = CliRunner().invoke(app, ["table", str(percent), "-f", "csv"])
    assert shown.exit_code == 0 and "shown as given" in shown.stderr
    assert "65.5" in shown.stdout and "6550" not in shown.stdout
    forced = CliRunner().invoke(app, ["table", str(percent), "-f", "csv", "--scale", "0.01"])
    assert forced.exit_code == 0 and "note:" not in forced.stderr and "0.7" in forced.stdout


def test_table_columns_keep_the_files_order(app, results_csv):
    r = CliRunner().invoke(app, ["table", str(results_csv), "-f", "md"])
    assert r.stdout.splitlines()[0] == "| Method | gsm8k | aime25 | AVG |"  # the file lists gsm8k first
    r = CliRunner().invoke(app, ["table", str(results_csv), "-f", "md", "--benchmarks", "aime25,gsm8k"])
    assert r.stdout.splitlines()[0] == "| Method | aime25 | gsm8k | AVG |"
