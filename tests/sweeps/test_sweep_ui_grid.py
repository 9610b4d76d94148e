"""`sweep ui` of a grid: the saved "Sweep grid" view (one parallel-coordinates chart of the swept parameters
and the final selection score, runs listed by method) is printed first, opened by --open, and renders in
headless Chromium. The store is a real SweepTracker recording of a 2 x 2 grid with a selection split."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from sweep_testlib import subprocess_env, sweep_exe
from test_sweep_ui import api, free_port, page_dom, page_text, stop_group

from sweeps.specs.load import load_spec
from sweeps.ui.pages import GRID_VIEW_ID, GRID_VIEW_TAG
from sweeps.tracking.sweep_runs import SweepTracker
from sweeps.ui.server import answers
from sweeps.ui.views import view_state

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(600)]

SWEEP = "ui_grid"
PAGE = re.compile(r"^(grid of \S+ \(parallel coordinates\)|curves of \S+ \(grouped by method\)|trials of \S+ \(table\)"
                  r"|parent run \(report\)): (http\S+)$", flags=re.MULTILINE)


def record_grid(run_dir):
    run_dir.mkdir(parents=True)
    spec_file = run_dir / f"{SWEEP}.yaml"
    spec_file.write_text(f"name: {SWEEP}\nseeds: [0, 1]\nbase: {{data: {{select_size: 4}}}}\nvariants:\n"
                         "  - {algorithm: grpo, clip: {low: 0.1, high: 0.1}}\n  - {algorithm: grpo, clip: {low: 0.3, high: 0.3}}\n"
                         "  - {algorithm: sapo, tau_neg: 1.0, tau_pos: 1.05}\n  - {algorithm: sapo, tau_neg: 7.0, tau_pos: 8.0}\n")
    spec = load_spec(spec_file, ["base.trainer.steps=2"])
    uri = f"sqlite:///{(run_dir / 'mlflow.db').resolve()}"
    tracker = SweepTracker(spec, uri, run_dir)
    for i, trial in enumerate(spec.trials):
        tracker.start_trial(trial)
        for step in (1, 2):
            tracker.log_result(trial.trial_id, step, {"val/avg/acc": 0.1 * step + 0.01 * i,
                                                      "select/avg/acc": 0.2 * step + 0.01 * i})
        tracker.flush(trial.trial_id)
        tracker.end_trial(trial.trial_id, "FINISHED")
    tracker.end_sweep("FINISHED")
    return tracker.experiment_id


def test_a_grid_opens_on_its_parallel_coordinates(tmp_path):
    run_dir, home = tmp_path / "runs", tmp_path / "home"
    home.mkdir()
    experiment_id = record_grid(run_dir)
    opener = tmp_path / "open-url"
    opener.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {tmp_path / 'opened.url'}\n")
    opener.chmod(0o755)
    port, out = free_port(), tmp_path / "ui.out"
    env = {**subprocess_env(), "HOME": str(home), "BROWSER": str(opener)}
    with open(out, "w") as stdout:
        proc = subprocess.Popen([sweep_exe(), "ui", SWEEP, "--port", str(port), "--run-dir", str(run_dir), "--open"],
                                cwd=tmp_path, env=env, stdout=stdout, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while time.time() < deadline and len(PAGE.findall(out.read_text())) < 4:
            assert proc.poll() is None, out.read_text()[-3000:]
            time.sleep(0.2)
        pages = dict(PAGE.findall(out.read_text()))
        labels = list(pages)
        assert labels[0] == f"grid of {SWEEP} (parallel coordinates)" and len(labels) == 4, out.read_text()
        url = pages[labels[0]]
        assert f"viewStateShareKey={GRID_VIEW_ID}&compareRunsMode=CHART" in url
        deadline = time.time() + 30
        while not (tmp_path / "opened.url").exists() and time.time() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "opened.url").read_text() == url  # --open: the grid, a grid study's main page
        assert answers(server)

        tags = {t["key"]: t["value"] for t in api(server, "experiments/get", experiment_id=experiment_id)["experiment"]["tags"]}
        grpo, sapo = view_state(tags[GRID_VIEW_TAG])["compareRunCharts"]  # one per set of swept params
        assert {grpo["type"], sapo["type"]} == {"PARALLEL"}
        assert grpo["selectedMetrics"] == sapo["selectedMetrics"] == ["select/avg/acc", "val/avg/acc"]
        assert grpo["selectedParams"] == ["algorithm.params.eps_low", "algorithm.params.eps_high"]
        assert sapo["selectedParams"] == ["algorithm.params.tau_pos", "algorithm.params.tau_neg"]
        assert grpo["displayName"] == "grpo: select/avg/acc" and sapo["displayName"] == "sapo: select/avg/acc"
        axes = ["algorithm.params.tau_neg", "algorithm.params.eps_low", "select/avg/acc", "Parallel Coordinates"]
        dom = page_dom(url, tmp_path / "browser", ["Sweep grid", *axes], budget_ms=60000)
        text = page_text(dom)
        assert "| Sweep grid |" in text and "| Group by: method |" in text and "| Grid | (2) |" in text, text[:3000]
        for axis in axes:
            assert axis in dom, f"no axis {axis!r} in the parallel chart: {text[:4000]}"
    finally:
        stop_group(proc)
