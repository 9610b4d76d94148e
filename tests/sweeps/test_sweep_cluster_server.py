"""A real multi-node Ray cluster and a real MLflow server, used as docs/clusters.md says.

A token-protected cluster started with `ray start --head` plus a second node (`ray start --address`) on
this machine, and `mlflow server` on 127.0.0.1 (sqlite backend), reached through a URI that carries
credentials (`http://alice:<secret>@127.0.0.1:PORT`: the server ignores them; no output may show the
secret). The driver has only `RAY_AUTH_TOKEN` set, as docs/clusters.md says. Checked, as a user types it:

* `--address ray://...` is refused with exit 2 before anything is created (no cluster needed);
* a wrong or missing token: exit 4, one clear line naming the address and what to set, no traceback;
* a sweep across both nodes with the server stopped for 60 s mid-sweep (MLflow's retry budget cut to
  seconds): exit 0, the outage said and its end, every step exactly once; a second driver of the same
  sweep from another run directory meanwhile: exit 3 naming the holder;
* a driver SIGKILLed during an outage, then re-run once the server is back: the journaled steps are
  written first, every step exactly once; an outage past --tracking-outage-limit: exit 75 with the resume
  hint, and the re-run completes;
* while another job holds the cluster's CPUs the driver says what it waits for;
* `sweep status NAME`, `sweep report NAME`, `sweep ui NAME` against the server; without the URI the
  read commands create no store and say where they looked.

Every process started here (Ray's daemons, the server, drivers) is ended by pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from cluster_testlib import (SECRET, MlflowServer, RayCluster, driver_env, venv_exe, assert_every_step_once, start_sweep,
                             sweep, trial_runs)
from sweep_testlib import short_cwd, steps_of, wait_for, write_spec


pytestmark = pytest.mark.lane("local")  # its slow tests' lane (tests/conftest.py)

@pytest.fixture(scope="module")
def cluster():
    c = RayCluster()
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = MlflowServer(tmp_path_factory.mktemp("mlflow-server"))
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_a_ray_client_address_is_refused_before_anything_is_created():
    cwd = short_cwd()
    spec = write_spec(cwd, "client_address", seeds=(0,), steps=2).name
    done = sweep(cwd, "run", spec, "--address", "ray://127.0.0.1:10001")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Ray Client" in done.stderr and "ray job submit" in done.stderr and "Traceback" not in done.stderr
    assert not (cwd / "runs" / "mlflow.db").exists() and not (cwd / "runs" / "client_address").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_wrong_or_missing_token_is_one_clear_error(cluster):
    cwd = short_cwd()
    spec = write_spec(cwd, "token_check", seeds=(0,), steps=2).name
    for env, said in (({"RAY_AUTH_TOKEN": "0" * 64}, "differs"), ({}, "RAY_AUTH_TOKEN")):
        done = sweep(cwd, "run", spec, "--address", cluster.address, env=driver_env(**env))
        assert done.returncode == 4, done.stdout + done.stderr
        assert "refused this driver" in done.stderr and said in done.stderr and cluster.address in done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 3, done.stderr
    assert not (cwd / "runs" / "token_check").exists()


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_sweep_over_two_nodes_survives_a_server_outage_and_a_second_driver_is_refused(cluster, server):
    cwd, other = short_cwd(), short_cwd()
    steps = 600  # long enough (~1-2 min) that the trials go on through the outage
    spec = write_spec(cwd, "outage", seeds=(0,), steps=steps, max_concurrent=2, report_interval_s=0.5).name
    write_spec(other, "outage", seeds=(0,), steps=steps, max_concurrent=2, report_interval_s=0.5)
    env = driver_env(RAY_AUTH_TOKEN=cluster.token)
    log = cwd / "driver.log"
    driver = start_sweep(cwd, log, "run", spec, "--address", cluster.address, "--tracking-uri", server.uri,
                         "--no-progress", env=env)
    client = server.client()
    try:
        wait_for(lambda: any(steps_of(client, r.info.run_id, "trial/step")
                             for r in trial_runs(client, "outage").values()), timeout=600)
        second = sweep(other, "run", "outage.yaml", "--address", cluster.address, "--tracking-uri", server.uri,
                       "--no-progress", env=env)
        assert second.returncode == 3, second.stdout + second.stderr
        assert "already running against this tracking store" in second.stderr and f"pid {driver.pid}" in second.stderr
        server.stop()
        wait_for(lambda: "unreachable since" in log.read_text(), timeout=120)
        time.sleep(60)
        server.start()
        assert driver.wait(timeout=900) == 0, log.read_text()[-4000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    out = log.read_text()
    assert "reachable again after" in out and "View run" not in out and SECRET not in out
    assert SECRET not in second.stdout + second.stderr
    assert_every_step_once(client, "outage", steps, trials=2)
    nodes = {r.data.tags.get("ray.node_id") for r in trial_runs(client, "outage").values()}
    assert len(nodes) == 2, nodes  # one trial on each node (one CPU each, one CPU per trial)
    parent = client.search_runs([client.get_experiment_by_name("outage").experiment_id], "tags.role = 'parent'")[0]
    assert parent.info.status == "FINISHED" and "driver.lease" not in parent.data.tags
    assert all(SECRET not in v for v in parent.data.tags.values())


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_driver_killed_during_an_outage_loses_nothing(cluster, server):
    cwd = short_cwd()
    steps = 400
    spec = write_spec(cwd, "killed_in_outage", seeds=(0,), steps=steps, max_concurrent=2,
                      report_interval_s=0.5).name
    env = driver_env(RAY_AUTH_TOKEN=cluster.token)
    args = ("run", spec, "--address", cluster.address, "--tracking-uri", server.uri, "--no-progress")
    log = cwd / "first.log"
    driver = start_sweep(cwd, log, *args, env=env)
    client = server.client()
    try:
        wait_for(lambda: any(steps_of(client, r.info.run_id, "trial/step")
                             for r in trial_runs(client, "killed_in_outage").values()), timeout=600)
        server.stop()
        wait_for(lambda: "unreachable since" in log.read_text(), timeout=120)
        time.sleep(10)  # more steps journaled while the server is down
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    journal = next((cwd / "runs" / "killed_in_outage" / "tracking").glob("journal-*.jsonl"))
    assert journal.stat().st_size > 0  # steps the store never got
    server.start()
    again = sweep(cwd, *args, env=env, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "an earlier driver" in again.stderr and "journaled" in again.stderr
    assert_every_step_once(client, "killed_in_outage", steps, trials=2)

    # The read commands, by name, against the server (through MLFLOW_TRACKING_URI, the one way for all)
    read_env = {**env, "MLFLOW_TRACKING_URI": server.uri}
    status = sweep(cwd, "status", "killed_in_outage", env=read_env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.count("FINISHED") == 2 and f"{steps}/{steps}" in status.stdout
    report = sweep(cwd, "report", "killed_in_outage", env=read_env)
    assert report.returncode == 0, report.stderr
    ui = sweep(cwd, "ui", "killed_in_outage", env=read_env, timeout=60)
    assert ui.returncode == 0 and f"http://alice:***@127.0.0.1:{server.port}/#/experiments/" in ui.stdout, ui.stdout
    for done in (again, status, report, ui):
        assert SECRET not in done.stdout + done.stderr and "View run" not in done.stdout
    # Without the URI the read commands look in ./runs/mlflow.db of another directory: nothing there, none created
    empty = short_cwd()
    for command in (("status", "killed_in_outage"), ("report", "killed_in_outage"), ("ui", "killed_in_outage")):
        done = sweep(empty, *command, env=driver_env(), timeout=60)
        assert done.returncode == 2 and "no MLflow store at" in done.stderr, (command, done.stdout, done.stderr)
    assert not (empty / "runs" / "mlflow.db").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_sweep_waiting_for_resources_says_what_it_waits_for(cluster, server):
    """Another job holds both CPUs of the cluster: after 30 s the driver says what it needs and what is free;
    once the job ends the sweep runs."""
    cwd = short_cwd()
    env = driver_env(RAY_AUTH_TOKEN=cluster.token)
    holder = subprocess.Popen(
        [venv_exe("python"), "-c",
         "import ray, time\n"
         f"ray.init(address='{cluster.address}', log_to_driver=False)\n"
         "@ray.remote(num_cpus=1)\nclass Hold:\n    def ping(self): return 1\n"
         "held = [Hold.remote() for _ in range(2)]\nray.get([h.ping.remote() for h in held])\n"
         "print('HOLDING', flush=True)\ntime.sleep(3600)\n"],
        env={**env, "RAY_AUTH_MODE": "token"}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True)
    spec = write_spec(cwd, "waits", seeds=(0,), steps=4, variants=[{"algorithm": "grpo"}]).name
    log = cwd / "driver.log"
    driver = None
    try:
        assert holder.stdout.readline().strip() == "HOLDING"
        driver = start_sweep(cwd, log, "run", spec, "--address", cluster.address, "--tracking-uri", server.uri,
                             "--no-progress", env=env)
        wait_for(lambda: "waiting for resources" in log.read_text(), timeout=120)
        line = next(x for x in log.read_text().splitlines() if "waiting for resources" in x)
        assert "1 trial(s) pending" in line and "each trial needs 1 CPU" in line and "0 CPU, 0 GPU free of 2 CPU" in line
        os.killpg(holder.pid, signal.SIGKILL)  # the other job ends: its CPUs come back
        holder.wait(timeout=30)
        assert driver.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        for proc in (holder, driver):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert log.read_text().count("waiting for resources") == 1


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_outage_past_the_limit_ends_the_sweep_as_an_interruption_and_the_rerun_completes(server):
    cwd = short_cwd()
    steps = 300  # the driver gives up ~10 s after the first step, mid-trial: the rerun does the rest
    spec = write_spec(cwd, "past_limit", seeds=(0,), steps=steps, variants=[{"algorithm": "grpo"}],
                      report_interval_s=0.5).name
    args = ("run", spec, "--tracking-uri", server.uri, "--no-progress", "--tracking-outage-limit", "8")
    log = cwd / "first.log"
    driver = start_sweep(cwd, log, *args, env=driver_env())
    client = server.client()
    try:
        wait_for(lambda: any(steps_of(client, r.info.run_id, "trial/step")
                             for r in trial_runs(client, "past_limit").values()), timeout=300)
        server.stop()
        assert driver.wait(timeout=120) == 75, log.read_text()[-3000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        server.start()
    said = log.read_text()
    assert "unreachable for" in said and "limit 8s" in said and "nothing is lost" in said
    assert "run the same command again to resume" in said and SECRET not in said
    again = sweep(cwd, *args[:-2])
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert_every_step_once(client, "past_limit", steps, trials=1)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_driver_started_while_the_server_is_down_waits_for_it_as_for_an_outage(server):
    """A driver (re)started during an outage (benchmarks/chaos.py: the driver killed and run again while the server
    restarts) says the store is unreachable and goes on once it is back, instead of ending in MLflow's traceback."""
    cwd = short_cwd()
    spec = cwd / "started_in_outage.yaml"
    spec.write_text("name: started_in_outage\n"
                    "base: {backend: synthetic, synthetic: {step_seconds: 0.05}, trainer: {steps: 6, eval_every: 3}}\n"
                    "seeds: [0]\nresources: {cpus: 0.5}\nvariants: [{algorithm: grpo}]\n")
    server.stop()
    log = cwd / "driver.log"
    driver = start_sweep(cwd, log, "run", spec.name, "--tracking-uri", server.uri, "--no-progress", "--no-report",
                         env=driver_env())
    try:
        wait_for(lambda: "unreachable since" in log.read_text() or driver.poll() is not None, timeout=120)
        time.sleep(5)  # a few tries while it is down
        server.start()
        assert driver.wait(timeout=400) == 0, log.read_text()[-3000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        if server.proc is None or server.proc.poll() is not None:
            server.start()
    said = log.read_text()
    assert "unreachable since" in said and "reachable again after" in said, said[-3000:]
    assert "Traceback" not in said and SECRET not in said
    assert_every_step_once(server.client(), "started_in_outage", 6, trials=1)
