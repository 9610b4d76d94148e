"""The sbatch script `sweep slurm` writes (sweeps/slurm/job_script.py): Slurm's time forms, the options refused
before anything is submitted, and the script itself: options in order, arguments quoted as bash reads them, no
credential in it, a script bash parses. The script run by a real Slurm: test_sweep_slurm.py."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from sweeps.slurm.job_script import REQUEUE_EXIT, SlurmJob, SweepCall, job_name, render_script, time_limit_seconds


@pytest.mark.parametrize("text, seconds", [
    ("90", 5400), ("30:15", 1815), ("4:00:00", 14400), ("2-12", 216000), ("1-02:03", 93780),
    ("1-00:00:30", 86430), ("UNLIMITED", None), ("infinite", None)])
def test_time_limits_in_each_of_slurms_forms(text, seconds):
    assert time_limit_seconds(text) == seconds


@pytest.mark.parametrize("text", ["soon", "1h", "1:2:3:4", "-5", "1-", ""])
def test_a_time_slurm_would_refuse_is_refused_naming_the_option(text):
    with pytest.raises(ValueError, match=r"^--time .*expected one of Slurm's forms"):
        time_limit_seconds(text)


@pytest.mark.parametrize("job, said", [
    (SlurmJob(nodes=0), "--nodes 0: expected at least 1"),
    (SlurmJob(gpus_per_node=-1), "--gpus-per-node -1"),
    (SlurmJob(cpus_per_task=0), "--cpus-per-task 0"),
    (SlurmJob(mem="64GB"), "--mem '64GB': expected Slurm's form"),
    (SlurmJob(signal_lead_s=10), "--signal-lead 10: expected at least 30 seconds"),
    (SlurmJob(time="5", signal_lead_s=300), "--time 5 (300 s) leaves no time before the requeue signal"),
    (SlurmJob(ray_port=80), "--ray-port 80"),
    (SlurmJob(sbatch_lines=["--output=/tmp/x"]), "--sbatch '--output=/tmp/x': expected one sbatch option"),
    (SlurmJob(sbatch_lines=["constraint=a100"]), "--sbatch 'constraint=a100'"),
])
def test_options_slurm_or_ray_would_refuse_are_refused_naming_the_option(job, said):
    with pytest.raises(ValueError) as err:
        job.validate()
    assert str(err.value).startswith(said)


def _call(**changes) -> SweepCall:
    fields = dict(name="dhpo", spec=Path("/home/me/my study.yaml"), overrides=["trainer.steps=50", "seeds=[0, 1]"],
                  run_dir=Path("/shared/runs"), workdir=Path("/home/me"), bin_dir=Path("/opt/venv/bin"))
    return SweepCall(**{**fields, **changes})


def test_the_script_asks_slurm_for_the_job_and_requeues_on_the_time_limit_signal():
    job = SlurmJob(nodes=2, gpus_per_node=8, cpus_per_task=32, mem="0", partition="gpu", account="proj", qos="high",
                   time="2-00:00:00", signal_lead_s=600, sbatch_lines=["--constraint=a100", "#SBATCH --exclusive"])
    job.validate()
    text = render_script(job, _call())
    assert re.findall(r"^#SBATCH (.*)$", text, re.M) == [
        f"--job-name={job_name('dhpo')}", "--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=32",
        "--gpus-per-node=8", "--mem=0", "--partition=gpu", "--account=proj", "--qos=high", "--time=2-00:00:00",
        "--signal=B:USR1@600", "--output=/shared/runs/dhpo/slurm/job-%j.out", "--open-mode=append", "--requeue",
        "--constraint=a100", "--exclusive"]
    assert "--num-gpus=8" in text and f"rc == {REQUEUE_EXIT}" in text and 'scontrol requeue "$SLURM_JOB_ID"' in text
    cpu_only = render_script(SlurmJob(), _call())
    assert "--gpus-per-node" not in cpu_only and "--partition" not in cpu_only and "--num-gpus=0" in cpu_only


def test_the_driver_line_reads_back_as_the_spec_and_overrides_given():
    text = render_script(SlurmJob(), _call())
    (line,) = [ln for ln in text.splitlines() if " run " in ln and "--address" in ln]
    words = shlex.split(line.split(" --address ")[0])
    assert words == ["/opt/venv/bin/sweep", "run", "/home/me/my study.yaml", "trainer.steps=50", "seeds=[0, 1]"]
    assert "--run-dir /shared/runs --no-progress &" in line


def test_the_script_holds_no_credential_and_bash_parses_it(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://alice:s3cret@mlflow:5000")
    text = render_script(SlurmJob(nodes=3), _call())
    assert "s3cret" not in text and "MLFLOW_TRACKING_URI" not in text  # the store comes from the job's environment
    assert not re.search(r"echo[^\n]*RAY_AUTH_TOKEN", text)  # the token is made in the job and never printed
    assert subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True).returncode == 0
