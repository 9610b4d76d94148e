"""A PostgreSQL tracking store, as docs/clusters.md writes it (`postgresql+psycopg2://`, the
`server` extra's driver): a sweep, `sweep status/report NAME`, `sweep ui` started on it, and the password
never printed nor on the UI server's command line. PostgreSQL is Debian's, run as the postgres user (set-up
installs it under CI=true; skipped where it is missing)."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from cluster_testlib import SECRET, driver_env, free_port, kill_pids, pids_under, start_sweep, sweep
from sweep_testlib import REPO, short_cwd, wait_for, write_spec

pytestmark = pytest.mark.lane("local")  # its slow tests' lane (tests/conftest.py)


def _postgres_bin(name: str) -> str | None:
    import shutil

    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(candidates[-1]) if candidates else None


def _postgres_shm() -> set[str]:
    """PostgreSQL's segments in /dev/shm (a posix dynamic-shared-memory segment is /dev/shm/PostgreSQL.<n>)."""
    shm = Path("/dev/shm")
    return {p.name for p in shm.glob("PostgreSQL.*")} if shm.is_dir() else set()


@pytest.fixture
def postgres(tmp_path):
    """A PostgreSQL server of this test (Debian's binaries, run as the postgres user), database 'mlflow' of
    user alice with the secret password; the URI with the +psycopg2 driver, as docs/clusters.md writes it."""
    import pwd

    initdb, pg_ctl = _postgres_bin("initdb"), _postgres_bin("pg_ctl")
    if not (initdb and pg_ctl) or os.geteuid() != 0:
        pytest.skip("PostgreSQL's initdb/pg_ctl or root (to run them as the postgres user) missing; "
                    "scripts/setup.sh installs it under CI=true")
    user = pwd.getpwnam("postgres")
    data, port = tmp_path / "pgdata", free_port()
    data.mkdir()
    os.chown(data, user.pw_uid, user.pw_gid)
    for folder in [tmp_path, *tmp_path.parents]:  # pytest makes its temp dirs 0700: let postgres reach pgdata
        if folder == REPO or not folder.is_relative_to(REPO):
            break
        os.chmod(folder, 0o755)

    def as_postgres(*cmd):
        return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], capture_output=True, text=True, timeout=120,
                              cwd="/")

    done = as_postgres(initdb, "-D", str(data), "-A", "trust", "-U", "postgres")
    assert done.returncode == 0, done.stderr
    shm_before = _postgres_shm()
    # dynamic shared memory as files in pgdata, not in /dev/shm: a server ended by SIGKILL leaves nothing behind
    started = as_postgres(pg_ctl, "-D", str(data), "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1 "
                          "-c dynamic_shared_memory_type=mmap", "-w", "start", "-l", str(data / "log"))
    assert started.returncode == 0, started.stdout + started.stderr
    assert _postgres_shm() <= shm_before, sorted(_postgres_shm() - shm_before)
    try:
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER alice PASSWORD '{SECRET}'")
            cur.execute("CREATE DATABASE mlflow OWNER alice")
        conn.close()
        yield f"postgresql+psycopg2://alice:{SECRET}@127.0.0.1:{port}/mlflow"
    finally:
        pid_file = data / "postmaster.pid"
        if pid_file.exists():
            kill_pids([int(pid_file.read_text().split()[0])])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_postgresql_store_takes_a_sweep_and_its_password_is_never_shown(postgres):
    cwd = short_cwd()
    spec = write_spec(cwd, "on_postgres", seeds=(0,), steps=4, variants=[{"algorithm": "grpo"}]).name
    run = sweep(cwd, "run", spec, "--tracking-uri", postgres, "--no-progress")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    status = sweep(cwd, "status", "on_postgres", "--tracking-uri", postgres)
    assert status.returncode == 0 and "FINISHED" in status.stdout and "alice:***@" in status.stdout, status.stdout
    report = sweep(cwd, "report", "on_postgres", "--tracking-uri", postgres)
    assert report.returncode == 0, report.stderr
    missing = sweep(cwd, "status", "not_a_sweep", "--tracking-uri", postgres)
    assert missing.returncode == 2 and "on_postgres" in missing.stderr
    for done in (run, status, report, missing):
        assert SECRET not in done.stdout + done.stderr
    # `sweep ui` on a database URI starts a UI on it (the password handed over in the environment)
    port, log = free_port(), cwd / "ui.log"
    ui = start_sweep(cwd, log, "ui", "on_postgres", "--tracking-uri", postgres, "--port", str(port), env=driver_env())
    try:
        def experiments():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/search?max_results=10",
                                            timeout=5) as page:
                    return page.read().decode()
            except OSError:
                return None
        assert "on_postgres" in wait_for(experiments, timeout=180)
        # the server it started (not the command the user typed) has no password on its command line
        command_lines = [(Path("/proc") / str(pid) / "cmdline").read_bytes() for pid in pids_under("mlflow")
                         if pid != ui.pid]
        assert command_lines and not any(SECRET.encode() in line for line in command_lines)
    finally:
        os.killpg(ui.pid, signal.SIGKILL)
        ui.wait(timeout=30)
    assert "alice:***@" in log.read_text() and SECRET not in log.read_text()
    client = MlflowClient(postgres)
    exp = client.get_experiment_by_name("on_postgres")
    for r in client.search_runs([exp.experiment_id]):
        assert all(SECRET not in str(v) for v in (*r.data.tags.values(), *r.data.params.values()))
    assert exp.artifact_location.startswith((cwd / "runs").resolve().as_uri())  # artifacts stay in the run dir
