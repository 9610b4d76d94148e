"""The sbatch script of a sweep: a Ray cluster on the allocation, the driver on its first node, requeued and
resumed when the time limit nears or Slurm preempts it.

    job = SlurmJob(nodes=2, gpus_per_node=8, partition="gpu", time="2-00:00:00")
    job.validate()                                           # ValueError naming the option
    text = render_script(job, SweepCall(name="dhpo", spec=Path("/home/me/dhpo.yaml"), overrides=[],
                                        run_dir=Path("/shared/runs"), workdir=Path.cwd(), bin_dir=VENV_BIN))

What the script does, in order (docs/clusters.md#slurm walks through it):

1. makes a Ray token inside the job (never printed or written to a file) and exports it with token auth on;
2. `ray start --head --block` on the allocation's first node and `ray start --address HEAD --block` on every
   other node, each an `srun` step of one task per node, and waits until every node has joined
   (`python -m sweeps.slurm.wait_nodes`);
3. runs `sweep run SPEC OVERRIDES --address HEAD:PORT --run-dir RUN_DIR` on the first node, the store taken
   from the environment `sbatch` passed on (MLFLOW_TRACKING_URI, else the run dir's sqlite file);
4. on SIGUSR1, which `--signal=B:USR1@LEAD` sends LEAD seconds before the time limit, stops the driver as
   SIGTERM stops it (trials checkpointed, the journal kept, the parent run KILLED) and requeues the job; on
   preemption, `scontrol requeue` or `scancel`, Slurm's own SIGTERM reaches the driver the same way;
5. closes the runs KILLED if the driver could not (its own Ray node, signalled with the whole job, can end it
   first: sweeps/slurm/after_driver.py), then ends every Ray process; the driver's exit code is the job's.

A requeued job runs the script again: a new token, a new cluster, and `sweep run` resumes the sweep under the
same parent run (finished trials skipped, the others from their checkpoints).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REQUEUE_EXIT = 143
"""The driver's exit code after SIGTERM: the one after which the script requeues the job itself."""

_TIME_FORMS = (  # Slurm's --time forms: minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]]
    re.compile(r"(?P<m>\d+)"), re.compile(r"(?P<m>\d+):(?P<s>\d+)"), re.compile(r"(?P<h>\d+):(?P<m>\d+):(?P<s>\d+)"),
    re.compile(r"(?P<d>\d+)-(?P<h>\d+)"), re.compile(r"(?P<d>\d+)-(?P<h>\d+):(?P<m>\d+)"),
    re.compile(r"(?P<d>\d+)-(?P<h>\d+):(?P<m>\d+):(?P<s>\d+)"))
_MEMORY = re.compile(r"\d+[KMGT]?")


def time_limit_seconds(text: str) -> int | None:
    """Slurm's --time value in seconds (None: UNLIMITED/INFINITE); ValueError naming --time for any other form."""
    if text.strip().upper() in ("UNLIMITED", "INFINITE"):
        return None
    for form in _TIME_FORMS:
        match = form.fullmatch(text.strip())
        if match:
            parts = {k: int(v) for k, v in match.groupdict().items() if v is not None}
            return ((parts.get("d", 0) * 24 + parts.get("h", 0)) * 60 + parts.get("m", 0)) * 60 + parts.get("s", 0)
    raise ValueError(f"--time {text!r}: expected one of Slurm's forms: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
                     "DAYS-HOURS, DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS")


@dataclass
class SlurmJob:
    """What the job asks Slurm for, one field per sbatch option (None: Slurm's or the partition's default)."""

    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_task: int | None = None
    """CPUs of each node's one task (the Ray node's CPUs); None: what Slurm gives the task."""
    mem: str | None = None
    """Memory per node, Slurm's form: 64G, 500M, 0 (all of it)."""
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    signal_lead_s: int = 300
    """Seconds before the time limit at which the driver is stopped and the job requeued."""
    sbatch_lines: list[str] = field(default_factory=list)
    """Extra sbatch options, each one --option[=value] (e.g. --constraint=a100), written as #SBATCH lines."""
    ray_port: int | None = None
    """The Ray head's port; None: 20000 + the job id modulo 10000 (two jobs on one node do not collide)."""
    ray_temp_dir: str | None = None
    """Ray's temp dir on each node (keep it short: Unix socket paths); None: $TMPDIR/ray-JOBID, else /tmp/ray-JOBID."""

    def validate(self) -> None:
        """ValueError naming the option and what was expected, for any value Slurm or Ray would refuse later."""
        if self.nodes < 1:
            raise ValueError(f"--nodes {self.nodes}: expected at least 1")
        if self.gpus_per_node < 0:
            raise ValueError(f"--gpus-per-node {self.gpus_per_node}: expected 0 or more")
        if self.cpus_per_task is not None and self.cpus_per_task < 1:
            raise ValueError(f"--cpus-per-task {self.cpus_per_task}: expected at least 1")
        if self.mem is not None and not _MEMORY.fullmatch(self.mem):
            raise ValueError(f"--mem {self.mem!r}: expected Slurm's form, a number with an optional K/M/G/T (64G)")
        if self.signal_lead_s < 30:
            raise ValueError(f"--signal-lead {self.signal_lead_s}: expected at least 30 seconds (the driver needs "
                             "them to checkpoint and stop)")
        limit = time_limit_seconds(self.time) if self.time else None
        if limit is not None and limit <= self.signal_lead_s:
            raise ValueError(f"--time {self.time} ({limit} s) leaves no time before the requeue signal "
                             f"(--signal-lead {self.signal_lead_s} s): ask for more time or a shorter lead")
        if self.ray_port is not None and not 1024 <= self.ray_port <= 65535:
            raise ValueError(f"--ray-port {self.ray_port}: expected a port in 1024..65535")
        for line in self.sbatch_lines:
            option = line.removeprefix("#SBATCH").strip()
            if not option.startswith("--") or "\n" in option or option.split("=")[0] in _OWN_OPTIONS:
                raise ValueError(f"--sbatch {line!r}: expected one sbatch option --name[=value] that `sweep slurm` "
                                 f"does not set itself ({', '.join(sorted(_OWN_OPTIONS))})")

    def sbatch_options(self, name: str, log_dir: Path) -> list[str]:
        """The script's #SBATCH options, in order."""
        wanted = {"--job-name": job_name(name), "--nodes": self.nodes, "--ntasks-per-node": 1,
                  "--cpus-per-task": self.cpus_per_task, "--gpus-per-node": self.gpus_per_node or None,
                  "--mem": self.mem, "--partition": self.partition, "--account": self.account, "--qos": self.qos,
                  "--time": self.time, "--signal": f"B:USR1@{self.signal_lead_s}",
                  "--output": str(log_dir / "job-%j.out"), "--open-mode": "append"}
        return [f"{k}={v}" for k, v in wanted.items() if v is not None] + ["--requeue"] + [
            line.removeprefix("#SBATCH").strip() for line in self.sbatch_lines]


_OWN_OPTIONS = frozenset({"--job-name", "--nodes", "--ntasks-per-node", "--signal", "--output", "--open-mode",
                          "--requeue", "--no-requeue", "--error"})


def job_name(sweep: str) -> str:
    """The Slurm job name of a sweep (what `sweep slurm --cancel NAME` looks for)."""
    return f"sweep-{sweep}"


@dataclass
class SweepCall:
    """What the job runs: `BIN_DIR/sweep run SPEC OVERRIDES --run-dir RUN_DIR` in WORKDIR."""

    name: str
    spec: Path
    overrides: list[str]
    run_dir: Path
    workdir: Path
    bin_dir: Path
    """The directory of the `sweep`, `ray` and `python` of the environment that submitted (the same on every node)."""

    @property
    def log_dir(self) -> Path:
        return self.run_dir / self.name / "slurm"


def render_script(job: SlurmJob, call: SweepCall) -> str:
    """The whole sbatch script (bash). It holds no credential: the store's URI comes from the environment."""
    q = shlex.quote
    options = "\n".join(f"#SBATCH {option}" for option in job.sbatch_options(call.name, call.log_dir))
    driver = " ".join(q(a) for a in [str(call.bin_dir / "sweep"), "run", str(call.spec), *call.overrides])
    port = str(job.ray_port) if job.ray_port else "$((20000 + SLURM_JOB_ID % 10000))"
    ray_tmp = q(job.ray_temp_dir) if job.ray_temp_dir else '"${TMPDIR:-/tmp}/ray-$SLURM_JOB_ID"'
    gpus = job.gpus_per_node
    return f"""#!/bin/bash
# Sweep {call.name} on Slurm, written by `sweep slurm` (docs/clusters.md#slurm). Submit it as it is: sbatch THIS_FILE
{options}
set -uo pipefail
cd {q(str(call.workdir))}
BIN={q(str(call.bin_dir))}
LOG_DIR={q(str(call.log_dir))}

# 1. This job's Ray token: made here, exported to every step, never printed or written down
export RAY_AUTH_MODE=token RAY_USAGE_STATS_ENABLED=0
# A Ray node told to stop (the job ending) stops at once: the driver has checkpointed the trials already
export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0
RAY_AUTH_TOKEN=$("$BIN/python" -c 'import secrets; print(secrets.token_hex(32))') || exit 4
export RAY_AUTH_TOKEN

# 2. Ray: the head on the first node of the allocation, a worker on every other node, one srun task each
nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
head=${{nodes[0]}}
head_addr=$(scontrol show node "$head" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')
head_ip=$(getent ahostsv4 "${{head_addr:-$head}}" | awk 'NR == 1 {{print $1}}')
head_ip=${{head_ip:-$head}}
port={port}
ray_tmp={ray_tmp}
cpus=${{SLURM_CPUS_PER_TASK:-${{SLURM_CPUS_ON_NODE:-1}}}}
echo "sweep {call.name}: job $SLURM_JOB_ID (restart ${{SLURM_RESTART_COUNT:-0}}) on ${{#nodes[@]}} node(s), Ray head $head_ip:$port"
srun --nodes=1 --ntasks=1 --nodelist="$head" --overlap --kill-on-bad-exit=0 \\
    "$BIN/ray" start --head --block --port="$port" --node-ip-address="$head_ip" --temp-dir="$ray_tmp" \\
    --include-dashboard=false --disable-usage-stats --num-cpus="$cpus" --num-gpus={gpus} \\
    >> "$LOG_DIR/ray-$SLURM_JOB_ID.log" 2>&1 &
ray_steps=($!)
if (( ${{#nodes[@]}} > 1 )); then
    srun --nodes=$(( ${{#nodes[@]}} - 1 )) --ntasks=$(( ${{#nodes[@]}} - 1 )) --ntasks-per-node=1 --exclude="$head" \\
        --overlap --kill-on-bad-exit=0 \\
        "$BIN/ray" start --block --address="$head_ip:$port" --temp-dir="$ray_tmp" --disable-usage-stats \\
        --num-cpus="$cpus" --num-gpus={gpus} \\
        >> "$LOG_DIR/ray-$SLURM_JOB_ID.log" 2>&1 &
    ray_steps+=($!)
fi
stop_ray() {{  # the srun steps (srun passes SIGTERM on to its tasks), at most 20 s, then SIGKILL
    kill -TERM "${{ray_steps[@]}}" 2>/dev/null
    for _ in $(seq 20); do kill -0 "${{ray_steps[@]}}" 2>/dev/null || break; sleep 1; done
    kill -KILL "${{ray_steps[@]}}" 2>/dev/null
    wait "${{ray_steps[@]}}" 2>/dev/null
    rm -rf "$ray_tmp"
}}
if ! "$BIN/python" -m sweeps.slurm.wait_nodes "$head_ip:$port" "${{#nodes[@]}}" --timeout 600; then
    stop_ray
    exit 4
fi

# 3-4. The driver; USR1 (the time limit is near): stop it as SIGTERM does, then requeue. Slurm's own SIGTERM
# (preemption, scontrol requeue, scancel) reaches the driver directly.
requeue=0
trap 'requeue=1; echo "sweep {call.name}: the time limit is near: stopping the sweep to requeue the job"; kill -TERM "$driver" 2>/dev/null' USR1
trap 'echo "sweep {call.name}: the job is ending (preempted, requeued or cancelled): the sweep stops, resumable"' TERM
{driver} --address "$head_ip:$port" --run-dir {q(str(call.run_dir))} --no-progress &
driver=$!
while kill -0 "$driver" 2>/dev/null; do wait "$driver"; done
wait "$driver"
rc=$?

# 5. A driver that its own Ray node ended first (the whole job is signalled at once) left its runs open: they are
# closed KILLED here, as it would have, first (Slurm ends the job's processes KillWait seconds after SIGTERM). Then
# every Ray process ends with the driver.
echo "sweep {call.name}: the driver ended with exit code $rc"
if (( rc != 0 )); then
    "$BIN/python" -m sweeps.slurm.after_driver {q(call.name)} --run-dir {q(str(call.run_dir))} --pid "$driver"
fi
stop_ray
if (( requeue && rc == {REQUEUE_EXIT} )); then
    echo "sweep {call.name}: requeueing job $SLURM_JOB_ID: it resumes the sweep when it starts again"
    scontrol requeue "$SLURM_JOB_ID"
fi
exit $rc
"""
