"""The processes of benchmarks/chaos.py (a `ray start` cluster, `mlflow server`, drivers; each ended by pid) and its
direct view of a PostgreSQL store.

    cluster = RayCluster(workdir / "r", env); cluster.start()      # a head and a second node, token auth
    cluster.stop_node(); cluster.start_node()                      # the second node lost (SIGKILL), then back
    server = MlflowServer(db_uri, workdir / "server", env); server.start(); server.stop(); server.start()
    kill_sessions(cluster.sessions)                                 # at the end, even after a failure
    Store(db_uri).rows()                                            # (trial, metric, step, value) -> how often

Every process here is started in a session of its own (``start_new_session``): `ray start` leaves its daemons
(GCS, raylet, agents, and the raylet's workers) in the session of the `ray start` process that made them, and
PostgreSQL's postmaster starts a session its backends share. Ending a session kills each process whose
session id is that one, by pid, read from /proc: nothing is matched by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent
TRIAL_WORKER = "ray::ImplicitFunc.train"  # the process title of a Tune function trainable's actor at work


class ChaosError(RuntimeError):
    """A process of the benchmark did not start or stop as it should (the message says which and why)."""


def session_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[3])  # fields after the command: state ppid pgrp session


def pids_in_sessions(sessions: set[int]) -> list[int]:
    """Live processes (not this one) whose session id is one of ``sessions``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and session_of(int(entry.name)) in sessions:
            found.append(int(entry.name))
    return found


def kill_sessions(sessions: set[int], timeout: float = 30.0) -> None:
    """SIGKILL every process of ``sessions`` (again while any is left: a dying raylet may still fork) and wait."""
    deadline = time.monotonic() + timeout
    while (pids := [p for p in pids_in_sessions(sessions) if not _zombie(p)]) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def environ(pid: int) -> dict[str, str]:
    """The environment ``pid`` started with ({} if it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def wait_until(check, what: str, timeout: float, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise ChaosError(f"{what}: not within {timeout:.0f} s")


class RayCluster:
    """`ray start --head` and a second node on this machine, token authentication on, ``cpus`` CPUs each, Ray's
    temp dir ``temp_dir`` (keep it short: Ray's Unix sockets live under it)."""

    def __init__(self, temp_dir: Path, env: dict[str, str], port: int, token: str, cpus: int = 1):
        self.temp_dir, self.port, self.cpus = temp_dir, port, cpus
        self.env = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
        self.address = f"127.0.0.1:{port}"
        self.sessions: set[int] = set()  # every `ray start` ever run: ended at the end
        self.node_session: int | None = None  # the second node's, while it is up

    def _ray_start(self, *args: str) -> int:
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        log = self.temp_dir.parent / "ray-start.log"
        with open(log, "a") as out:
            proc = subprocess.Popen([str(BIN / "ray"), "start", *args, "--num-cpus", str(self.cpus), "--temp-dir",
                                     str(self.temp_dir), "--node-ip-address", "127.0.0.1", "--disable-usage-stats"],
                                    env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            self.sessions.add(proc.pid)
            if proc.wait(timeout=180) != 0:
                raise ChaosError(f"`ray start {' '.join(args)}` failed (exit {proc.returncode}); see {log}")
        return proc.pid

    def start(self) -> None:
        self._ray_start("--head", "--port", str(self.port), "--include-dashboard", "false")
        self.start_node()

    def start_node(self) -> None:
        self.node_session = self._ray_start("--address", self.address)

    def driver_job(self, driver_pid: int) -> str | None:
        """The Ray job id of the driver ``driver_pid`` once it has joined the cluster (its log names it:
        ``<session>/logs/python-core-driver-<job id>..._<pid>.log``), else None."""
        logs = sorted((self.temp_dir / "session_latest" / "logs").glob(f"python-core-driver-*_{driver_pid}.log"))
        return logs[-1].name[len("python-core-driver-"):][:8] if logs else None

    def trial_workers(self, driver_pid: int, node_only: bool = False) -> list[int]:
        """Ray workers of this cluster (of the second node only) running a trial of the driver ``driver_pid`` now:
        Tune's actor inside its ``train`` call (an idle reused actor is ``ray::ImplicitFunc``, an idle worker
        ``ray::IDLE``) of that driver's job (``RAY_JOB_ID``: an actor of a killed driver's job lives on a moment)."""
        job = self.driver_job(driver_pid)
        if job is None:
            return []
        sessions = ({self.node_session} if self.node_session else set()) if node_only else self.sessions
        return sorted(p for p in pids_in_sessions(sessions)
                      if cmdline(p).startswith(TRIAL_WORKER) and environ(p).get("RAY_JOB_ID") == job)

    def stop_node(self) -> str:
        """The second node lost: SIGKILL its raylet and every process of its session (its workers too), as a
        machine that goes away would; says how many processes, how many of them Ray workers."""
        if self.node_session is None:
            raise ChaosError("the second Ray node is not running")
        names = [cmdline(pid) for pid in pids_in_sessions({self.node_session})]
        kill_sessions({self.node_session})
        self.node_session = None
        workers = sum(1 for n in names if n.startswith("ray::") and "Agent" not in n)
        return f"{len(names)} processes ({workers} Ray workers)"

    def stop(self) -> None:
        kill_sessions(self.sessions)


class MlflowServer:
    """`mlflow server` on 127.0.0.1:``port`` over ``db_uri`` (2 workers, the job runner off, as docs/clusters.md
    starts one); stop() kills its process group, start() again serves the same port."""

    def __init__(self, db_uri: str, root: Path, env: dict[str, str], port: int):
        self.db_uri, self.root, self.env, self.port = db_uri, root, env, port
        self.proc: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=2):
                return True
        except OSError:
            return False

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "server.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(BIN / "mlflow"), "server", "--backend-store-uri", self.db_uri, "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "2", "--artifacts-destination", str(self.root / "artifacts")],
                env={**self.env, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, stdout=log, stderr=log,
                start_new_session=True)
        wait_until(lambda: self.up() or self.proc.poll() is not None, "mlflow server start", 180)
        if self.proc.poll() is not None:
            raise ChaosError(f"mlflow server exited {self.proc.returncode}; see {self.root / 'server.log'}")

    def stop(self) -> None:
        if self.proc is not None:
            kill_sessions({self.proc.pid})
            self.proc.wait(timeout=30)
            self.proc = None
        wait_until(lambda: not self.up(), "mlflow server stop", 30)


class Driver:
    """`sweep run ...` as a user types it, in a session of its own; kill() is a SIGKILL of that session, run()
    starts the same command again (each run's output in its own log)."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], logs: Path):
        self.args, self.cwd, self.env, self.logs = args, cwd, env, logs
        self.proc: subprocess.Popen | None = None
        self.runs = 0

    @property
    def log(self) -> Path:
        return self.logs / f"driver-{self.runs}.log"

    def run(self) -> None:
        self.runs += 1
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([str(BIN / "sweep"), *self.args], cwd=self.cwd, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def kill(self) -> None:
        if self.proc is not None:
            kill_sessions({self.proc.pid})
            self.proc.wait(timeout=60)

    def said(self) -> str:
        return "\n".join(self.logs.joinpath(f"driver-{n}.log").read_text(errors="replace")
                         for n in range(1, self.runs + 1))


class Store:
    """One PostgreSQL database read directly (psycopg2): the checks' view, independent of MLflow's API."""

    def __init__(self, dsn: str):
        import psycopg2

        self.conn = psycopg2.connect(dsn.replace("postgresql+psycopg2://", "postgresql://"))
        self.conn.autocommit = True

    def query(self, sql: str, *args) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall() if cur.description else []

    def runs(self) -> list[tuple[str, str, str | None]]:
        """(status, role, trial id) of every active run."""
        return self.query("SELECT r.status, role.value, tid.value FROM runs r "
                          "LEFT JOIN tags role ON role.run_uuid = r.run_uuid AND role.key = 'role' "
                          "LEFT JOIN tags tid ON tid.run_uuid = r.run_uuid AND tid.key = 'trial_id' "
                          "WHERE r.lifecycle_stage = 'active'")

    def rows(self) -> Counter:
        """(trial id, metric, step, value) of every metric row of the trial runs, with how often each is there."""
        return Counter(self.query("SELECT tid.value, m.key, m.step, m.value FROM metrics m "
                                  "JOIN tags tid ON tid.run_uuid = m.run_uuid AND tid.key = 'trial_id' "
                                  "JOIN runs r ON r.run_uuid = m.run_uuid WHERE r.lifecycle_stage = 'active'"))
