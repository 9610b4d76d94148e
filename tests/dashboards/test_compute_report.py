"""The report's compute-curves section (dashboards/report/compute_section.py): a sweep's evaluations against its compute
axis, fitted as `sweep fit` fits a file, written beside the table, drawn, and logged on the parent run."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from dashboards.stats.compute_curves import fit_study
from dashboards.stats.compute_fit import OK, STATUSES
from dashboards.report.compute_section import curves_frame, metric_safe
from dashboards.report.writer import ReportConfig, write_report
from dashboards.model.report import CurvesConfig


@pytest.fixture(scope="module")
def curves_store(tmp_path_factory):
    from dashboards.collect.sweep_runs import collect
    from dashboards.collect.synthetic_store import fill_store

    root = tmp_path_factory.mktemp("curves_store")
    uri = f"sqlite:///{root}/mlflow.db"
    fill_store(uri, "curves", artifact_root=str(root / "artifacts"), seeds=(0, 1, 2), steps=60, eval_every=6)
    return uri, collect("curves", tracking_uri=uri)


@pytest.mark.slow
def test_the_report_writes_fits_figures_html_and_parent_run_metrics(curves_store, tmp_path):
    from mlflow import MlflowClient

    uri, data = curves_store
    cfg = ReportConfig.from_dict({"table": {"baselines": ["GRPO"]}, "formats": ["html", "md", "latex", "csv", "png"],
                                  "compute_curves": {"fit_from": 0.1}})
    paths = write_report(data, tmp_path, cfg, log_to_run=data.parent_run_id)
    assert {"curves_md", "curves_latex", "curves_csv", "curves_seeds", "png:compute_curves"} <= set(paths)
    rows = list(csv.DictReader(paths["curves_csv"].open()))
    methods = sorted(set(data.trials["method"]))
    assert sorted(r["method"] for r in rows) == methods and all(r["fit"] in STATUSES for r in rows)
    study = fit_study(curves_frame(data.history, cfg.compute_curves)[0], cfg.compute_curves, baselines=["GRPO"])
    for row, m in zip(rows, study.methods):  # the file is the fit of the history, x100
        assert (row["method"], row["fit"]) == (m.method, m.fit.status)
        if m.fit.status == OK:
            assert float(row["A"]) == pytest.approx(100 * m.fit.A) and float(row["C_mid"]) == pytest.approx(m.fit.C_mid)
    seeds = list(csv.DictReader(paths["curves_seeds"].open()))
    assert len(seeds) == len(data.trials)  # one fit per trial
    assert "<h2>Compute curves</h2>" in paths["html"].read_text() and "ScaleRL" in paths["curves_md"].read_text()
    logged = MlflowClient(uri).get_run(data.parent_run_id).data.metrics
    ok = [r for r in rows if r["fit"] == OK]
    assert ok, rows  # the synthetic curves bend: some fit is identified
    assert {k for k in logged if k.startswith("curves/")} == {
        f"curves/{r['model']}/{metric_safe(r['method'])}/{p}" for r in ok for p in ("A", "A_low", "A_high", "B", "C_mid")}
    assert metric_safe("SSPO (atanlog)") == "SSPO _atanlog_"  # MLflow allows no brackets in a metric key
    r = ok[0]
    assert logged[f"curves/{r['model']}/{metric_safe(r['method'])}/A"] == pytest.approx(float(r["A"]) / 100)


def test_the_compute_axis_is_the_cumulative_value_at_each_evaluation():
    """An evaluation at step s is placed at the compute key's value logged at s (or the last before it), 0 at the base."""
    rows = [("r1", "m", "GRPO", "c", "0", "val/avg/acc", step, acc) for step, acc in ((0, 0.1), (10, 0.3), (25, 0.4))]
    rows += [("r1", "m", "GRPO", "c", "0", "perf/tokens_generated", step, 100.0 * step) for step in range(1, 21)]
    history = pd.DataFrame(rows, columns=["run_id", "model", "method", "config", "seed", "key", "step", "value"])
    frame, notes = curves_frame(history, CurvesConfig(x="tokens"))
    assert frame["x"].tolist() == [0.0, 1000.0, 2000.0] and frame["value"].tolist() == [0.1, 0.3, 0.4] and not notes
    by_step, _ = curves_frame(history, CurvesConfig(x="step"))
    assert by_step["x"].tolist() == [0, 10, 25]
    no_axis, notes = curves_frame(history[history["key"] != "perf/tokens_generated"], CurvesConfig(x="tokens"))
    assert no_axis.empty and "1 trial(s) without perf/tokens_generated" in notes[0]


def test_the_spec_section_is_validated():
    with pytest.raises(ValueError, match=r"report.compute_curves.x: must be one of \['step', 'tokens'"):
        ReportConfig.from_dict({"compute_curves": {"x": "flops"}})
    with pytest.raises(ValueError, match=r"report.compute_curves: unknown key 'fit_frm'.*fit_from"):
        ReportConfig.from_dict({"compute_curves": {"fit_frm": 0.2}})
    with pytest.raises(ValueError, match=r"report.compute_curves.extrapolate: must be a share of the compute in \(0, 1\)"):
        ReportConfig.from_dict({"compute_curves": {"extrapolate": 1.0}})
    assert ReportConfig.from_dict({"compute_curves": {"x": "seconds", "r0": "fit"}}).compute_curves.r0 == "fit"


def test_a_grid_of_many_configs_is_not_fitted_and_says_why():
    from dashboards.report.compute_section import MAX_FAMILIES, compute_section

    rows = [(f"r{c}.{s}", "m", "GRPO", f"c{c}", str(s), "val/avg/acc", step, 0.1 + 0.001 * step)
            for c in range(MAX_FAMILIES + 1) for s in range(2) for step in (0, 10, 20, 30, 40)]
    history = pd.DataFrame(rows, columns=["run_id", "model", "method", "config", "seed", "key", "step", "value"])
    section, notes = compute_section(history, CurvesConfig())
    assert section is None and f"{MAX_FAMILIES + 1} method/config curve families" in notes[-1]


@pytest.mark.slow
def test_several_models_get_a_figure_each_and_their_own_fits(curves_store, tmp_path):
    """Two models: one `compute_curves_<model>` figure each, and every method fitted once per model."""
    from dashboards.report.compute_section import compute_section

    _, data = curves_store
    other = data.history.assign(run_id=data.history["run_id"].astype(str) + "-b", model="m-b")
    history = pd.concat([data.history.astype({"run_id": str, "model": str}), other], ignore_index=True)
    section, _ = compute_section(history, CurvesConfig(fit_from=0.1))
    models = sorted(set(data.history["model"]) | {"m-b"})
    assert sorted(section.draws()) == [f"compute_curves_{m}" for m in models]
    fitted = {(m.model, m.method) for m in section.study.methods}
    assert fitted == {(model, method) for model in models for method in set(data.trials["method"])}
    a, b = ({m.method: m.fit.A for m in section.study.methods if m.model == model} for model in models)
    assert a == pytest.approx(b, nan_ok=True)  # the same points: the same fit
