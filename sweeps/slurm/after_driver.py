"""After a `sweep slurm` job's driver has exited: if it died holding its sweep's lease, close its runs as it would
have (the trials still RUNNING and the parent KILLED, the lease freed: tracking_store/lease.py end_abandoned).

When Slurm ends a job (scancel, preemption, `scontrol requeue`) every process of the job gets SIGTERM at once, the
driver's own Ray node too; the node can end the driver before it has closed its runs. The job's script runs this
after the driver, on the same node; a driver that closed its runs left no lease, and nothing is done.

    python -m sweeps.slurm.after_driver SWEEP --run-dir /shared/runs --pid 12345   # the store: as `sweep run` finds it
    python -m sweeps.slurm.after_driver --smoke      # a sweep left RUNNING by a dead driver, in a temporary store
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
from pathlib import Path


def close_after(sweep: str, tracking_uri: str, pid: int, host: str | None = None) -> list[str]:
    """The run ids closed KILLED (the parent last), or [] when the driver left nothing to close."""
    from tracking_store.client import StoreMissing, open_existing, sweep_experiment, sweep_parent
    from tracking_store.lease import end_abandoned

    try:
        client = open_existing(tracking_uri)
        exp = sweep_experiment(client, tracking_uri, sweep)
    except StoreMissing:
        return []  # the driver stopped before it recorded anything
    parent = sweep_parent(client, exp.experiment_id)
    if parent is None:
        return []
    return end_abandoned(client, exp.experiment_id, parent.info.run_id, host or socket.gethostname(), pid)


def _smoke() -> int:
    """A parent and a trial run left RUNNING under the lease of a process that has exited: both closed KILLED."""
    import json
    import logging

    from tracking_store.client import open_client
    from tracking_store.lease import LEASE_TAG
    from tracking_store.uri import default_uri
    from tracking_store.roles import parent_tags, trial_tags

    import mlflow  # noqa: F401 (its logging set up first, then quieted: its schema-creation notes)

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with tempfile.TemporaryDirectory() as tmp:
        uri = default_uri(Path(tmp))
        client = open_client(uri)
        exp_id = client.create_experiment("smoke", artifact_location=str(Path(tmp) / "artifacts"))
        parent = client.create_run(exp_id, tags=parent_tags("smoke")).info.run_id
        client.set_tag(parent, LEASE_TAG, json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
        trial = client.create_run(exp_id, tags=trial_tags("smoke", parent, "grpo.s0")).info.run_id
        closed = close_after("smoke", uri, dead.pid)
        states = [client.get_run(run).info.status for run in (trial, parent)]
        left = LEASE_TAG in client.get_run(parent).data.tags
    print(f"smoke ok: closed {len(closed)} runs of a dead driver: {', '.join(states)}; lease left: {left}")
    return 0 if closed == [trial, parent] and states == ["KILLED", "KILLED"] and not left else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweeps.slurm.after_driver", description=__doc__.splitlines()[0])
    parser.add_argument("sweep", nargs="?", help="The sweep's name.")
    parser.add_argument("--run-dir", type=Path, default=Path("runs"), help="The run directory the driver used.")
    parser.add_argument("--pid", type=int, help="The driver's process id (on this host).")
    parser.add_argument("--smoke", action="store_true", help="Close a dead driver's runs in a temporary store.")
    args = parser.parse_args(argv)
    if args.smoke:
        return _smoke()
    if not args.sweep or not args.pid:
        parser.error("give the sweep's name and --pid, the driver's process id")
    from tracking_store.uri import mask_uri, resolve_uri

    uri = resolve_uri(None, args.run_dir)
    closed = close_after(args.sweep, uri, args.pid)
    if closed:
        print(f"sweep {args.sweep}: its driver ended before closing its runs: {len(closed) - 1} trial run(s) and the "
              f"parent run closed KILLED in {mask_uri(uri)}; resumable", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
