"""A sweep run as a batch job (stdout not a terminal) logs status lines, one line per trial start and
end, and the end-of-run table with whole trial ids; --quiet and a terminal keep the table alone."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from sweeps.cli import app
from sweeps.driver.progress import LiveProgress
from sweeps.specs.load import load_spec

SPEC = Path(__file__).resolve().parents[2] / "configs" / "sweeps" / "dhpo_vs_baselines.yaml"


def _run(status_every: float, terminal: bool = False) -> tuple[str, list]:
    spec = load_spec(SPEC, ["seeds=[0]"])
    out = io.StringIO()
    progress = LiveProgress(spec.name, spec.trials, {spec.trials[-1].trial_id: "SKIPPED"},
                            console=Console(file=out, force_terminal=terminal, width=60), status_every=status_every)
    first, second = spec.trials[0].trial_id, spec.trials[1].trial_id
    with progress:
        progress.update(first, "RUNNING")
        progress.update(first, "RUNNING", step=100, metrics={"val/avg/acc": 0.25, "reward/mean": 1.5})
        progress.update(second, "RUNNING", step=50, metrics={"val/avg/acc": 0.5})
        time.sleep(0.35 if status_every else 0.1)
        progress.update(first, "FINISHED", step=200, metrics={"val/avg/acc": 0.3})
        progress.update(second, "FAILED")
    return out.getvalue(), spec.trials


def test_a_batch_log_has_status_lines_and_a_line_per_trial_start_and_end():
    text, trials = _run(status_every=0.1)
    status = re.findall(r"^\[status \d+m\d+s\] sweep dhpo_vs_baselines: (.*)$", text, re.M)
    assert len(status) >= 4  # at the start, every 0.1 s, at the end
    assert status[0] == "skipped 1, pending 5; steps 200/1200; ETA --"
    assert status[-1].startswith("finished 1, skipped 1, pending 3, failed 1; steps 450/1200; ETA ")
    assert status[-1].endswith(f"best val/avg/acc 0.500 ({trials[1].trial_id})")
    first, second = trials[0].trial_id, trials[1].trial_id
    assert f"[{first}] started" in text.splitlines()
    assert f"[{first}] finished at step 200/200  reward/mean=1.5  val/avg/acc=0.3" in text.splitlines()
    assert f"[{second}] failed at step 50/200  val/avg/acc=0.5" in text.splitlines()
    table = text[text.index("┏"):]
    assert all(t.trial_id in table for t in trials)  # the end-of-run table: whole ids at 60 columns
    assert "…" not in table and "FINISHED" in table and "val/avg/acc" in table  # and no cell cut either


def test_quiet_and_a_terminal_show_the_table_alone():
    for text in (_run(status_every=0)[0], _run(status_every=0.1, terminal=True)[0]):
        assert "[status " not in text and "] started" not in text
        assert "dhpo_vs_baselines" in text and "┏" in text


def test_a_bad_interval_is_refused_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    def said(result) -> str:  # typer's error box, unwrapped
        return " ".join(result.output.replace("│", " ").split())

    result = CliRunner().invoke(app, ["run", str(SPEC), "--status-every", "-1"])
    assert result.exit_code == 2 and "SWEEP_STATUS_EVERY: expected seconds >= 0, got -1" in said(result)
    result = CliRunner().invoke(app, ["run", str(SPEC)], env={"SWEEP_STATUS_EVERY": "often"})
    assert result.exit_code == 2 and "SWEEP_STATUS_EVERY: expected float, got 'often'" in said(result)
    for value, error in (("-3", "expected seconds >= 0, got -3"), ("soon", "expected float, got 'soon'")):
        result = CliRunner().invoke(app, ["run", str(SPEC)], env={"SWEEP_WAIT_NOTE_AFTER": value})
        assert result.exit_code == 2 and f"SWEEP_WAIT_NOTE_AFTER: {error}" in said(result), said(result)
    assert not list(tmp_path.iterdir())


def test_a_big_sweeps_status_is_plain_aligned_text_with_whole_cells():
    from sweeps.tracking.status import plain_table

    rows = [(f"grpo-clip0.{i:03d}.s{i}", "GRPO", "FINISHED", "200/200", "0.300") for i in range(3)] + \
        [("dhpo-entropy-branch-a-very-long-id.s0", "DHPO-E", "NOT STARTED", "0/200", "")]
    text = plain_table("big (sqlite:////x/mlflow.db)", ("trial id", "method", "state", "step", "val/avg/acc"), rows)
    lines = text.splitlines()
    assert lines[0] == "big (sqlite:////x/mlflow.db)" and lines[1].split() == ["trial", "id", "method", "state", "step",
                                                                              "val/avg/acc"]
    assert lines[-1].split() == ["dhpo-entropy-branch-a-very-long-id.s0", "DHPO-E", "NOT", "STARTED", "0/200"]
    column = lines[1].index("method")  # every row's method starts where the header's does
    assert all(line[column:].startswith(("GRPO", "DHPO-E", "------")) for line in lines[2:])


def test_the_wait_note_comes_after_sweep_wait_note_after_and_the_run_command_passes_it_on(monkeypatch, tmp_path):
    """The driver's 'waiting for resources' note waits RunOptions.wait_note_after_s (the run command's
    SWEEP_WAIT_NOTE_AFTER), then is said once; the cluster's free and total resources are Ray's (stubbed here)."""
    import contextlib

    import ray

    import sweeps.commands.run as run_command
    from sweeps.driver.tune_callback import DriverState, _say_if_waiting

    class Pending:
        status = "PENDING"

    monkeypatch.setattr(ray, "available_resources", lambda: {"CPU": 0.0})
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        patient = DriverState(slot={"cpu": 1.0}, wait_note_after_s=3600.0)
        _say_if_waiting(patient, [Pending()])
        _say_if_waiting(patient, [Pending()])
        assert said.getvalue() == ""  # not yet: an hour to wait
        eager = DriverState(slot={"cpu": 1.0}, wait_note_after_s=0.0)
        _say_if_waiting(eager, [Pending()])
        _say_if_waiting(eager, [Pending()])
    assert said.getvalue().count("waiting for resources: 1 trial(s) pending") == 1
    assert "each trial needs 1 CPU; the cluster has 0 CPU, 0 GPU free of 2 CPU, 0 GPU" in said.getvalue()

    seen = {}
    monkeypatch.setattr(run_command, "_run_and_report", lambda spec, options, **kw: seen.update(options=options))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(SPEC)], env={"SWEEP_WAIT_NOTE_AFTER": "7.5"})
    assert result.exit_code == 0, result.output
    assert seen["options"].wait_note_after_s == 7.5
