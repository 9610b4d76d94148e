"""Sweeps on a Slurm cluster: `sweep slurm SPEC` writes and submits one batch job that starts a token-protected
Ray cluster on its allocation and runs the sweep's driver there, requeued and resumed when Slurm preempts it or
its time limit nears (docs/clusters.md#slurm).

    job_script.py   the sbatch script (SlurmJob, render_script)
    queue.py        sbatch, sinfo, squeue/sacct, scancel: the Slurm commands, with their failures in one line
    wait_nodes.py   python -m sweeps.slurm.wait_nodes HEAD:PORT N: the job's wait for every node to join
"""
