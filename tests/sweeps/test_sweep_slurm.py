"""`sweep slurm` on a real Slurm: MUNGE, slurmctld and two slurmd from Debian's packages, started here as a
two-node cluster on this machine (slurm_testlib.py), jobs submitted with `sweep slurm` as a user types it, Ray
started by the job's script (a head, and a worker on the second node), MLflow on a sqlite file in the run directory.

* bad input is refused in one line before anything is submitted;
* a built-in-trainer sweep reaches FINISHED, its job COMPLETED, and `sweep status` shows the job;
* one synthetic sweep on two nodes (a trial on each) through every way a job ends early: `scontrol requeue` (the
  requeued job resumes it), the time-limit signal (USR1 to the job's script: it stops the sweep and requeues the
  job itself), `sweep slurm --cancel` (KILLED, resumable), then a new `sweep slurm` finishes it: every step in the
  store exactly once, no token anywhere, no Ray left.

Slurm holds a requeued job for about two minutes before it may start again; the test moves its start to now
(`scontrol update StartTime=now`), which changes when the job runs, not what it does. The time-limit USR1 is sent
with `scancel --batch --signal=USR1`, as `--signal=B:USR1@LEAD` has Slurm send it, without waiting for
slurmctld's periodic check (docs/clusters.md: the real time limit, checked by hand).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cluster_testlib import free_port
from slurm_testlib import PARTITION, SlurmCluster, slurm_missing
from sweep_testlib import (REPO, children, client_for, kill_pids, pids_under, short_cwd, short_ray_dir, steps_of,
                           subprocess_env, sweep_exe, wait_for)

pytestmark = [pytest.mark.slow, pytest.mark.start_first, pytest.mark.timeout(900),
              pytest.mark.skipif(slurm_missing() is not None, reason=slurm_missing() or "")]

TOKEN = re.compile(r"\b[0-9a-f]{64}\b")  # a Ray token's form (secrets.token_hex(32))
STEPS = 300  # 30 s of a synthetic trial's steps: the three stopped runs reach about a third of them


@pytest.fixture(scope="module")
def slurm():
    cluster = SlurmCluster(short_ray_dir())
    ray_dirs: list[Path] = []
    try:
        cluster.start()
        cluster.ray_dirs = ray_dirs
        yield cluster
    finally:
        cluster.stop(*ray_dirs)


def _env(slurm: SlurmCluster, **extra: str) -> dict[str, str]:
    return {**subprocess_env(), **slurm.env, **extra}


def _sweep(cwd: Path, env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sweep_exe(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _submit(slurm: SlurmCluster, cwd: Path, spec: str, *more: str) -> str:
    """`sweep slurm SPEC` with a node's CPUs; the job id it printed."""
    ray_dir = short_ray_dir()
    slurm.ray_dirs.append(ray_dir)
    done = _sweep(cwd, _env(slurm), "slurm", spec, "--run-dir", "runs", "--cpus-per-task", str(slurm.cpus_per_node),
                  "--ray-port", str(free_port()), "--ray-temp-dir", str(ray_dir), *more)
    assert done.returncode == 0, done.stdout + done.stderr
    match = re.search(r"^submitted job (\d+): ", done.stdout, re.M)
    assert match, done.stdout
    return match.group(1)


def _wait_state(slurm: SlurmCluster, job: str, wanted: str, timeout: float = 300) -> None:
    """Until the job's state and reason are ``wanted``; else an AssertionError with the job's output and Slurm's logs."""
    try:
        wait_for(lambda: slurm.job_state(job) == wanted, timeout=timeout, interval=1)
    except TimeoutError:
        outputs = "".join(p.read_text(errors="replace")[-4000:] for p in (REPO / ".rt").glob(f"*/runs/*/slurm/job-{job}.out"))
        raise AssertionError(f"job {job}: {slurm.job_state(job)!r}, not {wanted!r}\n{outputs}\n{slurm.log()}") from None


def _parent(client, sweep: str):
    exp = client.get_experiment_by_name(sweep)
    return client.search_runs([exp.experiment_id], "tags.role = 'parent'")[0]


def _job_output(cwd: Path, sweep: str, job: str) -> str:
    return (cwd / "runs" / sweep / "slurm" / f"job-{job}.out").read_text()


def test_bad_input_is_refused_in_one_line_before_anything_is_submitted(slurm, tmp_path):
    cwd = short_cwd()
    (cwd / "runs").mkdir()
    (cwd / "ok.yaml").write_text("name: ok\nbase: {backend: synthetic}\nseeds: [0]\nvariants: [{algorithm: grpo}]\n")
    cases = {
        "--partition gpu: no such partition (known: debug)": ("ok.yaml", "--partition", "gpu"),
        f"--nodes 3: partition {PARTITION} has 2 node(s)": ("ok.yaml", "--nodes", "3"),
        "--run-dir missing: no such directory": ("ok.yaml", "--run-dir", "missing"),
        "--time 'soon': expected one of Slurm's forms": ("ok.yaml", "--time", "soon"),
        "--time 1 (60 s) leaves no time before the requeue signal": ("ok.yaml", "--time", "1"),
        "--sbatch '--job-name=x': expected one sbatch option": ("ok.yaml", "--sbatch=--job-name=x"),
        "ok.yaml: variants[0].algorithm": ("ok.yaml", "variants=[{algorithm: nope}]"),
    }
    for said, args in cases.items():
        done = _sweep(cwd, _env(slurm), "slurm", *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0] and "Traceback" not in done.stderr, (args, done.stderr)
    no_slurm = _sweep(cwd, _env(slurm, PATH="/nonexistent"), "slurm", "ok.yaml")  # sbatch not found
    assert no_slurm.returncode == 2 and no_slurm.stderr.strip() == (
        "error: sbatch not found on the PATH: run `sweep slurm` where Slurm's commands are installed (a login node "
        "of the cluster)"), no_slurm.stderr
    away = _sweep(cwd, _env(slurm, PATH="/nonexistent"), "slurm", "ok.yaml", "--dry-run")  # away from the cluster
    assert away.returncode == 0 and away.stdout.startswith("#!/bin/bash\n"), away.stdout + away.stderr
    assert away.stderr.startswith("note: the partition and its nodes were not checked (sinfo not found")
    assert slurm.ask("squeue", "--noheader", "--states=all").strip() == ""  # nothing was ever submitted
    assert not (cwd / "runs" / "ok").exists()


def test_a_builtin_trainer_sweep_submitted_with_sweep_slurm_finishes_and_status_shows_its_job(slurm):
    cwd = short_cwd()
    (cwd / "runs").mkdir()
    (cwd / "tiny.yaml").write_text(
        "name: tiny\ndefaults: [{trainer: local_tiny}, {model: tiny_qwen3}, {data: arith}]\n"
        "base: {trainer: {steps: 3, eval_every: 3, checkpoint_every: 3, prompts_per_step: 2, group_size: 2,\n"
        "                 max_new_tokens: 16, eval_k: 1}, data: {eval_size: 4}}\n"
        "seeds: [0]\nresources: {cpus: 1}\nvariants: [{algorithm: grpo}]\n"
        "report: {table: {select_by: val/avg/acc, at: final}, formats: [md]}\n")
    dry = _sweep(cwd, _env(slurm), "slurm", "tiny.yaml", "--run-dir", "runs", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("#!/bin/bash\n"), dry.stdout + dry.stderr
    assert "#SBATCH --requeue" in dry.stdout and "#SBATCH --signal=B:USR1@300" in dry.stdout
    assert subprocess.run(["bash", "-n"], input=dry.stdout, text=True).returncode == 0  # a script bash can read
    assert not (cwd / "runs" / "tiny").exists()  # a dry run writes and submits nothing

    job = _submit(slurm, cwd, "tiny.yaml")
    _wait_state(slurm, job, "COMPLETED None", timeout=400)
    client = client_for(cwd / "runs")
    parent = _parent(client, "tiny")
    assert parent.info.status == "FINISHED" and parent.data.tags["provenance.slurm_job"] == job
    (trial,) = children(client, "tiny").values()
    assert trial.info.status == "FINISHED" and trial.data.tags["backend"] == "local"
    assert steps_of(client, trial.info.run_id, "actor/entropy") == [1, 2, 3]
    assert (cwd / "runs" / "tiny" / "report" / "table.md").is_file()
    out = _job_output(cwd, "tiny", job)
    assert f"job {job} (restart 0) on 1 node(s)" in out and "Ray cluster: 1 of 1 node(s) joined" in out
    assert not TOKEN.search(out) and not TOKEN.search((cwd / "runs" / "tiny" / "slurm" / "tiny.sbatch").read_text())
    status = _sweep(cwd, _env(slurm), "status", "tiny", "--run-dir", "runs")
    assert status.returncode == 0 and f"Slurm job {job}: COMPLETED" in status.stdout, status.stdout + status.stderr
    assert not pids_under(str(slurm.ray_dirs[-1]))  # every Ray process of the job ended with it


def _trials_past(client, step: int):
    def check():
        kids = children(client, "chain")
        return len(kids) == 2 and all(r.info.status == "RUNNING" and step < r.data.metrics.get("trial/step", 0)
                                      for r in kids.values())
    return check


def _stopped_at(client, out: Path, slurm=None) -> int:
    """After the job stopped the sweep: the parent and both trials KILLED; the furthest step either reached."""
    kids = children(client, "chain")
    states = [_parent(client, "chain").info.status] + [r.info.status for r in kids.values()]
    assert states == ["KILLED"] * 3, (states, out.read_text()[-5000:], slurm.log() if slurm else "")
    return max(int(r.data.metrics["trial/step"]) for r in kids.values())


def test_requeue_time_limit_and_cancel_lose_nothing_and_a_new_job_finishes_the_sweep(slurm):
    cwd = short_cwd()
    (cwd / "runs").mkdir()
    (cwd / "chain.yaml").write_text(
        "name: chain\n"
        f"base: {{backend: synthetic, synthetic: {{step_seconds: 0.1}}, trainer: {{steps: {STEPS}, eval_every: 200, "
        "checkpoint_every: 10}}\n"
        "seeds: [0]\nmax_concurrent: 2\nreport_interval_s: 0.5\nresources: {cpus: 1}\n"
        "variants: [{algorithm: grpo}, {algorithm: gspo}]\nreport: {formats: [md]}\n")
    client = client_for(cwd / "runs")
    job = _submit(slurm, cwd, "chain.yaml", "--nodes", "2", "--signal-lead", "30")
    reached = 10

    # 1. `scontrol requeue` (what preemption with PreemptMode=REQUEUE does): Slurm's SIGTERM stops the driver
    wait_for(_trials_past(client, reached), timeout=300, interval=1)
    slurm.ask("scontrol", "requeue", job)
    _wait_state(slurm, job, "PENDING BeginTime", timeout=120)
    reached = _stopped_at(client, cwd / "runs" / "chain" / "slurm" / f"job-{job}.out", slurm)
    slurm.ask("scontrol", "update", f"JobId={job}", "StartTime=now")

    # 2. the requeued job resumes the sweep; then its time limit nears: the USR1 that `--signal=B:USR1@LEAD` has
    # Slurm send to the job's script (sent here at once: slurmctld's own comes at its next periodic check, up to
    # a minute late) stops the driver and the job requeues itself
    wait_for(_trials_past(client, reached + 5), timeout=300, interval=1)
    slurm.ask("scancel", "--batch", "--signal=USR1", job)
    _wait_state(slurm, job, "PENDING BeginTime", timeout=150)
    reached = _stopped_at(client, cwd / "runs" / "chain" / "slurm" / f"job-{job}.out", slurm)
    slurm.ask("scontrol", "update", f"JobId={job}", "StartTime=now")

    # 3. `sweep slurm --cancel`: the job ends for good, the sweep KILLED and resumable
    wait_for(_trials_past(client, reached + 5), timeout=300, interval=1)
    cancelled = _sweep(cwd, _env(slurm), "slurm", "--cancel", "chain")
    assert cancelled.returncode == 0 and f"cancelled job {job} of sweep chain" in cancelled.stdout, cancelled.stderr
    _wait_state(slurm, job, "CANCELLED None", timeout=120)
    reached = _stopped_at(client, cwd / "runs" / "chain" / "slurm" / f"job-{job}.out", slurm)
    assert reached < STEPS
    status = _sweep(cwd, _env(slurm), "status", "chain", "--run-dir", "runs")
    assert f"Slurm job {job}: CANCELLED" in status.stdout, status.stdout + status.stderr
    again = _sweep(cwd, _env(slurm), "slurm", "--cancel", "chain")
    assert again.returncode == 2 and "no pending or running Slurm job of sweep chain" in again.stderr

    # 4. a new `sweep slurm` of the same spec finishes it under the same parent run
    parent_id = _parent(client, "chain").info.run_id
    second = _submit(slurm, cwd, "chain.yaml", "--nodes", "2")
    _wait_state(slurm, second, "COMPLETED None", timeout=400)
    parent = _parent(client, "chain")
    assert parent.info.run_id == parent_id and parent.info.status == "FINISHED"
    assert parent.data.tags["provenance.slurm_job"] == second
    kids = children(client, "chain")
    assert len({r.data.tags.get("ray.node_id") for r in kids.values()}) == 2, kids  # a trial on each node
    for tid, run in kids.items():
        assert run.info.status == "FINISHED", tid
        assert int(run.data.tags["ray.resumed_from"]) >= 10, tid  # from a checkpoint, not from step 0
        for key in ("actor/entropy", "reward/mean"):  # every step exactly once across four jobs' runs
            assert steps_of(client, run.info.run_id, key) == list(range(1, STEPS + 1)), (tid, key)

    first_out = _job_output(cwd, "chain", job)
    for restart in (0, 1, 2):
        assert f"job {job} (restart {restart}) on 2 node(s)" in first_out
    assert first_out.count("Ray cluster: 2 of 2 node(s) joined") == 3
    assert "the time limit is near: stopping the sweep to requeue the job" in first_out
    assert f"requeueing job {job}" in first_out
    # each of the three stops closed the runs: the driver itself, or after it the job's script (the driver's own
    # Ray node, signalled with the whole job, can end it first)
    assert first_out.count("SIGTERM: interrupted: run the same command again to resume") + first_out.count(
        "its driver ended before closing its runs") == 3, first_out
    last_out = _job_output(cwd, "chain", second)
    assert not TOKEN.search(first_out) and not TOKEN.search(last_out)
    # (the stopped runs' output may hold Tune's traceback of a trial whose Ray node ended under it; the last is clean)
    assert "Traceback" not in last_out and "the driver ended with exit code 0" in last_out, last_out[-3000:]
    for ray_dir in slurm.ray_dirs[-2:]:
        assert not pids_under(str(ray_dir))
    kill_pids(pids_under(str(cwd)))
