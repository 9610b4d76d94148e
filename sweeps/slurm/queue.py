"""The Slurm commands a sweep needs, each failure one line naming the command: sbatch, sinfo, squeue/sacct/scontrol,
scancel. They run wherever Slurm's client commands are on the PATH (a login node, a node of the cluster).

    partition_nodes("gpu")         # {"gpu": 16}; SlurmError naming the known partitions for an unknown one
    job_id = submit(script_path, cwd, env)
    job_state(job_id)              # "RUNNING", "PENDING", "COMPLETED", ... or None when Slurm no longer knows it
    jobs_named("sweep-dhpo")       # this user's jobs of that name that are still pending or running
    cancel(job_id)
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


class SlurmError(RuntimeError):
    """A Slurm command is missing, or refused what it was given (the message is one line)."""


def require_command(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SlurmError(f"{name} not found on the PATH: run `sweep slurm` where Slurm's commands are installed "
                         "(a login node of the cluster)")
    return path


def _run(args: list[str], *, cwd: Path | None = None, env: dict | None = None, timeout: float = 60) -> str:
    exe = require_command(args[0])
    try:
        done = subprocess.run([exe, *args[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{args[0]} did not answer in {timeout:.0f} s (is slurmctld up?)") from None
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
        raise SlurmError(f"{args[0]}: {said}")
    return done.stdout


def partition_nodes(partition: str | None) -> tuple[str, int]:
    """(the partition's name, its node count): ``partition``, or the cluster's default one when None. SlurmError
    naming the known partitions when it does not exist."""
    known: dict[str, int] = {}
    default = None
    for line in _run(["sinfo", "--noheader", "--format=%P %D"]).splitlines():
        if not line.strip():
            continue
        name, count = line.split()
        if name.endswith("*"):
            name = default = name[:-1]
        known[name] = known.get(name, 0) + int(count)  # one line per node state: summed
    wanted = partition or default
    if wanted is None:
        raise SlurmError("no default partition on this cluster: name one with --partition "
                         f"(known: {', '.join(sorted(known)) or 'none'})")
    if wanted not in known:
        raise SlurmError(f"--partition {wanted}: no such partition (known: {', '.join(sorted(known)) or 'none'})")
    return wanted, known[wanted]


def submit(script: Path, cwd: Path, env: dict[str, str]) -> str:
    """sbatch the script (the environment ``env`` passed on to the job: sbatch's default --export=ALL); its job id."""
    out = _run(["sbatch", "--parsable", str(script)], cwd=cwd, env=env).strip()
    job_id = out.split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch: unexpected answer {out!r} (expected a job id)")
    return job_id


def job_state(job_id: str) -> str | None:
    """The job's state as Slurm says it (squeue while it is known there, else sacct, else scontrol), or None."""
    asks = (["squeue", "--noheader", "--states=all", f"--jobs={job_id}", "--format=%T"],
            ["sacct", "--noheader", "--parsable2", "--allocations", f"--jobs={job_id}", "--format=State"])
    for args in asks:
        if shutil.which(args[0]) is None:
            continue
        try:
            lines = [line.strip() for line in _run(args, timeout=20).splitlines() if line.strip()]
        except SlurmError:
            continue
        if lines:
            return lines[-1].split()[0]  # sacct says "CANCELLED by 0": the state alone
    return None


def jobs_named(name: str) -> list[str]:
    """This user's pending or running jobs called ``name`` (squeue), oldest first."""
    out = _run(["squeue", "--noheader", f"--name={name}", f"--user={_user()}", "--format=%i"])
    return sorted((line.strip() for line in out.splitlines() if line.strip()), key=int)


def cancel(job_id: str) -> None:
    """scancel: Slurm's SIGTERM to every process of the job, so its sweep driver stops as it does on SIGTERM."""
    _run(["scancel", job_id])


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
