"""write_report(): one offline HTML file, static figures, artifacts on the parent run, ReportConfig
parsing, curves that end at the table's values, the run note, and the page rendered by headless
Chromium without console errors (the row of three panels with axis titles and a legend).

Chromium: `apt-get install -y chromium` (Debian), which `bash scripts/setup.sh` does when run as
root. The browser is looked up on PATH (chromium, chromium-browser, google-chrome, chrome). Without
one the browser tests FAIL under CI=true (CI must render the page) and are skipped, with the
install command as the reason, elsewhere (local development).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from contract.metrics import ENTROPY, VAL_AVG
from dashboards.report.writer import DEFAULT_EMA_ALPHA, ReportConfig, build_figures, run_note, write_report
from dashboards.tables.from_sweep import table_from_sweep
from dashboards.tables.build import AVG, TableConfig

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
INSTALL_HINT = ("install Chromium with `apt-get install -y chromium` (Debian/Ubuntu, as root), "
                "or run `bash scripts/setup.sh` as root (after `rm -f .venv/.setup-*` if set-up already ran)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def require_browser() -> str:
    """Path of the first browser of BROWSERS on PATH; else fail under CI=true, skip elsewhere."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    reason = f"no headless Chromium on PATH (looked for {', '.join(BROWSERS)}): {INSTALL_HINT}"
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def chromium_dom(browser: str, page: Path, profile: Path) -> tuple[str, list[str]]:
    """Load the page in headless Chromium: (rendered DOM, console lines from the page)."""
    home = profile.parent / "chromium-home"  # Chromium writes crash reports/dconf under $HOME: keep them here
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache")}
    proc = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    return proc.stdout, console


class PlotCounter(HTMLParser):
    """Per plot div (id fig-N): how many <svg class="main-svg"> and trace groups it contains; its
    axis titles, legend entries and legend title (`texts`), and its panels' plot areas (`panels`)."""

    TEXTS = re.compile(r"^(?:[xy]\d*title|legendtext|legendtitletext)$")

    def __init__(self):
        super().__init__()
        self.stack: list[str | None] = []  # fig id owning each open <div>
        self.plots: dict[str, dict[str, int]] = {}
        self.texts: dict[str, list[tuple[str, str]]] = {}  # fig id -> (class, text)
        self.panels: dict[str, list[tuple[float, float]]] = {}  # fig id -> (x, y) of each subplot

    def _owner(self):
        return next((o for o in reversed(self.stack) if o), None)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div":
            fid = a.get("id") if (a.get("id") or "").startswith("fig-") else None
            if fid:
                self.plots[fid] = {"svg": 0, "traces": 0}
            self.stack.append(fid)
        owner = self._owner()
        if owner and tag == "svg" and "main-svg" in (a.get("class") or ""):
            self.plots[owner]["svg"] += 1
        if owner and tag == "g" and re.search(r"\btrace\b", a.get("class") or ""):
            self.plots[owner]["traces"] += 1
        if owner and tag == "text" and self.TEXTS.match(a.get("class") or ""):
            self.texts.setdefault(owner, []).append((a["class"], a.get("data-unformatted", "")))
        if owner and tag == "rect" and "nsewdrag" in (a.get("class") or "") and a.get("data-subplot"):
            self.panels.setdefault(owner, []).append((float(a["x"]), float(a["y"])))

    def handle_endtag(self, tag):
        if tag == "div" and self.stack:
            self.stack.pop()


def html_traces(page: str, div_id: str) -> list[dict]:
    """The plotly traces of one figure of a written report, typed arrays ({dtype, bdata}) decoded."""
    start = page.index("[", page.index(f'Plotly.newPlot(                        "{div_id}"'))
    traces, _ = json.JSONDecoder().raw_decode(page, start)
    for t in traces:
        for k in ("x", "y"):
            if isinstance(t.get(k), dict):
                t[k] = np.frombuffer(base64.b64decode(t[k]["bdata"]), dtype=t[k]["dtype"]).tolist()
    return traces


@pytest.fixture(scope="module")
def report(known_store, known_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    cfg = ReportConfig.from_dict({"table": {"base": "Base", "delta_avg": True, "baselines": ["GRPO", "GSPO"]},
                                  "curves": ["actor/entropy", "response_length/mean", "val/avg/acc", "not/logged"],
                                  "ema_alpha": 0.5, "formats": ["html", "md", "latex", "csv"]})
    paths = write_report(known_data, out, cfg, log_to_run=known_store.parent_run_id)
    return out, paths, cfg


@pytest.mark.slow
def test_report_files_and_self_contained_html(report, known_data):
    out, paths, cfg = report
    assert set(paths) == {"html", "md", "latex", "csv", "aggregates", "grid"}  # aggregates.md, grid.md (with md)
    html = paths["html"].read_text()
    # offline: plotly.js is inlined (the first script) and nothing is fetched from elsewhere
    assert not re.search(r"<script[^>]+src=", html) and not re.search(r"<link[^>]+href=", html)
    inline_js, rest = html.split("</script>", 1)
    assert len(inline_js) > 3_000_000 and "plotly.js" in inline_js[:2000]
    assert "cdn.plot.ly" not in rest and "https://" not in rest
    assert html.count('class="plotly-graph-div"') == 2 * 3 + 1  # 2 models x (dynamics, benchmarks, clipfrac), aggregates
    assert '<table class="paper-table">' in html and "Not logged, not drawn: not/logged" in html
    assert "| Base |" in paths["md"].read_text() and "\\toprule" in paths["latex"].read_text()
    assert paths["csv"].read_text().startswith("model,method,config,n,")


def test_report_logged_as_parent_run_artifacts(report, known_store):
    from mlflow import MlflowClient

    arts = {a.path for a in MlflowClient(known_store.uri).list_artifacts(known_store.parent_run_id, "report")}
    assert arts == {"report/report.html", "report/table.md", "report/table.tex", "report/table.csv",
                    "report/aggregates.md", "report/grid.md"}  # the known sweep is a grid (several configs per method)
    assert str(Path(known_store.root)) in MlflowClient(known_store.uri).get_run(known_store.parent_run_id).info.artifact_uri


def test_html_curves_end_at_the_tables_values(report, known_data):
    """The accuracy panel's last point per method = the unsmoothed mean over seeds of the final evaluation,
    x100 = the table's AVG (the table's config of GRPO's two); per-step entropy IS smoothed (ema_alpha 0.5)."""
    out, paths, cfg = report
    traces = html_traces(paths["html"].read_text(), "fig-0")  # m-small: entropy | response length | accuracy
    lines = {(t["yaxis"], t["name"]): t for t in traces if "name" in t}  # the mean lines (bands: no name)
    table = table_from_sweep(known_data, cfg.table)
    h = known_data.history
    for row in (r for r in table.rows if r.model == "m-small" and not r.is_base):
        acc = lines[("y3", row.label)]
        final = h[(h["config"] == row.config) & (h["key"] == VAL_AVG) & (h["step"] == 10)]["value"]
        assert len(final) == 2 and acc["x"][-1] == 10
        assert acc["y"][-1] == pytest.approx(100 * final.mean()) == pytest.approx(100 * row.cells[AVG].mean)
        ent = h[(h["config"] == row.config) & (h["key"] == ENTROPY) & (h["step"] == 10)]["value"]
        assert lines[("y", row.label)]["y"][-1] > ent.mean() + 1e-3  # falling curve, smoothed: above the raw mean
    grpo = [t for t in traces if t.get("name") == "GRPO" and t["yaxis"] == "y3"]
    assert len(grpo) == 1 and "Curves of a method with several configs show the config the table shows" \
        in paths["html"].read_text()


@pytest.mark.slow
def test_failed_trials_are_not_drawn_as_the_table_leaves_them_out(known_data, tmp_path):
    """A FAILED trial's steps are in the store, but neither the table's mean nor the curves have them: the
    accuracy line of its method ends at its other seed's value, the table's cell, and a note says so."""
    cfg = ReportConfig.from_dict({"curves": ["val/avg/acc"], "formats": ["html"]})
    table = table_from_sweep(known_data, cfg.table)
    row = next(r for r in table.rows if r.model == "m-small" and not r.is_base and "," not in r.config)
    trials = known_data.trials.copy()
    runs = trials.index[(trials["config"] == row.config) & (trials["model"] == "m-small")]
    assert len(runs) == 2
    trials.loc[runs[0], "status"] = "FAILED"
    kept = trials.loc[runs[1], "run_id"]
    data = dataclasses.replace(known_data, trials=trials)
    paths = write_report(data, tmp_path, cfg)
    page = paths["html"].read_text()
    h = known_data.history
    final = h[(h["run_id"] == kept) & (h["key"] == VAL_AVG) & (h["step"] == 10)]["value"]
    traces = html_traces(page, "fig-0")
    line = next(t for t in traces if t.get("name") == row.label and t["yaxis"] == "y")
    assert line["y"][-1] == pytest.approx(100 * final.item())
    after = next(r for r in table_from_sweep(data, cfg.table).rows if (r.model, r.label) == (row.model, row.label))
    assert line["y"][-1] == pytest.approx(100 * after.cells[AVG].mean)
    assert line["y"][-1] != pytest.approx(100 * row.cells[AVG].mean)  # the two seeds' mean: what it drew before
    assert "1 FAILED trial(s) not drawn" in page


@pytest.mark.slow
def test_static_figures_by_default_and_logged_as_artifacts(known_store, known_data, tmp_path):
    from mlflow import MlflowClient

    client = MlflowClient(known_store.uri)
    run = client.create_run(client.get_experiment_by_name(known_store.sweep).experiment_id).info.run_id
    assert {"png", "pdf"} <= set(ReportConfig().formats)
    paths = write_report(known_data, tmp_path, ReportConfig(), log_to_run=run)
    figures = {f"{m}-{f}.{ext}" for m in ("m-small", "m-large") for f in ("dynamics", "benchmarks", "clipfrac")
               for ext in ("png", "pdf")} | {f"{f}.{ext}" for f in ("aggregates", "profiles") for ext in ("png", "pdf")}
    # one interval figure and one performance-profile figure per study
    figures |= {"grid_sensitivity.png", "grid_sensitivity.pdf"}  # a grid: each configuration's score
    assert {p.name for k, p in paths.items() if ":" in k} == figures
    assert all((tmp_path / "figures" / n).stat().st_size > 5000 for n in figures)
    assert (tmp_path / "figures" / "m-small-dynamics.pdf").read_bytes().startswith(b"%PDF-")
    logged = {a.path for a in client.list_artifacts(run, "report/figures")}
    assert logged == {f"report/figures/{n}" for n in figures}
    assert "report/report.html" in {a.path for a in client.list_artifacts(run, "report")}


@pytest.mark.slow
def test_run_note_relates_mlflow_values_to_the_tables_scale(known_data):
    cfg = ReportConfig()
    table = table_from_sweep(known_data, cfg.table)
    assert "MLflow's charts show the logged values" in run_note(known_data, table, cfg)
    assert "(e.g. 0.523 in MLflow = 52.3 here)" in run_note(known_data, table, cfg)
    plain = ReportConfig(table=TableConfig(scale=1.0, decimals=3))
    assert "MLflow's charts" not in run_note(known_data, table_from_sweep(known_data, plain.table), plain)


def test_report_config_from_dict_and_validation():
    cfg = ReportConfig.from_dict({"table": {"select_by": "val/avg/acc", "at": "final"},
                                  "curves": ["actor/entropy", "response_length/mean", "val/avg/acc"]})
    assert cfg.table == TableConfig(select_by="val/avg/acc", at="final") and cfg.ema_alpha == DEFAULT_EMA_ALPHA == 0.1
    with pytest.raises(ValueError, match=r"report: unknown key 'curve' \(did you mean 'curves'\?\)"):
        ReportConfig.from_dict({"curve": ["x"]})
    with pytest.raises(ValueError, match=r"report.table: unknown key 'selectby' \(did you mean 'select_by'\?\)"):
        ReportConfig.from_dict({"table": {"selectby": "AVG"}})
    with pytest.raises(ValueError, match=r"TableConfig.at:"):
        ReportConfig.from_dict({"table": {"at": "end"}})
    for bad, field in (({"ema_alpha": 0}, "ema_alpha"), ({"formats": ["gif"]}, "formats"), ({"band": "x"}, "band"),
                       ({"curves": "actor/entropy"}, "curves"), ({"by": "seed"}, "by")):
        with pytest.raises(ValueError, match=rf"ReportConfig\.{field}:"):
            ReportConfig.from_dict(bad)


@pytest.mark.slow
def test_chromium_renders_every_figure_without_console_errors(report, known_data, tmp_path):
    browser = require_browser()  # in the test body (not a fixture): a missing browser under CI is a FAILURE
    out, paths, cfg = report
    n_figs = sum(len(build_figures(known_data.history, cfg, m)) for m in ("m-small", "m-large"))
    dom, console = chromium_dom(browser, paths["html"], tmp_path / "profile")
    assert console == [], console
    counter = PlotCounter()
    counter.feed(dom)
    assert sorted(counter.plots) == sorted([f"fig-{i}" for i in range(n_figs)] + ["fig-aggregates"])
    for fid, c in counter.plots.items():
        assert c["svg"] >= 1 and c["traces"] >= 3, (fid, c)  # rendered, with its lines drawn
    assert '<table class="paper-table">' in dom
    # the first figure: ONE row of three panels (DHPO Fig. 1), axis titles with units, a legend entry per method
    panels = counter.panels["fig-0"]
    assert len(panels) == 3 and len({y for _, y in panels}) == 1 and sorted(x for x, _ in panels) == [x for x, _ in panels]
    texts = counter.texts["fig-0"]
    assert [t for c, t in texts if c.startswith("x")] == ["training step"] * 3
    assert [t for c, t in texts if c.startswith("y")] == ["entropy (nats/token)", "response length (tokens)",
                                                          "accuracy (%)"]
    assert [t for c, t in texts if c == "legendtext"] == ["GRPO", "GSPO", "DHPO-E"]
    assert [t for c, t in texts if c == "legendtitletext"] == ["lines: mean over 2 seeds; band: min–max over the 2 seeds"]


@pytest.mark.slow
def test_chromium_check_catches_console_errors(tmp_path):
    """Control: the console capture used above does see errors and broken plots."""
    browser = require_browser()
    page = tmp_path / "bad.html"
    page.write_text('<html><body><div id="fig-0" class="plotly-graph-div"></div>'
                    "<script>console.error('boom'); undefinedFn();</script></body></html>")
    dom, console = chromium_dom(browser, page, tmp_path / "profile")
    assert any("boom" in ln for ln in console) and any("Uncaught ReferenceError" in ln for ln in console)
    counter = PlotCounter()
    counter.feed(dom)
    assert counter.plots == {"fig-0": {"svg": 0, "traces": 0}}


@pytest.mark.parametrize("ci", ["true", "TRUE", "1"])
def test_missing_browser_fails_under_ci(monkeypatch, ci):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match=r"CI=true but .*apt-get install -y chromium.*scripts/setup\.sh"):
        require_browser()


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_missing_browser_skips_outside_ci(monkeypatch, ci):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install -y chromium.*scripts/setup\.sh"):
        require_browser()


def test_browser_lookup_order(monkeypatch):
    """Any of the names on PATH is used, the first of BROWSERS winning; never under CI a skip."""
    monkeypatch.setenv("CI", "true")
    for present in (["chrome"], ["google-chrome", "chrome"], ["chromium-browser", "chrome"], list(BROWSERS)):
        which = lambda name, present=present: f"/opt/bin/{name}" if name in present else None  # noqa: E731
        monkeypatch.setattr(shutil, "which", which)
        assert require_browser() == f"/opt/bin/{present[0]}"


@pytest.mark.slow
def test_image_export_when_kaleido_is_available(known_data, tmp_path, monkeypatch):
    """The PNG/SVG plumbing (file names, paths) with plotly's write_image stubbed out."""
    import importlib.util

    import plotly.graph_objects as go

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "kaleido" else real(n, *a))
    monkeypatch.setattr(go.Figure, "write_image", lambda self, path, **kw: Path(path).write_bytes(b"img"))
    cfg = ReportConfig(formats=["png", "svg"], clipfrac=False)
    paths = write_report(known_data, tmp_path, cfg)
    names = sorted(p.name for k, p in paths.items() if ":" in k)
    assert names == sorted([f"{m}-{f}.{ext}" for m in ("m-small", "m-large") for f in ("dynamics", "benchmarks")
                            for ext in ("png", "svg")] + ["aggregates.png", "aggregates.svg", "profiles.png",
                                                          "profiles.svg", "grid_sensitivity.png", "grid_sensitivity.svg"])
    assert all((tmp_path / "figures" / n).exists() for n in names) and "html" not in paths


@pytest.mark.slow
def test_report_footer_shows_the_provenance(known_store, tmp_path):
    from dashboards.report.writer import report_from_mlflow
    from mlflow.tracking import MlflowClient

    client = MlflowClient(known_store.uri)
    parent = client.search_runs([client.get_experiment_by_name(known_store.sweep).experiment_id],
                                "tags.role = 'parent'")[0].info.run_id
    client.set_tag(parent, "provenance.git_commit", "0123abc")
    client.set_tag(parent, "provenance.torch", "2.13.0")
    paths = report_from_mlflow(known_store.sweep, tracking_uri=known_store.uri, out_dir=tmp_path / "r", log=False,
                               config=ReportConfig(formats=["html"]))  # the page only: no static figures drawn
    page = paths["html"].read_text()
    footer = page[page.index("<footer"):]
    assert "Provenance" in footer and "git_commit</code>: 0123abc" in footer and "torch</code>: 2.13.0" in footer


@pytest.mark.slow
def test_report_reads_only_the_keys_it_shows_and_is_unchanged(known_store, known_data, tmp_path):
    """history_keys leaves the per-step keys the report does not draw unread; the table and the drawn curves
    are the same as from every key."""
    from dashboards.collect.sweep_runs import collect, find_runs
    from dashboards.model.report import history_keys

    cfg = ReportConfig(curves=[ENTROPY, VAL_AVG], clipfrac=False, formats=["md", "csv"])
    found = find_runs(known_store.sweep, tracking_uri=known_store.uri)
    logged = {k for r in found.runs for k in r.metrics}
    keys = history_keys(cfg, logged)
    assert "response_length/mean" in logged and "response_length/mean" not in keys  # logged every step, not drawn
    assert "actor/clipfrac_token" not in keys and "actor/pg_clipfrac" in keys  # the grid's mechanism key stays
    assert {ENTROPY, VAL_AVG, "val/easy/acc", "val/hard/acc"} <= set(keys)
    lean = collect(found=found, keys=keys)
    assert set(lean.history["key"]) == set(keys)
    whole, part = write_report(known_data, tmp_path / "whole", cfg), write_report(lean, tmp_path / "lean", cfg)
    assert part["md"].read_text() == whole["md"].read_text() and part["csv"].read_text() == whole["csv"].read_text()
    for key in keys:
        pick = lambda d: d.history[d.history["key"] == key].sort_values(["run_id", "step"])["value"].to_numpy()  # noqa: E731
        np.testing.assert_array_equal(pick(lean), pick(known_data))


def test_the_report_keys_are_known_without_plotly_or_pandas():
    """The driver asks history_keys for the read copy's keys: that import stays light (a --no-report sweep)."""
    import subprocess
    import sys

    code = ("import sys; from dashboards.model.report import ReportConfig, history_keys; "
            "keys = history_keys(ReportConfig(), {'val/avg/acc', 'actor/entropy', 'timing/step_s'}); "
            "print(keys, sorted(m for m in ('plotly', 'pandas', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['actor/entropy', 'val/avg/acc'] []"
