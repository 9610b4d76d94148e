"""A stop rule in a real sweep (real Ray, real MLflow, real training), typed as docs/spec.md writes it:
the trial ends FINISHED at the step the rule fired with its `stopped_by` tag, the step's metrics are
logged, a re-run treats it as done, and the report's table footnotes it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from sweep_testlib import children, client_for, short_cwd, steps_of, subprocess_env, sweep_exe, write_spec

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(900)]


def sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sweep_exe(), *args], cwd=cwd, env=subprocess_env(), capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def test_stop_rule_ends_the_trial_finished_with_its_reason_and_a_rerun_skips_it():
    cwd = short_cwd()
    path = write_spec(cwd, "stopsweep", seeds=(0,), steps=8, variants=[{"algorithm": "grpo"}])
    spec = yaml.safe_load(path.read_text())
    # response lengths are always >= 1 token: this rule holds at every step, so it fires at step 3
    spec["stop"] = [{"metric": "response_length/mean", "above": 0.5, "for_steps": 3, "name": "always"}]
    path.write_text(yaml.safe_dump(spec, sort_keys=False))

    first = sweep(cwd, "run", path.name)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    client = client_for(cwd / "runs")
    run = children(client, "stopsweep")["grpo.s0"]
    assert run.info.status == "FINISHED"
    assert run.data.tags["stopped_by"] == "rule always at step 3"
    assert steps_of(client, run.info.run_id, "response_length/mean") == [1, 2, 3]  # the step that fired is logged
    assert run.data.metrics["trial/step"] == 3
    assert "Stopped early by a stop rule: GRPO grpo.s0 (rule always at step 3)" in first.stdout

    again = sweep(cwd, "run", path.name)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "'SKIPPED': 1" in again.stdout
    assert steps_of(client, run.info.run_id, "response_length/mean") == [1, 2, 3]
