"""`sweep ui SWEEP`: the MLflow UI (3.17) opens on the sweep's curves, grouped by method, ready to compare.

A real store written the way a sweep writes it (SweepTracker: experiment, parent run, child runs
with their metrics; then the report, which sets the parent run's description), `sweep ui SWEEP`
started as a subprocess, and its printed URLs loaded in headless Chromium:

- the curves page (the main URL; the experiment's saved view "Sweep curves" in chart mode) shows,
  without a click, one group per method with a mean line and a min-max band in charts of the papers'
  metrics (entropy, reward, accuracy), and no trial run on its own;
- the trials page lists every trial run (flat, not collapsed under the parent) with the columns
  method, seed and the key metrics (the saved view "Sweep trials"), on the "Model training" side of
  the UI (``workflowType=machine_learning``, not the GenAI overview);
- the parent run's page shows its description: the paper table rendered from Markdown.

The terminal side: the URLs come once /health answers, the server's own output (access log) goes to
``<run dir>/logs/mlflow-ui.log``, nothing is written outside the run dir; an http store prints its pages
and starts nothing (tests/sweeps/test_sweep_ui_terminal.py: a taken port, a server that dies).

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

from contract.metrics import (
                              CLIP_FRACTIONS,
                              ENTROPY,
                              GRAD_NORM,
                              RESPONSE_LENGTH_MEAN,
                              REWARD_MEAN,
                              STEP_TIME,
                              TRIAL_STEP,
                              VAL_AVG,
                              val_key,
                              )
from dashboards.report.writer import NOTE_TAG, ReportConfig, report_from_mlflow
from sweeps.cli import app
from sweeps.specs.load import load_spec
from sweeps.ui.pages import CURVES_VIEW_ID, CURVES_VIEW_TAG, VIEW_ID, VIEW_TAG
from sweeps.tracking.sweep_runs import KIND_TAG, MODEL_TRAINING, SweepTracker
from sweeps.ui.server import answers
from sweeps.ui.views import MAX_TAG_VALUE, view_state, view_tag

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(600)]

SWEEP = "ui_compare"
BENCHMARKS = ("easy", "medium", "hard")  # the default config's benchmarks
CURVES, TRIALS, PARENT = f"curves of {SWEEP} (grouped by method)", f"trials of {SWEEP} (table)", "parent run (report)"


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


def experiment_tags_of(ui) -> dict[str, str]:
    experiment = api(ui["server"], "experiments/get", experiment_id=ui["experiment_id"])["experiment"]
    return {t["key"]: t["value"] for t in experiment["tags"]}


def page_dom(url: str, tmp: Path, must_contain: list[str], attempts: int = 3, budget_ms: int = 20000) -> str:
    """The DOM of `url` after headless Chromium ran the MLflow app; retried while something is missing
    (a slow machine may not have rendered the table within the virtual time budget)."""
    reports = _report_tests()
    browser = reports.require_browser()
    flags = [f for f in reports.FLAGS if not f.startswith("--virtual-time-budget")]
    flags += [f"--virtual-time-budget={budget_ms}", "--window-size=1920,1080"]  # wide: every column rendered
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


def printed_pages(text: str) -> dict[str, str]:
    """label -> URL of the page lines printed so far (whole lines only)."""
    text = text[:text.rfind("\n") + 1]
    return dict(re.findall(r"^(curves of \S+ \(grouped by method\)|trials of \S+ \(table\)|parent run \(report\)): "
                           r"(http\S+)$", text, flags=re.MULTILINE))


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """`sweep ui SWEEP --port P --run-dir DIR --open` serving a recorded sweep: its printed URLs and the store's ids.

    Run in a folder of its own with an empty HOME and TMPDIR (nothing may be written outside the run dir);
    while it starts, its output and /health are polled together (``seen``: (URLs printed, server answers))."""
    root = tmp_path_factory.mktemp("sweep_ui")
    run_dir = root / "runs"
    store = build_store(run_dir)
    home, tmp = root / "home", root / "tmp"
    home.mkdir()
    tmp.mkdir()
    browser = root / "bin" / "open-url"  # --open's web browser (Python's webbrowser runs $BROWSER URL)
    browser.parent.mkdir()
    browser.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {root / 'opened.url'}\n")
    browser.chmod(0o755)
    port = free_port()
    out, err = root / "ui.out", root / "ui.err"
    env = {**subprocess_env(), "HOME": str(home), "TMPDIR": str(tmp), "BROWSER": str(browser)}
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen([sweep_exe(), "ui", SWEEP, "--port", str(port), "--run-dir", str(run_dir), "--open"],
                                cwd=root, env=env, stdout=stdout, stderr=stderr,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = f"http://127.0.0.1:{port}"
    try:
        deadline, pages, seen = time.time() + 300, {}, []
        while time.time() < deadline:
            assert proc.poll() is None, f"sweep ui exited {proc.returncode}: {err.read_text()[-3000:]}"
            pages = printed_pages(out.read_text())  # first the output, then the server: URLs => it answers
            seen.append((bool(pages), answers(server)))
            if len(pages) == 3:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"sweep ui: no URLs within 300 s:\n{out.read_text()[-2000:]}\n{err.read_text()[-3000:]}")
        group = group_commands(proc.pid)
        yield {**store, "server": server, "pages": pages, "group": group, "curves_url": pages[CURVES],
               "runs_url": pages[TRIALS], "parent_url": pages[PARENT], "seen": seen, "root": root,
               "run_dir": run_dir, "home": home, "tmpdir": tmp, "out": out.read_text(), "err": err.read_text(),
               "tmp": tmp_path_factory.mktemp("sweep_ui_browser")}
    finally:
        stop_group(proc)


def group_commands(pgid: int) -> list[str]:
    """The command lines of the live processes of a process group (read from /proc)."""
    commands = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                commands.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, IndexError, ValueError):
            continue
    return commands


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


def test_printed_urls_name_the_curves_view_the_trials_view_and_the_parent_run(ui):
    base = f"{ui['server']}/#/experiments/{ui['experiment_id']}/runs"
    assert f"MLflow UI for {ui['uri']} at {ui['server']}" in ui["out"]
    assert list(ui["pages"]) == [CURVES, TRIALS, PARENT]  # the curves first: the main page
    assert ui["curves_url"] == f"{base}?viewStateShareKey={CURVES_VIEW_ID}&compareRunsMode=CHART&workflowType=machine_learning"
    assert ui["runs_url"] == f"{base}?viewStateShareKey={VIEW_ID}&workflowType=machine_learning"
    assert ui["parent_url"] == f"{base}/{ui['parent_id']}?workflowType=machine_learning"
    opened = ui["root"] / "opened.url"  # --open: the curves page, in the user's web browser
    deadline = time.time() + 30
    while not opened.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert opened.read_text() == ui["curves_url"]


def test_urls_are_printed_once_the_server_answers(ui):
    """Polled together while it started: never a URL while /health did not answer, and it did not at first."""
    assert (True, False) not in ui["seen"], ui["seen"]
    assert ui["seen"][0] == (False, False), ui["seen"][:5]
    assert ui["err"].startswith(f"starting the MLflow UI for {ui['uri']} ..."), ui["err"]


def test_the_servers_output_is_in_the_run_dirs_log_not_on_the_terminal(ui):
    log = ui["run_dir"] / "logs" / "mlflow-ui.log"
    text = log.read_text()
    assert '"GET /health HTTP/1.1" 200' in text and "Uvicorn running on" in text, text[-3000:]
    terminal = ui["out"] + ui["err"]
    assert "GET /" not in terminal and "INFO" not in terminal and "Uvicorn" not in terminal, terminal
    assert terminal.count("mlflow-ui.log") == 1 and f"(its output: {log})" in ui["err"]  # said once
    # nothing written outside the run dir: its folder, HOME and TMPDIR hold what they held before
    outside = {p for p in files_under(ui["root"]) if not p.startswith("runs")}
    assert outside <= {"ui.out", "ui.err", "home", "tmp", "bin", "bin/open-url", "opened.url"}, outside
    assert not files_under(ui["home"]) and not files_under(ui["tmpdir"])


def test_the_server_runs_without_mlflows_job_runners(ui):
    """MLflow's server jobs (huey consumers, a job runner: eight processes, a queue in /dev/shm) are off:
    sweep ui serves pages and runs no GenAI jobs."""
    assert any(" mlflow server " in f" {c}" or "-m mlflow server" in c for c in ui["group"]), ui["group"]
    assert any("uvicorn" in c for c in ui["group"]), ui["group"]  # the web worker: the group was read whole
    runners = [c for c in ui["group"] if "huey" in c or "_job_runner" in c]
    assert not runners, runners


def test_experiment_carries_the_kind_and_the_trials_view(ui):
    """What the page relies on, through the server's REST API."""
    tags = experiment_tags_of(ui)
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


def test_experiment_carries_the_curves_view(ui):
    """The curves view's state, as the UI reads it: trial runs grouped by method, one mean line and
    min-max band per method, smoothed, the papers' curves only, listed before the trials view."""
    tags = experiment_tags_of(ui)
    view, trials = json.loads(tags[CURVES_VIEW_TAG]), json.loads(tags[VIEW_TAG])
    assert view["name"] == "Sweep curves" and view["createdAt"] > trials["createdAt"]  # newest first in "Views"
    state = view_state(tags[CURVES_VIEW_TAG])
    assert state["searchFilter"] == "tags.role = 'trial' and attributes.status != 'FAILED'"
    assert state["groupBy"] == {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": "method"}]}
    assert state["useGroupedValuesInCharts"] is True and state["runsHiddenMode"] == "SHOW_ALL"
    assert state["groupsExpanded"] == {f"tag.method.{t.method}": False for t in ui["trials"].values()}
    line = state["globalLineChartConfig"]
    assert line["xAxisKey"] == "step" and 0 < line["lineSmoothness"] <= 100
    keys = [ENTROPY, RESPONSE_LENGTH_MEAN, REWARD_MEAN, *CLIP_FRACTIONS, VAL_AVG, *(val_key(b) for b in BENCHMARKS)]
    charts, sections = state["compareRunCharts"], {s["uuid"]: s["name"] for s in state["compareRunSections"]}
    assert [c["metricKey"] for c in charts] == keys and all(c["selectedMetricKeys"] == [c["metricKey"]] for c in charts)
    assert {c["type"] for c in charts} == {"LINE"} and all(c["useGlobalLineSmoothing"] for c in charts)
    assert [sections[c["metricSectionId"]] for c in charts] == ["Training curves"] * 6 + ["Validation accuracy"] * 4
    assert state["hideEmptyCharts"] is True and state["isAccordionReordered"] is True
    shown = re.compile(state["chartsSearchFilter"], re.IGNORECASE)  # what the UI matches chart keys with (new RegExp(s, "i"))
    assert all(shown.search(k) for k in keys)
    assert not any(shown.search(k) for k in (TRIAL_STEP, GRAD_NORM, STEP_TIME, val_key("easy") + "_x"))


def test_curves_page_shows_each_methods_curves_without_a_click(ui):
    """The printed curves URL, loaded as is: chart mode, the view "Sweep curves", one group per method
    in the run list and in every chart's legend, the papers' metrics as chart titles, a band per method;
    no trial run of its own in a chart (nor in the list: the groups are collapsed)."""
    methods = sorted({t.method for t in ui["trials"].values()})
    legend = [f"{m} ({k})" for m in methods for k in (ENTROPY, REWARD_MEAN)]
    # charts draw after the run list (the UI's timers use up 20 s of virtual time before a cold server's data)
    dom = page_dom(ui["curves_url"], ui["tmp"] / "curves-page", [f"Group: {m}" for m in methods] + legend,
                   budget_ms=60000)
    text = page_text(dom)
    assert "<title>Runs - " in dom and "| Sweep curves |" in text and "| Group by: method |" in text, text[:3000]
    for m in methods:
        assert f"| Group: {m} |" in text, f"no group {m}: {text[:3000]}"
    for entry in legend:
        assert f"| {entry} |" in text, f"no legend entry {entry!r}: {text[:4000]}"
    for title in ("Training curves", "Validation accuracy", ENTROPY, REWARD_MEAN, VAL_AVG):
        assert f"| {title} |" in text, f"no {title!r} on the page: {text[:4000]}"
    for trial_id in ui["trials"]:
        assert trial_id not in dom, f"trial run {trial_id} shown on its own"
    assert f"| {TRIAL_STEP} |" not in text and "| trial |" not in text  # other metrics' charts: filtered out
    assert dom.count('class="js-fill"') >= 2 * len(methods), "no min-max band per method"


def test_a_view_past_mlflows_tag_limit_is_stored_deflated_and_opens(ui):
    """A state too big for an experiment tag (e.g. very many benchmarks) is stored deflated, which the UI reads."""
    tags = experiment_tags_of(ui)
    state = view_state(tags[CURVES_VIEW_TAG])
    state["groupsExpanded"].update({f"tag.method.unused{i}": False for i in range(2000)})  # past 20,000 characters
    value = view_tag("Sweep curves (deflated)", state, 1, 1)
    assert json.loads(value)["state"].startswith("deflate;") and len(value) <= MAX_TAG_VALUE < len(json.dumps(state))
    assert view_state(value) == state
    MlflowClient(ui["uri"]).set_experiment_tag(ui["experiment_id"], f"{CURVES_VIEW_TAG}-deflated", value)
    url = ui["curves_url"].replace(f"={CURVES_VIEW_ID}&", f"={CURVES_VIEW_ID}-deflated&")
    methods = sorted({t.method for t in ui["trials"].values()})
    legend = [f"{m} ({ENTROPY})" for m in methods]
    text = page_text(page_dom(url, ui["tmp"] / "deflated-page", legend, budget_ms=60000))
    assert "| Sweep curves (deflated) |" in text and all(f"| {e} |" in text for e in legend), text[:3000]


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
    result = CliRunner().invoke(app, ["ui", "no_such_sweep", "--run-dir", str(ui["run_dir"])])
    assert result.exit_code == 2
    assert "no sweep 'no_such_sweep'" in result.output and f"known: {SWEEP}" in result.output


def test_an_http_store_prints_its_pages_and_starts_nothing(ui, tmp_path):
    """The server as the tracking store (an `mlflow server`): its own pages, the curves first; no server, no log."""
    result = CliRunner().invoke(app, ["ui", SWEEP, "--tracking-uri", ui["server"], "--run-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert f"MLflow UI of the tracking server {ui['server']}" in result.output
    assert printed_pages(result.output) == ui["pages"]  # the same pages, on the same server
    assert "starting the MLflow UI" not in result.output and not (tmp_path / "runs").exists()


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
    assert view_state(tags[CURVES_VIEW_TAG])["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": "method"}]


def test_the_curves_views_filter_leaves_failed_trials_out_of_a_real_store(tmp_path):
    """The curves view's search, run by MLflow's own search on a sqlite store: running, finished and
    killed trials stay (a sweep in progress is drawn), a FAILED trial goes (the table leaves it out too),
    and so does every run that is not a trial."""
    from sweeps.ui.views import curves_view_state

    spec = load_spec(Path(__file__).resolve().parents[2] / "configs" / "sweeps" / "dhpo_vs_baselines.yaml")
    from tracking_store.client import open_client
    client = open_client(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.create_experiment("x", artifact_location=str(tmp_path / "artifacts"))
    for status in ("FINISHED", "FAILED", "RUNNING", "KILLED"):
        run = client.create_run(exp, tags={"role": "trial"}, run_name=status)
        if status != "RUNNING":
            client.set_terminated(run.info.run_id, status=status)
    client.create_run(exp, tags={"role": "sweep"}, run_name="parent")
    found = client.search_runs([exp], curves_view_state(spec)["searchFilter"])
    assert sorted(r.info.run_name for r in found) == ["FINISHED", "KILLED", "RUNNING"]
