"""`sweep slurm SPEC`: the sweep as one Slurm batch job, requeued and resumed when preempted or near its time limit.

    sweep slurm dhpo_vs_baselines.yaml --nodes 2 --gpus-per-node 8 --partition gpu --time 2-00:00:00 \\
        --run-dir /shared/runs                      # writes the sbatch script, submits it, prints the job id
    sweep slurm my.yaml trainer.steps=50 --run-dir /shared/runs --dry-run    # the script, not submitted
    sweep slurm --cancel dhpo_vs_baselines          # scancel its job: the sweep stops KILLED, resumable
    sweep status dhpo_vs_baselines --run-dir /shared/runs                    # the trials and the job's state

Everything is checked before anything is submitted, each problem one line: the spec, the options, the run
directory (it must exist: storage every node sees), the partition and its node count, sbatch on the PATH. The
store is the run directory's sqlite file, or MLFLOW_TRACKING_URI / --tracking-uri passed to the job in its
environment (never written into the script). The script: sweeps/slurm/job_script.py; docs/clusters.md#slurm.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import typer

from sweeps.commands.options import StoreOptions, fail, grouped, warn
from sweeps.commands.spec_input import load_user_spec, smoke_note


@dataclass
class JobOptions:
    """What the job asks Slurm for (sweeps.slurm.job_script.SlurmJob), each as sbatch names it."""

    panel: ClassVar[str] = "Slurm job"
    nodes: Annotated[int, typer.Option("--nodes", help="Nodes (one Ray node each; the first runs the driver too).")] = 1
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs of each node (0: a CPU job).")] = 0
    cpus_per_task: Annotated[Optional[int], typer.Option("--cpus-per-task", help="CPUs of each node's one task (default: Slurm's).")] = None
    mem: Annotated[Optional[str], typer.Option("--mem", help="Memory per node, Slurm's form: 64G, 0 for all.")] = None
    partition: Annotated[Optional[str], typer.Option("--partition", help="Partition (default: the cluster's default).")] = None
    account: Annotated[Optional[str], typer.Option("--account", help="Account to charge.")] = None
    qos: Annotated[Optional[str], typer.Option("--qos", help="Quality of service.")] = None
    time: Annotated[Optional[str], typer.Option("--time", help="Time limit, Slurm's form (2-00:00:00, 90, 4:00:00).")] = None
    signal_lead: Annotated[int, typer.Option("--signal-lead", help="Seconds before the time limit at which the sweep stops and the job is requeued.")] = 300
    sbatch: Annotated[Optional[list[str]], typer.Option("--sbatch", help="An extra sbatch option, repeatable: --sbatch=--constraint=a100.")] = None
    ray_port: Annotated[Optional[int], typer.Option("--ray-port", help="The Ray head's port (default 20000 + job id mod 10000).")] = None
    ray_temp_dir: Annotated[Optional[str], typer.Option("--ray-temp-dir", help="Ray's temp dir on each node, short (default $TMPDIR/ray-JOBID).")] = None

    def job(self):
        from sweeps.slurm.job_script import SlurmJob

        return SlurmJob(nodes=self.nodes, gpus_per_node=self.gpus_per_node, cpus_per_task=self.cpus_per_task,
                        mem=self.mem, partition=self.partition, account=self.account, qos=self.qos, time=self.time,
                        signal_lead_s=self.signal_lead, sbatch_lines=list(self.sbatch or []), ray_port=self.ray_port,
                        ray_temp_dir=self.ray_temp_dir)


@grouped
def slurm(spec: Annotated[Optional[str], typer.Argument(help="Sweep YAML path, or a name in configs/sweeps/.")] = None,
          overrides: Annotated[Optional[list[str]], typer.Argument(help="key=value overrides, as for sweep run.")] = None,
          dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the sbatch script; submit nothing.")] = False,
          smoke: Annotated[bool, typer.Option("--smoke", help="The smoke-size sweep NAME_smoke (sweep run --smoke).")] = False,
          cancel: Annotated[Optional[str], typer.Option("--cancel", help="Cancel the job of sweep NAME instead (it stays resumable).")] = None,
          job: JobOptions = JobOptions(), store: StoreOptions = StoreOptions()) -> None:
    """Run a sweep as a Slurm batch job: a Ray cluster on its nodes, requeued and resumed when preempted.

    Examples: sweep slurm my.yaml --nodes 2 --gpus-per-node 8 --time 1-00:00:00 --run-dir /shared/runs |
    sweep slurm my.yaml --dry-run | sweep slurm --cancel my_sweep
    """
    from sweeps.slurm.queue import SlurmError

    try:
        if cancel is not None:
            if spec is not None:
                raise fail("error: --cancel NAME takes the sweep's name alone, no SPEC")
            _cancel(cancel)
            return
        if spec is None:
            raise fail("error: missing SPEC: the sweep YAML to submit (or --cancel NAME)")
        _submit(spec, overrides or [], smoke, dry_run, job, store)
    except SlurmError as err:
        raise fail(f"error: {err}") from None


def _submit(spec: str, overrides: list[str], smoke: bool, dry_run: bool, options: JobOptions, store: StoreOptions) -> None:
    from sweeps.slurm.job_script import SweepCall, render_script
    from sweeps.slurm.queue import SlurmError, partition_nodes, require_command, submit

    job = options.job()
    try:
        job.validate()
    except ValueError as err:
        raise fail(f"error: {err}") from None
    loaded = load_user_spec(spec, overrides, smoke)
    run_dir = store.run_dir.resolve()
    if not dry_run and not run_dir.is_dir():
        raise fail(f"error: --run-dir {store.run_dir}: no such directory. The job's run directory must be on storage "
                   "every node sees: create it there first")
    if not dry_run:
        require_command("sbatch")
    try:
        partition, count = partition_nodes(job.partition)
    except SlurmError as err:
        if not dry_run:
            raise
        warn(f"note: the partition and its nodes were not checked ({err})")  # a dry run away from the cluster
    else:
        if job.nodes > count:
            raise fail(f"error: --nodes {job.nodes}: partition {partition} has {count} node(s)")
    call = SweepCall(name=loaded.name, spec=Path(loaded.path).resolve(), overrides=overrides + (["--smoke"] if smoke else []),
                     run_dir=run_dir, workdir=Path.cwd(), bin_dir=Path(sys.executable).parent)
    script = render_script(job, call)
    if dry_run:
        print(script, end="")
        return
    call.log_dir.mkdir(parents=True, exist_ok=True)
    path = call.log_dir / f"{loaded.name}.sbatch"
    path.write_text(script)
    env = dict(os.environ)
    if store.tracking_uri:
        from contract.env import MLFLOW_TRACKING_URI

        env[MLFLOW_TRACKING_URI.name] = store.tracking_uri  # in the job's environment, never in the script
    job_id = submit(path, Path.cwd(), env)
    if smoke:
        warn(smoke_note(loaded.name))
    run_dir_arg = shlex.quote(str(run_dir))
    print(f"submitted job {job_id}: sweep {loaded.name} on {job.nodes} node(s), script {path}\n"
          f"  follow it: squeue -j {job_id}; tail -f {call.log_dir / f'job-{job_id}.out'}; "
          f"sweep status {loaded.name} --run-dir {run_dir_arg}\n"
          f"  stop it:   sweep slurm --cancel {loaded.name} (resumable: sweep slurm the same SPEC again)", flush=True)


def _cancel(name: str) -> None:
    from sweeps.slurm.job_script import job_name
    from sweeps.slurm.queue import cancel, jobs_named

    jobs = jobs_named(job_name(name))
    if not jobs:
        raise fail(f"error: no pending or running Slurm job of sweep {name} (job name {job_name(name)})")
    for job_id in jobs:
        cancel(job_id)
        print(f"cancelled job {job_id} of sweep {name}: it stops KILLED and stays resumable (sweep slurm the same "
              "SPEC again, or sweep resume SPEC)", flush=True)

