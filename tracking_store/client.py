"""Every MLflow client of the product comes from here: opened under the store's lock, quiet, never by accident.

    client = open_existing(uri)          # read commands: a missing sqlite store is StoreMissing, never created
    client = open_client(uri)            # drivers: opens (creates) a sqlite store under store_lock
    exp = sweep_experiment(client, uri, "dhpo_vs_baselines")   # StoreMissing naming the sweeps there
    parent = sweep_parent(client, exp.experiment_id)           # the sweep's parent run (None before one exists)
    is_transient(err)                    # a store error worth retrying (tracking writer, sweeps/tracking/writer.py)

Transient store errors (a server restarting, unreachable, a busy database) are told apart from real ones by
``is_transient``: the tracking writer retries the former and fails on the latter.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from filelock import FileLock

from contract.env import MLFLOW_HTTP_BACKOFF, MLFLOW_HTTP_RETRIES, MLFLOW_HTTP_TIMEOUT, MLFLOW_QUIET_URLS, STORE_TEMPLATE_DIR
from contract.run_layout import RunLayout
from tracking_store.store_template import copy_template, save_template
from tracking_store.uri import sqlite_path, where


class StoreMissing(RuntimeError):
    """A read command found no store or no sweep where it looked; the message says where and how to point elsewhere."""


def quiet_mlflow_environment() -> None:
    """What every process of ours sets before it talks to MLflow: no 'View run ... at' line per run on stdout
    (an http store prints one per finished run), and an http retry budget of seconds instead of ~4 minutes, so
    an outage is noticed (and said) at once; the tracking writer keeps retrying on its own."""
    MLFLOW_QUIET_URLS.set_default("true")
    MLFLOW_HTTP_RETRIES.set_default("2")
    MLFLOW_HTTP_BACKOFF.set_default("1")
    MLFLOW_HTTP_TIMEOUT.set_default("30")


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
    migrates the schema while a driver is creating the same file. Creates a missing sqlite store: drivers only
    (a copy of SWEEP_STORE_TEMPLATE_DIR's empty store where that is set: tracking_store/store_template.py)."""
    from mlflow.tracking import MlflowClient

    quiet_mlflow_environment()
    path = sqlite_path(tracking_uri)
    templates = Path(STORE_TEMPLATE_DIR.get()) if path is not None and STORE_TEMPLATE_DIR.is_set() else None
    with store_lock(tracking_uri):
        templated = templates is not None and not path.exists()  # a new store, copied from or kept as a template
        copied = templated and copy_template(path, templates)
        client = MlflowClient(tracking_uri)  # opens (and, if new, creates) a sqlite store
        client.search_experiments(max_results=1)
        if templated and not copied:
            save_template(path, templates)
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


def sweep_parent(client, experiment_id: str):
    """The sweep's parent run: the oldest run tagged role=parent in its experiment (two drivers that created one at
    once keep the oldest: sweeps/tracking/sweep_runs.py), or None before a driver has made one. ``client``: MLflow's,
    or a reader with its ``search_runs`` (tracking_store/rest_reads.py)."""
    from tracking_store.roles import PARENT, role_filter

    runs = client.search_runs([experiment_id], role_filter(PARENT), max_results=1, order_by=["attributes.start_time ASC"])
    return runs[0] if runs else None


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
