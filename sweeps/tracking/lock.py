"""One sweep, one writer: an exclusive lock per (run directory, sweep name).

    with SweepLock(RunLayout(run_dir).sweep(spec.name).lock, spec.name):   # <run dir>/.locks/<sweep>.lock
        ...   # the only driver writing this sweep's MLflow runs

The lock is an OS file lock (``filelock``: ``flock`` on Unix), so the kernel releases it when its
owner dies: a lock left by a killed driver is stale and is taken over, with a note naming the
dead owner. Beside it, ``<lock>.owner`` records the holder's pid, host and start time, which the
refusal message shows. Two different sweeps hold different locks and run side by side.
The lock guards the run directory's own files (Ray results, the tracking journal); the store's
lease (tracking_store/lease.py) guards the sweep's MLflow runs across run directories and hosts.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout

from tracking_store.lease import SweepAlreadyRunning


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
