"""Helpers of the cluster-path tests: a `ray start` cluster, an `mlflow server`, PostgreSQL, `sweep` as typed.

Every process they start is ended by pid (the cluster: every process whose command line names its temp
dir; the servers: their process group)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

from mlflow.tracking import MlflowClient

from contract.env import MLFLOW_SERVER_JOBS

from sweep_testlib import REPO, kill_pids, pids_under, short_ray_dir, steps_of, subprocess_env, sweep_exe, wait_for

SECRET = "s3cret-" + secrets.token_hex(4)
VENV_BIN = REPO / ".venv" / "bin"
TRACKED = {"actor/entropy": 1, "reward/mean": 1, "trial/step": 0}  # key -> its first step (0: the validation before training)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def venv_exe(name: str) -> str:
    return str(VENV_BIN / name) if (VENV_BIN / name).exists() else name


class MlflowServer:
    """`mlflow server` on 127.0.0.1 over one sqlite file; stop() and start() again on the same port."""

    def __init__(self, root: Path):
        self.db, self.artifacts, self.port = root / "server.db", root / "server-artifacts", free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://alice:{SECRET}@127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [venv_exe("mlflow"), "server", "--backend-store-uri", f"sqlite:///{self.db}", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1", "--artifacts-destination", str(self.artifacts)],
            env={**subprocess_env(), MLFLOW_SERVER_JOBS.name: "false"},  # as docs/clusters.md starts it
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(self._up, timeout=120)

    def _up(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own process group: the server and its workers
            self.proc.wait(timeout=30)
        wait_for(lambda: not self._up(), timeout=30)

    def client(self) -> MlflowClient:
        return MlflowClient(f"http://127.0.0.1:{self.port}")


class RayCluster:
    """`ray start --head` and a second node, token auth, temp dir of this test; one CPU each, so two
    one-CPU trials run one on each node."""

    def __init__(self):
        self.temp = short_ray_dir()
        self.token = secrets.token_hex(32)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**subprocess_env(), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}
        common = ["--num-cpus", "1", "--temp-dir", str(self.temp), "--node-ip-address", "127.0.0.1",
                  "--disable-usage-stats"]
        for args in (["--head", "--port", str(self.port), "--include-dashboard", "false"], ["--address", self.address]):
            done = subprocess.run([venv_exe("ray"), "start", *args, *common], env=env, capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def stop(self) -> None:
        kill_pids(pids_under(str(self.temp)))


def driver_env(**extra) -> dict[str, str]:
    # MLflow's http retry budget cut to seconds; the driver's own retrying does the rest
    return {**subprocess_env(), "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5", **extra}


def sweep(cwd: Path, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sweep_exe(), *args], cwd=cwd, env=env or driver_env(), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def start_sweep(cwd: Path, log: Path, *args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sweep_exe(), *args], cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def trial_runs(client: MlflowClient, sweep_name: str) -> dict:
    exp = client.get_experiment_by_name(sweep_name)
    if exp is None:
        return {}
    return {r.data.tags["trial_id"]: r for r in client.search_runs([exp.experiment_id], "tags.role = 'trial'")}


def assert_every_step_once(client: MlflowClient, sweep_name: str, steps: int, trials: int) -> None:
    runs = trial_runs(client, sweep_name)
    assert len(runs) == trials and all(r.info.status == "FINISHED" for r in runs.values()), \
        {t: r.info.status for t, r in runs.items()}
    for tid, run in runs.items():
        for key, first in TRACKED.items():
            assert steps_of(client, run.info.run_id, key) == list(range(first, steps + 1)), (tid, key)
