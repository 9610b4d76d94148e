"""One sweep, one writer: an exclusive lock per (run directory, sweep name).

    with SweepLock(run_dir / ".locks" / f"{spec.name}.lock", spec.name):
        ...   # the only driver writing this sweep's MLflow runs

The lock is an OS file lock (``filelock``: ``flock`` on Unix), so the kernel releases it when its
owner dies: a lock left by a killed driver is stale and is taken over, with a note naming the
dead owner. Beside it, ``<lock>.owner`` records the holder's pid, host and start time, which the
refusal message shows. Two different sweeps hold different locks and run side by side.

``store_lock(uri)`` serialises the creation of a new sqlite store (MLflow's schema migration
races when two processes create the same file at once); ``open_client(uri)`` opens a store under it,
for the commands that read a store a driver may be creating (``sweep status``, ``ui``, ``eval``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout


class SweepAlreadyRunning(RuntimeError):
    pass


class SweepLock:
    def __init__(self, path: Path, sweep: str):
        self.path, self.sweep = path, sweep
        self.owner_file = path.with_name(path.name + ".owner")
        self.lock = FileLock(str(path))

    def __enter__(self) -> SweepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.lock.acquire(timeout=0)
        except Timeout:
            owner = self._owner()
            who = (f"pid {owner.get('pid')} on {owner.get('host')} since {owner.get('since')}" if owner
                   else "another process")
            raise SweepAlreadyRunning(
                f"sweep {self.sweep!r} is already running in this run directory ({who}); wait for it to end or "
                f"stop it (its lock: {self.path}). Running it twice at once would write the same trials twice."
            ) from None
        previous = self._owner()
        if previous and previous.get("pid") != os.getpid():  # the kernel released it: its owner is gone
            print(f"note: taking over the stale lock of sweep {self.sweep!r} left by pid {previous.get('pid')} on "
                  f"{previous.get('host')} (started {previous.get('since')}; no longer running)", file=sys.stderr)
        self.owner_file.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                               "since": time.strftime("%Y-%m-%d %H:%M:%S")}))
        return self

    def __exit__(self, *exc) -> None:
        self.owner_file.unlink(missing_ok=True)
        self.lock.release()

    def _owner(self) -> dict:
        try:
            return json.loads(self.owner_file.read_text())
        except (OSError, ValueError):
            return {}


def store_lock(tracking_uri: str):
    """Held while a process opens (and, if new, creates) a sqlite store: a file lock in the store's
    folder (``.locks/mlflow-store.lock``; for the default store that is the run directory). Other
    stores (a server) need none."""
    if not tracking_uri.startswith("sqlite:///"):
        return contextlib.nullcontext()
    folder = Path(tracking_uri[len("sqlite:///"):]).resolve().parent
    (folder / ".locks").mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder / ".locks" / "mlflow-store.lock"))


def open_client(tracking_uri: str):
    """An ``MlflowClient`` on ``tracking_uri`` with its store opened under ``store_lock``, so a reader
    never migrates the schema while a driver is creating the same file."""
    from mlflow.tracking import MlflowClient

    with store_lock(tracking_uri):
        client = MlflowClient(tracking_uri)  # opens (and, if new, creates) a sqlite store
        client.search_experiments(max_results=1)
    return client
