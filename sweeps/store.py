"""The one door to a sweep's MLflow store: where it is, opening it, one driver per sweep, page URLs.

    uri = resolve_uri(tracking_uri, run_dir)       # --tracking-uri, else $MLFLOW_TRACKING_URI, else the run dir's sqlite
    client = open_existing(uri)                    # read commands: a missing store is StoreMissing, never created
    client = open_client(uri)                      # drivers: opens (creates) a sqlite store under store_lock
    lease = DriverLease(client, parent_run_id, sweep); lease.acquire(); lease.heartbeat(); lease.release()
    print(mask_uri(uri))                           # user:password never printed
    curves_page_url(server, experiment_id, tags)   # the MLflow UI page of a sweep's curves, grouped by method
    runs_page_url(server, experiment_id, tags)     # the MLflow UI page of a sweep's trials (table)

URI forms: ``sqlite:////abs/mlflow.db`` (default: ``sqlite:///<run dir>/mlflow.db``), ``http(s)://host:port``
(an ``mlflow server``), or a database URI (``postgresql+psycopg2://user:pw@host/db``: SQLAlchemy maps a bare
``postgresql://`` to psycopg 3). The ``server`` extra installs a PostgreSQL driver.

One driver per sweep per store, across hosts: the parent run carries the tag ``driver.lease`` (JSON: host,
pid, run dir, since, heartbeat). A driver takes the lease when it is free or stale (no heartbeat for
``LEASE_STALE_S``), writes it, waits ``LEASE_SETTLE_S`` and reads it back: of two drivers that wrote at once,
only the one whose lease is read back goes on; the other gets ``SweepAlreadyRunning`` (exit 3) naming the
holder. The driver's tracking writer renews the heartbeat every ``LEASE_HEARTBEAT_S`` and removes the tag at
the end. (The run directory's file lock, sweeps/sweep_lock.py, still guards a run directory's local files.)

Transient store errors (a server restarting, unreachable, a busy database) are told apart from real ones by
``is_transient``: the tracking writer retries the former and fails on the latter (sweeps/tracking_writer.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from urllib.parse import urlencode

from filelock import FileLock

from contract.run_layout import RunLayout
from dashboards.store_uri import default_tracking_uri as default_uri  # noqa: F401 (re-exported)
from dashboards.store_uri import mask_uri, resolve_tracking_uri, sqlite_path

LEASE_TAG = "driver.lease"
LEASE_HEARTBEAT_S = 15.0
LEASE_STALE_S = 120.0  # a lease with no heartbeat for this long belongs to a dead driver
LEASE_SETTLE_S = 1.0  # between writing a lease and reading it back (two drivers writing at once; sqlite: 0.2 s)
VIEW_ID = "sweep-trials"  # the experiment's saved view of the trial runs (sweeps/tracking.py writes it)
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_ID}"  # where the MLflow UI keeps a saved view (experiment tag)
CURVES_VIEW_ID = "sweep-curves"  # the saved view of the curves, grouped by method (sweeps/ui_views.py)
CURVES_VIEW_TAG = f"mlflow.sharedViewState.{CURVES_VIEW_ID}"
GRID_VIEW_ID = "sweep-grid"  # a grid's saved view: its parallel coordinates (sweeps/ui_views.py)
GRID_VIEW_TAG = f"mlflow.sharedViewState.{GRID_VIEW_ID}"
TRIALS_FILTER = "tags.role = 'trial'"
CURVES_FILTER = f"{TRIALS_FILTER} and attributes.status != 'FAILED'"
"""The curves view's runs: FAILED trials are left out of its means and bands, as the table and the report's figures leave them out."""
BY_RUN_NAME = "tags.`mlflow.runName`"  # the UI's sort key of the Run Name column



class StoreMissing(RuntimeError):
    """A read command found no store or no sweep where it looked; the message says where and how to point elsewhere."""


class SweepAlreadyRunning(RuntimeError):
    """Another driver holds this sweep (its run directory's lock, or the store's lease)."""


def resolve_uri(tracking_uri: str | None, run_dir: Path | str = "runs") -> str:
    """``--tracking-uri``, else ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<run_dir>/mlflow.db`` (dashboards/collect.py)."""
    return resolve_tracking_uri(tracking_uri, run_dir)


def where(uri: str) -> str:
    """How a message names a store: the sqlite file, or the masked URI."""
    path = sqlite_path(uri)
    return str(path) if path else mask_uri(uri)


def is_server(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def quiet_mlflow_environment() -> None:
    """What every process of ours sets before it talks to MLflow: no 'View run ... at' line per run on stdout
    (an http store prints one per finished run), and an http retry budget of seconds instead of ~4 minutes, so
    an outage is noticed (and said) at once; the tracking writer keeps retrying on its own."""
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")


def store_lock(tracking_uri: str):
    """Held while a process opens (and, if new, creates) a sqlite store: a file lock in the store's folder
    (``RunLayout(folder).store_lock``, ``.locks/mlflow-store.lock``; for the default store the folder is the
    run directory). MLflow's schema migration races when two processes create one file at once. Other stores
    need none."""
    path = sqlite_path(tracking_uri)
    if path is None:
        return contextlib.nullcontext()
    layout = RunLayout(path.resolve().parent)
    layout.locks.mkdir(parents=True, exist_ok=True)
    return FileLock(str(layout.store_lock))


def open_client(tracking_uri: str):
    """An ``MlflowClient`` on ``tracking_uri`` with its store opened under ``store_lock``, so a reader never
    migrates the schema while a driver is creating the same file. Creates a missing sqlite store: drivers only."""
    from mlflow.tracking import MlflowClient

    quiet_mlflow_environment()
    with store_lock(tracking_uri):
        client = MlflowClient(tracking_uri)  # opens (and, if new, creates) a sqlite store
        client.search_experiments(max_results=1)
    return client


def require_store(uri: str, how: str = "") -> None:
    """Refuse a sqlite store that does not exist (a read command would create an empty one)."""
    path = sqlite_path(uri)
    if path is not None and not path.exists():
        raise StoreMissing(f"no MLflow store at {path}{how}: nothing was recorded there. A sweep tracked elsewhere: "
                           "pass --tracking-uri URI or set MLFLOW_TRACKING_URI (e.g. http://HOST:5000), or "
                           "--run-dir DIR for another run directory")


def open_existing(uri: str, how: str = ""):
    """A client of an existing store, for read commands: never creates a store (``StoreMissing`` instead)."""
    require_store(uri, how)
    return open_client(uri)


def sweep_experiment(client, uri: str, sweep: str):
    """The active experiment of ``sweep``; ``StoreMissing`` naming the store and the sweeps it has."""
    exp = client.get_experiment_by_name(sweep)
    if exp is None or exp.lifecycle_stage != "active":
        known = sorted(e.name for e in client.search_experiments() if e.experiment_id != "0")
        raise StoreMissing(f"no sweep {sweep!r} in {where(uri)}; known: {', '.join(known) or 'none'}")
    return exp


def trial_runs(runs: list) -> dict[str, object]:
    """trial id -> its run (``RunRecord``s, dashboards/store_tables.py); ``RuntimeError`` naming them when one
    trial has several runs (a report would otherwise pick one silently)."""
    by_id: dict[str, list] = {}
    for r in runs:
        by_id.setdefault(r.tags.get("trial_id", r.run_name), []).append(r)
    duplicated = {tid: rs for tid, rs in by_id.items() if len(rs) > 1}
    if duplicated:
        tid, rs = next(iter(duplicated.items()))
        raise RuntimeError(f"{len(duplicated)} trial(s) have several runs in this experiment, e.g. {tid!r}: "
                           f"{', '.join(r.run_id for r in rs)}; delete the extra runs (mlflow runs delete "
                           "--run-id ...) so every trial has one")
    return {tid: rs[0] for tid, rs in by_id.items()}


def is_transient(err: BaseException) -> bool:
    """A store error worth retrying: unreachable or restarting server, timeouts, 5xx, a busy or gone database."""
    text = f"{type(err).__name__}: {err}"
    seen = err
    for _ in range(5):  # the cause chain too
        seen = seen.__cause__ or seen.__context__
        if seen is None:
            break
        text += f" | {type(seen).__name__}: {seen}"
    markers = ("ConnectionError", "ConnectTimeout", "ReadTimeout", "Max retries exceeded", "Connection refused",
               "Connection aborted", "RemoteDisconnected", "Temporary failure in name resolution",
               "database is locked", "OperationalError", "server closed the connection", "could not connect",
               "TEMPORARILY_UNAVAILABLE", "status code 502", "status code 503", "status code 504",
               "too many 500 error responses", "too many 502", "too many 503", "too many 504")
    return any(m in text for m in markers)


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return pid > 0


def runs_page_url(server: str, experiment_id: str, tags: dict[str, str] | None = None) -> str:
    """The MLflow UI page of a sweep's trial runs: the saved trials view when the experiment has it
    (sweeps recorded before it was introduced: the same filter and sort, default columns)."""
    return _runs_page(server, experiment_id, VIEW_ID if VIEW_TAG in (tags or {}) else None)


def curves_page_url(server: str, experiment_id: str, tags: dict[str, str] | None = None) -> str:
    """The MLflow UI page of a sweep's curves: the saved curves view (grouped by method) in chart mode, which
    is the URL's ``compareRunsMode`` (a saved view cannot set it); sweeps recorded before the view: the trial
    runs' default charts."""
    return _runs_page(server, experiment_id, CURVES_VIEW_ID if CURVES_VIEW_TAG in (tags or {}) else None,
                      compareRunsMode="CHART")


def grid_page_url(server: str, experiment_id: str, tags: dict[str, str] | None = None) -> str | None:
    """The MLflow UI page of a grid's parallel coordinates (its saved view, chart mode); None for a sweep
    that is not a grid (no such view)."""
    if GRID_VIEW_TAG not in (tags or {}):
        return None
    return _runs_page(server, experiment_id, GRID_VIEW_ID, compareRunsMode="CHART")


def _runs_page(server: str, experiment_id: str, view: str | None, **extra: str) -> str:
    query = {"viewStateShareKey": view} if view else \
        {"searchFilter": TRIALS_FILTER, "orderByKey": BY_RUN_NAME, "orderByAsc": "true"}
    query.update(extra)
    query["workflowType"] = "machine_learning"  # the "Model training" side of the UI (landing tab: runs)
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs?{urlencode(query)}"


def run_page_url(server: str, experiment_id: str, run_id: str) -> str:
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning"
