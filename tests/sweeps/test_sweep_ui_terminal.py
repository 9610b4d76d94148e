"""`sweep ui` on the terminal when the server cannot serve: a taken port, a server that dies.

- a port already taken on 127.0.0.1 exits 2 at once, naming it, before anything starts (no log);
- a server that exits before it answers (here: a store file that is not a database) is an error,
  exit 1, naming the log file in the run dir and showing its last lines; no URL is printed.

The working case (URLs once /health answers, the access log in the run dir) is in test_sweep_ui.py.
Every process started here is ended by its process group (test_sweep_ui.stop_group).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
from sweep_testlib import subprocess_env, sweep_exe
from test_sweep_ui import free_port, stop_group

from tracking_store.client import open_client

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(300)]


def sweep_ui(cwd: Path, *args: str, timeout: float) -> tuple[int, str, str, float]:
    """`sweep ui ARGS` in ``cwd`` to its end (its process group ended in any case): exit code, stdout, stderr, seconds."""
    began = time.monotonic()
    proc = subprocess.Popen([sweep_exe(), "ui", *args], cwd=cwd, env=subprocess_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(proc, timeout=10)
        pytest.fail(f"sweep ui {' '.join(args)} still running after {timeout} s")
    finally:
        if proc.poll() is None:
            stop_group(proc, timeout=10)
    return proc.returncode, out, err, time.monotonic() - began


def test_a_taken_port_exits_2_before_anything_starts(tmp_path):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    client = open_client(f"sqlite:///{run_dir / 'mlflow.db'}")  # a store with the sweep's experiment
    client.create_experiment("taken")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, out, err, seconds = sweep_ui(tmp_path, "taken", "--port", str(port), "--run-dir", "runs", timeout=60)
    assert code == 2, (out, err)
    assert f"error: port {port} on 127.0.0.1 is taken" in err and "--port N" in err
    assert "http://" not in out and "starting the MLflow UI" not in err
    assert not (run_dir / "logs").exists()  # nothing started, no log
    assert seconds < 30, f"took {seconds:.1f} s"  # the command's start-up (imports), no server


def test_a_server_that_dies_before_answering_names_its_log(tmp_path):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "mlflow.db").write_text("not a database\n")  # there (the command starts), but the server fails on it
    code, out, err, _ = sweep_ui(tmp_path, "--port", str(free_port()), "--run-dir", "runs", timeout=240)
    log = Path("runs") / "logs" / "mlflow-ui.log"
    assert code == 1, (out, err)
    assert err.startswith(f"starting the MLflow UI for sqlite:///{(run_dir / 'mlflow.db').resolve()} ..."), err
    assert "exited with code 1 before it answered" in err and f"its log: {log}" in err, err
    assert "file is not a database" in err  # the log's last lines
    assert "http://" not in out, out  # no URL of a server that never answered
    assert "file is not a database" in (tmp_path / log).read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # nothing outside the run dir
