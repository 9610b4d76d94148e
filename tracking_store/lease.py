"""One driver per sweep per store, across hosts: the lease on the sweep's parent run.

    lease = DriverLease(client, parent_run_id, sweep, run_dir)
    note = lease.acquire()     # SweepAlreadyRunning (exit 3) naming the holder; a note when a stale lease was taken
    lease.heartbeat(); lease.release()
    end_abandoned(client, experiment_id, parent_run_id, host, pid)   # a dead driver's runs closed KILLED, its lease freed

The parent run carries the tag ``driver.lease`` (JSON: host, pid, run dir, since, heartbeat). A driver takes
the lease when it is free or stale (no heartbeat for ``LEASE_STALE_S``), writes it, waits ``LEASE_SETTLE_S``
and reads it back: of two drivers that wrote at once, only the one whose lease is read back goes on; the other
gets ``SweepAlreadyRunning`` naming the holder. The driver's tracking writer renews the heartbeat every
``LEASE_HEARTBEAT_S`` and removes the tag at the end. (The run directory's file lock, sweeps/tracking/lock.py,
still guards a run directory's local files.)
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path

from tracking_store.uri import sqlite_path

LEASE_TAG = "driver.lease"
LEASE_HEARTBEAT_S = 15.0
LEASE_STALE_S = 120.0  # a lease with no heartbeat for this long belongs to a dead driver
LEASE_SETTLE_S = 1.0  # between writing a lease and reading it back (two drivers writing at once; sqlite: 0.2 s)


class SweepAlreadyRunning(RuntimeError):
    """Another driver holds this sweep (its run directory's lock, or the store's lease)."""


class DriverLease:
    """The store-side lease of one sweep (see the module docstring)."""

    def __init__(self, client, parent_run_id: str, sweep: str, run_dir: Path):
        self.client, self.parent_id, self.sweep = client, parent_run_id, sweep
        self.me = {"host": socket.gethostname(), "pid": os.getpid(), "run_dir": str(run_dir),
                   "since": time.strftime("%Y-%m-%d %H:%M:%S"), "token": os.urandom(8).hex()}

    def _read(self) -> dict:
        try:
            return json.loads(self.client.get_run(self.parent_id).data.tags.get(LEASE_TAG, "{}"))
        except ValueError:
            return {}

    def _write(self) -> None:
        self.client.set_tag(self.parent_id, LEASE_TAG, json.dumps({**self.me, "heartbeat": time.time()}))

    def acquire(self) -> str | None:
        """Take the lease; returns a note when a stale one was taken over. ``SweepAlreadyRunning`` when held."""
        held = self._read()
        note = None
        same_process = held.get("host") == self.me["host"] and held.get("pid") == self.me["pid"]
        if held and held.get("token") != self.me["token"] and not same_process:
            age = time.time() - float(held.get("heartbeat", 0))
            dead_here = held.get("host") == self.me["host"] and not _alive(int(held.get("pid", 0)))
            if age < LEASE_STALE_S and not dead_here:
                raise SweepAlreadyRunning(self._refusal(held, age))
            why = "no longer running" if dead_here else \
                f"no heartbeat for {age:.0f}s; a lease is stale after {LEASE_STALE_S:.0f}s"
            note = (f"note: taking over the lease of sweep {self.sweep!r} left by pid {held.get('pid')} on "
                    f"{held.get('host')} ({why})")
        self._write()
        time.sleep(LEASE_SETTLE_S if sqlite_path(self.client.tracking_uri) is None else 0.2)
        now = self._read()
        if now.get("token") != self.me["token"]:
            raise SweepAlreadyRunning(self._refusal(now, time.time() - float(now.get("heartbeat", 0))))
        return note

    def _refusal(self, held: dict, age: float) -> str:
        return (f"sweep {self.sweep!r} is already running against this tracking store: pid {held.get('pid')} on "
                f"{held.get('host')} (run dir {held.get('run_dir')}) since {held.get('since')}, last heartbeat "
                f"{age:.0f}s ago; wait for it to end or stop it. A lease with no heartbeat for {LEASE_STALE_S:.0f}s "
                "is taken over. Running it twice at once would write the same trials twice.")

    def heartbeat(self) -> None:
        """Renew the lease; ``SweepAlreadyRunning`` when another driver took it over meanwhile."""
        held = self._read()
        if held.get("token") not in (None, self.me["token"]):
            raise SweepAlreadyRunning(f"the lease of sweep {self.sweep!r} was taken over by pid {held.get('pid')} on "
                                      f"{held.get('host')} while this driver could not reach the store; stopping")
        self._write()

    def release(self) -> None:
        with contextlib.suppress(Exception):
            if self._read().get("token") == self.me["token"]:
                self.client.delete_tag(self.parent_id, LEASE_TAG)


def end_abandoned(client, experiment_id: str, parent_run_id: str, host: str, pid: int) -> list[str]:
    """Close a sweep whose driver (``pid`` on ``host``) died holding its lease, as that driver would have: its
    RUNNING trial runs and the parent run KILLED, the lease removed. Only that driver's lease, and only once the
    process is gone: a sweep another or a live driver holds is left as it is (returns []). Returns the closed
    runs' ids, the parent last. The steps the driver journaled but did not write stay in its journal, for the
    next run to replay. (A Slurm job ending stops every process of the job at once: the driver's own Ray node
    can end it before it closes its runs.)"""
    from tracking_store.roles import children_filter

    held = json.loads(client.get_run(parent_run_id).data.tags.get(LEASE_TAG) or "{}")
    if held.get("host") != host or int(held.get("pid", 0)) != pid or _alive(pid):
        return []
    closed = []
    for run in client.search_runs([experiment_id], children_filter(parent_run_id) + " and attributes.status = 'RUNNING'",
                                  max_results=50_000):
        client.set_terminated(run.info.run_id, status="KILLED")
        closed.append(run.info.run_id)
    client.set_terminated(parent_run_id, status="KILLED")
    client.delete_tag(parent_run_id, LEASE_TAG)
    return [*closed, parent_run_id]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return pid > 0
