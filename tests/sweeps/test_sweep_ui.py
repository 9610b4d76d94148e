"""`sweep ui SWEEP`: the MLflow UI (3.17) opens on the sweep's trial runs, ready to compare.

A real store written the way a sweep writes it (SweepTracker: experiment, parent run, child runs
with their metrics; then the report, which sets the parent run's description), `sweep ui SWEEP`
started as a subprocess, and its printed URLs loaded in headless Chromium:

- the runs page lists every trial run (flat, not collapsed under the parent) with the columns
  method, seed and the key metrics (the experiment's saved view "Sweep trials"), on the
  "Model training" side of the UI (``workflowType=machine_learning``, not the GenAI overview);
- the parent run's page shows its description: the paper table rendered from Markdown.

The browser is found as in tests/dashboards/test_dashboards_report.py (a missing one fails under
CI=true, else skips the browser tests).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from sweep_testlib import subprocess_env, sweep_exe
from typer.testing import CliRunner

from dashboards.report import NOTE_TAG, ReportConfig, report_from_mlflow
from sweeps.cli import app
from sweeps.spec import load_spec
from sweeps.store import VIEW_ID, VIEW_TAG
from sweeps.tracking import KIND_TAG, MODEL_TRAINING, SweepTracker

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SWEEP = "ui_compare"
BENCHMARKS = ("easy", "medium", "hard")  # the default config's benchmarks


def _report_tests():
    """tests/dashboards/test_dashboards_report.py (its browser lookup and flags), imported once."""
    name = "test_dashboards_report"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "dashboards" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_store(run_dir: Path) -> dict:
    """A sweep of 2 methods x 2 seeds, 3 steps each, recorded by SweepTracker; then its report."""
    run_dir.mkdir(parents=True, exist_ok=True)
    spec_file = run_dir / f"{SWEEP}.yaml"
    spec_file.write_text(f"name: {SWEEP}\nseeds: [0, 1]\nvariants: [{{algorithm: grpo}}, {{algorithm: gspo}}]\n")
    spec = load_spec(spec_file, ["base.trainer.steps=3"])
    uri = f"sqlite:///{(run_dir / 'mlflow.db').resolve()}"
    tracker = SweepTracker(spec, uri, run_dir)
    for i, trial in enumerate(spec.trials):
        tracker.start_trial(trial)
        for step in (1, 2, 3):
            accs = {f"val/{b}/acc": 0.1 * step + 0.02 * i + 0.01 * j for j, b in enumerate(BENCHMARKS)}
            tracker.log_result(trial.trial_id, step, {**accs, "val/avg/acc": sum(accs.values()) / len(accs),
                                                      "actor/entropy": 1.0 / step, "reward/mean": 0.2 * step})
        tracker.flush(trial.trial_id)
        tracker.end_trial(trial.trial_id, "FINISHED")
    tracker.end_sweep("FINISHED")
    report_from_mlflow(SWEEP, tracking_uri=uri, out_dir=run_dir / SWEEP / "report", config=ReportConfig(formats=["md"]))
    return {"uri": uri, "experiment_id": tracker.experiment_id, "parent_id": tracker.parent_id,
            "trials": {t.trial_id: t for t in spec.trials}}


def api(server: str, path: str, **query) -> dict:
    with urllib.request.urlopen(f"{server}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}", timeout=30) as r:
        return json.loads(r.read())


def page_dom(url: str, tmp: Path, must_contain: list[str], attempts: int = 3) -> str:
    """The DOM of `url` after headless Chromium ran the MLflow app; retried while something is missing
    (a slow machine may not have rendered the table within the virtual time budget)."""
    reports = _report_tests()
    browser = reports.require_browser()
    flags = [f for f in reports.FLAGS if not f.startswith("--virtual-time-budget")]
    flags += ["--virtual-time-budget=20000", "--window-size=1920,1080"]  # wide: every column rendered
    dom = ""
    for attempt in range(attempts):
        profile, home = tmp / f"profile-{attempt}", tmp / "chromium-home"
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_CACHE_HOME": str(home / ".cache")}
        proc = subprocess.run([browser, *flags, f"--user-data-dir={profile}", "--dump-dom", url],
                              capture_output=True, text=True, timeout=180, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        dom = proc.stdout
        if all(s in dom for s in must_contain):
            break
    return dom


def page_text(dom: str) -> str:
    """The page's visible text, cells separated by ' | '."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    return re.sub(r"(\s*\|\s*)+", " | ", re.sub(r"<[^>]+>", " | ", dom))


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """`sweep ui SWEEP --port P --run-dir DIR` serving a recorded sweep: its printed URLs and the store's ids."""
    root = tmp_path_factory.mktemp("sweep_ui")
    run_dir = root / "runs"
    store = build_store(run_dir)
    port = free_port()
    out = root / "ui.out"
    with open(out, "w") as stdout, open(root / "ui.err", "w") as stderr:  # files: the server logs every request
        proc = subprocess.Popen([sweep_exe(), "ui", SWEEP, "--port", str(port), "--run-dir", str(run_dir)],
                                cwd=root, env=subprocess_env(), stdout=stdout, stderr=stderr,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = f"http://127.0.0.1:{port}"
    try:
        deadline, lines = time.time() + 300, {}
        while time.time() < deadline:
            assert proc.poll() is None, f"sweep ui exited {proc.returncode}: {(root / 'ui.err').read_text()[-3000:]}"
            text = out.read_text()
            lines = dict(re.findall(r"^(runs of \S+|parent run \(report\)): (http\S+)$", text, flags=re.M))
            if len(lines) == 2:
                try:
                    with urllib.request.urlopen(f"{server}/health", timeout=5):
                        break
                except OSError:
                    pass
            time.sleep(1)
        else:
            pytest.fail(f"sweep ui: no URLs or no server within 300 s:\n{out.read_text()[-2000:]}\n"
                        f"{(root / 'ui.err').read_text()[-3000:]}")
        yield {**store, "server": server, "runs_url": lines[f"runs of {SWEEP}"],
               "parent_url": lines["parent run (report)"], "out": out.read_text(), "tmp": root}
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen, timeout: float = 120) -> None:
    """SIGTERM to sweep ui, which stops the mlflow server it started (and the server its workers) and
    then exits; whatever of its process group is still there after `timeout` is killed."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the usual case: nothing left
        pass
    proc.wait(timeout=30)


def test_printed_urls_name_the_runs_view_and_the_parent_run(ui):
    base = f"{ui['server']}/#/experiments/{ui['experiment_id']}/runs"
    assert f"MLflow UI for {ui['uri']} at {ui['server']}" in ui["out"]
    assert ui["runs_url"] == f"{base}?viewStateShareKey={VIEW_ID}&workflowType=machine_learning"
    assert ui["parent_url"] == f"{base}/{ui['parent_id']}?workflowType=machine_learning"


def test_experiment_carries_the_kind_and_the_trials_view(ui):
    """What the page relies on, through the server's REST API."""
    tags = {t["key"]: t["value"] for t in api(ui["server"], "experiments/get", experiment_id=ui["experiment_id"])
            ["experiment"]["tags"]}
    assert tags[KIND_TAG] == MODEL_TRAINING
    view = json.loads(tags[VIEW_TAG])
    state = json.loads(view["state"])
    assert view["name"] == "Sweep trials" and isinstance(view["createdAt"], int)
    assert state["searchFilter"] == "tags.role = 'trial'" and state["orderByKey"] == "tags.`mlflow.runName`"
    assert state["selectedColumns"][:2] == ["tags.`method`", "tags.`seed`"]
    assert {f"metrics.`val/{b}/acc`" for b in BENCHMARKS} | {"metrics.`val/avg/acc`", "metrics.`actor/entropy`"} \
        <= set(state["selectedColumns"])
    note = api(ui["server"], "runs/get", run_id=ui["parent_id"])["run"]["data"]["tags"]
    note = {t["key"]: t["value"] for t in note}[NOTE_TAG]
    assert f"**Sweep `{SWEEP}`**" in note and "| Method |" in note and "seeds: 0, 1" in note
    assert re.search(rf"spec `\S*runs/{SWEEP}\.yaml`", note) and "4 trials (FINISHED 4)" in note


def test_runs_page_lists_the_trials_with_method_seed_and_metrics(ui):
    trials = ui["trials"]
    dom = page_dom(ui["runs_url"], ui["tmp"] / "runs-page", list(trials) + ["val/avg/acc"])
    text = page_text(dom)
    assert "<title>Runs - " in dom, text[:1500]  # the runs tab, not the GenAI overview
    for trial_id in trials:
        assert f"| {trial_id} |" in text, f"trial run {trial_id} not on the page: {text[:3000]}"
    assert f"| {SWEEP} |" not in text.split("Sort:")[-1]  # the parent row is filtered out
    header = text[text.index("| Run Name |"):text.index(f"| {next(iter(trials))} |")]
    for column in ("method", "seed", "val/easy/acc", "val/avg/acc", "actor/entropy"):
        assert f"| {column} |" in header, f"column {column} missing: {header}"
    for t in trials.values():  # each row's method and seed cells
        assert f"| {t.method} | {t.config.seed} |" in text, text[:3000]
    assert "| 4 | matching runs |" in text


def test_parent_run_page_shows_the_paper_table(ui):
    note = {t["key"]: t["value"] for t in api(ui["server"], "runs/get", run_id=ui["parent_id"])["run"]["data"]["tags"]}
    table = [ln for ln in note[NOTE_TAG].splitlines() if ln.startswith("| ")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    dom = page_dom(ui["parent_url"], ui["tmp"] / "parent-page", ["<th>Method</th>"])
    assert "<table>" in dom and all(f"<th>{h}</th>" in dom for h in head), page_text(dom)[:3000]
    for method in {t.method for t in ui["trials"].values()}:  # its row: the method, then its first value
        row = next(ln for ln in table if ln.startswith(f"| {method} |"))
        value = re.sub(r"<[^>]+>|\*\*|_", "", row.strip("|").split("|")[1]).strip()
        assert re.search(rf"<td>{re.escape(method)}</td>\s*<td>(<\w+>)*{re.escape(value)}(</\w+>)*</td>", dom), \
            f"row {row!r} not rendered: {page_text(dom)[:3000]}"
    assert f"Sweep <code>{SWEEP}</code>" in dom


def test_unknown_sweep_exits_2_with_the_known_names(ui):
    result = CliRunner().invoke(app, ["ui", "no_such_sweep", "--run-dir", str(ui["tmp"] / "runs")])
    assert result.exit_code == 2
    assert "no sweep 'no_such_sweep'" in result.output and f"known: {SWEEP}" in result.output


def test_a_rerun_tags_an_experiment_recorded_before(tmp_path):
    """A sweep whose experiment existed without the UI tags gets them when it runs again."""
    spec_file = tmp_path / "old.yaml"
    spec_file.write_text("name: old\nseeds: [0]\nvariants: [{algorithm: grpo}]\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    exp_id = MlflowClient(uri).create_experiment("old")
    assert KIND_TAG not in MlflowClient(uri).get_experiment(exp_id).tags
    SweepTracker(load_spec(spec_file, ["base.trainer.steps=2"]), uri, tmp_path)
    tags = MlflowClient(uri).get_experiment(exp_id).tags
    assert tags[KIND_TAG] == MODEL_TRAINING and json.loads(json.loads(tags[VIEW_TAG])["state"])["searchFilter"]
