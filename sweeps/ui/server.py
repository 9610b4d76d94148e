"""`sweep ui`'s pages and its local MLflow server (sweeps/commands/ui.py is the command).

    pages = sweep_pages(uri, sweep, server)   # label -> URL: (a grid's view,) the curves view, the trials table, the parent run
    port_taken(port)                          # on 127.0.0.1: the command exits 2 before starting anything
    code = serve(uri, run_dir, port, pages, open_browser)

``serve`` starts ``mlflow server`` on 127.0.0.1 with its output (INFO and access-log lines) appended to
``<run dir>/logs/mlflow-ui.log`` (said once; nothing is written outside the run dir), polls ``/health``
meanwhile, and prints the pages only once the server answers. A server that exits before it answers
is an error (exit 1) naming the log and showing its last lines (credentials masked). SIGTERM stops the
server and then the command; Ctrl-C reaches both.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import typer

from contract.env import MLFLOW_BACKEND_STORE, MLFLOW_SERVER_JOBS, PYTHONUNBUFFERED, TMPDIR
from contract.run_layout import RunLayout
from sweeps.ui.pages import curves_page_url, grid_page_url, run_page_url, runs_page_url
from tracking_store.client import open_client, sweep_experiment, sweep_parent
from tracking_store.uri import mask_uri

PROGRESS_EVERY_S = 30.0  # a "still starting" line this often while the server does not answer
TAIL_LINES = 12  # of the log, shown when the server exits before it answers


def sweep_pages(uri: str, sweep: str, server: str) -> dict[str, str]:
    """The sweep's pages, the main one first: a grid's parallel coordinates, its curves, its trials table and
    (when recorded) its parent run;
    StoreMissing naming the known sweeps."""
    client = open_client(uri)
    exp = sweep_experiment(client, uri, sweep)
    grid = grid_page_url(server, exp.experiment_id, exp.tags)
    pages = {f"grid of {sweep} (parallel coordinates)": grid} if grid else {}
    pages.update({f"curves of {sweep} (grouped by method)": curves_page_url(server, exp.experiment_id, exp.tags),
                  f"trials of {sweep} (table)": runs_page_url(server, exp.experiment_id, exp.tags)})
    parent = sweep_parent(client, exp.experiment_id)
    if parent is not None:
        pages["parent run (report)"] = run_page_url(server, exp.experiment_id, parent.info.run_id)
    return pages


def print_pages(pages: dict[str, str]) -> None:
    for label, url in pages.items():
        typer.echo(f"{label}: {mask_uri(url)}")


def open_page(url: str) -> None:
    import webbrowser

    webbrowser.open(url)


def port_taken(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def answers(server: str) -> bool:
    try:
        with urllib.request.urlopen(f"{server}/health", timeout=2):
            return True
    except OSError:
        return False


def serve(uri: str, run_dir: Path, port: int, pages: dict[str, str], open_browser: bool) -> int:
    """Run the UI until it stops (Ctrl-C, SIGTERM); the command's exit code."""
    server = f"http://127.0.0.1:{port}"
    log_path = RunLayout(Path(run_dir)).ui_log
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
           "--artifacts-destination", str(RunLayout(Path(run_dir)).artifacts.resolve())]
    # the store in the environment, not on the command line: ps would show a password
    env = {**os.environ, MLFLOW_BACKEND_STORE.name: uri, PYTHONUNBUFFERED.name: "1"}
    env.setdefault(MLFLOW_SERVER_JOBS.name, "false")  # no job runners: a viewer runs no GenAI jobs
    if not TMPDIR.is_set():  # its temporary files (MLflow's store-init lock, uploads): in the run dir, not /tmp
        tmp = RunLayout(Path(run_dir)).cache("tmp").resolve()
        tmp.mkdir(parents=True, exist_ok=True)
        env[TMPDIR.name] = str(tmp)
    typer.echo(f"starting the MLflow UI for {mask_uri(uri)} ... (its output: {log_path})", err=True)
    with open(log_path, "a") as log:
        log.write(f"--- sweep ui {time.strftime('%Y-%m-%d %H:%M:%S')}: mlflow server on 127.0.0.1:{port} ---\n")
        log.flush()
        start = log_path.stat().st_size
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    stopping = []

    def stop(*_):  # `kill` of sweep ui stops the server too
        stopping.append(True)
        proc.terminate()

    signal.signal(signal.SIGTERM, stop)
    try:
        if not wait_until_up(proc, server):
            if stopping:
                return 0
            typer.echo(f"error: the MLflow UI (mlflow server on 127.0.0.1:{port}) exited with code {proc.returncode} "
                       f"before it answered; its log: {log_path}{log_tail(log_path, start)}", err=True)
            return 1
        typer.echo(f"MLflow UI for {mask_uri(uri)} at {server} (Ctrl-C stops it)")
        print_pages(pages)
        if open_browser:
            open_page(next(iter(pages.values()), server))
        proc.wait()
    except KeyboardInterrupt:  # the server got the Ctrl-C too
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
    return 0


def wait_until_up(proc: subprocess.Popen, server: str) -> bool:
    """True once ``server`` answers; False when ``proc`` exits first. A progress line every PROGRESS_EVERY_S."""
    began = last = time.monotonic()
    while proc.poll() is None:
        if answers(server):
            return True
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            typer.echo(f"still starting the MLflow UI ({last - began:.0f} s) ...", err=True)
        time.sleep(0.25)
    return False


def log_tail(log_path: Path, start: int) -> str:
    """The last lines this start wrote to the log, indented and masked, for an error message."""
    with open(log_path, "rb") as f:
        f.seek(start)
        lines = f.read().decode(errors="replace").splitlines()[-TAIL_LINES:]
    return "".join(f"\n  {mask_uri(line)}" for line in lines) if lines else " (empty)"
