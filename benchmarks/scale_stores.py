"""Tracking stores for benchmarks/sweep_scale.py: the sqlite default, or `mlflow server` on PostgreSQL.

    with open_store("postgres", Path("runs/scale")) as store:
        store.tracking_uri      # http://127.0.0.1:<port>           (what trials and reads use)
        store.db_uri            # postgresql+psycopg2://...         (rows counted straight from the database)

"sqlite" is the product's default store (``sqlite:///<run dir>/mlflow.db``, one per mode and size, made
by whoever writes first). "postgres" starts Debian's PostgreSQL as the postgres user (root needed:
`apt-get install postgresql`, as scripts/setup.sh does under CI=true) with its data directory under the
given folder, and an `mlflow server` on it (2 workers, MLflow's job runner off, as docs/clusters.md
starts one); both end by pid when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contract.env import MLFLOW_SERVER_JOBS  # noqa: E402
from sweeps.ui.server import answers  # noqa: E402


@dataclass
class Store:
    kind: str
    tracking_uri: str | None
    """None: the sweep's default sqlite store in its run directory."""
    db_uri: str | None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)), None)
    if not found:
        sys.exit(f"--stores postgres: PostgreSQL's {name} not found (apt-get install postgresql)")
    return str(found)


def _wait(check, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not come up within {timeout:.0f} s")


@contextlib.contextmanager
def postgres_server(root: Path):
    """A PostgreSQL server with database 'mlflow' (trust auth on 127.0.0.1); yields its SQLAlchemy URI."""
    if os.geteuid() != 0:
        sys.exit("--stores postgres: run as root (PostgreSQL runs as the postgres user)")
    user = pwd.getpwnam("postgres")
    data, port = root / "pgdata", free_port()
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    os.chown(data, user.pw_uid, user.pw_gid)
    for folder in (root, *root.parents):
        if folder == Path("/"):
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o055)  # the postgres user must reach its data directory

    def as_postgres(*cmd: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True, capture_output=True, cwd="/", timeout=120)

    as_postgres(_postgres_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    as_postgres(_postgres_bin("pg_ctl"), "-D", str(data), "-o",
                f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c dynamic_shared_memory_type=mmap",
                "-w", "start", "-l", str(data / "log"))
    try:
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE mlflow")
        conn.close()
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/mlflow"
    finally:
        pid_file = data / "postmaster.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)


@contextlib.contextmanager
def mlflow_server(db_uri: str, root: Path, workers: int = 2):
    """`mlflow server` on ``db_uri``; yields its http URI; killed (its process group) at the end."""
    port = free_port()
    log = open(root / "mlflow-server.log", "ab")
    env = {**os.environ, MLFLOW_SERVER_JOBS.name: "false"}
    server = subprocess.Popen([str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri", db_uri,
                               "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
                               "--artifacts-destination", str(root / "server-artifacts")],
                              stdout=log, stderr=log, env=env, start_new_session=True)
    try:
        _wait(lambda: answers(f"http://127.0.0.1:{port}"), "mlflow server")
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        log.close()


@contextlib.contextmanager
def open_store(kind: str, root: Path):
    if kind == "sqlite":
        yield Store("sqlite", None, None)
        return
    with postgres_server(root) as db_uri, mlflow_server(db_uri, root) as uri:
        yield Store("postgres", uri, db_uri)
